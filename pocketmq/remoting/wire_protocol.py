"""One port, two protocols: the first bytes of a connection say whether it speaks pocketmq's msgpack frames or
RocketMQ's native ones, and the connection keeps that codec.

Both frames start with a 4-byte big-endian length of what follows. The fifth byte (frame byte 4) differs:

- msgpack: the payload is one msgpack **map** (``codec``), so byte 4 is a map marker: fixmap ``0x80``-``0x8F``,
  map16 ``0xDE`` or map32 ``0xDF``;
- native: byte 4 is the top byte of the header word, the serialize type: ``0x00`` (JSON) or ``0x01`` (ROCKETMQ).

The two sets do not meet, so ``detect_protocol`` decides from 5 bytes:

=====================================  ======================================================================
first 5 bytes                          decision
=====================================  ======================================================================
fewer than 5                           NEED_MORE
length word 0                          NEITHER: an empty frame is neither (msgpack needs a map, native a word)
byte 4 in 0x80-0x8F, 0xDE, 0xDF        MSGPACK
byte 4 is 0x00 or 0x01, length >= 4    NATIVE
byte 4 is 0x00 or 0x01, length < 4     NEITHER: no room for the native header word
anything else                          NEITHER (an HTTP request, TLS, another protocol...)
=====================================  ======================================================================

The length word is not judged further: a length above the limit is the chosen decoder's FrameTooLarge. Clients
speak first (a server never sends before the first request), so a server can wait for these bytes. Later frames
go to the chosen decoder only: a frame of the other protocol is malformed there (a msgpack map marker is no
serialize type; a native header word is no msgpack map).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .codec import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode
from .codes import SerializeType
from .command import RemotingCommand
from .errors import FrameTooLarge, MalformedFrame
from .native_codec import NativeFrameDecoder, encode_native

_MSGPACK_MAP_MARKERS = frozenset(range(0x80, 0x90)) | {0xDE, 0xDF}
_NATIVE_SERIALIZE_TYPES = frozenset({SerializeType.JSON, SerializeType.ROCKETMQ})
DETECTION_BYTES = 5


class WireProtocol(enum.Enum):
    MSGPACK = "msgpack"  # pocketmq's frames (codec)
    NATIVE = "native"  # RocketMQ's remoting frames (native_codec)


class Decision(enum.Enum):
    MSGPACK = "msgpack"
    NATIVE = "native"
    NEED_MORE = "need more bytes"
    NEITHER = "neither"


@dataclass(frozen=True, slots=True)
class Detection:
    """What ``detect_protocol`` made of a connection's first bytes, and why."""

    decision: Decision
    reason: str

    @property
    def protocol(self) -> WireProtocol | None:
        """The protocol decided on; None while more bytes are needed or when it is neither."""
        if self.decision is Decision.MSGPACK:
            return WireProtocol.MSGPACK
        if self.decision is Decision.NATIVE:
            return WireProtocol.NATIVE
        return None


def detect_protocol(head: bytes | bytearray | memoryview) -> Detection:
    """Which protocol a connection whose first bytes are ``head`` speaks (the rule is in the module's docstring)."""
    if len(head) >= 4 and not any(head[:4]):  # (decided without the fifth byte, which such a peer may never send)
        return Detection(Decision.NEITHER, "the first frame is empty (length 0)")
    if len(head) < DETECTION_BYTES:
        return Detection(Decision.NEED_MORE, f"{len(head)} of the {DETECTION_BYTES} bytes that decide")
    length = int.from_bytes(head[:4], "big")
    marker = head[4]
    if marker in _MSGPACK_MAP_MARKERS:
        return Detection(Decision.MSGPACK, f"byte 4 is 0x{marker:02X}, a msgpack map marker")
    if marker in _NATIVE_SERIALIZE_TYPES:
        name = SerializeType(marker).name
        if length < 4:
            return Detection(Decision.NEITHER, f"byte 4 is 0x{marker:02X} ({name}) but the frame length {length} "
                             "leaves no room for the native header word")
        return Detection(Decision.NATIVE, f"byte 4 is 0x{marker:02X}, the native serialize type {name}")
    return Detection(
        Decision.NEITHER,
        f"byte 4 is 0x{marker:02X}: neither a msgpack map marker (0x80-0x8F, 0xDE, 0xDF) nor a native serialize "
        "type (0x00 JSON, 0x01 ROCKETMQ)",
    )


Encoder = Callable[[RemotingCommand, int | None], bytes]


def encoder_for(protocol: WireProtocol) -> Encoder:
    """The frame encoder of ``protocol``: ``codec.encode`` or ``native_codec.encode_native`` (whose commands
    without a native form of their own go out with JSON headers)."""
    return encode if protocol is WireProtocol.MSGPACK else encode_native


def decoder_for(
    protocol: WireProtocol, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
) -> FrameDecoder | NativeFrameDecoder:
    return FrameDecoder(max_frame_size) if protocol is WireProtocol.MSGPACK else NativeFrameDecoder(max_frame_size)


class SniffingDecoder:
    """A server connection's decoder, with ``codec.FrameDecoder``'s interface, that detects the protocol from the
    first bytes and from then on hands everything to that protocol's decoder (``decoder``; a transport may take
    it and drop this wrapper). ``protocol`` is None until decided; ``encode`` writes a frame of the same protocol.

    First bytes of neither protocol raise MalformedFrame (without opaque: nothing could be read) at that call and
    every later one: the stream cannot be parsed, the connection must close.
    """

    __slots__ = ("max_frame_size", "_head", "_fatal", "decoder", "protocol", "encode")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._head = bytearray()
        self._fatal: MalformedFrame | None = None
        self.decoder: FrameDecoder | NativeFrameDecoder | None = None
        self.protocol: WireProtocol | None = None
        self.encode: Encoder | None = None

    @property
    def buffered(self) -> int:
        return len(self._head) if self.decoder is None else self.decoder.buffered

    @property
    def partial_frame(self) -> bool:
        """Whether bytes of an unfinished frame are held (before the decision: any byte at all)."""
        return bool(self._head) if self.decoder is None else self.decoder.partial_frame

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        if self.decoder is not None:
            self.decoder.receive_data(data)
        else:
            self._head += data

    def decide(self) -> WireProtocol | None:
        """The protocol, once the bytes received so far decide it (None: more needed). Deciding makes ``decoder``
        (holding every byte received so far) and ``encode``; a transport may then use those directly. Raises
        MalformedFrame when the first bytes are of neither protocol, FrameTooLarge when the first length word is above
        ``max_frame_size`` (both protocols' limit)."""
        if self.protocol is not None:
            return self.protocol
        if self._fatal is not None:
            raise self._fatal
        head = self._head
        detection = detect_protocol(head)
        protocol = detection.protocol
        if protocol is None:
            if detection.decision is Decision.NEED_MORE:
                if len(head) == 4 and int.from_bytes(head, "big") > self.max_frame_size:
                    # Both protocols refuse that length: no need to wait for the byte that decides.
                    raise FrameTooLarge(int.from_bytes(head, "big"), self.max_frame_size)
                return None
            self._fatal = MalformedFrame(f"unknown protocol: {detection.reason}")
            raise self._fatal
        decoder = self.decoder = decoder_for(protocol, self.max_frame_size)
        self.encode = encoder_for(protocol)
        self.protocol = protocol
        decoder.receive_data(self._head)
        self._head = bytearray()
        return protocol

    def next_event(self) -> RemotingCommand | None:
        decoder = self.decoder
        if decoder is None:
            if self.decide() is None:
                return None
            decoder = self.decoder
            assert decoder is not None
        return decoder.next_event()

    def __iter__(self) -> Iterator[RemotingCommand]:
        while (cmd := self.next_event()) is not None:
            yield cmd
