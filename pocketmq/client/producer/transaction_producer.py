"""TransactionProducer: RocketMQ's TransactionMQProducer (sendMessageInTransaction and the check-back).

    class Listener:
        def execute_local_transaction(self, msg, arg):    # after the half message is stored
            return LocalTransactionState.COMMIT_MESSAGE
        def check_local_transaction(self, msg):           # when the broker asks about an undecided one
            return LocalTransactionState.ROLLBACK_MESSAGE

    async with TransactionProducer("PG", "127.0.0.1:9876", Listener()) as producer:
        result = await producer.send_message_in_transaction(Message("TopicTest", b"order 1"), arg=None)

A send stores a *half* message the topic's consumers do not see; the listener's answer then commits it (the
consumers get it) or rolls it back (they never do). When the answer is UNKNOW, or never arrives (the producer
died), the broker later asks a producer of the same group with CHECK_TRANSACTION_STATE, and
``check_local_transaction`` answers. Listener methods may be plain functions or coroutines.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import struct
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Protocol

from pocketmq.common.codec import CorruptRecordError, decode, decode_message_id
from pocketmq.common.constants import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from pocketmq.common.message import MessageExt
from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError, RemotingError
from pocketmq.remoting.transaction_header import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from pocketmq.remoting.transport import Channel

from ..exceptions import MQBrokerException, MQClientException
from ..impl.mq_client_instance import MQClientInstance
from ..message import Message, SendResult, SendStatus
from ..message_const import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
)
from ..trace.trace_hooks import EndTransactionTraceHook
from .producer import Producer

log = logging.getLogger(__name__)

END_TRANSACTION_TIMEOUT = 3.0  # the check path's endTransactionOneway timeout (RocketMQ: 3000 ms)


class LocalTransactionState(enum.Enum):
    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"  # (sic, RocketMQ's spelling)


_SYS_FLAG = {
    LocalTransactionState.COMMIT_MESSAGE: TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: TRANSACTION_NOT_TYPE,
}


class TransactionListener(Protocol):
    def execute_local_transaction(
        self, msg: Message, arg: Any
    ) -> LocalTransactionState | Awaitable[LocalTransactionState]: ...

    def check_local_transaction(
        self, msg: MessageExt
    ) -> LocalTransactionState | Awaitable[LocalTransactionState]: ...


@dataclass(slots=True)
class TransactionSendResult(SendResult):
    """RocketMQ's TransactionSendResult: a half message's SendResult and what the local transaction answered."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW


class TransactionProducer(Producer):
    """A Producer that also sends transactional messages. ``check_request_hold_max`` bounds the checks waiting
    for the listener (RocketMQ's checkRequestHoldMax, 2000); further ones are dropped (the broker asks again)."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        transaction_listener: TransactionListener | None = None,
        *,
        check_request_hold_max: int = 2000,
        **options: Any,
    ) -> None:
        super().__init__(group, namesrv_addr, **options)
        self.transaction_listener = transaction_listener
        self.check_request_hold_max = check_request_hold_max
        self._checks: set[asyncio.Task[None]] = set()

    async def _start_services(self, instance: MQClientInstance) -> None:
        """Start, and make the brokers know this producer's group before its first send: a producer started to
        take over for one that died must be asked about that one's half messages (as in RocketMQ, the brokers
        are learned from the route of TBW102, the createTopicKey)."""
        await super()._start_services(instance)
        register_check_processor(instance)
        if await instance.update_topic_route_info_from_name_server(self.create_topic_key):
            await instance.send_heartbeat_to_all_brokers()

    async def _do_shutdown(self, instance: MQClientInstance) -> None:
        for task in list(self._checks):
            task.cancel()
        if self._checks:
            await asyncio.wait(list(self._checks))
        await super()._do_shutdown(instance)

    async def __aenter__(self) -> TransactionProducer:
        await self.start()
        return self

    # --- sending (sendMessageInTransaction) ----------------------------------------------------------------

    async def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """Store ``msg`` as a half message, run the listener's local transaction, and tell the broker its
        outcome. A send that fails raises (nothing is stored, the listener is not called); a listener that
        raises leaves the state UNKNOW, so the broker asks ``check_local_transaction`` later."""
        listener = self.transaction_listener
        if listener is None:
            raise MQClientException("TransactionListener is null")
        msg.properties.pop(PROPERTY_DELAY_TIME_LEVEL, None)  # a transactional message cannot be delayed
        self._checked(msg, None)
        msg.put_property(PROPERTY_TRANSACTION_PREPARED, "true")
        msg.put_property(PROPERTY_PRODUCER_GROUP, self.group)
        try:
            send_result = await self.send(msg)
        except (RemotingError, MQBrokerException, MQClientException) as e:
            raise MQClientException(f"send message Exception: {e}") from e
        state = LocalTransactionState.UNKNOW
        local_exception: BaseException | None = None
        transaction_id = msg.properties.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or None
        if send_result.send_status is SendStatus.SEND_OK:
            try:
                answer = await _resolve(listener.execute_local_transaction(msg, arg))
                state = _state_of(answer, "execute_local_transaction", transaction_id)
                if state is not LocalTransactionState.COMMIT_MESSAGE:
                    log.info("executeLocalTransactionBranch return %s, %s", state.value, transaction_id)
            except Exception as e:
                log.info("executeLocalTransactionBranch exception, %s", transaction_id, exc_info=True)
                local_exception = e
        else:
            # Stored but not safely (flush or slave timeout): RocketMQ rolls it back.
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            await self.end_transaction(send_result, state, local_exception, msg)
        except (RemotingError, MQClientException) as e:
            log.warning("local transaction %s ended %s, but the broker was not told (it will ask): %s",
                        transaction_id, state.value, e)
        return TransactionSendResult(
            send_status=send_result.send_status,
            msg_id=send_result.msg_id,
            offset_msg_id=send_result.offset_msg_id,
            message_queue=send_result.message_queue,
            queue_offset=send_result.queue_offset,
            transaction_id=transaction_id,
            local_transaction_state=state,
        )

    async def end_transaction(
        self, send_result: SendResult, state: LocalTransactionState, local_exception: BaseException | None = None,
        msg: Message | None = None,
    ) -> None:
        """endTransaction: a one-way END_TRANSACTION to the broker that stored the half message (and, traced, an
        EndTransaction record of ``msg``)."""
        _, commit_log_offset = decode_message_id(send_result.offset_msg_id or send_result.msg_id)
        instance = self.instance
        addr = instance.find_broker_address_in_publish(send_result.message_queue.broker_name)
        if addr is None:
            raise MQClientException(f"The broker[{send_result.message_queue.broker_name}] not exist")
        header = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=send_result.queue_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=_SYS_FLAG[state],
            from_transaction_check=False,
            msg_id=send_result.msg_id,
            transaction_id=send_result.transaction_id or send_result.msg_id,
        )
        remark = f"executeLocalTransactionBranch exception: {local_exception!r}" if local_exception else None
        await _end_transaction_oneway(instance, addr, header, remark)
        if msg is not None:
            self._trace_end(msg, send_result.msg_id, addr, state, header.transaction_id, from_check=False)

    def _trace_end(self, msg: Message | MessageExt, msg_id: str, addr: str, state: LocalTransactionState,
                   transaction_id: str | None, from_check: bool) -> None:
        dispatcher = self.trace_dispatcher
        if dispatcher is not None:
            EndTransactionTraceHook(dispatcher, self.group).end_transaction(
                msg, msg_id, addr, state.value, transaction_id, from_check)

    # --- the check-back (checkTransactionState) ------------------------------------------------------------

    def check_transaction_state(self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader) -> None:
        """Ask the listener about ``msg`` in a task and send its answer to the broker at ``addr``."""
        if len(self._checks) >= self.check_request_hold_max:
            log.warning("%d transaction checks are waiting: dropping the check of %s (the broker asks again)",
                        len(self._checks), header.transaction_id)
            return
        task = asyncio.get_running_loop().create_task(self._check(addr, msg, header))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _check(self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader) -> None:
        listener = self.transaction_listener
        if listener is None:
            log.warning("CheckTransactionState, pick transactionListener by group[%s] failed", self.group)
            return
        state = LocalTransactionState.UNKNOW
        error: BaseException | None = None
        try:
            answer = await _resolve(listener.check_local_transaction(msg))
            state = _state_of(answer, "check_local_transaction", header.transaction_id)
        except Exception as e:
            log.error("Broker call checkTransactionState, but checkLocalTransactionState exception", exc_info=True)
            error = e
        end = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=_SYS_FLAG[state],
            from_transaction_check=True,
            msg_id=msg.uniq_key or msg.offset_msg_id,
            transaction_id=header.transaction_id,
        )
        remark = f"checkLocalTransactionState Exception: {error!r}" if error else None
        try:
            await _end_transaction_oneway(self.instance, addr, end, remark)
        except (RemotingError, MQClientException) as e:
            log.warning("cannot answer the check of %s: %s", header.transaction_id, e)
            return
        self._trace_end(msg, end.msg_id or "", addr, state, header.transaction_id, from_check=True)


TransactionMQProducer = TransactionProducer  # RocketMQ's name


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _state_of(answer: Any, method: str, transaction_id: str | None) -> LocalTransactionState:
    """A listener's answer as a state: anything but a LocalTransactionState is UNKNOW (the broker asks again).

    The enum's name as a string, or a bool, is not taken for what it seems to say: as the push consumer does with
    a listener's return value that is not a status, it is refused, and loudly, not silently held back unknown.
    None (no return statement) stays UNKNOW quietly, as RocketMQ takes a null answer."""
    if isinstance(answer, LocalTransactionState):
        return answer
    if answer is not None:
        log.warning("%s returned %r, not a LocalTransactionState: transaction %s stays UNKNOW", method, answer,
                    transaction_id)
    return LocalTransactionState.UNKNOW


async def _end_transaction_oneway(
    instance: MQClientInstance, addr: str, header: EndTransactionRequestHeader, remark: str | None
) -> None:
    request = RemotingCommand.request(RequestCode.END_TRANSACTION, header, oneway=True)
    request.remark = remark
    await instance.mq_client_api.remoting_client.invoke_oneway(addr, request)


def register_check_processor(instance: MQClientInstance) -> None:
    """ClientRemotingProcessor.checkTransactionState on the instance's connections (idempotent)."""

    async def check_transaction_state(channel: Channel, request: RemotingCommand) -> None:
        try:
            header = request.decode_header(CheckTransactionStateRequestHeader)
            msg = decode(request.body or b"", decompress=True)
        except (HeaderError, CorruptRecordError, ValueError, struct.error) as e:
            log.warning("bad CHECK_TRANSACTION_STATE from %s: %s", channel.remote_address, e)
            return None
        group = msg.properties.get(PROPERTY_PRODUCER_GROUP)
        if group is None:
            log.warning("checkTransactionState, pick producer group failed")
            return None
        producer = instance.producer_table.get(group)
        if not isinstance(producer, TransactionProducer):
            log.debug("checkTransactionState, pick producer by group[%s] failed", group)
            return None
        producer.check_transaction_state(channel.remote_address, msg, header)
        return None

    instance.mq_client_api.remoting_client.register_processor(
        RequestCode.CHECK_TRANSACTION_STATE, check_transaction_state
    )
