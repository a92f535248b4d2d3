"""GrpcMessagingApplication: ``apache.rocketmq.v2.MessagingService``'s methods on grpc.aio, each one activity.

Every call reads the caller from its metadata (a missing ``x-mq-client-id`` is CLIENT_ID_REQUIRED, as in
RocketMQ's proxy) and turns a failure into the response's ``status`` (gRPC status OK), never into a broken call.
Methods not registered (the pull RPCs, PullMessage, UpdateOffset, GetOffset and QueryOffset, which RocketMQ's proxy
does not serve either) answer gRPC UNIMPLEMENTED; ``register_unary`` and ``register_server_stream`` add methods.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from pocketmq.common.java_text import is_blank

from .client_activity import ClientActivity, telemetry_error
from .grpc_access_validator import GrpcAccessValidator
from .grpc_channel_manager import GrpcChannelManager, GrpcClientChannel
from .protocol import SERVICE, load
from .proxy_context import ProxyContext, peer_address
from .proxy_exception import GrpcProxyException, status_of

pb = load()
log = logging.getLogger(__name__)

# What grpc-java (and so RocketMQ's proxy) answers a request that does not parse.
MALFORMED = (grpc.StatusCode.INTERNAL, "Invalid protobuf byte sequence")


class Malformed:
    """Stands for a request whose bytes do not parse (grpcio would log a traceback and answer UNKNOWN)."""


_MALFORMED = Malformed()


def parser(cls: Any) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return cls.FromString(data)
        except DecodeError:
            return _MALFORMED

    return parse


Unary = Callable[[ProxyContext, Any], Awaitable[Any]]
ServerStream = Callable[[ProxyContext, Any], AsyncIterator[Any]]


class GrpcMessagingApplication:
    def __init__(self, client_activity: ClientActivity, channels: GrpcChannelManager) -> None:
        self.client_activity = client_activity
        self.channels = channels
        # Set when ACL is on (GrpcProxy): every call and every Settings command is checked first.
        self.access_validator: GrpcAccessValidator | None = None
        # Set when the permissive front splices the connections: the client's address behind one of them.
        self.front_client: Callable[[str], str | None] | None = None
        self._handlers: dict[str, grpc.RpcMethodHandler] = {}
        self._handlers["Telemetry"] = grpc.stream_stream_rpc_method_handler(
            self.telemetry, request_deserializer=parser(pb.TelemetryCommand),
            response_serializer=pb.TelemetryCommand.SerializeToString)

    def _context_of(self, context: grpc.aio.ServicerContext) -> ProxyContext:
        ctx = ProxyContext.of(context.invocation_metadata(), peer_address(context.peer() or "", self.front_client))
        remaining = context.time_remaining()
        if remaining is not None:
            ctx.remaining_ms = max(0, int(remaining * 1000))
        return ctx

    def register_unary(self, method: str, activity: Unary) -> None:
        """``activity(ctx, request) -> response``; GrpcProxyException and any other error become the response's
        status."""
        request_cls = getattr(pb, f"{method}Request")
        response_cls = getattr(pb, f"{method}Response")

        async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if request is _MALFORMED:
                await context.abort(*MALFORMED)
            ctx = self._context_of(context)
            try:
                ctx.validate()
                if self.access_validator is not None:
                    self.access_validator.check(ctx, method, request)
                return await activity(ctx, request)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                answer = status_of(e)
                if answer.code == pb.Code.INTERNAL_SERVER_ERROR and not isinstance(e, GrpcProxyException):
                    log.warning("%s failed", method, exc_info=True)
                return response_cls(status=answer)

        self._handlers[method] = grpc.unary_unary_rpc_method_handler(
            handle, request_deserializer=parser(request_cls), response_serializer=response_cls.SerializeToString)

    def register_server_stream(self, method: str, activity: ServerStream) -> None:
        """``activity(ctx, request)`` yields the responses; a failure before the first one becomes a single
        response with the status."""
        request_cls = getattr(pb, f"{method}Request")
        response_cls = getattr(pb, f"{method}Response")

        async def handle(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            if request is _MALFORMED:
                await context.abort(*MALFORMED)
            ctx = self._context_of(context)
            try:
                ctx.validate()
                if self.access_validator is not None:
                    self.access_validator.check(ctx, method, request)
                async for response in activity(ctx, request):
                    yield response
            except asyncio.CancelledError:
                raise
            except Exception as e:
                yield response_cls(status=status_of(e))

        self._handlers[method] = grpc.unary_stream_rpc_method_handler(
            handle, request_deserializer=parser(request_cls), response_serializer=response_cls.SerializeToString)

    def generic_handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(SERVICE, self._handlers)

    # --- Telemetry -----------------------------------------------------------------------------------------

    async def telemetry(self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> None:
        """The client's commands are read by a task of their own; this coroutine writes what the stream's outbox
        holds (Settings replies, transaction checks) until the client ends the stream."""
        channels = self.channels
        if channels.streams >= channels.max_channels:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "too many telemetry streams")
        channels.streams += 1
        ctx = self._context_of(context)
        outbox = channels.new_outbox()
        state: dict[str, GrpcClientChannel] = {}
        reader = asyncio.get_running_loop().create_task(self._read_telemetry(ctx, requests, outbox, state))
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    break
                if isinstance(item, tuple):  # (status code, details): the stream ends with an error
                    await context.abort(*item)
                await context.write(item)
        finally:
            channels.streams -= 1
            reader.cancel()
            channel = state.get("channel")
            if channel is not None:
                channels.detach(ctx.client_id, channel)

    async def _read_telemetry(self, ctx: ProxyContext, requests: AsyncIterator[Any],
                              outbox: asyncio.Queue[Any | None], state: dict[str, GrpcClientChannel]) -> None:
        def put(item: Any) -> None:
            try:
                outbox.put_nowait(item)
            except asyncio.QueueFull:
                log.warning("telemetry stream of %r is not reading: reply dropped", ctx.client_id)

        try:
            async for command in requests:
                if command is _MALFORMED:
                    put(MALFORMED)
                    return
                if is_blank(ctx.client_id):
                    put(pb.TelemetryCommand(status=status_of(
                        GrpcProxyException(pb.Code.CLIENT_ID_REQUIRED, "client id cannot be empty"))))
                    continue
                if command.WhichOneof("command") != "settings":
                    continue  # thread stack traces and verify results answer commands pocketmq never sends
                if self.access_validator is not None:
                    try:
                        self.access_validator.check(ctx, "Telemetry", command)
                    except GrpcProxyException as e:
                        put(pb.TelemetryCommand(status=status_of(e)))
                        continue
                channel = self.channels.create_channel(ctx.client_id, ctx.language, ctx.client_version,
                                                       ctx.remote_address, outbox)
                state["channel"] = channel
                await self.client_activity.read_group_config(command)
                try:
                    reply = self.client_activity.process_client_settings(ctx, channel, command)
                except GrpcProxyException as e:
                    code = grpc.StatusCode.INVALID_ARGUMENT if telemetry_error(e) else grpc.StatusCode.INTERNAL
                    put((code, f"process client telemetryCommand failed. {e.message}"))
                    return
                if reply is None:
                    put((grpc.StatusCode.INVALID_ARGUMENT, "there is no publishing or subscription data in settings"))
                    return
                put(reply)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # the client went away, or sent what does not parse
            log.debug("telemetry stream of %r ended: %s", ctx.client_id, e)
        put(None)
