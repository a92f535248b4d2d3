"""asyncio side of remoting: the protocol that reads each connection, and the request dispatch shared by both
ends (Endpoint: RemotingServer, RemotingClient). The connection itself, its writes and invokes, is
``channel.Channel`` (re-exported here).

Built on ``asyncio.Protocol`` (no streams): ``data_received`` feeds the sans-IO FrameDecoder, responses
complete the pending ``invoke`` with the same opaque, and each request runs its processor in its own task,
so a parked long-polling request never blocks later requests on the same connection.

Inline processors are the exception: plain functions called right in ``data_received``, for requests answered
from memory (a send under ASYNC_FLUSH, an offset update). No task, no extra loop iteration; the responses to
every frame of one read go out in one write at the end of ``data_received``. An inline processor that has to
wait returns an awaitable instead (a coroutine, say), which then runs in a task of its own like any other
processor: the transport never steps a coroutine by hand.

Writes are queued and flushed once per event-loop iteration (one syscall for a burst of small frames).
Backpressure: ``invoke`` and handler responses wait while the transport's buffer is above its high-water mark,
and a connection with too many requests in flight stops being read until they finish. A server's connections
also stop being read while their responses pile up unwritten, and are closed when a frame stays incomplete or
the connection idle for too long (``connection_limits.ConnectionLimits``; the server scans for both).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine

from .channel import DEFAULT_MAX_INFLIGHT, Channel
from .codec import DEFAULT_MAX_FRAME_SIZE, FrameDecoder
from .codes import FLAG_ONEWAY, FLAG_RESPONSE, ResponseCode
from .command import RemotingCommand
from .connection_limits import ConnectionLimits
from .errors import FrameTooLarge, MalformedFrame
from .native_codec import NativeFrameDecoder
from .remoting_helper import format_address, parse_address
from .wire_protocol import SniffingDecoder, WireProtocol, decoder_for

__all__ = ["DEFAULT_MAX_INFLIGHT", "Channel", "ConnectionLimits", "Endpoint", "format_address", "parse_address"]

log = logging.getLogger(__name__)

Handler = Callable[["Channel", RemotingCommand], Awaitable[RemotingCommand | None]]
# Returns the response (None: no response), or an awaitable of it when the request has to wait for something.
InlineHandler = Callable[["Channel", RemotingCommand], "RemotingCommand | Awaitable[RemotingCommand | None] | None"]
CloseListener = Callable[["Channel"], object]
# Called with the peer's "host:port" and each request before its processor; returns None to let it through, else
# why not (the remark of the NO_PERMISSION answer). Access control (remoting.acl) is one.
RequestValidator = Callable[[str, RemotingCommand], "str | None"]


class _Protocol(asyncio.Protocol):
    __slots__ = ("_endpoint", "_dispatch", "_decoder", "_sniffer", "channel")

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        # What each request read goes to: the endpoint's dispatch, or a subclass's own (a VIP port's refusals).
        self._dispatch: Callable[[Channel, RemotingCommand], None] = endpoint._dispatch
        self._decoder: FrameDecoder | NativeFrameDecoder | None = None
        self._sniffer: SniffingDecoder | None = None
        if endpoint.detects_protocol:
            # A server connection: its first bytes say msgpack or native (wire_protocol), once; from then on
            # the chosen decoder reads it directly, so the per-frame path is the same as without detection.
            self._sniffer = SniffingDecoder(endpoint.max_frame_size)
        else:
            # A client connection: it knows its protocol (the endpoint's), so it reads that from the first byte.
            self._decoder = decoder_for(endpoint.wire_protocol, endpoint.max_frame_size)
        self.channel: Channel | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # No isinstance check: uvloop's transports do not derive from asyncio.Transport.
        self.channel = channel = Channel(self._endpoint, transport)  # type: ignore[arg-type]
        if self._sniffer is None and self._endpoint.wire_protocol is not WireProtocol.MSGPACK:
            channel.use_protocol(self._endpoint.wire_protocol)
        self._endpoint._channel_opened(channel)

    def data_received(self, data: bytes) -> None:
        channel = self.channel
        assert channel is not None
        if not channel.read_began():
            return
        decoder = self._decoder
        if decoder is None:
            decoder = self._sniff(channel, data)
            if decoder is None:  # first bytes, too few to tell the protocol (or the connection was closed)
                channel.read_ended(True, False)
                return
            before = decoder.buffered - len(data)  # (the sniffer handed over every byte so far, none consumed)
        else:
            before = decoder.buffered
            decoder.receive_data(data)
        dispatch = self._dispatch
        try:
            while (cmd := decoder.next_event()) is not None:
                if cmd.is_response:
                    channel.response_received(cmd)
                else:
                    dispatch(channel, cmd)
                if channel.closed:
                    return
        except MalformedFrame as e:
            self._endpoint._on_malformed_frame(channel, e)
        except FrameTooLarge as e:
            log.warning("closing %r: %s", channel, e)
            channel.close()
        except Exception:
            log.exception("closing %r after an unexpected error while reading", channel)
            channel.close()
        finally:
            left = decoder.buffered
            channel.read_ended(left > 0, left != before + len(data))

    def _sniff(self, channel: Channel, data: bytes) -> FrameDecoder | NativeFrameDecoder | None:
        """Feed the first bytes of a server connection to the detection; once they decide, the channel speaks
        that protocol and the chosen decoder (holding every byte so far) replaces the sniffer."""
        sniffer = self._sniffer
        assert sniffer is not None
        sniffer.receive_data(data)
        try:
            protocol = sniffer.decide()
        except MalformedFrame as e:
            self._endpoint._on_malformed_frame(channel, e)
            return None
        except FrameTooLarge as e:
            log.warning("closing %r: %s", channel, e)
            channel.close()
            return None
        if protocol is None:
            return None
        channel.use_protocol(protocol)
        self._decoder = sniffer.decoder
        self._sniffer = None
        return self._decoder

    def eof_received(self) -> bool:
        return False  # let the transport close; a half-open remoting connection is useless

    def connection_lost(self, exc: Exception | None) -> None:
        if self.channel is not None:
            self.channel.connection_lost(exc)
            self._endpoint._channel_closed(self.channel)

    def pause_writing(self) -> None:
        if self.channel is not None:
            self.channel.pause_writing()

    def resume_writing(self) -> None:
        if self.channel is not None:
            self.channel.resume_writing()


class Endpoint:
    """What servers and clients share: the processor table, request dispatch and channel bookkeeping."""

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        busy_poll: float = 0.0,
        wire_protocol: WireProtocol = WireProtocol.MSGPACK,
        limits: ConnectionLimits | None = None,
    ):
        self.max_frame_size = max_frame_size
        self.max_inflight = max_inflight
        # Per-connection limits (a server's); None: the transport's defaults and no timeouts (a client's).
        self.limits = limits
        # Seconds the event loop keeps polling after a request or response (remoting/busy_poll.py); 0: never.
        self.busy_poll = busy_poll
        # Servers detect each connection's wire protocol from its first frame (RemotingServer sets it);
        # a client's connections speak ``wire_protocol``, chosen once for all of them.
        self.detects_protocol = False
        self.wire_protocol = wire_protocol
        self._processors: dict[int, Handler] = {}
        self._inline_processors: dict[int, InlineHandler] = {}
        self._default_processor: Handler | None = None
        # Runs before every processor, for msgpack and native frames alike; None (the default) costs one check.
        self.request_validator: RequestValidator | None = None
        self._close_listeners: list[CloseListener] = []
        self._channels: set[Channel] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def register_processor(self, code: int, handler: Handler) -> None:
        """``async def handler(channel, request) -> RemotingCommand | None`` for requests with ``code``."""
        self._inline_processors.pop(int(code), None)
        self._processors[int(code)] = handler

    def register_inline_processor(self, code: int, handler: InlineHandler) -> None:
        """``def handler(channel, request)`` for requests with ``code``, called as the request is read.

        A plain function: it returns the response (None: none) when it can answer at once, or an awaitable of
        it, which runs in a task (an ``async def`` handler is such a function, whose whole body runs in the
        task). It must never block: anything that may wait (a disk read, a flush under SYNC_FLUSH, a
        dispatcher that fell behind) belongs in the awaitable. Exceptions become SYSTEM_ERROR as with
        ``register_processor``. While earlier requests of the connection still wait for their task to start,
        or the peer is not reading its responses, it runs in a task too, so requests of one connection start
        in the order they came and the write backpressure holds.
        """
        self._inline_processors[int(code)] = handler
        self._processors[int(code)] = _inline_in_task(handler)  # the way it runs when it cannot run inline

    def register_default_processor(self, handler: Handler) -> None:
        """Handler for codes without a processor of their own (else REQUEST_CODE_NOT_SUPPORTED)."""
        self._default_processor = handler

    def on_channel_close(self, listener: CloseListener) -> None:
        """Call ``listener(channel)`` when a connection closes; a coroutine result is run as a task."""
        self._close_listeners.append(listener)

    @property
    def channels(self) -> frozenset[Channel]:
        return frozenset(self._channels)

    def _protocol_factory(self) -> _Protocol:
        return _Protocol(self)

    def _channel_opened(self, channel: Channel) -> None:
        self._channels.add(channel)

    def _channel_closed(self, channel: Channel) -> None:
        self._channels.discard(channel)
        for listener in self._close_listeners:
            try:
                result = listener(channel)
                if inspect.isawaitable(result):
                    self._track(asyncio.ensure_future(result))
            except Exception:
                log.exception("channel close listener %r failed", listener)

    # What a channel without a transport of its own (local_channel.LocalChannel) reports, as _Protocol does.
    def channel_opened(self, channel: Channel) -> None:
        self._channel_opened(channel)

    def channel_closed(self, channel: Channel) -> None:
        self._channel_closed(channel)

    def request_received(self, channel: Channel, request: RemotingCommand) -> None:
        self._dispatch(channel, request)

    def _dispatch(self, channel: Channel, request: RemotingCommand) -> None:
        if self.request_validator is not None and self._refused(channel, request):
            return
        code = request.code
        inline = self._inline_processors.get(code)
        if inline is not None and channel.may_answer_inline:
            try:
                result = inline(channel, request)
            except Exception as e:
                result = _failed(channel, request, e)
            if result is None or isinstance(result, RemotingCommand):
                _reply(channel, request, result)
            else:
                self._finish_in_task(channel, request, result)
            return
        handler = self._processors.get(code, self._default_processor)
        if handler is None:
            if not request.is_oneway:
                # (the leading space is Java's: NettyRemotingAbstract.processRequestCommand)
                channel.send_response(
                    RemotingCommand.response_to(
                        request,
                        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                        remark=f" request type {request.code} not supported",
                    )
                )
            return
        self._start(handler, channel, request)

    def _refused(self, channel: Channel, request: RemotingCommand) -> bool:
        """Run the request validator; a refused request is answered NO_PERMISSION here and goes no further."""
        validator = self.request_validator
        assert validator is not None
        try:
            refusal = validator(channel.remote_address, request)
        except Exception as e:  # a validator bug must not let a request through, nor kill the connection
            log.exception("request validator failed on code %s from %r", request.code, channel)
            refusal = f"access check failed: {e or type(e).__name__}"
        if refusal is None:
            return False
        log.info("refused request code %s from %s: %s", request.code, channel.remote_address, refusal)
        if not request.is_oneway:
            channel.send_response(RemotingCommand.response_to(request, ResponseCode.NO_PERMISSION, remark=refusal))
        return True

    def _start(self, handler: Handler, channel: Channel, request: RemotingCommand) -> None:
        """Run ``handler`` in a task. Until the task starts, later inline requests of the channel queue behind
        it (in tasks of their own), so the requests of a connection start in the order they came."""
        channel.request_queued()
        self._spawn(channel, self._run(handler, channel, request))

    def _finish_in_task(
        self, channel: Channel, request: RemotingCommand, rest: Awaitable[RemotingCommand | None]
    ) -> None:
        """An inline processor started and returned what it has to wait for: that finishes in a task. The
        request has started, so later requests need not queue behind this task."""
        self._spawn(channel, self._answer(channel, request, rest))

    def _spawn(self, channel: Channel, coro: Coroutine[object, object, None]) -> None:
        channel.request_started()
        task = asyncio.get_running_loop().create_task(coro)
        self._track(task)
        task.add_done_callback(lambda _t: channel.request_finished())

    async def _run(self, handler: Handler, channel: Channel, request: RemotingCommand) -> None:
        if channel.holds_requests:
            # The peer is not taking its responses: make no more of them until it does (a server's connection).
            # Still queued meanwhile, so later requests keep their order behind this one.
            await channel.drain()
            if channel.closed:
                channel.request_starting()
                return  # the peer left (or was closed) without an answer: it has to retry, so do nothing for it
        channel.request_starting()
        try:
            response = _checked(await handler(channel, request))
        except Exception as e:
            response = _failed(channel, request, e)
        if channel.write_paused and response is not None:
            await channel.hold_until_drained(response)
        _reply(channel, request, response)

    @staticmethod
    async def _answer(channel: Channel, request: RemotingCommand, rest: Awaitable[RemotingCommand | None]) -> None:
        try:
            response = _checked(await rest)
        except Exception as e:
            response = _failed(channel, request, e)
        if channel.write_paused and response is not None:
            await channel.hold_until_drained(response)
        _reply(channel, request, response)

    def _on_malformed_frame(self, channel: Channel, error: MalformedFrame) -> None:
        log.warning("closing %r: %s", channel, error)
        flag = error.flag
        # A native frame gets no answer, as RocketMQ's NettyDecoder closes the channel on any decode error; a
        # msgpack one (pocketmq's own protocol) is told why when it can be.
        if (error.opaque is not None and flag is not None and not flag & (FLAG_RESPONSE | FLAG_ONEWAY)
                and channel.protocol is WireProtocol.MSGPACK):
            channel.send_response(
                RemotingCommand.response(ResponseCode.SYSTEM_ERROR, remark=str(error), opaque=error.opaque)
            )
        channel.close()

    def _track(self, task: asyncio.Future[None]) -> None:
        self._tasks.add(task)  # type: ignore[arg-type]
        task.add_done_callback(self._tasks.discard)

    async def _close_all(self) -> None:
        channels = list(self._channels)
        for ch in channels:
            ch.close()
        if channels:
            waits = [asyncio.ensure_future(ch.wait_closed()) for ch in channels]
            _, pending = await asyncio.wait(waits, timeout=5)
            if pending:
                # A peer that does not read never takes the output a graceful close waits to flush: its
                # connection would stay open, holding its buffers and descriptor, after the endpoint closed.
                for ch, wait in zip(channels, waits, strict=True):
                    if not wait.done():
                        wait.cancel()
                        ch.abort()
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def _failed(channel: Channel, request: RemotingCommand, error: Exception) -> RemotingCommand:
    log.exception("processor for code %s failed on %r", request.code, channel, exc_info=error)
    return RemotingCommand.response(ResponseCode.SYSTEM_ERROR, remark=str(error) or type(error).__name__)


def _reply(channel: Channel, request: RemotingCommand, response: RemotingCommand | None) -> None:
    if response is None or request.is_oneway or channel.closed:
        return
    response.opaque = request.opaque
    response.serialize_type = request.serialize_type  # a native response takes its request's header form
    channel.send_response(response)


def _inline_in_task(inline: InlineHandler) -> Handler:
    async def run(channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        result = inline(channel, request)
        if result is None or isinstance(result, RemotingCommand):
            return result
        return await result

    return run


def _checked(response: object) -> RemotingCommand | None:
    if response is not None and not isinstance(response, RemotingCommand):
        raise TypeError(f"processor returned {type(response).__name__}, not RemotingCommand")
    return response
