"""The read path of get_message (DefaultMessageStore.getMessage): consume-queue entries to raw records.

Scans up to max(16000 bytes, 20 x max_msg_nums) of entries, skips what the filter rejects, and slices
runs of adjacent records out of the commit log in one piece, up to 32 messages / 256 KiB.

A pull that takes every message (no tag filter, the usual consumer) reads only the entries it can return and
unpacks them in one call; the general loop, one Python iteration per entry, is most of such a pull's time.
"""

from __future__ import annotations

import logging
import struct

from pocketmq.common.constants import CQ_PRE_BLANK_SIZE, CQ_STORE_UNIT_SIZE

from .commit_log import CommitLog
from .config import MessageStoreConfig
from .consume_queue import CQ_ENTRY, ConsumeQueue
from .message_filter import MessageFilter
from .results import GetMessageResult, GetMessageStatus

log = logging.getLogger(__name__)


def read_queue(commit_log: CommitLog, cfg: MessageStoreConfig, cq: ConsumeQueue, offset: int, max_msg_nums: int,
           message_filter: MessageFilter | None, result: GetMessageResult) -> None:
    try:
        _read_queue(commit_log, cfg, cq, offset, max_msg_nums, message_filter, result)
    except OSError as e:
        # A queue file that cannot be read now (no descriptor free, an I/O error) is read again later: nothing
        # found, at the same offset. Answered as a file that is gone, its consumers skipped the rest of it.
        log.warning("cannot read %s queue %d at %d now: %s", cq.topic, cq.queue_id, offset, e)
        result.status = GetMessageStatus.OFFSET_FOUND_NULL
        result.next_begin_offset = offset
        result.buffers, result.message_count, result.buffer_total_size, result.queue_offsets = [], 0, 0, []


def _read_queue(commit_log: CommitLog, cfg: MessageStoreConfig, cq: ConsumeQueue, offset: int, max_msg_nums: int,
                message_filter: MessageFilter | None, result: GetMessageResult) -> None:
    if (message_filter is None or message_filter.match_all) and _read_every_message(
        commit_log, cfg, cq, offset, max_msg_nums, result
    ):
        return
    max_count = max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE
    entries = cq.get_entries(offset, max_count)
    if not entries:
        # The queue file holding `offset` is gone: continue at the next file's first entry.
        per_file = cq.file_size // CQ_STORE_UNIT_SIZE
        result.status = GetMessageStatus.OFFSET_FOUND_NULL
        result.next_begin_offset = (offset // per_file + 1) * per_file
        return
    status = GetMessageStatus.NO_MATCHED_MESSAGE
    min_phy = commit_log.get_min_offset()
    max_bytes = cfg.max_transfer_bytes_on_message_in_memory
    max_msgs = min(max_msg_nums, cfg.max_transfer_count_on_message_in_memory)
    buffers = result.buffers
    total = count = scanned = 0
    run_start = run_end = -1  # a run of adjacent records, read as one slice
    for phys, size, tags in CQ_ENTRY.iter_unpack(entries):
        if count and (count >= max_msgs or total + size > max_bytes):
            break
        scanned += 1
        if size == CQ_PRE_BLANK_SIZE:
            continue
        if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags):
            continue
        if phys < min_phy:
            if not count:
                status = GetMessageStatus.MESSAGE_WAS_REMOVING
            continue
        if message_filter is not None and message_filter.needs_commit_log:
            record = commit_log.get_message(phys, size)
            if record is None or not message_filter.is_matched_by_commit_log(record):
                continue
        if phys == run_end and _same_file(commit_log, run_start, phys + size):
            run_end = phys + size
        else:
            if run_start >= 0 and not _flush_run(commit_log, buffers, run_start, run_end):
                break
            run_start, run_end = phys, phys + size
        total += size
        count += 1
        result.queue_offsets.append(offset + scanned - 1)
        status = GetMessageStatus.FOUND
    if run_start >= 0 and not _flush_run(commit_log, buffers, run_start, run_end):
        status = GetMessageStatus.MESSAGE_WAS_REMOVING if not buffers else status
    result.status = status
    result.next_begin_offset = offset + scanned
    result.message_count = count
    result.buffer_total_size = sum(len(b) for b in buffers)


_ENTRY_RUNS: dict[int, struct.Struct] = {}


def _read_every_message(commit_log: CommitLog, cfg: MessageStoreConfig, cq: ConsumeQueue, offset: int,
                        max_msg_nums: int, result: GetMessageResult) -> bool:
    """read_queue for a filter that takes everything, when nothing needs the general loop: no filler entries,
    nothing removed, within the byte limit, all records in one commit-log file. False: use the general loop."""
    max_msgs = min(max_msg_nums, cfg.max_transfer_count_on_message_in_memory)
    entries = cq.get_entries(offset, max_msgs)
    n = len(entries) // CQ_STORE_UNIT_SIZE
    if not n:
        return False
    run = _ENTRY_RUNS.get(n)
    if run is None:
        run = _ENTRY_RUNS[n] = struct.Struct(">" + "qiq" * n)
    values = run.unpack(entries)
    phys, sizes = values[0::3], values[1::3]
    total = sum(sizes)
    # Entries of a queue point forward in the commit log: if the first record is still there, all are.
    if (CQ_PRE_BLANK_SIZE in sizes or total > cfg.max_transfer_bytes_on_message_in_memory
            or phys[0] < commit_log.get_min_offset()):
        return False
    buffers = commit_log.get_messages(phys, sizes, total)
    if buffers is None:
        return False
    result.buffers = buffers
    result.status = GetMessageStatus.FOUND
    result.next_begin_offset = offset + n
    result.message_count = n
    result.buffer_total_size = total
    result.queue_offsets = list(range(offset, offset + n))
    return True


def _same_file(commit_log: CommitLog, start: int, end: int) -> bool:
    size = commit_log.file_size
    return start // size == (end - 1) // size


def _flush_run(commit_log: CommitLog, buffers: list[bytes], start: int, end: int) -> bool:
    data = commit_log.get_message(start, end - start)
    if data is None:
        return False
    buffers.append(data)
    return True
