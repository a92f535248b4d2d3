"""TransactionalMessageServiceImpl: half messages in, commits and rollbacks out, and the check of half messages
whose producer never said (RocketMQ 4.9.8's algorithm, see docs/broker.md "Transactional messages").

The check walks each queue of RMQ_SYS_TRANS_HALF_TOPIC from the offset CID_RMQ_SYS_TRANS last reached, with the
op queue's "d" records telling which half offsets are done. A half message that is not done, older than
``transactionTimeOut`` (or its CHECK_IMMUNITY_TIME_IN_SECONDS), is written again at the end of the half queue
with TRANSACTION_CHECK_TIMES counted up, and its producer group is asked about the new copy; the walk then moves
past the old one. So an undecided message is asked about once per check round (``transactionCheckInterval``)
until it is decided or has been asked ``transactionCheckMax`` times, after which it is discarded to
TRANS_CHECK_MAX_TIME_TOPIC.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Protocol

from pocketmq.common.constants import PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS, PROPERTY_TRANSACTION_CHECK_TIMES
from pocketmq.common.message import MessageExt, MessageExtBrokerInner
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from pocketmq.remoting.tasks import run_whole
from pocketmq.storage.results import GetMessageStatus, PutMessageStatus

from .transactional_message_bridge import TransactionalMessageBridge
from .transactional_message_util import (
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    REMOVE_TAG,
    half_message,
    now_ms,
    renewed_half_message,
)

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

MAX_QUEUE_PROCESS_TIME = 60_000  # ms one queue's pass may take (RocketMQ's constant)
OP_PULL_NUMS = 32
MAX_RETRY_COUNT_WHEN_HALF_NULL = 1
_NO_NEW = (GetMessageStatus.NO_MESSAGE_IN_QUEUE, GetMessageStatus.OFFSET_OVERFLOW_ONE,
           GetMessageStatus.NO_MATCHED_LOGIC_QUEUE)


class CheckListener(Protocol):
    """AbstractTransactionalMessageCheckListener: what the check does with what it finds."""

    async def resolve_half_msg(self, msg: MessageExt) -> None: ...

    async def resolve_discard_msg(self, msg: MessageExt) -> None: ...


class TransactionalMessageService:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self.bridge = TransactionalMessageBridge(controller)
        self.checks_sent = 0  # observability (tests, stats)
        self.discarded = 0

    # --- the send path ---

    def prepare_message(self, msg: MessageExtBrokerInner) -> MessageExtBrokerInner:
        """The half message to store for a transactional send (asyncPrepareMessage)."""
        self.bridge.ensure_topic(RMQ_SYS_TRANS_HALF_TOPIC)
        return half_message(msg)

    # --- END_TRANSACTION ---

    async def lookup_half_message(self, commit_log_offset: int) -> MessageExt | None:
        """commitMessage / rollbackMessage: the half message at ``commit_log_offset`` (None if there is none)."""
        return await self.bridge.look_message_by_offset(commit_log_offset)

    async def delete_prepare_message(self, half: MessageExt) -> bool:
        """The op "d" record for ``half``: the check passes over it from now on."""
        return await self.bridge.put_op_message(half)

    # --- the check ---

    async def check(self, transaction_timeout: int, transaction_check_max: int, listener: CheckListener) -> None:
        """One pass over every half queue. ``transaction_timeout`` is in milliseconds."""
        for queue_id in self.bridge.half_queue_ids():
            try:
                await self._check_queue(queue_id, transaction_timeout, transaction_check_max, listener)
            except Exception:
                log.exception("checking half queue %d failed", queue_id)

    async def _check_queue(self, queue_id: int, timeout: int, check_max: int, listener: CheckListener) -> None:
        bridge = self.bridge
        half_offset = bridge.fetch_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, queue_id)
        op_offset = bridge.fetch_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id)
        ops = _OpReader(bridge, queue_id, op_offset, half_offset)
        walk = _Walk(half_offset)
        try:
            await self._walk(queue_id, ops, walk, timeout, check_max, listener)
        finally:
            # Also when shutdown cancels the pass: a half message already written back (or discarded) is not
            # written again by the next broker on this store, which would ask, and commit, a second copy.
            if walk.new_offset != half_offset:
                bridge.update_consume_offset(RMQ_SYS_TRANS_HALF_TOPIC, queue_id, walk.new_offset)
            new_op_offset = _calculate_op_offset(ops.done, op_offset)
            if new_op_offset != op_offset:
                bridge.update_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, queue_id, new_op_offset)

    async def _walk(self, queue_id: int, ops: _OpReader, walk: _Walk, timeout: int, check_max: int,
                    listener: CheckListener) -> None:
        start = now_ms()
        await ops.fill()
        null_count = 1
        i = walk.new_offset
        while now_ms() - start <= MAX_QUEUE_PROCESS_TIME:
            if i in ops.remove_map:
                ops.done.append(ops.remove_map.pop(i))  # committed or rolled back: nothing to ask
                i += 1
                walk.new_offset = i
                continue
            status, next_begin, msg = await self.bridge.get_half_message(queue_id, i)
            if msg is None:
                null_count += 1
                if null_count > MAX_RETRY_COUNT_WHEN_HALF_NULL + 1 or status in _NO_NEW:
                    break
                walk.new_offset = i = next_begin  # (removed files, a corrected offset: go on where the store says)
                continue
            if self._need_discard(msg, check_max) or self._need_skip(msg):
                await run_whole(walk.past(i, listener.resolve_discard_msg(msg)))
                self.discarded += 1
                i += 1
                continue
            if msg.store_timestamp >= start:
                break  # stored during this pass: the next one looks at it
            age = now_ms() - msg.born_timestamp
            immunity = timeout
            immunity_text = msg.properties.get(PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
            if immunity_text is not None:
                immunity = _immunity_time(immunity_text, timeout)
                if age < immunity:
                    if await run_whole(walk.past(i, self._check_prepare_queue_offset(ops, msg))):
                        i += 1
                        continue
                    break
            elif 0 <= age < immunity:
                break  # too young to ask about, and so is everything after it
            if not ops.exhausted:
                await ops.fill()  # an op for this offset may still be ahead in the op queue
                continue
            # Due (RocketMQ asks from one millisecond later, and re-reads the op queue meanwhile), or born in the
            # future by the broker's clock: ask.
            if not await run_whole(walk.past(i, self._put_back_half_msg(msg))):
                break  # the store refuses: try again next round, from this offset
            await listener.resolve_half_msg(msg)
            self.checks_sent += 1
            i += 1

    @staticmethod
    def _need_discard(msg: MessageExt, check_max: int) -> bool:
        """isNeedDiscard: checked ``check_max`` times already; otherwise counts this check in the message."""
        props = msg.properties
        text = props.get(PROPERTY_TRANSACTION_CHECK_TIMES)
        times = 1
        if text is not None:
            times = _to_int(text, 0)
            if times >= check_max:
                return True
            times += 1
        props[PROPERTY_TRANSACTION_CHECK_TIMES] = str(times)
        return False

    def _need_skip(self, msg: MessageExt) -> bool:
        """isNeedSkip: older than the commit log's retention (fileReservedTime hours): its file may be gone."""
        reserved_ms = self.controller.broker_config.file_reserved_time * 3600 * 1000
        return now_ms() - msg.born_timestamp > reserved_ms

    async def _put_back_half_msg(self, msg: MessageExt) -> bool:
        """putBackHalfMsgQueue: write the renewed copy; ``msg`` takes the copy's offsets (what the check asks
        about, and what the producer's END_TRANSACTION names)."""
        result = await self.bridge.put_message(renewed_half_message(msg))
        if result.status in _NEVER_STORED:
            # Its copy can never be written (properties at the limit, grown by the check's own count): asked about
            # once as it is, so the queue behind it goes on, rather than refused at every pass, stopping the queue
            # for good (as RocketMQ's does). Its producer can still commit it; the check cannot ask again.
            log.error("half message %s cannot be written back (%s %s): asked about once more, then no more",
                      msg.msg_id, result.status.value, result.remark)
            return True
        if not result.is_ok or result.append_result is None:
            log.error("writing back half message %s failed: %s %s", msg.msg_id, result.status.value, result.remark)
            return False
        ar = result.append_result
        msg.queue_offset = ar.logics_offset
        msg.commit_log_offset = ar.wrote_offset
        return True

    async def _check_prepare_queue_offset(self, ops: _OpReader, msg: MessageExt) -> bool:
        """checkPrepareQueueOffset, for a message still within its own immunity time: done when the first copy's
        offset has its op; otherwise written again (not asked about yet). True: move on."""
        first = msg.properties.get(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET)
        if first is not None:
            first_offset = _to_int(first, -1)
            if first_offset == -1:
                return False
            if first_offset in ops.remove_map:
                ops.done.append(ops.remove_map.pop(first_offset))
                return True
        result = await self.bridge.put_message(renewed_half_message(msg))
        return result.is_ok


# A write the store refuses for what the record is, not for the moment: trying again changes nothing.
_NEVER_STORED = (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)


class _Walk:
    """How far one pass over a half queue got: the half offset it commits, even when it is cancelled."""

    def __init__(self, offset: int) -> None:
        self.new_offset = offset

    async def past(self, offset: int, step: Awaitable[bool | None]) -> bool:
        """``step`` (a write for the message at ``offset``), then the walk past that message unless the step
        refused (False); run whole, so the write and the progress that records it are never cut apart."""
        moved = await step is not False
        if moved:
            self.new_offset = offset + 1
        return moved


class _OpReader:
    """fillOpRemoveMap: the op records of one queue, read 32 at a time. ``remove_map`` maps a half offset to the
    op offset saying it is done; ``done`` collects op offsets that need no more looking at."""

    def __init__(self, bridge: TransactionalMessageBridge, queue_id: int, op_offset: int, half_offset: int) -> None:
        self.bridge = bridge
        self.queue_id = queue_id
        self.next_offset = op_offset
        self.half_offset = half_offset
        self.remove_map: dict[int, int] = {}
        self.done: list[int] = []
        self.exhausted = False

    async def fill(self) -> None:
        status, next_begin, msgs = await self.bridge.get_op_messages(self.queue_id, self.next_offset, OP_PULL_NUMS)
        if not msgs:
            self.exhausted = True
            if status not in _NO_NEW and status is not GetMessageStatus.FOUND:
                self.bridge.update_consume_offset(RMQ_SYS_TRANS_OP_HALF_TOPIC, self.queue_id, next_begin)
                self.next_offset = next_begin
            return
        for op in msgs:
            if op.tags != REMOVE_TAG:
                log.error("an op record with tag %r (not %r) at offset %d", op.tags, REMOVE_TAG, op.queue_offset)
                self.done.append(op.queue_offset)
                continue
            half = _to_int(op.body.decode(errors="replace"), -1)
            if half < self.half_offset:
                self.done.append(op.queue_offset)
            else:
                self.remove_map[half] = op.queue_offset
        self.next_offset = next_begin


def _calculate_op_offset(done: list[int], old: int) -> int:
    """The op queue's new offset: past every op right after ``old`` that needs no more looking at."""
    new = old
    for offset in sorted(set(done)):
        if offset != new:
            break
        new += 1
    return new


def _immunity_time(text: str, timeout: int) -> int:
    """getImmunityTime: CHECK_IMMUNITY_TIME_IN_SECONDS in ms; -1 (or unreadable) means the timeout."""
    seconds = _to_int(text, -1)
    return timeout if seconds == -1 else seconds * 1000


def _to_int(text: str, default: int) -> int:
    try:
        return int(text)
    except ValueError:
        return default
