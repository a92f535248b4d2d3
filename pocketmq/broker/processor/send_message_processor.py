"""SendMessageProcessor: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and
CONSUMER_SEND_MSG_BACK (36)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from time import time_ns
from typing import TYPE_CHECKING

from pocketmq.common import mix_all
from pocketmq.common import topic_validator as tv
from pocketmq.common.constants import (
    MAX_PROPERTIES_LENGTH,
    MULTI_TAGS_FLAG,
    PROPERTY_CLUSTER,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.java_numbers import wrap_int
from pocketmq.common.java_text import is_blank
from pocketmq.common.message import (
    MessageExt,
    MessageExtBatch,
    MessageExtBrokerInner,
    delay_time_level,
    properties_to_string,
    string_to_properties,
)
from pocketmq.common.message_batch import MessageBatchError, split_message_batch
from pocketmq.common.mq_version import V3_4_9
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode, TopicSysFlag
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    ConsumerSendMsgBackRequestHeader,
    SendMessageRequestHeader,
    parse_send_message_request_header,
)
from pocketmq.remoting.transport import Channel
from pocketmq.storage.batch_checks import TIMER_REFUSAL
from pocketmq.storage.results import PutMessageResult, PutMessageStatus
from pocketmq.storage.timer.timer_routing import asks_for_the_wheel, timer_slot

from .abstract_send_message_processor import _MSGPACK, FAQ, AbstractSendMessageProcessor
from .base import response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)
_SUCCESS = ResponseCode.SUCCESS

_SEND_BATCH_MESSAGE = int(RequestCode.SEND_BATCH_MESSAGE)  # (a plain int: Enum members are slow to read)


def _is_transactional(header: SendMessageRequestHeader, props: dict[str, str]) -> bool:
    """TRAN_MSG true as Boolean.parseBoolean reads it, "TRUE" too (RocketMQ's test; a retry that copied the property
    from a committed message, reconsumed and delayed, is none), or the prepared flag alone."""
    return header.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED_TYPE or (
        props.get(PROPERTY_TRANSACTION_PREPARED, "").lower() == "true"
        and not (header.reconsume_times and PROPERTY_DELAY_TIME_LEVEL in props)
    )


def _stamped(properties: list[bytes], stamp: bytes) -> list[bytes]:
    """Each record's properties with the region stamp, but for those it would take past the 32,767 bytes a record's
    properties may have: the stamp is pocketmq's, and does not get a message refused (stamp_region)."""
    out = []
    for p in properties:
        sep = b"" if not p or p[-1] == 2 else b"\x02"
        out.append(p + sep + stamp if len(p) + len(sep) + len(stamp) <= MAX_PROPERTIES_LENGTH else p)
    return out


class _PutThrew(Exception):
    """What RocketMQ's put fails with by an exception: its remoting layer answers SYSTEM_ERROR with the exception's
    text and no header (so none of the region fields every other answer of a send carries)."""


def _check_delay_level(props: dict[str, str]) -> None:
    """A DELAY that is no int, where RocketMQ's put fails on Integer.parseInt (a half message's too: RocketMQ takes
    that one, then cannot commit it)."""
    try:
        delay_time_level(props)
    except ValueError as e:
        raise _PutThrew(f"the DELAY property is not a delay level: {e}") from None


class SendMessageProcessor(AbstractSendMessageProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            # The checks and the append only touch memory (the commit log is mapped), so sends are answered as
            # they are read. What may wait (the group commit under SYNC_FLUSH, a dispatcher that fell behind)
            # is the awaitable part.
            self.inline_handlers[code] = self.send
        self.handlers[RequestCode.CONSUMER_SEND_MSG_BACK] = self.consumer_send_msg_back

    def send(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | Awaitable[RemotingCommand]:
        header = parse_send_message_request_header(request.code, request.ext_fields)
        self.topic_created = False  # (msg_check sets it for this send alone, whatever ended the last one)
        # RocketMQ picks the batch path by the header's batch flag alone; code 320 without it would store the
        # encoded batch as one message, so the code counts too.
        try:
            if header.batch or request.code == _SEND_BATCH_MESSAGE:
                answer = self.send_batch_message(channel, request, header)
            else:
                answer = self.send_message(channel, request, header)
        except _PutThrew as e:
            answer = response(request, ResponseCode.SYSTEM_ERROR, str(e))  # (no region: Apache's put threw)
        else:
            if request.serialize_type is not _MSGPACK and (type(answer) is not RemotingCommand
                                                          or answer.code != _SUCCESS):
                answer = self.with_region(answer)  # (a stored message's answer has the region and trace switch)
        if self.topic_created:
            return self._after_registration(answer)
        return answer

    async def _after_registration(self, answer: RemotingCommand | Awaitable[RemotingCommand]) -> RemotingCommand:
        # Bounded as RocketMQ's one-way registration is by its connect timeout: a name server that is down delays
        # the auto-creating send, it does not fail it.
        task = self.controller.registration.after_change
        if task is not None:
            await asyncio.wait({task}, timeout=min(3.0, self.controller.broker_config.register_broker_timeout))
        return answer if isinstance(answer, RemotingCommand) else await answer

    # --- one message ---

    def send_message(
        self, channel: Channel, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        error, tc, queue_id = self.check_and_choose_queue(channel, request, header)
        if error is not None:
            return error
        assert tc is not None
        body = request.body
        error = self._check_body(request, body)
        if error is not None:
            return error
        assert body is not None
        props_string = header.properties or ""
        props = string_to_properties(props_string)
        if PROPERTY_MESSAGE_REPLY_TO_CLIENT in props and PROPERTY_CLUSTER not in props:
            props_string = self._add_cluster_to_request(props)
        conflict = self.check_message_type(request, tc, props)
        if conflict is not None:
            return conflict
        queue_id, props_string = self.priority_queue(tc, props, props_string, queue_id)
        props_string = self.stamp_region(props, props_string)
        topic = header.topic
        delay_text = props.get(PROPERTY_DELAY_TIME_LEVEL)  # (4.9.7's put reads it even on a send rerouted to the DLQ)
        if topic.startswith(mix_all.RETRY_GROUP_TOPIC_PREFIX):
            rerouted = self._handle_retry_and_dlq(request, header, props)
            if isinstance(rerouted, RemotingCommand):
                return rerouted
            if rerouted is not None:
                topic, queue_id = rerouted
                props.pop(PROPERTY_DELAY_TIME_LEVEL, None)
                props_string = properties_to_string(props)
        sys_flag = header.sys_flag
        transactional = _is_transactional(header, props)
        error = self._check_transaction(request, transactional, sys_flag)
        if error is not None:
            return error
        if delay_text is not None:
            _check_delay_level({PROPERTY_DELAY_TIME_LEVEL: delay_text})
        if tc.topic_filter_type == "MULTI_TAG":
            sys_flag |= MULTI_TAGS_FLAG
        # The producer's encoded properties go to the store as they came, with the region stamp appended.
        # RocketMQ re-encodes them to add CLUSTER and drop WAIT; pocketmq keeps what the producer sent.
        msg = MessageExtBrokerInner(
            topic=topic,
            body=body,
            properties=props,
            queue_id=queue_id,
            flag=header.flag,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=self.born_host(channel),
            store_host=self.controller.store_host,
            reconsume_times=header.reconsume_times or 0,
            properties_string=props_string,
        )
        if transactional:
            msg = self.controller.transactional_message_service.prepare_message(msg)
        return self.put_and_answer(msg, request, queue_id)

    def _check_body(self, request: RemotingCommand, body: bytes | None,
                    empty: str = "the message body length is zero") -> RemotingCommand | None:
        """The refusal of a body (a message's, or a whole batch's) the store would not take, or None."""
        if not body:
            # RocketMQ's client refuses it (Validators.checkMessage) and its 4.9.8 broker stores it; pocketmq's
            # broker refuses it too, so a client that skips the check learns it here.
            return response(request, ResponseCode.MESSAGE_ILLEGAL, empty)
        max_size = self.controller.broker_config.max_message_size
        if len(body) > max_size:
            # RocketMQ's wording (handlePutMessageResult), which names the limit but not the size
            return response(
                request,
                ResponseCode.MESSAGE_ILLEGAL,
                "the message is illegal, maybe msg body or properties length not matched. "
                f"msg body length limit {max_size}B, msg properties length limit 32KB.",
            )
        return None

    def _add_cluster_to_request(self, props: dict[str, str]) -> str:
        """A request (Producer.request): its replier learns the reply topic, <cluster>_REPLY_TOPIC, from CLUSTER.
        RocketMQ 4.9.8 adds CLUSTER to every message; pocketmq only to the ones that need it. Returns the
        properties encoded again."""
        props[PROPERTY_CLUSTER] = self.controller.broker_config.broker_cluster_name
        return properties_to_string(props)

    def _check_transaction(
        self, request: RemotingCommand, transactional: bool, sys_flag: int
    ) -> RemotingCommand | None:
        """The refusal of a transactional send this broker does not take, or of a producer's commit or rollback
        flag (only END_TRANSACTION writes committed records, and nothing writes rolled-back ones); or None."""
        if transactional:
            if not self.controller.broker_config.reject_transaction_message:
                return None
            return response(
                request,
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.controller.broker_config.broker_ip1}] sending transaction message is forbidden",
            )
        if sys_flag & TRANSACTION_TYPE_MASK:
            return response(request, ResponseCode.MESSAGE_ILLEGAL, "a producer cannot send a committed or rolled "
                            "back transaction message; send a prepared one and END_TRANSACTION it")
        return None

    def _handle_retry_and_dlq(
        self, request: RemotingCommand, header: SendMessageRequestHeader, props: dict[str, str]
    ) -> RemotingCommand | tuple[str, int] | None:
        """A producer send to %RETRY%group past its reconsume times goes to %DLQ%group instead, as does every
        one of an orderly group (one that holds a queue lock), as RocketMQ 5 does. (4.9.8 sends one whose
        reconsume times equal the maximum there too: a consumer's own retry, when its send-back failed, was one
        delivery short.)"""
        group = header.topic[len(mix_all.RETRY_GROUP_TOPIC_PREFIX) :]
        sgc = self.controller.subscription_group_manager.find_subscription_group_config(group)
        if sgc is None:
            return response(
                request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group} {FAQ}"
            )
        max_reconsume = sgc.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_reconsume = header.max_reconsume_times
        orderly = not self.controller.rebalance_lock_manager.is_lock_all_expired(group)
        if (header.reconsume_times or 0) <= max_reconsume and not orderly:
            return None
        dlq = mix_all.get_dlq_topic(group)
        self.controller.broker_stats_manager.metrics.to_dlq(header.producer_group, header.topic)
        tcm = self.controller.topic_config_manager
        tcm.create_topic_in_send_message_back_method(
            dlq, tv.DLQ_NUMS_PER_GROUP, PermName.PERM_WRITE | PermName.PERM_READ, 0
        )
        return dlq, self._random.randrange(99_999_999) % tv.DLQ_NUMS_PER_GROUP

    # --- batches ---

    def send_batch_message(
        self, channel: Channel, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        error, tc, queue_id = self.check_and_choose_queue(channel, request, header)
        if error is not None:
            return error
        assert tc is not None
        if header.topic.startswith(mix_all.RETRY_GROUP_TOPIC_PREFIX):
            return response(
                request, ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {header.topic}"
            )
        if header.sys_flag & TRANSACTION_TYPE_MASK:
            return response(request, ResponseCode.MESSAGE_ILLEGAL, "a batch cannot carry transaction messages")
        body = request.body
        refusal = self._check_body(request, body, "the batch has no messages")
        if refusal is not None:
            return refusal
        assert body is not None
        try:
            flags, bodies, properties = split_message_batch(body)
        except MessageBatchError as e:
            return response(request, ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {e}")
        if 0 in map(len, bodies):
            return response(
                request, ResponseCode.MESSAGE_ILLEGAL,
                f"message {list(map(len, bodies)).index(0)} of the batch: the message body length is zero",
            )
        batch_props = string_to_properties(header.properties or "")
        _check_delay_level(batch_props)
        if delay_time_level(batch_props) > 0:  # (CommitLog.putMessages: messageExtBatch.getDelayTimeLevel() > 0)
            return response(request, ResponseCode.MESSAGE_ILLEGAL, "a batch cannot carry a delay level")
        refusal = self._check_batch_timer(request, batch_props, queue_id)
        if refusal is not None:
            return refusal
        conflict = self.check_message_type(request, tc, batch_props)
        if conflict is not None:
            return conflict
        sys_flag = header.sys_flag & ~TRANSACTION_PREPARED_TYPE
        if tc.topic_filter_type == "MULTI_TAG":
            sys_flag |= MULTI_TAGS_FLAG
        # Each record keeps its own properties, with the region stamp appended. 4.9.7 appends the batch header's
        # properties to every record (CLUSTER and WAIT among them); pocketmq none: the clients' batch header holds
        # WAIT alone, and pocketmq's proxy sends the first message's properties there for the type check above.
        stamp = self.batch_region_stamp()
        batch = MessageExtBatch(
            header.topic,
            queue_id,
            flags,
            bodies,
            _stamped(properties, stamp),
            sys_flag,
            header.born_timestamp,
            self.born_host(channel),
            self.controller.store_host,
            header.reconsume_times or 0,
        )
        return self.put_and_answer(batch, request, queue_id)

    def _check_batch_timer(self, request: RemotingCommand, batch_props: dict[str, str], queue_id: int
                           ) -> RemotingCommand | None:
        """A timer in the batch header's properties, which RocketMQ 5's put reads as a single message's: a value
        it refuses is refused with its answer. One due later is refused too, where 5.5.0 parks the records in the
        wheel's topic without the TIMER_OUT_MS its enqueue reads, so that they are never delivered
        (docs/compatibility.md, "a batch whose header asks for a timer")."""
        if not asks_for_the_wheel(batch_props):
            return None
        slot = timer_slot(batch_props, self.controller.store_config, time_ns() // 1_000_000)
        if isinstance(slot, PutMessageResult):
            return self.handle_put_message_result(slot, request, queue_id)
        if slot is not None:
            return response(request, ResponseCode.MESSAGE_ILLEGAL, TIMER_REFUSAL)
        return None

    # --- consumer send-back (retry) ---

    async def consumer_send_msg_back(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """A consumer failed a message: store a copy in %RETRY%group with a delay, or in %DLQ%group."""
        header = request.decode_header(ConsumerSendMsgBackRequestHeader)
        c = self.controller
        group = header.group
        sgc = c.subscription_group_manager.find_subscription_group_config(group)
        if sgc is None:
            return response(
                request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group} {FAQ}"
            )
        if not PermName.is_writeable(c.broker_config.broker_permission):
            return response(
                request,
                ResponseCode.NO_PERMISSION,
                f"the broker[{c.broker_config.broker_ip1}] sending message is forbidden",
            )
        if sgc.retry_queue_nums <= 0:
            return response(request)  # the group wants no retries
        # The retry topic is created, and refused when not writable, before the message is looked up (as by 4.9.7:
        # a send-back of an offset naming no message leaves the group's retry topic behind)
        retry_topic = mix_all.get_retry_topic(group)
        topic_sys_flag = TopicSysFlag.FLAG_UNIT_SUB if header.unit_mode else 0
        tc = c.topic_config_manager.create_topic_in_send_message_back_method(
            retry_topic, sgc.retry_queue_nums, PermName.PERM_WRITE | PermName.PERM_READ, topic_sys_flag)
        if not PermName.is_writeable(tc.perm):
            return response(
                request, ResponseCode.NO_PERMISSION, f"the topic[{retry_topic}] sending message is forbidden"
            )
        original = await c.run_in_pull_executor(c.store.look_message_by_offset, header.offset)
        if original is None:
            return response(request, ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {header.offset}")
        max_reconsume = sgc.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_reconsume = header.max_reconsume_times
        msg = self.build_send_back_message(
            original, group, retry_topic, sgc.retry_queue_nums, max_reconsume, header.delay_level, topic_sys_flag,
        )
        if isinstance(msg, str):
            return response(request, ResponseCode.NO_PERMISSION, msg)
        if msg.topic.startswith(mix_all.DLQ_GROUP_TOPIC_PREFIX):  # (counted before the put, as RocketMQ 5)
            c.broker_stats_manager.metrics.to_dlq(group, header.origin_topic or "")
        result = await self.put_message(msg)
        if result.status is PutMessageStatus.PUT_OK:
            c.broker_stats_manager.inc_send_back(group, msg.properties.get(PROPERTY_RETRY_TOPIC, original.topic))
            return response(request)
        return response(request, ResponseCode.SYSTEM_ERROR, f"{result.status.value} {result.remark}".strip())

    def build_send_back_message(
        self,
        original: MessageExt,
        group: str,
        retry_topic: str,
        retry_queue_nums: int,
        max_reconsume: int,
        delay_level: int | None,
        topic_sys_flag: int = 0,
        extra_properties: dict[str, str] | None = None,
    ) -> MessageExtBrokerInner | str:
        """A failed message's copy for ``retry_topic`` (created when missing), or for %DLQ%group once it used up
        ``max_reconsume`` times (or ``delay_level`` < 0): the one implementation of "give a message back" that
        CONSUMER_SEND_MSG_BACK and POP's revive share. ``delay_level`` None: no delay (POP's invisible time was
        the delay); 0: the level follows the reconsume times. A str is the refusal (a retry topic not writable)."""
        c = self.controller
        tcm = c.topic_config_manager
        rw = PermName.PERM_WRITE | PermName.PERM_READ
        new_topic = retry_topic
        queue_id = self._random.randrange(99_999_999) % retry_queue_nums
        tc = tcm.create_topic_in_send_message_back_method(new_topic, retry_queue_nums, rw, topic_sys_flag)
        if not PermName.is_writeable(tc.perm):
            return f"the topic[{new_topic}] sending message is forbidden"
        props = dict(original.properties)
        props.setdefault(PROPERTY_RETRY_TOPIC, original.topic)
        props["WAIT"] = "false"
        props.update(extra_properties or {})
        if original.reconsume_times >= max_reconsume or (delay_level is not None and delay_level < 0):
            new_topic = mix_all.get_dlq_topic(group)
            queue_id = self._random.randrange(99_999_999) % tv.DLQ_NUMS_PER_GROUP
            tcm.create_topic_in_send_message_back_method(new_topic, tv.DLQ_NUMS_PER_GROUP, rw, 0)
            props.pop(PROPERTY_DELAY_TIME_LEVEL, None)
        elif delay_level is not None:
            # (Java's int sums: 3 + reconsume times past the int's largest is a negative level, no delay)
            level = delay_level if delay_level > 0 else wrap_int(3 + original.reconsume_times)
            props[PROPERTY_DELAY_TIME_LEVEL] = str(level)
        if is_blank(props.get(PROPERTY_ORIGIN_MESSAGE_ID, "")):  # (UtilAll.isBlank: " " is none either)
            props[PROPERTY_ORIGIN_MESSAGE_ID] = original.offset_msg_id
        return MessageExtBrokerInner(
            topic=new_topic,
            body=original.body,
            properties=props,
            queue_id=queue_id,
            flag=original.flag,
            sys_flag=original.sys_flag,
            born_timestamp=original.born_timestamp,
            born_host=self.host_bytes(original.born_host),
            store_host=c.store_host,
            reconsume_times=wrap_int(original.reconsume_times + 1),  # (the int's largest + 1 is its smallest)
        )
