"""pocketmq's remoting layer: RocketMQ's request/response model over msgpack frames.

The sans-IO parts (codes, command, codec, header, body) import no asyncio; ``Channel``, ``RemotingServer``
and ``RemotingClient`` are loaded on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .codec import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode
from .codes import VERSION, LanguageCode, PermName, RequestCode, ResponseCode
from .command import RemotingCommand
from .errors import (
    BodyError,
    FrameTooLarge,
    HeaderError,
    MalformedFrame,
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)

if TYPE_CHECKING:
    from .client import RemotingClient
    from .server import RemotingServer
    from .transport import Channel

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "VERSION",
    "BodyError",
    "Channel",
    "FrameDecoder",
    "FrameTooLarge",
    "HeaderError",
    "LanguageCode",
    "MalformedFrame",
    "PermName",
    "RemotingClient",
    "RemotingCommand",
    "RemotingConnectError",
    "RemotingError",
    "RemotingSendRequestError",
    "RemotingServer",
    "RemotingTimeoutError",
    "RequestCode",
    "ResponseCode",
    "encode",
]

_LAZY = {"Channel": "transport", "RemotingServer": "server", "RemotingClient": "client"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
