"""Every exception the remoting layer raises, in one place so callers can catch by family."""

from __future__ import annotations


class RemotingError(Exception):
    """Base class of all remoting errors."""


class FrameError(RemotingError):
    """The byte stream broke the frame rules; the codec reports it, the transport decides what to do."""


class FrameTooLarge(FrameError):
    """A length prefix above the limit. The stream cannot be resynchronised: close the connection."""

    def __init__(self, length: int, max_frame_size: int) -> None:
        super().__init__(f"frame length {length} exceeds the limit of {max_frame_size} bytes")
        self.length = length
        self.max_frame_size = max_frame_size


class MalformedFrame(FrameError):
    """A complete frame whose payload is not a valid command.

    The frame itself was consumed, so the stream is still in sync. ``opaque`` and ``flag`` are set when
    they could be read, which lets a server answer the request with an error before closing.
    """

    def __init__(self, reason: str, opaque: int | None = None, flag: int | None = None) -> None:
        super().__init__(f"malformed frame: {reason}")
        self.reason = reason
        self.opaque = opaque
        self.flag = flag


class HeaderError(RemotingError, ValueError):
    """A custom header field is missing or has the wrong type. ``field`` is the wire name."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"header field {field!r} {reason}")
        self.field = field
        self.reason = reason


class BodyError(RemotingError, ValueError):
    """A body could not be decoded or does not have the expected shape. ``path`` locates the bad value."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"body {path}: {reason}" if path else f"body: {reason}")
        self.path = path
        self.reason = reason


class RemotingConnectError(RemotingError):
    """No usable connection: connecting failed, or the channel was already closed before sending."""


class RemotingSendRequestError(RemotingError):
    """The request was handed to a connection that broke before the response arrived."""


class RemotingTimeoutError(RemotingError, TimeoutError):
    """No response within the timeout. Also a ``TimeoutError`` so generic timeout handling catches it."""
