"""The read path of get_message (DefaultMessageStore.getMessage): consume-queue entries to raw records.

Scans up to max(16000 bytes, 20 x max_msg_nums) of entries, skips what the filter rejects, and slices
runs of adjacent records out of the commit log in one piece, up to 32 messages / 256 KiB.
"""

from __future__ import annotations

from .commit_log import CommitLog
from .config import MessageStoreConfig
from .constants import CQ_PRE_BLANK_SIZE, CQ_STORE_UNIT_SIZE
from .consume_queue import CQ_ENTRY, ConsumeQueue
from .message_filter import MessageFilter
from .results import GetMessageResult, GetMessageStatus


def read_queue(commit_log: CommitLog, cfg: MessageStoreConfig, cq: ConsumeQueue, offset: int, max_msg_nums: int,
           message_filter: MessageFilter | None, result: GetMessageResult) -> None:
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


def _same_file(commit_log: CommitLog, start: int, end: int) -> bool:
    size = commit_log.file_size
    return start // size == (end - 1) // size


def _flush_run(commit_log: CommitLog, buffers: list[bytes], start: int, end: int) -> bool:
    data = commit_log.get_message(start, end - start)
    if data is None:
        return False
    buffers.append(data)
    return True
