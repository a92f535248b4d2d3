"""RemotingHelper's address text: ``host:port`` to a (host, port) pair and back."""

from __future__ import annotations


def format_address(sockname: object) -> str:
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return f"{sockname[0]}:{sockname[1]}"
    return str(sockname)


def parse_address(addr: str) -> tuple[str, int]:
    """``"host:port"`` or ``"[v6]:port"`` -> (host, port)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bad address {addr!r}, expected host:port")
    return host.strip("[]"), int(port)
