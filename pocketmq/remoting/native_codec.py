"""Sans-IO framing of RocketMQ's native remoting protocol (its NettyEncoder/NettyDecoder and
``RemotingCommand.encode``/``decode``): bytes in, commands out, in the style of ``codec`` (pocketmq's msgpack
frames).

::

    offset  size  field
    0       4     length   int32 BE = 4 + H + B   (the length word itself not counted)
    4       4     hdrWord  int32 BE = (serializeType << 24) | H   (serializeType: JSON 0, ROCKETMQ 1)
    8       H     header   JSON (remoting_serializable) or binary (rocketmq_serializable)
    8+H     B     body     raw bytes, B = length - 4 - H; none when 0

A decoded command carries its ``serialize_type`` (JSON or ROCKETMQ), which ``RemotingCommand.response_to`` copies,
so the response goes back in its request's form, as RocketMQ's server answers. Ext values come out as str (Java's
``HashMap<String,String>``) and go in as Java's text of the value (``header.py`` reads both).

Limits: the decoder refuses a length above ``max_frame_size`` (16 MiB, as ``codec.FrameDecoder`` does; fatal,
FrameTooLarge). A frame too short for its header word, a header length past the frame's end, a serialize type
other than 0 and 1, or a header that does not parse is a MalformedFrame: the frame is consumed (the stream stays in
sync), and ``opaque``/``flag`` are set when they could be read. The encoder refuses what a Java peer's decoder
would drop: a frame whose total size, length word included, is above ``max_frame_size`` (Netty's
LengthFieldBasedFrameDecoder counts it so).
"""

from __future__ import annotations

import struct

from .codes import SerializeType
from .command import RemotingCommand
from .errors import FrameTooLarge, MalformedFrame
from .framing import DEFAULT_MAX_FRAME_SIZE, LENGTH, LengthPrefixedDecoder
from .remoting_serializable import decode_json_header_fast, encode_json_header_fast
from .rocketmq_serializable import decode_rocketmq_header_fast, encode_rocketmq_header_fast

_LEN = LENGTH
_LEN_AND_WORD = struct.Struct(">II")
MAX_HEADER_LENGTH = 0xFFFFFF  # the 24 bits of the header word
_JSON = SerializeType.JSON
_ROCKETMQ = SerializeType.ROCKETMQ
_MSGPACK = SerializeType.MSGPACK
_BODY_TYPES = (bytes, bytearray)


def encode_native(
    cmd: RemotingCommand,
    max_frame_size: int | None = None,
    default_serialize_type: SerializeType = SerializeType.JSON,
) -> bytes:
    """One native frame for ``cmd``, its header in ``cmd.serialize_type``; a command without a native form of its
    own (``SerializeType.MSGPACK``: one the server starts, say) takes ``default_serialize_type``.

    Raises TypeError or ValueError for header values Java could not hold, FrameTooLarge above ``max_frame_size``.
    """
    serialize_type = cmd.serialize_type
    if serialize_type == _MSGPACK:
        serialize_type = default_serialize_type
    if serialize_type == _JSON:
        header = encode_json_header_fast(cmd)
    elif serialize_type == _ROCKETMQ:
        header = encode_rocketmq_header_fast(cmd)
    else:
        raise ValueError(f"{serialize_type!r} is not a native serialize type")
    header_length = len(header)
    if header_length > MAX_HEADER_LENGTH:
        raise ValueError(f"header of {header_length} bytes does not fit the 24-bit header length")
    body = cmd.body
    if body is None:
        body = b""
    elif type(body) is not bytes and not isinstance(body, _BODY_TYPES):
        raise TypeError(f"body must be bytes, not {type(body).__name__}")
    length = 4 + header_length + len(body)
    if max_frame_size is not None and 4 + length > max_frame_size:
        raise FrameTooLarge(4 + length, max_frame_size)
    return b"".join((_LEN_AND_WORD.pack(length, (serialize_type << 24) | header_length), header, body))


def decode_native_frames(data: bytes, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> list[RemotingCommand]:
    """All complete native frames in ``data`` (a convenience for tests and tools)."""
    decoder = NativeFrameDecoder(max_frame_size)
    decoder.receive_data(data)
    return list(decoder)


def _decode_frame(frame: memoryview) -> RemotingCommand:
    """One frame after its length word: header word, header, body. Every view of the receive buffer made here is
    released before returning, even on error (a live view would keep the buffer from being trimmed)."""
    length = len(frame)
    if length < 4:
        raise MalformedFrame(f"frame of {length} bytes has no room for its header word")
    (word,) = _LEN.unpack_from(frame, 0)
    serialize_type, header_length = word >> 24, word & MAX_HEADER_LENGTH
    if serialize_type != _JSON and serialize_type != _ROCKETMQ:
        raise MalformedFrame(f"serialize type {serialize_type} is neither JSON (0) nor ROCKETMQ (1)")
    if header_length > length - 4:
        raise MalformedFrame(f"header length {header_length} runs past the frame's {length - 4} bytes")
    header = frame[4 : 4 + header_length]
    try:
        cmd = decode_json_header_fast(header) if serialize_type == _JSON else decode_rocketmq_header_fast(header)
    finally:
        header.release()
    if length > 4 + header_length:
        cmd.body = bytes(frame[4 + header_length :])
    return cmd


class NativeFrameDecoder(LengthPrefixedDecoder):
    """Incremental decoder of native frames: ``framing.LengthPrefixedDecoder`` splits the stream (feed bytes with
    ``receive_data``, take commands with ``next_event``, None: more data needed), ``decode_frame`` reads one."""

    __slots__ = ()

    decode_frame = staticmethod(_decode_frame)
