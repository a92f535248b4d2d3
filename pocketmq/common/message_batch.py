"""MessageBatch bodies (SEND_BATCH_MESSAGE): RocketMQ's MessageDecoder.encodeMessages / decodeMessages, the one
codec of the format: the client encodes with it, the broker splits and decodes with it.

Per message (record_layout.BATCH_MESSAGE, big-endian)::

    TOTALSIZE 4 | MAGICCODE 4 (0) | BODYCRC 4 (0) | FLAG 4 | BODYLENGTH 4 + BODY | PROPERTIESLENGTH 2 + PROPERTIES

TOTALSIZE = 22 + body + properties. RocketMQ's broker walks the lengths and ignores TOTALSIZE; we check it,
so a client that encodes the batch wrong learns it from the MESSAGE_ILLEGAL remark instead of from garbage.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pocketmq.common.bounded_cache import BoundedCache
from pocketmq.common.record_layout import (
    BATCH_FIXED_LENGTH,
    BATCH_HEAD,
    BATCH_MESSAGE,
    batch_message_struct,
    field_struct,
)

HEAD = _HEAD = BATCH_HEAD  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH
PROPERTIES_LENGTH = _SHORT = field_struct("PROPERTIESLENGTH", BATCH_MESSAGE)
FIXED = _FIXED = BATCH_FIXED_LENGTH  # 22: a message takes this + its body + its properties


class MessageBatchError(ValueError):
    pass


@dataclass(slots=True)
class BatchItem:
    """One message of a batch body."""

    flag: int
    body: bytes
    properties: str


def batch_message_parts(flag: int, body: bytes, properties: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    """One message of a batch as four pieces to join (the body is not copied here): the client's encoder, which
    joins a whole batch's pieces at once."""
    size = _FIXED + len(body) + len(properties)
    return _HEAD.pack(size, 0, 0, flag, len(body)), body, _SHORT.pack(len(properties)), properties


def encode_message_batch(items: list[BatchItem]) -> bytes:
    """A batch of BatchItems in one go (the same bytes batch_message_parts gives; for tests and tools)."""
    out = []
    for item in items:
        body, props = item.body, item.properties.encode()
        out.append(_RUNS[(len(body), len(props))].pack(
            _FIXED + len(body) + len(props), 0, 0, item.flag, len(body), body, len(props), props))
    return b"".join(out)


# batch_message_struct by (body, properties) length.
_RUNS: BoundedCache[tuple[int, int], struct.Struct] = BoundedCache(lambda shape: batch_message_struct(*shape), 256)


def _split_one_shape(data: bytes) -> tuple[list[int], list[bytes], list[bytes]] | None:
    """split_message_batch for a batch whose messages all have the first one's body and properties lengths
    (a producer's batch mostly does): every field of every message unpacked by one iter_unpack and sorted
    into columns by one zip. None when the batch is not like that, or not plain ASCII properties: the
    message-by-message loop then takes it, and says what is wrong with it."""
    if len(data) < _FIXED:
        return None
    total, _magic, _crc, _flag, body_len = _HEAD.unpack_from(data, 0)
    props_pos = _HEAD.size + body_len
    if body_len < 0 or props_pos + _SHORT.size > len(data):
        return None
    props_len = _SHORT.unpack_from(data, props_pos)[0]
    size = _FIXED + body_len + props_len
    if total != size or props_len < 0 or len(data) % size:
        return None
    run = _RUNS[(body_len, props_len)]
    columns = zip(*run.iter_unpack(data), strict=True)  # (the tuples all have 8 fields)
    totals, _magics, _crcs, flags, body_lens, bodies, props_lens, properties = columns
    # Each message read at its own positions: its lengths must be the first one's, or the columns are wrong.
    if (totals.count(size) != len(totals) or body_lens.count(body_len) != len(totals)
            or props_lens.count(props_len) != len(totals) or not b"".join(properties).isascii()):
        return None
    return list(flags), list(bodies), list(properties)


def split_message_batch(data: bytes) -> tuple[list[int], list[bytes], list[bytes]]:
    """The flags, bodies and encoded properties of a batch body, in order. Properties stay bytes (the store
    writes them as they came); they are checked to be UTF-8, so consumers can always decode them."""
    return _split_one_shape(data) or _split_each(data)


def _split_each(data: bytes) -> tuple[list[int], list[bytes], list[bytes]]:
    flags: list[int] = []
    bodies: list[bytes] = []
    properties: list[bytes] = []
    unpack, short, short_size = _HEAD.unpack_from, _SHORT.unpack_from, _SHORT.size
    pos = 0
    end = len(data)
    while pos < end:
        n = len(bodies)
        if end - pos < _FIXED:
            raise MessageBatchError(f"message {n} of the batch is truncated at byte {pos}")
        total, _magic, _crc, flag, body_len = unpack(data, pos)
        body_start = pos + _HEAD.size
        props_pos = body_start + body_len
        if body_len < 0 or props_pos + short_size > end:
            raise MessageBatchError(f"message {n} of the batch: body length {body_len} runs past the end")
        props_len = short(data, props_pos)[0]
        pos = props_pos + short_size + props_len
        if props_len < 0 or pos > end:
            raise MessageBatchError(f"message {n} of the batch: properties length {props_len} runs past the end")
        if total != _FIXED + body_len + props_len:
            raise MessageBatchError(
                f"message {n} of the batch: TOTALSIZE {total} != {_FIXED} + body {body_len} + properties {props_len}"
            )
        props = data[props_pos + short_size : pos]
        if not props.isascii():
            try:
                props.decode()
            except UnicodeDecodeError:
                raise MessageBatchError(f"message {n} of the batch: properties are not UTF-8") from None
        flags.append(flag)
        bodies.append(data[body_start:props_pos])
        properties.append(props)
    return flags, bodies, properties


def decode_message_batch(data: bytes) -> list[BatchItem]:
    """The batch's messages as items, for tests (the broker itself uses split_message_batch)."""
    flags, bodies, properties = split_message_batch(data)
    return [BatchItem(f, b, p.decode()) for f, b, p in zip(flags, bodies, properties, strict=True)]
