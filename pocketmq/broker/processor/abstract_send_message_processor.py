"""AbstractSendMessageProcessor: the checks and result mapping every send path shares."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from pocketmq.common import mix_all
from pocketmq.common import topic_validator as tv
from pocketmq.common.constants import (
    MAX_PROPERTIES_LENGTH,
    PROPERTY_MSG_REGION,
    PROPERTY_PRIORITY,
    PROPERTY_REAL_TOPIC,
    PROPERTY_SEPARATOR,
    PROPERTY_TIMER_OUT_MS,
    PROPERTY_TRACE_SWITCH,
    PROPERTY_TRANSFER_FLAG,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from pocketmq.common.faq_url import suggest_todo
from pocketmq.common.java_numbers import LONG_MAX, LONG_MIN
from pocketmq.common.java_text import parse_integer
from pocketmq.common.message import (
    LOOPBACK_HOST,
    MessageExtBatch,
    MessageExtBrokerInner,
    java_utf8,
    pack_host,
    properties_to_string,
)
from pocketmq.common.recall_message_handle import HandleV1
from pocketmq.common.topic_attributes import (
    METRICS_NORMAL,
    TOPIC_MESSAGE_TYPE_ATTRIBUTE,
    TopicMessageType,
    message_priority,
    message_type_of,
    metrics_message_type,
    topic_message_type,
    type_conflict,
)
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import PermName, ResponseCode, SerializeType, TopicSysFlag
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import SendMessageRequestHeader, SendMessageResponseHeader
from pocketmq.remoting.transport import Channel, parse_address
from pocketmq.storage.results import PutMessageResult, PutMessageStatus

from .base import BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

# FAQUrl.suggestTodo's tail, in the remarks of refused sends and pulls
FAQ = suggest_todo()

_PUT_OK, _SUCCESS = PutMessageStatus.PUT_OK, ResponseCode.SUCCESS
_MSGPACK = SerializeType.MSGPACK
# PutMessageStatus -> (response code, remark) for the refusals (handlePutMessageResult, RocketMQ 4.9.8).
_STORED = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}
_REFUSED = {
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (
        ResponseCode.SYSTEM_ERROR,
        "create mapped file failed, server is busy or broken.",
    ),
    PutMessageStatus.MESSAGE_ILLEGAL: (
        ResponseCode.MESSAGE_ILLEGAL,
        "the message is illegal, maybe msg body or properties length not matched.",
    ),
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (
        ResponseCode.MESSAGE_ILLEGAL,
        "the message is illegal, maybe msg properties length limit 32k.",
    ),
    PutMessageStatus.OS_PAGECACHE_BUSY: (
        ResponseCode.SYSTEM_ERROR,
        "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
    ),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
    # RocketMQ 5's answers for timer messages (their numbers are the broker's settings: _timer_remark)
    PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL: (
        ResponseCode.MESSAGE_ILLEGAL,
        "timer message illegal, the delay time should not be bigger than the max delay {max_delay}ms; or if set "
        "del msg, the delay time should be bigger than the current time",
    ),
    PutMessageStatus.WHEEL_TIMER_FLOW_CONTROL: (
        ResponseCode.SYSTEM_ERROR,
        "timer message is under flow control",
    ),
    PutMessageStatus.WHEEL_TIMER_NOT_ENABLE: (
        ResponseCode.SYSTEM_ERROR,
        "accurate timer message is not enabled, timerWheelEnable is {enabled}",
    ),
}


class AbstractSendMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self._random = random.Random()
        # Set by a send that auto-created its topic: its answer waits for the registration that carries the topic
        # (RocketMQ's createTopicInSendMessageMethod registers before the send is answered), so a consumer started
        # on that answer finds the route.
        self.topic_created = False

    def msg_check(
        self, channel: Channel, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> tuple[RemotingCommand | None, TopicConfig | None]:
        """msgCheck: an error response, or the topic config (auto-created when allowed)."""
        c = self.controller
        bc = c.broker_config
        tcm = c.topic_config_manager
        topic = header.topic
        if not PermName.is_writeable(bc.broker_permission) and tcm.is_order_topic(topic):
            return response(
                request, ResponseCode.NO_PERMISSION, f"the broker[{bc.broker_ip1}] sending message is forbidden"
            ), None
        # RocketMQ 4.9.8 answers an invalid topic name with SYSTEM_ERROR (not MESSAGE_ILLEGAL).
        reason = tv.validate_topic(topic)
        if reason is not None:
            return response(request, ResponseCode.SYSTEM_ERROR, reason), None
        if topic in tv.NOT_ALLOWED_SEND_TOPICS:
            return response(
                request, ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
            ), None
        tc = tcm.select_topic_config(topic)
        if tc is None:
            topic_sys_flag = 0
            if header.unit_mode:
                retry = topic.startswith(mix_all.RETRY_GROUP_TOPIC_PREFIX)
                topic_sys_flag = TopicSysFlag.FLAG_UNIT_SUB if retry else TopicSysFlag.FLAG_UNIT
            tc = tcm.create_topic_in_send_message_method(
                topic, header.default_topic, channel.remote_address, header.default_topic_queue_nums, topic_sys_flag
            )
            self.topic_created = tc is not None
            if tc is None and topic.startswith(mix_all.RETRY_GROUP_TOPIC_PREFIX):
                tc = tcm.create_topic_in_send_message_back_method(
                    topic, 1, PermName.PERM_WRITE | PermName.PERM_READ, topic_sys_flag
                )
            if tc is None:
                return response(
                    request,
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please!{FAQ}",
                ), None
        valid = max(tc.write_queue_nums, tc.read_queue_nums)
        if header.queue_id >= valid:
            return response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{header.queue_id}] is illegal, {tc} Producer: {channel.remote_address}",
            ), None
        return None, tc

    def check_message_type(
        self, request: RemotingCommand, tc: TopicConfig, props: dict[str, str]
    ) -> RemotingCommand | None:
        """RocketMQ 5's topic message type check (the proxy's, answered as its remoting side does: MESSAGE_ILLEGAL).
        Only topics with a ``message.type`` are checked; retry and DLQ topics and forwarded messages never."""
        if not tc.attributes or not self.controller.broker_config.enable_topic_message_type_check:
            return None
        if TOPIC_MESSAGE_TYPE_ATTRIBUTE.name not in tc.attributes or PROPERTY_TRANSFER_FLAG in props:
            return None
        if tc.topic_name.startswith((mix_all.RETRY_GROUP_TOPIC_PREFIX, mix_all.DLQ_GROUP_TOPIC_PREFIX)):
            return None
        why = type_conflict(topic_message_type(tc.attributes), message_type_of(props))
        return None if why is None else response(request, ResponseCode.MESSAGE_ILLEGAL, why)

    @staticmethod
    def priority_queue(tc: TopicConfig, props: dict[str, str], props_string: str, queue_id: int) -> tuple[int, str]:
        """5.5.0's priority messages: one whose properties make it PRIORITY goes to the queue of its priority (the
        last past it), whatever queue the producer chose and whatever the topic's type, so that a pop, which reads
        from the last queue down, finds the highest first; any other message loses the property. Returns the queue
        and the properties' text."""
        priority = message_priority(props)
        if priority < 0:
            return queue_id, props_string
        if message_type_of(props) is TopicMessageType.PRIORITY:
            return min(priority, tc.write_queue_nums - 1), props_string
        del props[PROPERTY_PRIORITY]
        return queue_id, properties_to_string(props)

    def check_and_choose_queue(
        self, channel: Channel, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> tuple[RemotingCommand | None, TopicConfig | None, int]:
        """msgCheck, then the queue the message goes to: (error response, None, -1) or (None, topic, queue)."""
        error, tc = self.msg_check(channel, request, header)
        if error is not None:
            return error, None, -1
        assert tc is not None
        queue_id = self.choose_queue_id(header.queue_id, tc)
        if queue_id is None:
            no_queue = response(request, ResponseCode.SYSTEM_ERROR, f"topic[{header.topic}] has no write queue")
            return no_queue, None, -1
        return None, tc, queue_id

    def choose_queue_id(self, header_queue_id: int, tc: TopicConfig) -> int | None:
        """A negative queueId means "any": pick one of the write queues (None when the topic has none)."""
        if header_queue_id >= 0:
            return header_queue_id
        if tc.write_queue_nums <= 0:
            return None
        return self._random.randrange(99_999_999) % tc.write_queue_nums

    @staticmethod
    def host_bytes(address: str) -> bytes:
        """``"ip:port"`` in the commit log's host form (loopback when unparseable)."""
        try:
            return pack_host(*parse_address(address))
        except (ValueError, OSError):
            return LOOPBACK_HOST

    def born_host(self, channel: Channel) -> bytes:
        host = channel.attrs.get("bornHost")
        if host is None:  # once per connection, not per message
            host = channel.attrs["bornHost"] = self.host_bytes(channel.remote_address)
        return host  # type: ignore[return-value]

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        put = self.controller.store.put_message_nowait(msg)
        return put if isinstance(put, PutMessageResult) else await asyncio.wrap_future(put)

    def put_and_answer(
        self, msgs: MessageExtBrokerInner | MessageExtBatch, request: RemotingCommand, queue_id: int
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """Append, then the response: at once when the store has nothing to wait for, else an awaitable of it.
        What the store makes a put wait for (the group commit under SYNC_FLUSH; a dispatcher that fell more
        than maxDispatchLagBytes behind) completes a Future on another thread: the event loop serves other
        connections meanwhile, and this sender gets its answer once it is done."""
        store = self.controller.store
        put = store.put_messages_nowait(msgs) if isinstance(msgs, MessageExtBatch) else store.put_message_nowait(msgs)
        # A single message may be a timer message: its answer carries a recall handle (a batch's never does).
        msg = msgs if isinstance(msgs, MessageExtBrokerInner) else None
        if type(put) is PutMessageResult:  # (not isinstance: 3.11 runs type(x) without a call)
            self.controller.dispatch_soon_if_awaited()
            return self.handle_put_message_result(put, request, queue_id, msgs.topic, msg)
        assert isinstance(put, Future)
        return self._answer_put_later(put, request, queue_id, msgs.topic, msg)

    async def _answer_put_later(
        self, fut: Future[PutMessageResult], request: RemotingCommand, queue_id: int, topic: str,
        msg: MessageExtBrokerInner | None,
    ) -> RemotingCommand:
        return self.handle_put_message_result(await asyncio.wrap_future(fut), request, queue_id, topic, msg)

    def with_region(
        self, answer: RemotingCommand | Awaitable[RemotingCommand]
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        """The answer with MSG_REGION and TRACE_ON, which a 4.9.8 broker adds to every send it processes, refused
        ones too (SendMessageProcessor sets them before msgCheck)."""
        if isinstance(answer, RemotingCommand):
            answer.ext_fields[PROPERTY_MSG_REGION], answer.ext_fields[PROPERTY_TRACE_SWITCH] = self.region_stamp()
            return answer
        return self._with_region_later(answer)

    async def _with_region_later(self, answer: Awaitable[RemotingCommand]) -> RemotingCommand:
        done = self.with_region(await answer)
        assert isinstance(done, RemotingCommand)
        return done

    def region_stamp(self) -> tuple[str, str]:
        """MSG_REGION's and TRACE_ON's values: what every native send answer carries and every stored message."""
        bc = self.controller.broker_config
        return bc.region_id, "true" if bc.trace_on else "false"

    def _region_not_default(self) -> bool:
        bc = self.controller.broker_config
        return bc.region_id != mix_all.DEFAULT_TRACE_REGION_ID or not bc.trace_on

    def stamp_region(self, props: dict[str, str], props_string: str) -> str:
        """MSG_REGION and TRACE_ON on a message to store, as Apache RocketMQ 5's broker puts them on every one
        (buildMsgContext); its 5.x client drops the consume traces of a message without MSG_REGION. Appended to
        the producer's encoded properties (no re-encoding) unless the message carries either already."""
        region, trace_on = self.region_stamp()
        if PROPERTY_MSG_REGION not in props and PROPERTY_TRACE_SWITCH not in props:
            sep = "" if not props_string or props_string[-1] == PROPERTY_SEPARATOR else PROPERTY_SEPARATOR
            stamped = (f"{props_string}{sep}{PROPERTY_MSG_REGION}\x01{region}\x02"
                       f"{PROPERTY_TRACE_SWITCH}\x01{trace_on}\x02")
            # Properties that leave the stamp no room under the 32,767 bytes a record's take are stored as 4.9.7
            # stores every message's: decoded and encoded again (the items string2messageProperties drops, such
            # as one without a name-value separator, dropped), then stamped if that makes room; the stamp is
            # pocketmq's addition and never gets a message refused. (A character is at most 4 bytes: most texts
            # need no encoding to know.)
            if len(stamped) * 4 > MAX_PROPERTIES_LENGTH and len(java_utf8(stamped)) > MAX_PROPERTIES_LENGTH:
                compact = properties_to_string(props)
                if len(compact) < len(props_string):
                    return self.stamp_region(props, compact)
                return props_string
            props[PROPERTY_MSG_REGION] = region
            props[PROPERTY_TRACE_SWITCH] = trace_on
            return stamped
        if props.get(PROPERTY_MSG_REGION) == region and props.get(PROPERTY_TRACE_SWITCH) == trace_on:
            return props_string
        props[PROPERTY_MSG_REGION] = region
        props[PROPERTY_TRACE_SWITCH] = trace_on
        return properties_to_string(props)

    def batch_region_stamp(self) -> bytes:
        """What a batch's every record gets appended, as Apache RocketMQ 5 appends the batch's own properties
        (MSG_REGION, TRACE_ON) to each (MessageExtEncoder.encodeBatch): a record that had either, has it twice,
        and the last one counts for every reader."""
        region, trace_on = self.region_stamp()
        return f"{PROPERTY_MSG_REGION}\x01{region}\x02{PROPERTY_TRACE_SWITCH}\x01{trace_on}\x02".encode()

    def recall_handle(self, msg: MessageExtBrokerInner) -> str | None:
        """attachRecallHandle: a stored timer message's handle (its slot, +1 for the floor the slot is)."""
        props = msg.properties
        real_topic = props.get(PROPERTY_REAL_TOPIC)
        if real_topic is None or real_topic.startswith(mix_all.RETRY_GROUP_TOPIC_PREFIX):
            return None
        try:
            out = parse_integer(props[PROPERTY_TIMER_OUT_MS])
        except ValueError:
            # 5.5.0's Long.parseLong throws there, after the put: the message is stored and the send never
            # answered (docs/compatibility.md, "a TIMER_OUT_MS set by the producer"); pocketmq answers, without one.
            return None
        timestamp = out + 1 if out < LONG_MAX else LONG_MIN  # (Java's long wraps)
        return HandleV1.build_handle(real_topic, self.controller.broker_config.broker_name, str(timestamp),
                                     props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX))

    def handle_put_message_result(
        self, result: PutMessageResult, request: RemotingCommand, queue_id: int, topic: str | None = None,
        msg: MessageExtBrokerInner | None = None,
    ) -> RemotingCommand:
        status = result.status
        # (an Enum's hash runs Python code: the common answer is found by identity)
        code = _SUCCESS if status is _PUT_OK else _STORED.get(status)
        if code is not None:
            ar = result.append_result
            assert ar is not None
            if topic is not None:
                stats = self.controller.broker_stats_manager
                stats.inc_put(topic, ar.msg_num, ar.wrote_bytes)
                # (a batch is a normal one: RocketMQ reads the type from the batch request's own properties)
                mtype = METRICS_NORMAL if msg is None else metrics_message_type(msg.properties)
                stats.metrics.sent(topic, mtype, ar.msg_num, ar.wrote_bytes)
            header = SendMessageResponseHeader(msg_id=ar.msg_id, queue_id=queue_id, queue_offset=ar.logics_offset)
            if msg is not None and PROPERTY_TIMER_OUT_MS in msg.properties:
                header.recall_handle = self.recall_handle(msg)
            answer = response(request, code, ext_fields=header)
            if request.serialize_type is not _MSGPACK or self._region_not_default():
                # What a 4.9.8 broker adds (SendMessageProcessor); Java's client reads both without a null check.
                # pocketmq's own client takes their absence for the defaults, so msgpack answers carry them only
                # when they differ (its trace records name the region, and a broker with traceOn=false gets none).
                answer.ext_fields[PROPERTY_MSG_REGION], answer.ext_fields[PROPERTY_TRACE_SWITCH] = self.region_stamp()
            return answer
        if result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            remark = (
                "service not available now. It may be caused by one of the following reasons: the broker's disk "
                "is full, messages are put to the slave, message store has been shut down, etc."
            )
            if result.remark:
                remark += f" ({result.remark})"
            return response(request, ResponseCode.SERVICE_NOT_AVAILABLE, remark)
        code, remark = _REFUSED.get(result.status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))
        if "{" in remark:
            bc = self.controller.broker_config
            remark = remark.format(max_delay=bc.timer_max_delay_sec * 1000, enabled=str(bc.timer_wheel_enable).lower())
        if result.remark:
            remark = f"{remark} ({result.remark})"
        return response(request, code, remark)
