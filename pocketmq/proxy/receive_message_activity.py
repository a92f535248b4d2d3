"""ReceiveMessageActivity: ReceiveMessage as one POP_MESSAGE of the named broker (RocketMQ's ReceiveMessageActivity
and ReceiveMessageResponseStreamWriter).

The stream is what the SDKs read: one status (OK, MESSAGE_NOT_FOUND when nothing came within the long polling time,
or the error), then one response per message, then the time of delivery; then it ends. The long polling time is the
request's, clamped to the proxy's bounds and to the call's deadline; a receive that does not auto-renew names an
invisible time within the proxy's bounds; one that does (a push consumer) gets the proxy's and is renewed until
acked (ReceiptHandleManager). A message that cannot be written (the client went away, or stopped reading) is made
visible again a second later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from pocketmq.client.consumer.pop_result import PopResult, PopStatus
from pocketmq.client.exceptions import MQClientException
from pocketmq.client.filter_api import EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_TAG, build_subscription_data
from pocketmq.common.java_text import is_blank
from pocketmq.common.message import MessageExt
from pocketmq.common.pop_ack_constants import PROPERTY_POP_CK
from pocketmq.remoting.codes import PermName

from .cluster_service import ClusterService
from .config import ProxyConfig
from .consumer_processor import ConsumerProcessor, message_id, pop_filter
from .grpc_channel_manager import GrpcChannelManager
from .grpc_client_settings_manager import GrpcClientSettingsManager
from .grpc_validator import validate_consumer_group, validate_topic
from .message_converter import inflate_to_send, to_grpc_message
from .proto_time import duration_millis
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import GrpcProxyException, status, status_of
from .receipt_handle import decode
from .receipt_handle_manager import MessageReceiptHandle, ReceiptHandleManager

pb = load()
log = logging.getLogger(__name__)

ILLEGAL_POLLING_TIME_INTRODUCED_CLIENT_VERSION = "5.0.3"
NACK_INVISIBLE_TIME = 1000


def validate_invisible_time(config: ProxyConfig, invisible_time: int, min_invisible_time: int = 0) -> None:
    """GrpcValidator.validateInvisibleTime."""
    if invisible_time < min_invisible_time:
        raise GrpcProxyException(pb.Code.ILLEGAL_INVISIBLE_TIME,
                                 f"the invisibleTime is too small. min is {min_invisible_time}")
    if 0 < config.max_invisible_time_millis < invisible_time:
        raise GrpcProxyException(pb.Code.ILLEGAL_INVISIBLE_TIME,
                                 f"the invisibleTime is too large. max is {config.max_invisible_time_millis}")


def _delivery_timestamp() -> Any:
    ms = time.time_ns() // 1_000_000
    return pb.ReceiveMessageResponse(delivery_timestamp=pb.Timestamp(seconds=ms // 1000,
                                                                    nanos=(ms % 1000) * 1_000_000))


def _not_enough_time_to_poll(ctx: ProxyContext) -> tuple[int, str]:
    """Clients older than ILLEGAL_POLLING_TIME know only BAD_REQUEST."""
    version = ctx.client_version
    code = pb.Code.BAD_REQUEST if not version or version < ILLEGAL_POLLING_TIME_INTRODUCED_CLIENT_VERSION \
        else pb.Code.ILLEGAL_POLLING_TIME
    return code, "The deadline time remaining is not enough for polling, please check network condition"


_UNRENEWED_WARNING_EVERY = 300.0  # s: a client's warning again, if it is still (or again) not registered


class ReceiveMessageActivity:
    def __init__(self, config: ProxyConfig, settings: GrpcClientSettingsManager, channels: GrpcChannelManager,
                 cluster: ClusterService, consumer: ConsumerProcessor, handles: ReceiptHandleManager) -> None:
        self.config = config
        self.settings = settings
        self.channels = channels
        self.cluster = cluster
        self.consumer = consumer
        self.handles = handles
        self._nacks: set[asyncio.Task[None]] = set()
        self._orphans: set[asyncio.Task[PopResult]] = set()  # pops whose call was cancelled, until they end
        # When each client was last warned of: its auto-renewed receives served without renewal.
        self._unrenewed: dict[str, float] = {}

    async def receive_message(self, ctx: ProxyContext, request: Any) -> AsyncIterator[Any]:
        try:
            pop = await self._pop(ctx, request)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if not isinstance(e, GrpcProxyException | MQClientException):
                log.warning("ReceiveMessage failed", exc_info=True)
            yield pb.ReceiveMessageResponse(status=status_of(e))
            yield _delivery_timestamp()
            return
        if isinstance(pop, tuple):  # (code, message): refused before any pop
            yield pb.ReceiveMessageResponse(status=status(*pop))
            yield _delivery_timestamp()
            return
        async for response in self._write(request, pop):
            yield response

    async def _pop(self, ctx: ProxyContext, request: Any) -> PopResult | tuple[int, str]:
        c = self.config
        topic = request.message_queue.topic.name
        group = request.group.name
        remaining = ctx.remaining_ms
        polling_time = self._polling_time(ctx, request)
        if remaining is not None and polling_time > remaining:
            if remaining < c.consumer_min_long_polling_timeout_millis:
                return _not_enough_time_to_poll(ctx)
            polling_time = remaining
        validate_topic(topic)
        validate_consumer_group(group)
        auto_renew = c.enable_proxy_auto_renew and request.auto_renew
        invisible_time = self._invisible_time(request, auto_renew)
        expression = request.filter_expression
        try:
            subscription = build_subscription_data(
                topic, expression.expression,
                EXPRESSION_TYPE_SQL92 if expression.type == pb.FilterType.SQL else EXPRESSION_TYPE_TAG)
        except MQClientException as e:
            return pb.Code.ILLEGAL_FILTER_EXPRESSION, str(e)
        route = await self.cluster.route(topic)
        broker_name = self._select_broker(route, request.message_queue.broker.name)
        addr = None if broker_name is None else self.cluster.master_addr(route, broker_name)
        if broker_name is None or addr is None:
            raise GrpcProxyException(pb.Code.FORBIDDEN, "no readable queue")
        # The group's config (fifo, retries) as the broker has it, then the client's Settings merged with it.
        await self.cluster.subscription_group_config(group, topic)
        fifo, max_attempts = self._fifo_and_max_attempts(ctx, group)
        timeout = (remaining if remaining is not None else polling_time + int(c.request_timeout * 1000)) / 1000
        registered = self.channels.get_channel(ctx.client_id) is not None
        result = await self._pop_to_its_end(self.consumer.pop_message(
            addr, broker_name, group, topic, request.batch_size, invisible_time, polling_time, subscription, fifo,
            pop_filter(subscription, max_attempts), request.attempt_id if request.HasField("attempt_id") else None,
            timeout), group, topic)
        if auto_renew and result.pop_status is PopStatus.FOUND and result.msg_found_list:
            if registered or self.channels.get_channel(ctx.client_id) is not None:
                self._hold_for_renewal(ctx, result.msg_found_list, group, topic)  # (gone meanwhile: given back)
            else:
                # Not registered when the receive began, nor since: the Go SDK reopens a Telemetry stream broken
                # by a server restart only at its next settings sync, 5 minutes on, and receives meanwhile. Its
                # messages are served without renewal: refused and given back, each receive cost them a delivery
                # attempt, and a minute of that put them in the dead-letter queue unseen.
                self._warn_unrenewed(ctx.client_id)
        return result

    def _fifo_and_max_attempts(self, ctx: ProxyContext, group: str) -> tuple[bool, int]:
        """The client's Settings, or while it has sent none, the group's own values."""
        settings = self.settings.client_settings(ctx.client_id)
        if settings is not None:
            return settings.subscription.fifo, settings.backoff_policy.max_attempts
        group_config = self.cluster.cached_group_config(group)
        fifo = group_config is not None and group_config.consume_message_orderly
        retries = group_config.retry_max_times if group_config is not None else self.config.consumer_retry_max_times
        return fifo, retries + 1

    def _warn_unrenewed(self, client_id: str) -> None:
        now = time.monotonic()
        if now - self._unrenewed.get(client_id, -_UNRENEWED_WARNING_EVERY) < _UNRENEWED_WARNING_EVERY:
            return
        if len(self._unrenewed) >= 10_000:  # (client ids come and go: a bound, not a memory)
            self._unrenewed.clear()
        self._unrenewed[client_id] = now
        log.warning("client %s receives with auto-renewal but is not registered (no Telemetry stream since this "
                    "server started, e.g. after a restart, until its SDK's next settings sync; or it terminated or "
                    "expired): its messages are served without renewal, each invisible for %d ms", client_id,
                    self.config.default_invisible_time_millis)

    async def _pop_to_its_end(self, pop: Coroutine[Any, Any, PopResult], group: str, topic: str) -> PopResult:
        """The broker's pop, which goes on when the call is cancelled (a consumer shutting down mid-poll): what it
        takes then is made visible again at once, as Apache's writer does when the stream is gone, instead of
        staying hidden for the whole invisible time."""
        task = asyncio.ensure_future(pop)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            self._orphans.add(task)
            task.add_done_callback(lambda done: self._return_taken(done, group, topic))
            raise

    def _return_taken(self, task: asyncio.Task[PopResult], group: str, topic: str) -> None:
        self._orphans.discard(task)
        if task.cancelled() or task.exception() is not None:
            return
        for msg in task.result().msg_found_list or ():
            self._nack(msg, group, topic)

    def _polling_time(self, ctx: ProxyContext, request: Any) -> int:
        """The request's long polling time, or what the call's deadline leaves after half a request's time for
        the answer to come back; within the proxy's bounds."""
        c = self.config
        remaining = ctx.remaining_ms
        if request.HasField("long_polling_timeout"):
            polling_time = duration_millis(request.long_polling_timeout)
        elif remaining is not None:
            settings = self.settings.client_settings(ctx.client_id)
            request_timeout = duration_millis(settings.request_timeout) if settings is not None else \
                int(c.request_timeout * 1000)
            polling_time = remaining - request_timeout // 2
        else:
            polling_time = c.consumer_max_long_polling_timeout_millis
        return min(max(polling_time, c.consumer_min_long_polling_timeout_millis),
                   c.consumer_max_long_polling_timeout_millis)

    def _invisible_time(self, request: Any, auto_renew: bool) -> int:
        """An auto-renewed receive gets the proxy's invisible time (renewed until acked); any other names its own,
        within the proxy's bounds."""
        c = self.config
        invisible_time = duration_millis(request.invisible_duration)  # (read, so checked, either way)
        if auto_renew:
            return c.default_invisible_time_millis
        validate_invisible_time(c, invisible_time, c.min_invisible_time_millis_for_recv)
        return invisible_time

    def _hold_for_renewal(self, ctx: ProxyContext, msgs: list[MessageExt], group: str, topic: str) -> None:
        """Auto-renewed messages go to the ReceiptHandleManager, which renews them while their client is
        registered; a client gone already gets none of them (they are made visible again)."""
        if self.channels.get_channel(ctx.client_id) is None:
            for msg in msgs:
                self._nack(msg, group, topic)
            raise GrpcProxyException(pb.Code.MESSAGE_NOT_FOUND,
                                     f"The client [{ctx.client_id}] is disconnected.")
        for msg in msgs:
            handle = msg.properties.get(PROPERTY_POP_CK)
            if handle is not None:
                self.handles.add(ctx.client_id, MessageReceiptHandle(
                    group, topic, message_id(msg), handle, handle, msg.reconsume_times))

    @staticmethod
    def _select_broker(route: Any, broker_name: str) -> str | None:
        """ReceiveMessageQueueSelector: the named broker if it has readable queues of the topic, else any that has."""
        readable = [qd.broker_name for qd in route.queue_datas
                    if PermName.is_readable(qd.perm) and qd.read_queue_nums > 0]
        if not is_blank(broker_name) and broker_name in readable:
            return broker_name
        return readable[0] if readable else None

    async def _write(self, request: Any, result: PopResult) -> AsyncIterator[Any]:
        group, topic = request.group.name, request.message_queue.topic.name
        msgs = result.msg_found_list
        if result.pop_status is PopStatus.FOUND:
            if not msgs:
                yield pb.ReceiveMessageResponse(status=status(pb.Code.MESSAGE_NOT_FOUND, "no match message"))
        elif result.pop_status is PopStatus.POLLING_FULL:
            yield pb.ReceiveMessageResponse(status=status(pb.Code.TOO_MANY_REQUESTS, "polling full"))
        else:
            yield pb.ReceiveMessageResponse(status=status(pb.Code.MESSAGE_NOT_FOUND, "no new message"))
        if result.pop_status is PopStatus.FOUND and msgs:
            written = 0
            try:
                yield pb.ReceiveMessageResponse(status=status(pb.Code.OK))
                limit = self.config.max_message_size
                for msg in msgs:
                    yield pb.ReceiveMessageResponse(message=to_grpc_message(inflate_to_send(msg, limit)))
                    written += 1
            finally:
                # The stream ended before every message was written (the client went away, or stopped reading
                # until its deadline): they are visible again in a second, not after their invisible time.
                for msg in msgs[written:]:
                    self._nack(msg, group, topic)
        yield _delivery_timestamp()

    def _nack(self, msg: MessageExt, group: str, topic: str) -> None:
        handle = msg.properties.get(PROPERTY_POP_CK)
        if handle is None:
            return

        async def nack() -> None:
            try:
                current = handle
                renewed = await self.handles.remove_any(group, message_id(msg), handle)
                if renewed is not None:
                    current = renewed.current
                await self.consumer.change_invisible_time(decode(current), group, topic, NACK_INVISIBLE_TIME)
            except Exception as e:
                log.info("nack of %s in %s failed: %s", msg.msg_id, group, e)

        try:
            task = asyncio.get_running_loop().create_task(nack())
        except RuntimeError:  # (a stream finalized outside the loop: the invisible time brings them back)
            return
        self._nacks.add(task)
        task.add_done_callback(self._nacks.discard)
