"""DefaultMessageStore's read side: get_message, the queue offsets and lookups by offset, time and key."""

from __future__ import annotations

import struct

from pocketmq.common.codec import CorruptRecordError, decode
from pocketmq.common.message import MessageExt

from .commit_log import CommitLog
from .config import MessageStoreConfig
from .consume_queue import ConsumeQueue
from .get_message import read_queue
from .index_service import IndexService
from .message_filter import MessageFilter
from .results import GetMessageResult, GetMessageStatus, QueryMessageResult


class MessageStoreLookup:
    """Reads of DefaultMessageStore (a mixin: the state is the store's)."""

    config: MessageStoreConfig
    commit_log: CommitLog
    consume_queue_table: dict[tuple[str, int], ConsumeQueue]
    index_service: IndexService

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: MessageFilter | None = None) -> GetMessageResult:
        """Read up to `max_msg_nums` raw records of a queue from `offset` (at most 32 / 256 KiB)."""
        cq = self.consume_queue_table.get((topic, queue_id))
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, next_begin_offset=0)
        min_offset = cq.get_min_offset_in_queue()
        max_offset = cq.get_max_offset_in_queue()
        result = GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, min_offset=min_offset, max_offset=max_offset)
        if max_offset == 0:
            result.next_begin_offset = 0
        elif offset < min_offset:
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_TOO_SMALL, min_offset
        elif offset == max_offset:
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_OVERFLOW_ONE, offset
        elif offset > max_offset:
            result.status, result.next_begin_offset = GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset
        else:
            read_queue(self.commit_log, self.config, cq, offset, max_msg_nums, message_filter, result)
        return result

    # -- offsets and lookups ----------------------------------------------------------------------
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queue_table.get((topic, queue_id))
        return cq.get_max_offset_in_queue() if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queue_table.get((topic, queue_id))
        return cq.get_min_offset_in_queue() if cq is not None else -1

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.consume_queue_table.get((topic, queue_id))
        entry = cq.get_entry(consume_queue_offset) if cq is not None else None
        return entry[0] if entry else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        cq = self.consume_queue_table.get((topic, queue_id))
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(timestamp, self.commit_log.pickup_store_timestamp,
                                              self.commit_log.get_min_offset())

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.consume_queue_table.get((topic, queue_id))
        entry = cq.get_entry(consume_queue_offset) if cq is not None else None
        return self.commit_log.pickup_store_timestamp(entry[0], entry[1]) if entry else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        return self.get_message_store_timestamp(topic, queue_id, self.get_min_offset_in_queue(topic, queue_id))

    def get_min_phy_offset(self) -> int:
        return self.commit_log.get_min_offset()

    def get_max_phy_offset(self) -> int:
        return self.commit_log.get_max_offset()

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        if size is None:
            size = self.commit_log.read_size_at(commit_log_offset)
            if size <= 0:
                return None
        return self.commit_log.get_message(commit_log_offset, size)

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None:
        raw = self.select_one_message_by_offset(commit_log_offset, size)
        if raw is None:
            return None
        try:
            return decode(raw)
        except (CorruptRecordError, struct.error, UnicodeDecodeError):
            return None

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records whose KEYS (or UNIQ_KEY) contain `key`, stored between begin and end (ms): the newest
        ``max_num`` the index finds, in commit-log order (RocketMQ sorts them: mqadmin prints what it gets, so a
        message's trace spans come oldest first). The index's last update (time, commit-log offset) comes with
        what is found; a result of nothing has 0 and 0, as RocketMQ's queryMessage leaves them when its index
        finds nothing."""
        offsets, last_ts, last_phy = self.index_service.query_offset(topic, key, max_num, begin, end)
        result = QueryMessageResult()
        # Each entry found is one message of the answer: a record indexed under the key twice (KEYS "k k", a
        # UNIQ_KEY that is one of its KEYS) comes twice and counts twice toward maxNum, as on 4.9.7
        for phy in sorted(offsets):
            raw = self.select_one_message_by_offset(phy)
            if raw is None or not self._record_matches(raw, topic, key, begin, end):
                continue  # a hash collision, a neighbour within the index's second, or data deleted since
            result.buffers.append(raw)
        if result.buffers:
            result.index_last_update_timestamp, result.index_last_update_phyoffset = last_ts, last_phy
        return result

    @staticmethod
    def _record_matches(raw: bytes, topic: str, key: str, begin: int, end: int) -> bool:
        """The record is of ``topic``, has ``key``, and was stored within [begin, end] (the index keeps times
        to the second, so it gives the records of the seconds at either end)."""
        try:
            msg = decode(raw)
        except (CorruptRecordError, struct.error, UnicodeDecodeError):
            return False
        return (msg.topic == topic and (key in msg.keys or msg.uniq_key == key)
                and begin <= msg.store_timestamp <= end)
