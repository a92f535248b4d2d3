"""ClientConfig: what every producer and consumer shares (RocketMQ's ClientConfig), and the client id."""

from __future__ import annotations

import functools
import os
import random
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

from pocketmq.remoting.acl.signer import AclClientRPCHook, SessionCredentials
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.remoting_helper import parse_address
from pocketmq.remoting.wire_protocol import WireProtocol

from .exceptions import ClientErrorCode, MQClientException, NameServerAddressError


@functools.cache
def get_client_ip() -> str:
    """A non-loopback IPv4 address of this host if there is one, else 127.0.0.1 (UtilAll.getIP)."""
    # A UDP "connect" sends nothing; it only makes the kernel pick the outgoing interface.
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            ip = s.getsockname()[0]
            if ip and not ip.startswith("127.") and ip != "0.0.0.0":
                return ip
    except OSError:
        pass
    try:
        ip = socket.gethostbyname(socket.gethostname())
        if ip and not ip.startswith("127."):
            return ip
    except OSError:
        pass
    return "127.0.0.1"


# ClientConfig.protocol's values and the remoting layer's protocol each names.
PROTOCOLS: dict[str, WireProtocol] = {"msgpack": WireProtocol.MSGPACK, "rocketmq": WireProtocol.NATIVE}


@dataclass(slots=True)
class ClientConfig:
    """Settings of one MQClientInstance. Times are seconds (RocketMQ uses milliseconds)."""

    namesrv_addr: str  # "host:port;host:port"
    client_ip: str = field(default_factory=get_client_ip)
    # None is RocketMQ's "DEFAULT": a client that starts with it takes pid#random (changeInstanceNameToPID; 4.9.8's
    # pid#nanoTime), an instance of its own; a broadcasting push consumer keeps the pid.
    instance_name: str | None = None
    unit_name: str | None = None
    poll_name_server_interval: float = 30.0
    heartbeat_broker_interval: float = 30.0
    persist_consumer_offset_interval: float = 5.0
    rebalance_interval: float = 20.0  # RebalanceService's period (rocketmq.client.rebalance.waitInterval)
    mq_client_api_timeout: float = 3.0  # name server queries, heartbeats, offsets
    connect_timeout: float = 3.0
    # pocketmq's own: how long a shutdown waits for the brokers' answers to UNREGISTER_CLIENT (None:
    # mq_client_api_timeout, as RocketMQ). The command line bounds it: a broker that does not answer must not hold
    # the command's exit for another timeout, when a broker forgets a client without it after 120 s anyway.
    unregister_timeout: float | None = None
    # pocketmq's own: how long the event loop keeps polling after a request goes out, instead of sleeping
    # until the answer wakes it (remoting/busy_poll.py; 0 turns it off). Longer than the broker's window: it
    # covers the broker's time to store a batch, which a wakeup after the window would add to (bench/README.md).
    busy_poll: float = 0.001
    # The wire protocol of every connection: "msgpack" (pocketmq's frames) or "rocketmq" (RocketMQ's native
    # remoting protocol as a Java 4.9.8 client speaks it: JSON headers, fastjson bodies), which also reaches an
    # Apache RocketMQ name server and broker.
    protocol: str = "msgpack"
    # Plain ACL credentials (docs/broker.md, "Access control"): every request is signed with them as RocketMQ's
    # AclClientRPCHook signs, whichever the protocol. Both or neither.
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    # Or any hook of one's own, called on every request before it is sent (RocketMQ's RPCHook.doBeforeRequest).
    rpc_hook: Callable[[RemotingCommand], None] | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            choices = ", ".join(repr(p) for p in PROTOCOLS)
            raise MQClientException(f"unknown protocol {self.protocol!r}: expected one of {choices}")
        if (self.access_key is None) != (self.secret_key is None):
            raise MQClientException("access_key and secret_key go together: give both or neither")
        if self.access_key is not None and self.rpc_hook is not None:
            raise MQClientException("give access_key/secret_key or rpc_hook, not both")
        if not self.namesrv_addr_list():
            raise MQClientException(
                "No name server address, please set namesrv_addr (\"host:port;host:port\")",
                response_code=ClientErrorCode.NO_NAME_SERVER_EXCEPTION,
            )
        for addr in self.namesrv_addr_list():
            try:
                host, port = parse_address(addr)
                if not host or not 0 < port < 65536:
                    raise ValueError(f"bad address {addr!r}, expected host:port with a port in 1..65535")
            except ValueError as e:
                raise NameServerAddressError(f"name server {addr!r} is not an address: expected host:port") from e

    @property
    def wire_protocol(self) -> WireProtocol:
        return PROTOCOLS[self.protocol]

    def request_hook(self) -> Callable[[RemotingCommand], None] | None:
        """What runs on every request before it goes out: the signer of the credentials, or ``rpc_hook``."""
        if self.access_key is not None and self.secret_key is not None:
            return AclClientRPCHook(SessionCredentials(self.access_key, self.secret_key))
        return self.rpc_hook

    def namesrv_addr_list(self) -> list[str]:
        return [a.strip() for a in (self.namesrv_addr or "").split(";") if a.strip()]

    def change_instance_name_to_pid(self) -> None:
        """ClientConfig.changeInstanceNameToPID (4.9.x appends nanoTime): a client started without an instance name
        gets one of its own, ``pid#random``, and with it a client instance of its own. Sharing the process's one,
        two producers or consumers with different name servers (or credentials) used the first one's."""
        if self.instance_name in (None, "DEFAULT"):
            self.instance_name = f"{self.effective_instance_name()}#{random.getrandbits(48)}"

    def effective_instance_name(self) -> str:
        if self.instance_name is None or self.instance_name == "DEFAULT":
            return str(os.getpid())
        return self.instance_name

    def build_mq_client_id(self) -> str:
        """``clientIP@instanceName[@unitName]``, the id brokers know this client by."""
        client_id = f"{self.client_ip}@{self.effective_instance_name()}"
        if self.unit_name:
            client_id += f"@{self.unit_name}"
        return client_id
