"""What a send puts on the wire for one message: the header, the body as sent, the UNIQ_KEY(s).

Kept apart from the producer's retry logic so the request can be checked without a network.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass

from pocketmq.common.constants import COMPRESSED_FLAG, TRANSACTION_PREPARED_TYPE, ZLIB_TYPE
from pocketmq.common.message import properties_to_string
from pocketmq.common.topic_validator import AUTO_CREATE_TOPIC_KEY_TOPIC
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.header import SendMessageRequestHeader

from ...batch import MessageBatch
from ...message import Message
from ...message_const import (
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_TRANSACTION_PREPARED,
    RETRY_GROUP_TOPIC_PREFIX,
)
from ...message_id import set_uniq_id


@dataclass(frozen=True, slots=True)
class SendRequestOptions:
    """What a producer's settings put into every send request."""

    producer_group: str
    create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC
    default_topic_queue_nums: int = 4
    compress_over: int = 4096
    compress_level: int = 5


def build_send_request(
    msg: Message, mq: MessageQueue, options: SendRequestOptions
) -> tuple[SendMessageRequestHeader, bytes, str]:
    """Stamps a UNIQ_KEY on ``msg`` if it has none; never changes its body (only the copy sent is compressed)."""
    body = bytes(msg.body)
    sys_flag = 0
    if isinstance(msg, MessageBatch):
        uniq_id = msg.uniq_ids()  # stamped when the batch was built; batches are never compressed
    else:
        uniq_id = set_uniq_id(msg)
        if len(body) >= options.compress_over:
            body = zlib.compress(body, options.compress_level)
            sys_flag |= COMPRESSED_FLAG | ZLIB_TYPE  # (5.x's compression type, as its producer sets it)
    props = msg.properties
    if props.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
        sys_flag |= TRANSACTION_PREPARED_TYPE
    header = SendMessageRequestHeader(
        producer_group=options.producer_group,
        topic=msg.topic,
        default_topic=options.create_topic_key,
        default_topic_queue_nums=options.default_topic_queue_nums,
        queue_id=mq.queue_id,
        sys_flag=sys_flag,
        born_timestamp=time.time_ns() // 1_000_000,
        flag=msg.flag,
        properties=properties_to_string(props),
        reconsume_times=0,
        unit_mode=False,
        batch=isinstance(msg, MessageBatch),
        broker_name=mq.broker_name,
    )
    if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        # A consumer re-sending to its retry topic carries the redelivery count in the header.
        if PROPERTY_RECONSUME_TIME in props:
            header.reconsume_times = int(props[PROPERTY_RECONSUME_TIME])
        if PROPERTY_MAX_RECONSUME_TIMES in props:
            header.max_reconsume_times = int(props[PROPERTY_MAX_RECONSUME_TIMES])
    return header, body, uniq_id
