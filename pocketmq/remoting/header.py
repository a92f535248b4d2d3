"""Typed custom headers (RocketMQ's CommandCustomHeader classes) carried in a command's ext fields.

This module is their one import path, as RocketMQ's remoting.protocol.header package is; each family has its own
file: ``header_codec.py`` (the CommandHeader base, ``wire`` and each class's compiled ``to_ext`` / ``from_ext``:
what a header may hold and how its fields are read), ``namesrv_header.py`` (a name server's requests),
``send_header.py`` (a send, its V2 form and answer), ``pull_header.py`` (PULL_MESSAGE and a queue's offsets),
``consumer_header.py`` (a message by id or key, a group's members, a send-back) and ``admin_header.py`` (the
admin requests, of which this module names the topic ones). The POP, transaction, recall and reply headers are
imported from their own files (``pop_header.py``, ``transaction_header.py``, ``recall_header.py``,
``reply_header.py``).
"""

from __future__ import annotations

from .admin_header import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
)
from .consumer_header import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    UnregisterClientRequestHeader,
    ViewMessageRequestHeader,
)
from .header_codec import (
    CommandHeader,
    from_ext,
    from_ext_reference,
    to_ext,
    wire,
)
from .namesrv_header import (
    BrokerHeartbeatRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetRouteInfoRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from .pull_header import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from .send_header import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    parse_send_message_request_header,
    send_message_v2_ext,
)

__all__ = [
    "BrokerHeartbeatRequestHeader", "CommandHeader", "ConsumerSendMsgBackRequestHeader", "CreateTopicRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader", "DeleteTopicRequestHeader", "GetConsumerListByGroupRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader", "GetEarliestMsgStoretimeResponseHeader", "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader", "GetMinOffsetRequestHeader", "GetMinOffsetResponseHeader",
    "GetRouteInfoRequestHeader", "NotifyConsumerIdsChangedRequestHeader", "PullMessageRequestHeader",
    "PullMessageResponseHeader", "QueryConsumerOffsetRequestHeader", "QueryConsumerOffsetResponseHeader",
    "QueryDataVersionRequestHeader", "QueryDataVersionResponseHeader", "QueryMessageRequestHeader",
    "QueryMessageResponseHeader", "RegisterBrokerRequestHeader", "RegisterBrokerResponseHeader",
    "SearchOffsetRequestHeader", "SearchOffsetResponseHeader", "SendMessageRequestHeader", "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader", "UnRegisterBrokerRequestHeader", "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader", "ViewMessageRequestHeader", "from_ext", "from_ext_reference",
    "parse_send_message_request_header", "send_message_v2_ext", "to_ext", "wire",
]
