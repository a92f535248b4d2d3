"""MQClientAPIImpl: one method per request the client sends, and the mapping of answers to results.

Knows the wire (codes, headers, bodies) and the name-server address list; knows nothing of producers,
consumers or route caches. Broker answers a call cannot turn into a result raise MQBrokerException;
transport failures raise the remoting layer's errors (RemotingException).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pocketmq.common.codec import CorruptRecordError, decode_all
from pocketmq.common.constants import PROPERTY_MSG_REGION, PROPERTY_TRACE_SWITCH
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DEFAULT_TRACE_REGION_ID, UNIQUE_MSG_QUERY_FLAG
from pocketmq.remoting.assignment_body import (
    MessageQueueAssignment,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from pocketmq.remoting.body import TopicList, TopicRouteData, encode_body
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.client_body import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    SubscriptionData,
)
from pocketmq.remoting.codes import FLAG_ONEWAY, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand, next_opaque
from pocketmq.remoting.header import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
    send_message_v2_ext,
)
from pocketmq.remoting.pop_body import BatchAckMessageRequestBody
from pocketmq.remoting.pop_header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
)
from pocketmq.remoting.recall_header import RecallMessageRequestHeader, RecallMessageResponseHeader

from ..client_config import ClientConfig
from ..consumer.pop_result import PopResult
from ..exceptions import MQBrokerException, MQClientException
from ..message import PullResult, PullStatus, SendResult, SendStatus
from .consumer.pop_api import process_pop_response
from .namesrv_invoker import NameServerInvoker

log = logging.getLogger(__name__)


SEND_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
PULL_STATUS_BY_CODE: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(slots=True)
class PullResultExt(PullResult):
    """A pull answer before the messages are decoded and filtered (PullResultExt)."""

    suggest_which_broker_id: int = 0
    message_binary: bytes | None = None


_SEND_MESSAGE_V2, _SEND_BATCH_MESSAGE = int(RequestCode.SEND_MESSAGE_V2), int(RequestCode.SEND_BATCH_MESSAGE)
_SEND_REPLY_MESSAGE_V2 = int(RequestCode.SEND_REPLY_MESSAGE_V2)


def create_send_command(header: SendMessageRequestHeader, body: bytes, oneway: bool = False) -> RemotingCommand:
    """The command of a send: SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE for a batch) with the single-letter V2 header
    (RemotingCommand.createRequestCommand in MQClientAPIImpl.sendMessage); its header and body are what
    impl/producer/send_request.py's build_send_request made of the message."""
    code = _SEND_BATCH_MESSAGE if header.batch else _SEND_MESSAGE_V2
    # RemotingCommand.request would copy the ext map; this one is fresh and holds no None.
    return RemotingCommand(code=code, opaque=next_opaque(), flag=FLAG_ONEWAY if oneway else 0,
                           ext_fields=send_message_v2_ext(header), body=body)


def process_send_response(
    broker_name: str, topic: str, response: RemotingCommand, uniq_msg_id: str, addr: str | None = None,
    mq: MessageQueue | None = None,
) -> SendResult:
    """The SendResult of a send's response; ``mq``, the queue sent to, is reused when the broker stored there."""
    status = SEND_STATUS_BY_CODE.get(response.code)
    if status is None:
        raise MQBrokerException(response.code, response.remark, addr)
    rh = response.decode_header(SendMessageResponseHeader)
    if mq is None or mq.queue_id != rh.queue_id or mq.topic != topic or mq.broker_name != broker_name:
        mq = MessageQueue(topic, broker_name, rh.queue_id)
    return SendResult(
        send_status=status,
        msg_id=uniq_msg_id,
        offset_msg_id=rh.msg_id,
        message_queue=mq,
        queue_offset=rh.queue_offset,
        transaction_id=rh.transaction_id,
        recall_handle=rh.recall_handle,
        region_id=str(response.ext_fields.get(PROPERTY_MSG_REGION) or DEFAULT_TRACE_REGION_ID),
        trace_on=response.ext_fields.get(PROPERTY_TRACE_SWITCH) != "false",
    )


def process_pull_response(response: RemotingCommand, addr: str | None = None) -> PullResultExt:
    status = PULL_STATUS_BY_CODE.get(response.code)
    if status is None:
        raise MQBrokerException(response.code, response.remark, addr)
    rh = response.decode_header(PullMessageResponseHeader)
    return PullResultExt(
        pull_status=status,
        next_begin_offset=rh.next_begin_offset,
        min_offset=rh.min_offset,
        max_offset=rh.max_offset,
        suggest_which_broker_id=rh.suggest_which_broker_id,
        message_binary=response.body,
    )


class MQClientAPIImpl(NameServerInvoker):
    def __init__(self, config: ClientConfig, remoting_client: RemotingClient | None = None) -> None:
        self.config = config
        self.remoting_client = remoting_client or RemotingClient(
            connect_timeout=config.connect_timeout, busy_poll=config.busy_poll, wire_protocol=config.wire_protocol
        )
        hook = config.request_hook()
        if hook is not None:
            self.remoting_client.rpc_hook = hook
        # Request bodies in the connections' dialect; answers are read in their own (RemotingCommand.decode_body).
        self._body_dialect = self.remoting_client.body_dialect
        super().__init__(config.namesrv_addr_list())

    async def shutdown(self) -> None:
        await self.remoting_client.close()

    # --- name server (the invoking: NameServerInvoker) -------------------------------------------------------

    async def get_topic_route_info_from_name_server(self, topic: str, timeout: float) -> TopicRouteData:
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic))
        response = await self.invoke_namesrv(request, timeout)
        if response.code == ResponseCode.SUCCESS and response.body is not None:
            return response.decode_body(TopicRouteData)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            raise MQClientException(
                response.remark or f"No topic route info in name server for the topic: {topic}",
                response_code=ResponseCode.TOPIC_NOT_EXIST,
            )
        raise MQClientException(f"get route of {topic}: {response.remark}", response_code=response.code)

    async def get_topic_list_from_name_server(self, timeout: float) -> list[str]:
        """Every topic a name server knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), system topics included."""
        request = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        response = await self.invoke_namesrv(request, timeout)
        if response.code != ResponseCode.SUCCESS or response.body is None:
            raise MQClientException(f"get all topic list: {response.remark}", response_code=response.code)
        return response.decode_body(TopicList).topic_list

    # --- producer ------------------------------------------------------------------------------------------

    async def send_message(
        self,
        addr: str,
        broker_name: str,
        header: SendMessageRequestHeader,
        body: bytes,
        timeout: float,
        uniq_msg_id: str,
        mq: MessageQueue | None = None,
    ) -> SendResult:
        response = await self.remoting_client.invoke(addr, create_send_command(header, body), timeout)
        return process_send_response(broker_name, header.topic, response, uniq_msg_id, addr, mq)

    async def send_message_oneway(self, addr: str, header: SendMessageRequestHeader, body: bytes,
                                  timeout: float) -> None:
        await self.remoting_client.invoke_oneway(addr, create_send_command(header, body, oneway=True), timeout)

    async def send_reply_message(
        self, addr: str, broker_name: str, header: SendMessageRequestHeader, body: bytes, timeout: float,
        uniq_msg_id: str, mq: MessageQueue | None = None,
    ) -> SendResult:
        """SEND_REPLY_MESSAGE_V2: a reply (MSG_TYPE=reply) the broker pushes to the requesting client."""
        request = create_send_command(header, body)
        request.code = _SEND_REPLY_MESSAGE_V2
        response = await self.remoting_client.invoke(addr, request, timeout)
        return process_send_response(broker_name, header.topic, response, uniq_msg_id, addr, mq)

    async def recall_message(self, addr: str, header: RecallMessageRequestHeader, timeout: float) -> str:
        """RECALL_MESSAGE (RocketMQ 5): the recalled message's id; MQBrokerException when the broker refuses."""
        request = RemotingCommand.request(RequestCode.RECALL_MESSAGE, header)
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_header(RecallMessageResponseHeader).msg_id

    # --- consumer ------------------------------------------------------------------------------------------

    async def pull_message(self, addr: str, header: PullMessageRequestHeader, timeout: float) -> PullResultExt:
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header)
        return process_pull_response(await self.remoting_client.invoke(addr, request, timeout), addr)

    async def query_message(
        self, addr: str, header: QueryMessageRequestHeader, timeout: float, unique_key: bool = False
    ) -> list[MessageExt]:
        """Messages of one broker whose KEYS (or UNIQ_KEY) hold ``header.key``; [] on QUERY_NOT_FOUND. With
        ``unique_key`` the key is a message id (the broker then looks up to its default maximum)."""
        request = RemotingCommand.request(RequestCode.QUERY_MESSAGE, header)
        if unique_key:
            request.ext_fields[UNIQUE_MSG_QUERY_FLAG] = "true"
        response = await self.remoting_client.invoke(addr, request, timeout)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerException(response.code, response.remark, addr)
        try:
            return decode_all(response.body or b"", decompress=True)
        except (CorruptRecordError, ValueError) as e:
            raise MQClientException(f"undecodable query result from {addr}: {e}") from e

    async def view_message(self, addr: str, phy_offset: int, timeout: float) -> MessageExt | None:
        """The message stored at ``phy_offset`` of the broker at ``addr`` (VIEW_MESSAGE_BY_ID); None when
        there is none there."""
        request = RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(phy_offset))
        response = await self.remoting_client.invoke(addr, request, timeout)
        if response.code != ResponseCode.SUCCESS:
            return None
        try:
            msgs = decode_all(response.body or b"", decompress=True)
        except (CorruptRecordError, ValueError) as e:
            raise MQClientException(f"undecodable message from {addr}: {e}") from e
        return msgs[0] if msgs else None

    async def _invoke_ok(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
        response = await self.remoting_client.invoke(addr, request, timeout)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerException(response.code, response.remark, addr)
        return response

    async def query_consumer_offset(self, addr: str, header: QueryConsumerOffsetRequestHeader, timeout: float) -> int:
        """The stored offset; QUERY_NOT_FOUND (nothing stored) raises MQBrokerException like other codes."""
        request = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, header)
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_header(QueryConsumerOffsetResponseHeader).offset

    async def update_consumer_offset(
        self, addr: str, header: UpdateConsumerOffsetRequestHeader, timeout: float
    ) -> None:
        await self._invoke_ok(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header), timeout)

    async def update_consumer_offset_oneway(self, addr: str, header: UpdateConsumerOffsetRequestHeader) -> None:
        request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header, oneway=True)
        await self.remoting_client.invoke_oneway(addr, request)

    async def get_max_offset(self, addr: str, topic: str, queue_id: int, timeout: float) -> int:
        request = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic, queue_id))
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_header(GetMaxOffsetResponseHeader).offset

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, timeout: float) -> int:
        request = RemotingCommand.request(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic, queue_id))
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_header(GetMinOffsetResponseHeader).offset

    async def search_offset(self, addr: str, topic: str, queue_id: int, timestamp: int, timeout: float) -> int:
        header = SearchOffsetRequestHeader(topic, queue_id, timestamp)
        request = RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_header(SearchOffsetResponseHeader).offset

    async def get_earliest_msg_storetime(self, addr: str, topic: str, queue_id: int, timeout: float) -> int:
        header = GetEarliestMsgStoretimeRequestHeader(topic, queue_id)
        request = RemotingCommand.request(RequestCode.GET_EARLIEST_MSG_STORETIME, header)
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_header(GetEarliestMsgStoretimeResponseHeader).timestamp

    async def get_consumer_id_list_by_group(self, addr: str, group: str, timeout: float) -> list[str]:
        header = GetConsumerListByGroupRequestHeader(group)
        request = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header)
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_body(GetConsumerListByGroupResponseBody).consumer_id_list

    # --- POP (RocketMQ 5) ----------------------------------------------------------------------------------

    async def pop_message(
        self, addr: str, broker_name: str, header: PopMessageRequestHeader, timeout: float, decompress: bool = True
    ) -> PopResult:
        """POP_MESSAGE: messages that become invisible to the group for ``header.invisible_time`` ms, each with
        its receipt handle (property POP_CK); NO_NEW_MSG when the poll time ran out. ``decompress=False`` keeps
        compressed bodies as stored (the gRPC endpoint inflates each as it writes it)."""
        request = RemotingCommand.request(RequestCode.POP_MESSAGE, header)
        response = await self.remoting_client.invoke(addr, request, timeout)
        return process_pop_response(response, addr, broker_name, bool(header.order), decompress)

    async def ack_message(self, addr: str, header: AckMessageRequestHeader, timeout: float) -> None:
        await self._invoke_ok(addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, header), timeout)

    async def batch_ack_message(self, addr: str, body: BatchAckMessageRequestBody, timeout: float) -> None:
        request = RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, body=encode_body(body, self._body_dialect))
        await self._invoke_ok(addr, request, timeout)

    async def change_invisible_time(
        self, addr: str, header: ChangeInvisibleTimeRequestHeader, timeout: float
    ) -> ChangeInvisibleTimeResponseHeader:
        request = RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header)
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_header(ChangeInvisibleTimeResponseHeader)

    async def consumer_send_message_back(
        self, addr: str, header: ConsumerSendMsgBackRequestHeader, timeout: float
    ) -> None:
        """CONSUMER_SEND_MSG_BACK: the broker stores a copy in %RETRY%group (delayed) or %DLQ%group."""
        request = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header)
        await self._invoke_ok(addr, request, timeout)

    async def lock_batch_mq(self, addr: str, body: LockBatchRequestBody, timeout: float) -> set[MessageQueue]:
        """LOCK_BATCH_MQ: the queues of ``body`` the broker now holds for ``body.client_id``."""
        request = RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=encode_body(body, self._body_dialect))
        response = await self._invoke_ok(addr, request, timeout)
        return response.decode_body(LockBatchResponseBody).lock_ok_mq_set

    async def unlock_batch_mq(self, addr: str, body: LockBatchRequestBody, timeout: float, oneway: bool) -> None:
        data = encode_body(body, self._body_dialect)
        if oneway:
            request = RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=data, oneway=True)
            await self.remoting_client.invoke_oneway(addr, request)
        else:
            await self._invoke_ok(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=data), timeout)

    async def query_assignment(
        self, addr: str, body: QueryAssignmentRequestBody, timeout: float
    ) -> list[MessageQueueAssignment] | None:
        """QUERY_ASSIGNMENT (RocketMQ 5's server-side rebalance): the queues the broker gives ``body.client_id``
        and how to consume them; None when the broker has no answer this time."""
        request = RemotingCommand.request(RequestCode.QUERY_ASSIGNMENT, body=encode_body(body, self._body_dialect))
        response = await self._invoke_ok(addr, request, timeout)
        if response.body is None:
            return None
        return response.decode_body(QueryAssignmentResponseBody).message_queue_assignments

    async def set_message_request_mode(self, addr: str, body: SetMessageRequestModeRequestBody, timeout: float) -> None:
        """SET_MESSAGE_REQUEST_MODE: a topic and group consumed by pull or by pop (mqadmin setConsumeMode)."""
        data = encode_body(body, self._body_dialect)
        await self._invoke_ok(addr, RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, body=data), timeout)

    async def check_client_in_broker(
        self, addr: str, group: str, client_id: str, subscription: SubscriptionData, timeout: float
    ) -> None:
        """CHECK_CLIENT_CONFIG: MQBrokerException when the broker cannot serve ``subscription`` (a SQL92 filter
        with enablePropertyFilter off, or an expression it cannot compile)."""
        body = encode_body(CheckClientRequestBody(client_id, group, subscription), self._body_dialect)
        await self._invoke_ok(addr, RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, body=body), timeout)

    # --- both ----------------------------------------------------------------------------------------------

    async def send_heartbeat(self, addr: str, heartbeat: HeartbeatData, timeout: float) -> int:
        """HEART_BEAT; returns the broker's version from the response."""
        request = RemotingCommand.request(RequestCode.HEART_BEAT, body=encode_body(heartbeat, self._body_dialect))
        return (await self._invoke_ok(addr, request, timeout)).version

    async def unregister_client(
        self,
        addr: str,
        client_id: str,
        producer_group: str | None,
        consumer_group: str | None,
        timeout: float,
    ) -> None:
        header = UnregisterClientRequestHeader(client_id, producer_group, consumer_group)
        await self._invoke_ok(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header), timeout)
