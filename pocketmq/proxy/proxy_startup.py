"""GrpcProxy: the gRPC endpoint started and stopped as one piece (RocketMQ's ProxyStartup).

The endpoint runs on an event loop of its own, in a thread of its own, with asyncio's standard loop: grpc.aio's
server stops answering when it shares a uvloop loop with pocketmq's servers (seen with grpcio 1.85 and uvloop
0.23: calls that wait for the name server never complete). It reaches the name server and other processes'
brokers over sockets, as RocketMQ's proxy in cluster mode does; in local mode (ProxyConfig.proxy_mode, the default)
the brokers of its own process, which the composition hands it, get its requests in-process
(remoting.local_channel), as in RocketMQ's local mode.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

import grpc

from pocketmq.remoting.acl.validator import PlainAccessValidator
from pocketmq.remoting.event_loop import LoopCall, serve_forever
from pocketmq.remoting.group_retry_policy import CustomizedRetryPolicy
from pocketmq.remoting.local_channel import LocalAcceptor
from pocketmq.remoting.remoting_helper import parse_address
from pocketmq.remoting.tasks import run_whole

from .ack_message_activity import AckMessageActivity
from .change_invisible_duration_activity import ChangeInvisibleDurationActivity
from .client_activity import ClientActivity
from .cluster_service import ClusterService
from .config import ProxyConfig, ProxyMode, TlsMode
from .consumer_processor import ConsumerProcessor
from .end_transaction_activity import EndTransactionActivity
from .forward_message_to_dlq_activity import ForwardMessageToDLQActivity
from .grpc_access_validator import GrpcAccessValidator
from .grpc_channel_manager import GrpcChannelManager
from .grpc_client_settings_manager import GrpcClientSettingsManager
from .grpc_messaging_application import GrpcMessagingApplication
from .recall_message_activity import RecallMessageActivity
from .receipt_handle_manager import ReceiptHandleManager
from .receive_message_activity import ReceiveMessageActivity
from .route_activity import RouteActivity
from .send_message_activity import SendMessageActivity
from .tls import load_or_make
from .tls_negotiator import PermissiveFront
from .transaction_data_manager import TransactionDataManager

log = logging.getLogger(__name__)
# How long a start or stop whose caller was cancelled is waited for on the endpoint's loop before that loop ends.
_GRACE = 10.0
T = TypeVar("T")


class GrpcProxy:
    """``await GrpcProxy(ProxyConfig(namesrv_addr)).start()``; ``endpoint`` is ``host:port`` for the SDKs."""

    def __init__(self, config: ProxyConfig, local_brokers: Mapping[str, LocalAcceptor] | None = None) -> None:
        self.config = config
        # The brokers of this process, by address (their remoting servers), reached in-process in local mode.
        self.local_brokers = dict(local_brokers or {})
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: grpc.aio.Server | None = None
        self._front: PermissiveFront | None = None
        self._scanner: asyncio.Task[None] | None = None
        self.certificate_pem: bytes | None = None  # the TLS side's certificate (self-signed unless given)

    def _build(self) -> None:
        config = self.config
        self.cluster = ClusterService(config)
        self.channels = GrpcChannelManager(config.max_telemetry_streams, config.telemetry_queue_size,
                                           config.channel_expired_timeout_millis / 1000)
        self.settings = GrpcClientSettingsManager(config, group_config=self.cluster.cached_group_config)
        self.transactions = TransactionDataManager(config.transaction_data_expire_millis,
                                                   config.transaction_data_max_num)
        self.client_activity = ClientActivity(self.settings, self.channels, self.cluster)
        self.route_activity = RouteActivity(config, self.cluster)
        self.send_activity = SendMessageActivity(config, self.cluster, self.transactions)
        self.transaction_activity = EndTransactionActivity(self.cluster, self.transactions, self.channels)
        self.cluster.producer_groups = self.channels.producer_topics
        self.consumer = ConsumerProcessor(self.cluster)
        self.handles = ReceiptHandleManager(config, self.consumer, lambda c: self.channels.get_channel(c) is not None,
                                            self._retry_delay)
        self.channels.on_remove = self._client_gone
        self.receive_activity = ReceiveMessageActivity(config, self.settings, self.channels, self.cluster,
                                                       self.consumer, self.handles)
        self.ack_activity = AckMessageActivity(self.consumer, self.channels, self.handles)
        self.change_invisible_activity = ChangeInvisibleDurationActivity(config, self.consumer, self.channels,
                                                                         self.handles)
        self.dlq_activity = ForwardMessageToDLQActivity(self.consumer, self.channels, self.handles)
        self.recall_activity = RecallMessageActivity(config, self.cluster)
        app = self.application = GrpcMessagingApplication(self.client_activity, self.channels)
        if config.acl_file is not None:
            # Read now, so a bad file stops the endpoint before it listens.
            app.access_validator = GrpcAccessValidator(PlainAccessValidator.for_broker(config.acl_file))
        app.register_unary("QueryRoute", self.route_activity.query_route)
        app.register_unary("QueryAssignment", self.route_activity.query_assignment)
        app.register_unary("Heartbeat", self.client_activity.heartbeat)
        app.register_unary("NotifyClientTermination", self.client_activity.notify_client_termination)
        app.register_unary("SendMessage", self.send_activity.send_message)
        app.register_unary("EndTransaction", self.transaction_activity.end_transaction)
        app.register_server_stream("ReceiveMessage", self.receive_activity.receive_message)
        app.register_unary("AckMessage", self.ack_activity.ack_message)
        app.register_unary("ChangeInvisibleDuration", self.change_invisible_activity.change_invisible_duration)
        app.register_unary("ForwardMessageToDeadLetterQueue", self.dlq_activity.forward_message_to_dead_letter_queue)
        app.register_unary("RecallMessage", self.recall_activity.recall_message)

    def _client_gone(self, client_id: str) -> None:
        """A client terminated or expired: its auto-renewed messages visible again soon, a consumer's settings
        dropped."""
        self.handles.clear_client(client_id)
        self.settings.remove_consumer_settings(client_id)

    async def _scan_channels(self) -> None:
        while True:
            await asyncio.sleep(self.config.channel_scan_interval)
            try:
                gone = self.channels.scan_expired()
            except Exception:  # (the scan must go on: a client left registered is never given back otherwise)
                log.exception("gRPC client expiry scan failed")
                continue
            if gone:
                log.info("%d gRPC clients expired (no heartbeat for %d ms): %s", len(gone),
                         self.config.channel_expired_timeout_millis, ", ".join(gone[:10]))

    def _retry_delay(self, group: str, reconsume_times: int) -> int:
        """The group's delay before its next attempt, in ms: its groupRetryPolicy's nextDelayDuration, as
        RocketMQ's DefaultReceiptHandleManager; the default backoff for a group without config (a 4.x broker),
        where RocketMQ's proxy leaves the message to its invisible time."""
        group_config = self.cluster.cached_group_config(group)
        # (the proxy's own backoff is the default policy, as in the Settings)
        default = CustomizedRetryPolicy(self.config.consumer_customized_backoff_millis)
        policy = default if group_config is None else group_config.group_retry_policy.get_retry_policy(default)
        return policy.next_delay_duration(reconsume_times)

    @property
    def port(self) -> int:
        return self.config.grpc_server_port

    @property
    def endpoint(self) -> str:
        return f"{self.config.grpc_host}:{self.config.grpc_server_port}"

    @property
    def connections(self) -> dict[str, int]:
        """The connections the permissive port has routed, by how they opened: TLS or plaintext (empty when the
        port is gRPC's own, TLS disabled or enforced)."""
        f = self._front
        return {} if f is None else {"tls": f.routed[True], "plaintext": f.routed[False]}

    def _options(self) -> list[tuple[str, Any]]:
        return [
            ("grpc.max_receive_message_length", self.config.grpc_max_inbound_message_size),
            ("grpc.max_send_message_length", -1),
            ("grpc.max_concurrent_streams", 1000),
            # The SDKs ping every few minutes, with or without calls (Java: keepAliveWithoutCalls).
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
            ("grpc.so_reuseport", 0),
        ]

    async def start(self) -> GrpcProxy:
        """Start the endpoint's thread and loop, and the endpoint on them; returns once it listens. Cut short (a
        failure, or cancelled), the endpoint's start undoes itself on its loop before that loop ends."""
        loop = self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=serve_forever, args=(loop,), name="pocketmq-grpc", daemon=True)
        self._thread.start()
        starting = LoopCall(loop, self._start())
        try:
            await starting.result(_GRACE)
        except BaseException:
            if starting.future.done() and not starting.future.cancelled() and starting.future.exception() is None:
                # Cancelled as its start finished: stopped as stop() does (a start that failed stopped itself).
                await LoopCall(loop, self._stop()).result(_GRACE, cancel=False)
            await self._stop_loop()
            raise
        return self

    async def call(self, coro: Coroutine[Any, Any, T], cancel: bool = True) -> T:
        """Run ``coro`` on the endpoint's loop and wait for it from the caller's. The caller cancelled, ``coro`` is
        cancelled too (or, with ``cancel=False``, left to finish), and waited for up to _GRACE seconds."""
        assert self.loop is not None, "the endpoint is not started"
        return await LoopCall(self.loop, coro).result(_GRACE, cancel)

    async def stop(self) -> None:
        if self.loop is None:
            return
        try:
            await self.call(self._stop(), cancel=False)
        finally:
            await self._stop_loop()

    async def _stop_loop(self) -> None:
        loop, self.loop = self.loop, None
        if loop is None:
            return
        # Its thread cancels what is left on it, waits for that and closes it (serve_forever).
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 10)

    async def _start(self) -> None:
        self._build()
        c = self.config
        server = self._server = grpc.aio.server(options=self._options())
        server.add_generic_rpc_handlers((self.application.generic_handler(),))
        try:
            if c.tls_mode is TlsMode.DISABLED:
                c.grpc_server_port = server.add_insecure_port(f"{c.grpc_host}:{c.grpc_server_port}")
            else:
                key, cert = load_or_make(c.tls_cert_file, c.tls_key_file, [c.grpc_host])
                self.certificate_pem = cert
                credentials = grpc.ssl_server_credentials([(key, cert)])
                if c.tls_mode is TlsMode.ENFORCING:
                    c.grpc_server_port = server.add_secure_port(f"{c.grpc_host}:{c.grpc_server_port}", credentials)
                else:
                    # Two listeners only this process can reach (abstract Unix sockets: no file, no port).
                    name = f"pocketmq-grpc-{os.getpid()}-{secrets.token_hex(6)}"
                    server.add_insecure_port(f"unix-abstract:{name}-plain")
                    server.add_secure_port(f"unix-abstract:{name}-tls", credentials)
                    self._front = PermissiveFront(c.grpc_host, c.grpc_server_port, f"\0{name}-tls",
                                                  f"\0{name}-plain", c.first_byte_timeout)
                    self.application.front_client = self._front.client_address
            if c.grpc_server_port == 0 and self._front is None:
                raise OSError(f"cannot listen on {c.grpc_host}")
            # Whole: grpc's server cancelled halfway through its start cannot be stopped (its stop fails inside grpc).
            await run_whole(server.start())
            if self._front is not None:
                await run_whole(self._front.start())
                c.grpc_server_port = self._front.port
            if c.proxy_mode is ProxyMode.LOCAL:
                self._dispatch_locally()
            await self.cluster.start()
            self.handles.start()
            self._scanner = asyncio.get_running_loop().create_task(self._scan_channels())
        except BaseException:
            await self._stop()
            raise
        log.info("gRPC endpoint at %s (TLS %s)", self.endpoint, c.tls_mode.value)

    def _dispatch_locally(self) -> None:
        """Local mode: the brokers of this process get the proxy's requests in-process. Their processors see the
        proxy at the broker's host and the gRPC port, where a socket from this process would come from. (RocketMQ's
        local mode shows them each gRPC client's own address instead.)"""
        client = self.cluster.api.remoting_client
        for addr, server in self.local_brokers.items():
            client.add_local_server(addr, server, f"{parse_address(addr)[0]}:{self.config.grpc_server_port}")

    async def _stop(self) -> None:
        if self._scanner is not None:
            self._scanner.cancel()
        if self._front is not None:
            await self._front.stop()
        if self._server is not None:
            await self._server.stop(grace=0.5)
        if self._front is not None:
            await self._front.close_connections()
        await self.handles.stop()
        await self.cluster.shutdown()

    async def __aenter__(self) -> GrpcProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
