"""ProxyContext: who is calling, from the gRPC metadata every SDK sends (GrpcConstants' headers)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from pocketmq.common.java_text import is_blank

from .protocol import load
from .proxy_exception import GrpcProxyException

pb = load()

CLIENT_ID = "x-mq-client-id"
LANGUAGE = "x-mq-language"
CLIENT_VERSION = "x-mq-client-version"
NAMESPACE = "x-mq-namespace"
REQUEST_ID = "x-mq-request-id"
DATE_TIME = "x-mq-date-time"
AUTHORIZATION = "authorization"
_READ = frozenset({CLIENT_ID, LANGUAGE, CLIENT_VERSION, NAMESPACE, DATE_TIME, AUTHORIZATION})
# Headers longer than this are cut: a client id names a session, it is not a place for megabytes.
_MAX_VALUE = 1024


def peer_address(peer: str, front_client: Callable[[str], str | None] | None = None) -> str:
    """``host:port`` of a gRPC peer as grpcio names it (``ipv4:1.2.3.4:5``, ``ipv6:%5B::1%5D:5``; a connection
    the permissive front spliced, ``unix-abstract:<name>``, is looked up with ``front_client``), as RocketMQ's
    proxy shows a remote address."""
    kind, _, rest = peer.partition(":")
    if kind in ("ipv4", "ipv6"):
        return unquote(rest)
    if kind == "unix-abstract" and front_client is not None:
        return front_client(rest) or peer
    return peer


@dataclass(slots=True)
class ProxyContext:
    """RocketMQ's ProxyContext: who made one gRPC call, and when it must be answered."""

    client_id: str = ""
    language: str = ""
    client_version: str = ""
    namespace: str = ""
    remote_address: str = ""
    # What the caller signed and its signature (checked when ACL is on, grpc_access_validator.py).
    date_time: str = ""
    authorization: str = ""
    # Milliseconds left before the call's deadline when it arrived (None: the client set no deadline).
    remaining_ms: int | None = None

    @classmethod
    def of(cls, metadata: Iterable[tuple[str, str | bytes]] | None, peer: str = "") -> ProxyContext:
        values: dict[str, str] = {}
        for key, value in metadata or ():
            if key in _READ and isinstance(value, str):
                values[key] = value[:_MAX_VALUE]
        return cls(values.get(CLIENT_ID, ""), values.get(LANGUAGE, ""), values.get(CLIENT_VERSION, ""),
                   values.get(NAMESPACE, ""), peer, values.get(DATE_TIME, ""), values.get(AUTHORIZATION, ""))

    def validate(self) -> None:
        """GrpcMessagingApplication.validateContext."""
        if is_blank(self.client_id):
            raise GrpcProxyException(pb.Code.CLIENT_ID_REQUIRED, "client id cannot be empty")
