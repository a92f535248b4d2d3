"""A group's place in a queue under POP: where its next pop reads from (RocketMQ 5's PopMessageProcessor
getPopOffset, getInitOffset and resetPopOffset), the store read and the offset's commit. Pop, peek, notification
and the revive service read queues through it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX
from pocketmq.common.pop_ack_constants import CONSUME_INIT_MODE_MIN
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import MessageFilter
from pocketmq.storage.results import GetMessageResult

from .pop_buffer_merge_service import PopBufferMergeService

if TYPE_CHECKING:
    from ..broker_controller import BrokerController


class PopOffsets:
    def __init__(self, controller: BrokerController, buffer_merge: PopBufferMergeService) -> None:
        self.controller = controller
        # Pops buffered for their acks hold offsets the committed ones do not have yet.
        self.buffer_merge = buffer_merge

    async def read(self, group: str, topic: str, queue_id: int, offset: int, n: int, flt: MessageFilter,
                   counted: bool = True) -> GetMessageResult:
        """A store read of a queue; ``counted`` in getFoundTps / getMissTps (the revive service's own are not)."""
        c = self.controller
        got = c.get_message(group, topic, queue_id, offset, n, flt)
        if not isinstance(got, GetMessageResult):
            got = await got
        if counted:
            c.broker_stats_manager.inc_get_times(got.message_count > 0)
        return got

    def commit_offset(self, channel: Channel | None, group: str, topic: str, queue_id: int, offset: int) -> None:
        who = channel.remote_address if channel is not None else "pop"
        self.controller.consumer_offset_manager.commit_offset(who, group, topic, queue_id, offset)

    def reset_pop_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        """RocketMQ 5's resetPopOffset: the offset an admin reset the queue to, taken by the group's first pop of it
        since (which ends the hold, as a pull does). What the group had of the queue before is let go: an orderly
        batch still out no longer blocks it, and the buffered pops' offsets are not committed over the reset; the
        pop reads from the reset offset."""
        c = self.controller
        offset = c.consumer_offset_manager.query_then_erase_reset_offset(topic, group, queue_id)
        if offset is not None:
            c.consumer_order_info_manager.clear_block(topic, group, queue_id)
            self.buffer_merge.clear_offset_queue(topic, group, queue_id)
            c.consumer_offset_manager.commit_offset("ResetPopOffset", group, topic, queue_id, offset)
        return offset

    def pop_offset(self, group: str, topic: str, queue_id: int, init_mode: int, init: bool = True) -> int:
        """The group's offset in the queue, past the pops buffered for their acks (which have not moved the committed
        offset yet); for a group without one, where it starts (init_offset, committed when ``init``)."""
        offset = self.controller.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = self.init_offset(group, topic, queue_id, init_mode, init)
        return max(offset, self.buffer_merge.latest_offset(topic, group, queue_id))

    def init_offset(self, group: str, topic: str, queue_id: int, init_mode: int, init: bool) -> int:
        """RocketMQ's getInitOffset: the queue's first message (ConsumeInitMode MIN, and in retry topics), else its
        first one when that is still in memory, else its last one; 0 in an empty queue whatever the mode (5.5.0
        commits 0 there, where a queue the store has no file of yet would give -1: the group would then have no
        offset, and its next pop would start over with that pop's initMode, past what was sent meanwhile)."""
        c = self.controller
        store = c.store
        if init_mode == CONSUME_INIT_MODE_MIN or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            offset = max(0, store.get_min_offset_in_queue(topic, queue_id))
        elif (c.broker_config.init_pop_offset_by_check_msg_in_mem and store.get_min_offset_in_queue(topic, queue_id)
              <= 0 and c.is_in_memory(topic, queue_id, 0)):
            offset = 0
        else:
            offset = max(0, store.get_max_offset_in_queue(topic, queue_id) - 1)
        if init:
            c.consumer_offset_manager.commit_offset("getPopOffset", group, topic, queue_id, offset)
        return offset
