"""Channel: one TCP connection of the remoting layer, from either end.

It writes frames (queued and flushed once per event-loop iteration, or at once past 256 KiB), answers
requests (``send_response``), and sends its own (``invoke`` waits for the response with the same opaque, under
a timeout; ``invoke_oneway`` does not). Timeouts work like RocketMQ's scanResponseTable: one timer per channel,
armed for the earliest deadline.

A connection's state lives here and changes only here, the way h11 keeps a connection's state in one place: the
transport (``transport._Protocol``, ``Endpoint``) and the server's scan report what happened through the events
below (``read_began`` / ``read_ended``, ``response_received``, ``request_queued`` / ``request_starting``,
``request_started`` / ``request_finished``, ``pause_writing`` / ``resume_writing``, ``connection_lost``) and ask
through read-only questions (``may_answer_inline``, ``holds_requests``, ``write_paused``, ``idle_for``,
``partial_frame_age``); none of them touches a private member of a Channel (tests/test_architecture.py checks).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from pocketmq.common.util_all import seconds_text

from .busy_poll import busy_poller
from .codec import encode
from .codes import FLAG_ONEWAY, FLAG_RESPONSE, ResponseCode
from .command import RemotingCommand
from .connection_limits import ConnectionLimits
from .errors import FrameError, RemotingConnectError, RemotingSendRequestError, RemotingTimeoutError
from .remoting_helper import format_address
from .wire_protocol import Encoder, WireProtocol, encoder_for

log = logging.getLogger(__name__)

# Queued output above this is flushed at once rather than at the end of the loop iteration.
_FLUSH_NOW_BYTES = 256 * 1024
DEFAULT_MAX_INFLIGHT = 1024


class ChannelOwner(Protocol):
    """What a Channel reads of the endpoint it belongs to (transport.Endpoint: a RemotingServer or RemotingClient)."""

    max_frame_size: int
    max_inflight: int
    busy_poll: float
    limits: ConnectionLimits | None


class Channel:
    """One connection, from either side: send responses, invoke requests, close."""

    __slots__ = (
        "_endpoint",
        "_transport",
        "_loop",
        "_pending",
        "_scan_handle",
        "_scan_at",
        "_out",
        "_out_bytes",
        "_flush_handle",
        "_write_paused",
        "_drain_waiters",
        "_closing",
        "_closed",
        "_inflight",
        "_unstarted",
        "_reading",
        "_reading_paused",
        "_inflight_full",
        "_held_bytes",
        "_partial_since",
        "_activity",
        "_activity_seen",
        "_active_at",
        "_poller",
        "_encode",
        "protocol",
        "remote_address",
        "local_address",
        "attrs",
    )

    def __init__(self, endpoint: ChannelOwner, transport: asyncio.Transport) -> None:
        self._endpoint = endpoint
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        # opaque -> (future, deadline, request code, timeout) of each invoke waiting for its response
        self._pending: dict[int, tuple[asyncio.Future[RemotingCommand], float, int, float]] = {}
        self._scan_handle: asyncio.TimerHandle | None = None
        self._scan_at = 0.0
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_handle: asyncio.Handle | None = None
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._closing = False
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self._inflight = 0
        self._unstarted = 0  # request tasks created but not yet running: later inline requests queue behind them
        self._reading = False  # inside data_received, which writes what was queued when it is done
        self._reading_paused = False
        self._inflight_full = False  # reading paused for max_inflight, until half of them finished
        self._held_bytes = 0  # bodies of responses waiting for the write buffer to drain
        # Server connections (ConnectionLimits): when the frame being received began (None: no partial frame),
        # and reads + writes so far, which the server's scan compares to find idle connections.
        self._partial_since: float | None = None
        self._activity = 0
        self._activity_seen = 0
        self._active_at = self._loop.time()
        limits = endpoint.limits
        if limits is not None:
            transport.set_write_buffer_limits(limits.write_buffer_high_water_mark, limits.write_buffer_low_water_mark)
        self._poller = busy_poller(endpoint.busy_poll)
        self.remote_address = format_address(transport.get_extra_info("peername"))
        self.local_address = format_address(transport.get_extra_info("sockname"))
        self.attrs: dict[str, object] = {}  # free for the application (e.g. the broker's client id)
        # The connection's wire protocol: msgpack unless a server's first-frame detection says otherwise
        # (use_protocol). Everything written on the channel goes through its encoder.
        self.protocol = WireProtocol.MSGPACK
        self._encode: Encoder = encode

    def __repr__(self) -> str:
        state = "closed" if self._closing else "open"
        return f"<Channel {self.local_address} -> {self.remote_address} {state}>"

    def use_protocol(self, protocol: WireProtocol) -> None:
        """Speak ``protocol`` from now on (set once, when the first frame of a server connection decided it)."""
        self.protocol = protocol
        self._encode = encoder_for(protocol)

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called or the connection was lost."""
        return self._closing

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)

    @property
    def unwritten_bytes(self) -> int:
        """Bytes this end produced that the peer has not taken yet: the transport's buffer, what waits for the next
        flush, and the bodies of responses waiting for the buffer to drain."""
        return self._transport.get_write_buffer_size() + self._out_bytes + self._held_bytes

    # --- sending ---

    def send_response(self, response: RemotingCommand) -> bool:
        """Queue a response (e.g. the late answer to a parked request). False if the channel is closed.

        A response that cannot be encoded (too large, bad header value) is replaced by SYSTEM_ERROR so the
        requester is not left waiting.
        """
        if self._closing:
            log.debug("drop response to closed %r: %r", self, response)
            return False
        response.flag |= FLAG_RESPONSE
        try:
            data = self._encode(response, self._endpoint.max_frame_size)
        except (FrameError, TypeError, ValueError, OverflowError) as e:
            log.error("cannot encode response %r: %s", response, e)
            error = RemotingCommand.response(
                ResponseCode.SYSTEM_ERROR, remark=f"cannot encode response: {e}", opaque=response.opaque
            )
            error.serialize_type = response.serialize_type
            data = self._encode(error, None)
        self._write(data)
        return True

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send ``request`` and wait for the response with the same opaque.

        Raises RemotingTimeoutError after ``timeout`` seconds, RemotingConnectError if the channel is already
        closed, RemotingSendRequestError if the connection drops while waiting.
        """
        if request.flag & (FLAG_RESPONSE | FLAG_ONEWAY):  # (is_response / is_oneway, without two calls)
            raise ValueError("invoke needs a two-way request; use invoke_oneway / send_response")
        if self._closing:
            raise RemotingConnectError(f"channel to {self.remote_address} is closed")
        opaque = request.opaque
        if opaque in self._pending:
            raise ValueError(f"opaque {opaque} is already in flight on {self!r}")
        data = self._encode(request, self._endpoint.max_frame_size)
        loop = self._loop
        fut: asyncio.Future[RemotingCommand] = loop.create_future()
        pending = self._pending
        deadline = loop.time() + timeout
        pending[opaque] = (fut, deadline, request.code, timeout)
        # Timeouts are RocketMQ's scanResponseTable, with the scan timed for the earliest deadline: a timer per
        # request (call_later + cancel) costs more than the rest of an invoke; this one fires about once per
        # timeout while answers come.
        # Waiting for the write buffer to drain counts against the timeout too.
        if self._scan_handle is None or deadline < self._scan_at:
            self._arm_scan(deadline)
        try:
            if self._write_paused:
                await self._drain_or_expire(fut)
            if len(pending) == 1 and not self._out and not self._transport.is_closing():
                # Alone in flight: out at once. With others in flight, the requests of one loop turn share a
                # write (see _write).
                self._activity += 1
                self._transport.write(data)
            else:
                self._write(data)
            if self._poller is not None:
                self._poller.poke(arrived=False)
            return await fut
        finally:
            pending.pop(opaque, None)

    def _arm_scan(self, when: float) -> None:
        if self._scan_handle is not None:
            self._scan_handle.cancel()
        self._scan_at = when
        self._scan_handle = self._loop.call_at(when, self._scan_response_table)

    def _scan_response_table(self) -> None:
        """Fail the invokes whose deadline has passed; arm the next scan for the earliest one left."""
        self._scan_handle = None
        # Timers may fire up to the clock's resolution early: a deadline that close counts as passed.
        now = self._loop.time() + 0.001
        nearest = None
        for opaque, (fut, deadline, code, timeout) in list(self._pending.items()):
            if deadline <= now:
                del self._pending[opaque]
                if not fut.done():
                    fut.set_exception(RemotingTimeoutError(
                        f"no response from {self.remote_address} within {seconds_text(timeout)} "
                        f"(code {code}, opaque {opaque})"))
            elif nearest is None or deadline < nearest:
                nearest = deadline
        if nearest is not None:
            self._arm_scan(nearest)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send ``request`` with the one-way flag; no response is expected."""
        if request.is_response:
            raise ValueError("invoke_oneway needs a request")
        request.flag |= FLAG_ONEWAY
        data = self._encode(request, self._endpoint.max_frame_size)
        if self._write_paused:
            await self.drain()
        self._write(data)

    def close(self) -> None:
        """Flush queued output and close. Pending invokes fail once the connection is gone."""
        if self._closing:
            return
        self._flush()
        self._closing = True
        self._transport.close()
        self._wake_drain_waiters()  # (a drain ends with the channel: its waiters would otherwise wait for the loss)

    def abort(self) -> None:
        """Close at once, dropping unwritten output (``close`` waits for a peer to take it, which one that does not
        read never does). Pending invokes fail. Also ends a graceful close still waiting for such a peer."""
        self._closing = True
        self._out = []
        self._out_bytes = 0
        self._transport.abort()
        self._wake_drain_waiters()

    def _write(self, data: bytes) -> None:
        if self._closing:
            raise RemotingConnectError(f"channel to {self.remote_address} is closed")
        self._out.append(data)
        self._out_bytes += len(data)
        if self._out_bytes >= _FLUSH_NOW_BYTES:
            self._flush()
        elif self._flush_handle is None and not self._reading:  # data_received flushes when it is done
            self._flush_handle = self._loop.call_soon(self._flush)

    def flush(self) -> None:
        """Write what is queued now, not at the end of the loop turn: for an answer produced outside a read (a
        parked request woken by an event), which would otherwise wait for the loop's next iteration."""
        self._flush()

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        out = self._out
        if not out:
            return
        self._out = []
        self._out_bytes = 0
        if self._transport.is_closing():
            return
        self._activity += 1
        if len(out) == 1:
            self._transport.write(out[0])
        else:
            self._transport.writelines(out)

    async def _drain_or_expire(self, fut: asyncio.Future[RemotingCommand]) -> None:
        drain = asyncio.ensure_future(self.drain())
        try:
            await asyncio.wait((drain, fut), return_when=asyncio.FIRST_COMPLETED)
        finally:
            drain.cancel()
        if fut.done():
            fut.result()  # raises: expired, or the connection was lost

    async def drain(self) -> None:
        """Wait until the transport's buffer is below its low-water mark (or the channel closed)."""
        while self._write_paused and not self._closing:
            waiter: asyncio.Future[None] = self._loop.create_future()
            self._drain_waiters.append(waiter)
            await waiter

    def _wake_drain_waiters(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    # --- events from the transport and the server: how the connection's state changes from outside ---

    def read_began(self) -> bool:
        """Bytes arrived: the connection is active, and what is answered until ``read_ended`` goes out in one
        write. False when the channel is closed (the bytes are dropped, and no read_ended follows)."""
        if self._closing:
            return False
        self._activity += 1
        self._reading = True
        return True

    def read_ended(self, partial: bool, frame_done: bool) -> None:
        """The read is handled: ``partial`` when the bytes of an incomplete frame are left, ``frame_done`` when a
        frame was completed (a partial frame left then began with this read; else it is the one already timed).
        Flushes what the read's inline processors answered, without waiting a loop turn."""
        self._reading = False
        if not self._closing:
            if not partial:
                self._partial_since = None
            elif self._partial_since is None or frame_done:
                self._partial_since = self._loop.time()
            if self._out:
                self._flush()
        if self._poller is not None:
            self._poller.poke()

    def response_received(self, response: RemotingCommand) -> None:
        """Complete the invoke waiting for ``response`` (same opaque)."""
        waiting = self._pending.pop(response.opaque, None)
        fut = None if waiting is None else waiting[0]
        if fut is None or fut.done():
            # Late answer to a timed-out invoke, or a peer bug: nothing waits for it.
            log.debug("response without a waiter on %r: %r", self, response)
            return
        fut.set_result(response)

    @property
    def may_answer_inline(self) -> bool:
        """A request may be answered right where it is read: no earlier request of the connection waits for its
        task to start, and the peer takes its responses."""
        return not (self._unstarted or self._write_paused)

    @property
    def holds_requests(self) -> bool:
        """A server's connection whose peer does not take its responses: requests wait before their processor."""
        return self._write_paused and self._endpoint.limits is not None

    @property
    def write_paused(self) -> bool:
        """The transport's buffer is above its high-water mark."""
        return self._write_paused

    def request_queued(self) -> None:
        """A request's task was created: until it starts (request_starting), later requests queue behind it."""
        self._unstarted += 1

    def request_starting(self) -> None:
        """A queued request's task runs (or gives up, the channel closed while it waited)."""
        self._unstarted -= 1

    def request_started(self) -> None:
        """A request is in flight in a task: at ``max_inflight`` of them the connection is no longer read."""
        self._inflight += 1
        if self._inflight >= self._endpoint.max_inflight and not self._inflight_full:
            self._inflight_full = True
            self._update_reading()

    def request_finished(self) -> None:
        """A request's task is done: reading resumes once half of the in-flight limit has finished."""
        self._inflight -= 1
        if self._inflight_full and self._inflight <= self._endpoint.max_inflight // 2:
            self._inflight_full = False
            self._update_reading()

    async def hold_until_drained(self, response: RemotingCommand) -> None:
        """Wait for the write buffer to drain, the response's body counted in the channel's unwritten bytes."""
        held = len(response.body or b"")
        self._held_bytes += held
        try:
            await self.drain()
        finally:
            self._held_bytes -= held

    def idle_for(self, now: float) -> float:
        """Seconds without a read or a write, as of the previous call (the server's scan calls it each round):
        0.0 when there was one since."""
        if self._activity != self._activity_seen:
            self._activity_seen = self._activity
            self._active_at = now
            return 0.0
        return now - self._active_at

    def partial_frame_age(self, now: float) -> float | None:
        """Seconds since the incomplete frame being received began; None without one, or while this end itself
        does not read the connection."""
        since = self._partial_since
        if since is None or self._reading_paused:
            return None
        return now - since

    def pause_writing(self) -> None:
        self._write_paused = True
        if self._endpoint.limits is not None:
            self._update_reading()  # a server stops reading requests whose responses would only pile up

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._endpoint.limits is not None:
            self._update_reading()
        self._wake_drain_waiters()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._out = []
        if self._scan_handle is not None:
            self._scan_handle.cancel()
            self._scan_handle = None
        pending, self._pending = self._pending, {}
        reason = f": {exc}" if exc else ""
        for opaque, (fut, *_) in pending.items():
            if not fut.done():
                fut.set_exception(
                    RemotingSendRequestError(
                        f"connection to {self.remote_address} closed before the response "
                        f"(opaque {opaque}){reason}"
                    )
                )
        self._write_paused = False
        self._wake_drain_waiters()
        if not self._closed.done():
            self._closed.set_result(None)

    def _update_reading(self) -> None:
        """Read requests unless too many are in flight or (a server's connection) its responses pile up unwritten."""
        paused = self._inflight_full or (self._write_paused and self._endpoint.limits is not None)
        if paused != self._reading_paused and not self._transport.is_closing():
            self._reading_paused = paused
            if paused:
                self._transport.pause_reading()
            else:
                if self._partial_since is not None:
                    # A frame left half-read while this end did not read: its time starts again now.
                    self._partial_since = self._loop.time()
                self._transport.resume_reading()
