"""DispatchRequest and check_message_and_return_size (RocketMQ's CommitLog.checkMessageAndReturnSize): what the
dispatcher learns of one commit-log record, read the plain way, one record at a time.

This is the reference of dispatch. ReputMessageService's fast twin (``_dispatch_file``) reads the same fields of
runs of records with one struct call and caches what it classified; tests/storage/test_dispatch_twins.py holds
the two to the same consume-queue entries, index keys and listener calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pocketmq.common.constants import BLANK_MAGIC_CODE
from pocketmq.common.java_hash import tags_code
from pocketmq.common.message import raw_property
from pocketmq.common.record_layout import (
    COMMIT_LOG_RECORD,
    HOST_SHAPES,
    SIZE_MAGIC,
    SYSFLAG_POS,
    TOPIC_LENGTH_SIZES,
    RecordFormat,
    field_positions,
    field_struct,
    host_lengths,
    host_widths,
    topic_length_at,
)
from pocketmq.common.topic_validator import RMQ_SYS_SCHEDULE_TOPIC as SCHEDULE_TOPIC
from pocketmq.common.validators import VALID_STORED_TOPICS, stored_topic_error

log = logging.getLogger(__name__)

# What dispatch reads of a record's fixed part; the other fields are skipped as pad bytes. One struct per shape of
# the hosts (IPv4 or IPv6 born and store hosts move the fields after them).
HEAD_FIELDS = ("TOTALSIZE", "MAGICCODE", "QUEUEID", "QUEUEOFFSET", "PHYSICALOFFSET", "SYSFLAG", "STORETIMESTAMP",
               "BODYLENGTH")
HEADS = {hosts: RecordFormat(COMMIT_LOG_RECORD, lengths=host_widths(*hosts), keep=HEAD_FIELDS,
                             through="BODYLENGTH").struct() for hosts in HOST_SHAPES}
_SYSFLAG = field_struct("SYSFLAG")
_PROPS_LEN = field_struct("PROPERTIESLENGTH")

# (raw properties, store timestamp) -> the tags code of a SCHEDULE_TOPIC_XXXX entry (when it is due)
DeliveryTimestamp = Callable[[bytes, int], int]


class UnusableTopicError(Exception):
    """Dispatch (either twin) met a record whose topic a put refuses (validators.stored_topic_error): no consume
    queue can hold it, and its topic must not become a path. Recovery keeps such a record (a store handed over from
    Apache RocketMQ can hold names a put here refuses, such as 5.x's ``%RETRY%group+topic``; cutting the log there
    would lose every later message), so dispatch skips it, as RocketMQ's doReput goes past a record that
    checkMessageAndReturnSize read with a size but could not use. Retrying it would fail every round, and refuse
    puts for good (WRITE_LOGICS_QUEUE_ERROR)."""

    def __init__(self, offset: int, size: int, store_timestamp: int, reason: str) -> None:
        super().__init__(f"the record at {offset} ({size} bytes) has a topic a put refuses: {reason}")
        self.offset = offset
        self.size = size
        self.store_timestamp = store_timestamp

    def skip(self) -> int:
        """Log the record as skipped; the offset dispatch goes on from."""
        log.error("dispatch skips a record: %s; it stays in the commit log, in no consume queue", self)
        return self.offset + self.size


@dataclass(slots=True, frozen=True)
class DispatchRequest:
    """One record as the dispatchers see it (RocketMQ's DispatchRequest). ``keys`` and ``uniq_key`` are the raw
    values of the KEYS and UNIQ_KEY properties (None when absent); ``properties`` the record's own bytes."""

    topic: str
    topic_bytes: bytes
    queue_id: int
    commit_log_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: bytes | None
    uniq_key: bytes | None
    sys_flag: int
    properties: bytes


def check_message_and_return_size(mm, pos: int, file_from: int,
                                  delivery_timestamp: DeliveryTimestamp) -> DispatchRequest | None:
    """The record at ``pos`` of a commit-log file starting at ``file_from``; None for the blank record that ends
    a file. Recovery leaves only valid records below the write position, so anything else is an error;
    UnusableTopicError for a record whose topic a put refuses (the caller skips it)."""
    size, magic = SIZE_MAGIC.unpack_from(mm, pos)
    if magic == BLANK_MAGIC_CODE:
        return None
    topic_len_size = TOPIC_LENGTH_SIZES.get(magic)
    if topic_len_size is None:
        raise RuntimeError(f"dispatch found a bad record at {file_from + pos}")
    hosts = host_lengths(_SYSFLAG.unpack_from(mm, pos + SYSFLAG_POS)[0])
    size, _magic, queue_id, queue_offset, phys, sys_flag, store_ts, body_len = HEADS[hosts].unpack_from(mm, pos)
    topic_len_at = pos + field_positions(*hosts)["BODY"] + body_len
    topic_at = topic_len_at + topic_len_size
    topic_b = bytes(mm[topic_at:topic_at + topic_length_at(mm, topic_len_at, magic)])
    props_at = topic_at + len(topic_b) + _PROPS_LEN.size
    props = bytes(mm[props_at:props_at + _PROPS_LEN.unpack_from(mm, props_at - _PROPS_LEN.size)[0]])
    if topic_b not in VALID_STORED_TOPICS and (reason := stored_topic_error(topic_b)) is not None:
        raise UnusableTopicError(file_from + pos, size, store_ts, reason)
    topic = topic_b.decode()
    tags = raw_property(props, b"TAGS\x01")
    code = tags_code(tags.decode(errors="replace")) if tags else 0
    if topic == SCHEDULE_TOPIC:
        code = delivery_timestamp(props, store_ts)
    return DispatchRequest(topic, topic_b, queue_id, phys, size, code, store_ts, queue_offset,
                           raw_property(props, b"KEYS\x01"), raw_property(props, b"UNIQ_KEY\x01"), sys_flag, props)


def decode_other_record(mm, pos: int) -> tuple:
    """One record with an IPv6 host or of message version 2, in the layout of the fast twin's run tuples
    (reput_fast_twin.py): the head fields, then TOPICLENGTH, TOPIC, PROPERTIESLENGTH and PROPERTIES."""
    hosts = host_lengths(_SYSFLAG.unpack_from(mm, pos + SYSFLAG_POS)[0])
    size, magic, qid, qoff, phys, sys_flag, store_ts, blen = HEADS[hosts].unpack_from(mm, pos)
    tail = mm[pos + field_positions(*hosts)["BODY"] + blen:pos + size]
    tlen = topic_length_at(tail, 0, magic)
    topic_end = TOPIC_LENGTH_SIZES[magic] + tlen
    plen = _PROPS_LEN.unpack_from(tail, topic_end)[0]
    return (size, magic, qid, qoff, phys, sys_flag, store_ts, blen, tlen, tail[topic_end - tlen:topic_end], plen,
            tail[topic_end + _PROPS_LEN.size:])
