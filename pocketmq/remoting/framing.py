"""Splitting a byte stream into length-prefixed frames, the part both wire protocols share (RocketMQ's
NettyDecoder is a LengthFieldBasedFrameDecoder): a 4-byte big-endian length N, then N bytes. What the N bytes
hold is the codec's business (``codec.FrameDecoder``: a msgpack map; ``native_codec.NativeFrameDecoder``: a
header word, a header and a body), given to it as ``decode_frame``.

Sans-IO: bytes in (``receive_data``), commands out (``next_event``, None while more bytes are needed), any split of
the stream. A length word above ``max_frame_size`` raises FrameTooLarge, fatal: every later call raises it again
(the stream cannot be resynchronised and the connection must close). A frame ``decode_frame`` refuses raises its
MalformedFrame after the frame is consumed, so the stream stays in sync.

``buffered`` and ``partial_frame`` tell a transport what the decoder holds, e.g. to time out a frame that started
but never finished.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from .command import RemotingCommand
from .errors import FrameTooLarge

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024  # RocketMQ's com.rocketmq.remoting.frameMaxLength
LENGTH = struct.Struct(">I")

# The bytes of one frame after its length word, a view of the receive buffer released as soon as this returns
# (a live view would keep the buffer from being trimmed): the command, or MalformedFrame.
FrameParser = Callable[[memoryview], RemotingCommand]


class LengthPrefixedDecoder:
    """Incremental decoder of length-prefixed frames; a subclass names its codec's ``decode_frame``."""

    __slots__ = ("max_frame_size", "_buf", "_pos", "_fatal")

    # A staticmethod in subclasses: one attribute lookup per frame, no bound method made.
    decode_frame: FrameParser

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        # One growing buffer plus a read position: frames are parsed in place and the consumed prefix is
        # dropped once the buffer holds no complete frame, so many small frames in one chunk cost linear time.
        self._buf = bytearray()
        self._pos = 0
        self._fatal: FrameTooLarge | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as commands (complete frames included)."""
        return len(self._buf) - self._pos

    @property
    def partial_frame(self) -> bool:
        """Whether bytes of a frame that has not fully arrived are held: what is left after every complete frame
        (a length word, or a part of one, counts). False when nothing is held or only complete frames are."""
        buf, pos, end = self._buf, self._pos, len(self._buf)
        while end - pos >= 4:
            frame_end = pos + 4 + LENGTH.unpack_from(buf, pos)[0]
            if frame_end > end:
                return True
            pos = frame_end
        return pos < end

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    def next_event(self) -> RemotingCommand | None:
        """The next complete frame's command; None when more bytes are needed."""
        if self._fatal is not None:
            raise self._fatal
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if avail >= 4:
            (length,) = LENGTH.unpack_from(buf, pos)
            if length > self.max_frame_size:
                self._fatal = FrameTooLarge(length, self.max_frame_size)
                raise self._fatal
            if avail >= 4 + length:
                start = pos + 4
                self._pos = start + length
                with memoryview(buf) as view:
                    frame = view[start : start + length]
                    try:
                        return self.decode_frame(frame)
                    finally:
                        frame.release()
        # Need more data: drop what was consumed (front deletion of a bytearray is cheap in CPython).
        if pos:
            del buf[:pos]
            self._pos = 0
        return None

    def __iter__(self) -> Iterator[RemotingCommand]:
        while (cmd := self.next_event()) is not None:
            yield cmd
