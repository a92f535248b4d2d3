"""The broker's server, with RocketMQ's "VIP channel": a second port, listenPort - 2, served like the first.

Apache's broker runs a fast remoting server there (BrokerController's fastRemotingServer) with every processor of
the main one but the pulls, and a Java client with vipChannelEnabled (the default of older 4.x clients) sends its
sends, offset commits, consumer-list and admin requests to it (MixAll.brokerVIPChannel).
"""

from __future__ import annotations

from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.server import RemotingServer

from .config import BrokerConfig

# What Apache 5's broker registers on its main server only (registerProcessor; 4.9.7's: PULL_MESSAGE, and it serves
# the others on neither port): on the fast port its default processor answers them REQUEST_CODE_NOT_SUPPORTED.
MAIN_PORT_ONLY = (
    RequestCode.PULL_MESSAGE,
    RequestCode.LITE_PULL_MESSAGE,
    RequestCode.POP_MESSAGE,
    RequestCode.PEEK_MESSAGE,
    RequestCode.NOTIFICATION,
    RequestCode.POLLING_INFO,
)


def vip_channel_port(listen_port: int) -> int | None:
    """Where a client computes the VIP channel to be; none for listenPort 0 (a free port of the system's choice,
    as the in-process clusters run: its port - 2 may be anybody's)."""
    return listen_port - 2 if listen_port > 2 else None


def broker_remoting_server(config: BrokerConfig) -> RemotingServer:
    return RemotingServer(
        config.bind_address or config.broker_ip1, config.listen_port, busy_poll=config.busy_poll,
        max_inflight=config.server_max_inflight_requests, limits=config.connection_limits,
        vip_port=vip_channel_port(config.listen_port), vip_refused=MAIN_PORT_ONLY,
    )
