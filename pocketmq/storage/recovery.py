"""Commit-log recovery (CommitLog.recoverNormally / recoverAbnormally): find where valid data ends.

A record is valid when its magic, size, physical offset and field lengths agree (and, with
check_crc, its body CRC). The first invalid record ends the log; everything after it is truncated.
"""

from __future__ import annotations

import struct
import zlib

from pocketmq.common.codec import header_struct, host_lengths
from pocketmq.common.constants import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE

from .commit_log import CommitLog
from .mapped_file import MappedFile

_SIZE_MAGIC = struct.Struct(">iI")
# TOTALSIZE, MAGIC, BODYCRC, then PHYSICALOFFSET at 28 and SYSFLAG at 36.
_CHECK = struct.Struct(">iIi16xqi")
_SHORT = struct.Struct(">h")
_STORE_TS_V4 = struct.Struct(">q")


def check_record(mm, pos: int, file_from: int, limit: int, check_crc: bool) -> tuple[int, int]:
    """(size, store timestamp) of the record at `pos`; size 0 = blank end-of-file record, -1 = invalid."""
    if pos + 8 > limit:
        return -1, 0
    size, magic = _SIZE_MAGIC.unpack_from(mm, pos)
    if magic == BLANK_MAGIC_CODE:
        return 0, 0
    if magic != MESSAGE_MAGIC_CODE or size < 91 or pos + size > limit:
        return -1, 0
    _, _, crc, phys, sys_flag = _CHECK.unpack_from(mm, pos)
    if phys != file_from + pos:
        return -1, 0
    born_len, store_len = host_lengths(sys_flag)
    head = header_struct(born_len, store_len)
    body_len = struct.unpack_from(">i", mm, pos + head.size - 4)[0]
    tpos = pos + head.size + body_len
    if body_len < 0 or tpos + 3 > pos + size:
        return -1, 0
    topic_len = mm[tpos]
    ppos = tpos + 1 + topic_len
    if ppos + 2 > pos + size:
        return -1, 0
    props_len = _SHORT.unpack_from(mm, ppos)[0]
    if props_len < 0 or ppos + 2 + props_len - pos != size:
        return -1, 0
    if check_crc and zlib.crc32(mm[pos + head.size:tpos]) & 0x7FFFFFFF != crc:
        return -1, 0
    store_ts = _STORE_TS_V4.unpack_from(mm, pos + 48 + born_len)[0]
    return size, store_ts


def scan_file(mf: MappedFile, check_crc: bool) -> tuple[int, bool]:
    """Walk one file from its start: (end of valid data, True if it ended with the blank record)."""
    mm, base, limit = mf.mm, mf.file_from_offset, mf.file_size
    pos = 0
    while True:
        size, ts = check_record(mm, pos, base, limit, check_crc)
        if size > 0:
            pos += size
            mf.store_timestamp = ts
        else:
            return pos, size == 0


def _scan_from(commit_log: CommitLog, index: int, check_crc: bool) -> int:
    files = commit_log.mapped_file_queue.files
    process_offset = files[index].file_from_offset
    for mf in files[index:]:
        pos, full = scan_file(mf, check_crc)
        process_offset = mf.file_from_offset + pos
        if not full:
            break
        process_offset = mf.file_end_offset
    return process_offset


def recover_normally(commit_log: CommitLog, check_crc: bool) -> int:
    """Clean exit: scan from the third-last file; returns the offset where valid data ends."""
    files = commit_log.mapped_file_queue.files
    if not files:
        return 0
    end = _scan_from(commit_log, max(0, len(files) - 3), check_crc)
    commit_log.mapped_file_queue.set_positions_after_recovery(end)
    return end


def recover_abnormally(commit_log: CommitLog, min_timestamp: int, check_crc: bool) -> tuple[int, int]:
    """Crash: scan from the newest file whose first record is older than the checkpoint says is safe.

    Returns (end of valid data, offset to re-dispatch from).
    """
    files = commit_log.mapped_file_queue.files
    if not files:
        return 0, 0
    start = 0
    for i in range(len(files) - 1, -1, -1):
        mf = files[i]
        size, ts = check_record(mf.mm, 0, mf.file_from_offset, mf.file_size, False)
        if size > 0 and ts != 0 and ts <= min_timestamp:
            start = i
            break
    end = _scan_from(commit_log, start, check_crc)
    commit_log.mapped_file_queue.set_positions_after_recovery(end)
    return end, files[start].file_from_offset if start < len(files) else end
