"""MessageBatch bodies (SEND_BATCH_MESSAGE): RocketMQ's MessageDecoder.encodeMessages format.

Per message, big-endian::

    TOTALSIZE 4 | MAGICCODE 4 (0) | BODYCRC 4 (0) | FLAG 4 | BODY length 4 + body | PROPERTIES length 2 + props

TOTALSIZE = 22 + body + properties. RocketMQ's broker walks the lengths and ignores TOTALSIZE; we check it,
so a client that encodes the batch wrong learns it from the MESSAGE_ILLEGAL remark instead of from garbage.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_HEAD = struct.Struct(">iiiii")  # total size, magic, body crc, flag, body length
_SHORT = struct.Struct(">H")
_FIXED = _HEAD.size + _SHORT.size  # 22


class MessageBatchError(ValueError):
    pass


@dataclass(slots=True)
class BatchItem:
    flag: int
    body: bytes
    properties: str


def encode_message_batch(items: list[BatchItem]) -> bytes:
    """The client side of the format (used by tests and tools)."""
    out = bytearray()
    for item in items:
        props = item.properties.encode()
        out += _HEAD.pack(_FIXED + len(item.body) + len(props), 0, 0, item.flag, len(item.body))
        out += item.body
        out += _SHORT.pack(len(props))
        out += props
    return bytes(out)


def decode_message_batch(data: bytes) -> list[BatchItem]:
    items: list[BatchItem] = []
    pos = 0
    end = len(data)
    while pos < end:
        n = len(items)
        if end - pos < _FIXED:
            raise MessageBatchError(f"message {n} of the batch is truncated at byte {pos}")
        total, _magic, _crc, flag, body_len = _HEAD.unpack_from(data, pos)
        if body_len < 0 or pos + _HEAD.size + body_len + _SHORT.size > end:
            raise MessageBatchError(f"message {n} of the batch: body length {body_len} runs past the end")
        body_start = pos + _HEAD.size
        body = data[body_start : body_start + body_len]
        props_pos = body_start + body_len
        (props_len,) = _SHORT.unpack_from(data, props_pos)
        if props_len > 32767 or props_pos + 2 + props_len > end:
            raise MessageBatchError(f"message {n} of the batch: properties length {props_len} runs past the end")
        if total != _FIXED + body_len + props_len:
            raise MessageBatchError(
                f"message {n} of the batch: TOTALSIZE {total} != 22 + body {body_len} + properties {props_len}"
            )
        try:
            props = data[props_pos + 2 : props_pos + 2 + props_len].decode()
        except UnicodeDecodeError:
            raise MessageBatchError(f"message {n} of the batch: properties are not UTF-8") from None
        items.append(BatchItem(flag, body, props))
        pos = props_pos + 2 + props_len
    return items
