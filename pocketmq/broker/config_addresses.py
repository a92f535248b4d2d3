"""The addresses in a BrokerConfig: namesrvAddr checked (``host:port;host:port``), and brokerIP1 resolved to the
IP address every message's storeHost packs, as Java's InetSocketAddress resolves RocketMQ's."""

from __future__ import annotations

import functools
import ipaddress
import re
import socket

from pocketmq.remoting.remoting_helper import parse_address

from .config_properties import BrokerConfigError

_HOST_NAME = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_.])?")


def namesrv_addr_error(namesrv_addr: str | None) -> str | None:
    """Why a namesrvAddr ("host:port;host:port") is not one, or None."""
    for addr in (a.strip() for a in (namesrv_addr or "").split(";")):
        if not addr:
            continue
        try:
            host, port = parse_address(addr)
            if host and 0 < port < 65536:
                continue
        except ValueError:
            pass
        return f"name server {addr!r} is not an address: expected host:port"
    return None


@functools.lru_cache(maxsize=16)
def host_ip(host: str) -> str:
    """An IP address as it is; a host name resolved once, as Java's InetSocketAddress resolves RocketMQ's brokerIP1
    (the first IPv4 address, else the first one)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
        return host
    except ValueError:
        pass
    if not _HOST_NAME.fullmatch(host):
        raise BrokerConfigError(f"brokerIP1 {host!r} is neither an IP address nor a host name")
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        raise BrokerConfigError(f"brokerIP1 {host!r} does not resolve to an address: {e}") from None
    ipv4 = [str(sockaddr[0]) for family, _, _, _, sockaddr in found if family == socket.AF_INET]
    return ipv4[0] if ipv4 else str(found[0][4][0])
