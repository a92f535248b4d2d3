"""Commit-log recovery (CommitLog.recoverNormally / recoverAbnormally): find where valid data ends.

A record is valid when its magic, size, physical offset and field lengths agree, its TOPICLENGTH is one Java reads
as positive (topic_length_error), and, with check_crc, its body CRC matches. The first invalid record ends the log;
everything after it is truncated. The topic's name is not checked: dispatch skips a record whose topic no store
could use (dispatch_request.UnusableTopicError), and the record stays.
"""

from __future__ import annotations

import zlib

from pocketmq.common.constants import (
    BLANK_MAGIC_CODE,
    BORNHOST_V6_FLAG,
    STOREHOSTADDRESS_V6_FLAG,
)
from pocketmq.common.record_layout import (
    COMMIT_LOG_RECORD,
    SIZE_MAGIC,
    TOPIC_LENGTH_SIZES,
    RecordFormat,
    field_struct,
    host_lengths,
    host_widths,
    record_length,
    topic_length_at,
)

from .commit_log import CommitLog
from .mapped_file import MappedFile

# What is checked before the hosts' widths are known (all of it lies before BORNHOST).
_CHECK = RecordFormat(COMMIT_LOG_RECORD, keep=("TOTALSIZE", "MAGICCODE", "BODYCRC", "PHYSICALOFFSET", "SYSFLAG"),
                      through="SYSFLAG").struct()
_V6_BITS = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
# STORETIMESTAMP and BODYLENGTH, whose positions move with the hosts' widths: one struct per SYSFLAG & _V6_BITS.
_AFTER_HOSTS = {
    bits: RecordFormat(COMMIT_LOG_RECORD, lengths=host_widths(*host_lengths(bits)),
                       keep=("STORETIMESTAMP", "BODYLENGTH"), through="BODYLENGTH").struct()
    for bits in (0, BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG, _V6_BITS)
}
_PROPS_LEN = field_struct("PROPERTIESLENGTH")
_MIN_LENGTH = record_length(0, 0, 0, 0)  # 91: IPv4 hosts, nothing in body, topic and properties


# The sign bit of a TOPICLENGTH field of 1 or 2 bytes (record_layout.TOPIC_LENGTH_SIZES): RocketMQ reads a version 1
# TOPICLENGTH with get() and a version 2 one with getShort(), both signed.
_TOPIC_LENGTH_SIGN = (0, 0x80, 0x8000)


def topic_length_error(topic_len: int, topic_len_size: int) -> str | None:
    """Why a TOPICLENGTH of ``topic_len`` (read unsigned from ``topic_len_size`` bytes) makes the record corrupt, or
    None: RocketMQ's checkMessageAndReturnSize reads it signed, and a negative length fails the record. That is
    the only check of the topic recovery makes; a name a put would refuse is dispatch's to skip."""
    if not topic_len & _TOPIC_LENGTH_SIGN[topic_len_size]:
        return None
    java = topic_len - (_TOPIC_LENGTH_SIGN[topic_len_size] << 1)
    return (f"TOPICLENGTH {topic_len} of a version {topic_len_size} record reads as {java} in Java (a signed "
            f"{'byte' if topic_len_size == 1 else 'short'}): RocketMQ finds the record corrupt")


def check_record(mm, pos: int, file_from: int, limit: int, check_crc: bool) -> tuple[int, int]:
    """(size, store timestamp) of the record at `pos`; size 0 = blank end-of-file record, -1 = invalid. A record
    of either message version is valid (MESSAGE_MAGIC_CODE, or RocketMQ 5's _V2 with its 2-byte topic length),
    but not one whose TOPICLENGTH Java reads as negative (topic_length_error)."""
    if pos + SIZE_MAGIC.size > limit:
        return -1, 0
    size, magic = SIZE_MAGIC.unpack_from(mm, pos)
    if magic == BLANK_MAGIC_CODE:
        return 0, 0
    topic_len_size = TOPIC_LENGTH_SIZES.get(magic, 0)
    if not topic_len_size or size < _MIN_LENGTH or pos + size > limit:
        return -1, 0
    _, _, crc, phys, sys_flag = _CHECK.unpack_from(mm, pos)
    if phys != file_from + pos:
        return -1, 0
    after_hosts = _AFTER_HOSTS[sys_flag & _V6_BITS]
    body_pos = pos + after_hosts.size
    if body_pos + topic_len_size + _PROPS_LEN.size > pos + size:  # (IPv6 hosts make the fixed part longer)
        return -1, 0
    store_ts, body_len = after_hosts.unpack_from(mm, pos)
    tpos = body_pos + body_len
    if body_len < 0 or tpos + topic_len_size + _PROPS_LEN.size > pos + size:
        return -1, 0
    topic_len = topic_length_at(mm, tpos, magic)
    ppos = tpos + topic_len_size + topic_len
    if ppos + _PROPS_LEN.size > pos + size or topic_len & _TOPIC_LENGTH_SIGN[topic_len_size]:
        return -1, 0
    props_len = _PROPS_LEN.unpack_from(mm, ppos)[0]
    if props_len < 0 or ppos + _PROPS_LEN.size + props_len - pos != size:
        return -1, 0
    if check_crc and zlib.crc32(mm[body_pos:tpos]) & 0x7FFFFFFF != crc:
        return -1, 0
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
