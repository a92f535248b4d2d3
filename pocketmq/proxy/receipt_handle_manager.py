"""ReceiptHandleManager: auto renew for push consumers (RocketMQ's DefaultReceiptHandleManager).

A push consumer's ReceiveMessage asks ``auto_renew``: the proxy picks the invisible time and, until the client acks,
nacks or forwards the message, keeps it invisible by changing its invisible time shortly before it runs out (the
next step of ``renew_next_millis`` each time, for at most ``renew_max_time_millis``; then it is nacked with the
group's retry delay, as RocketMQ's proxy does). The client keeps the handle it was given: an ack or a change of
invisible time is translated to the current one. A client that goes away (NotifyClientTermination, or no
Heartbeat for the channel expiry time; not the end of its Telemetry stream, which the SDKs reopen) has its
messages made visible again after ``invisible_time_millis_when_clear``.

Handles are kept by (client id, group) and, within, by (message id, the handle the client holds); each has a
lock, so an ack waits for a renewal under way and acks with the handle it produced.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from .config import ProxyConfig
from .consumer_processor import ConsumerProcessor
from .proxy_exception import GrpcProxyException
from .receipt_handle import decode

log = logging.getLogger(__name__)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(eq=False)
class MessageReceiptHandle:
    """RocketMQ's MessageReceiptHandle: a received message whose invisible time the proxy renews."""

    group: str
    topic: str
    message_id: str
    original: str  # the handle the client holds
    current: str  # the handle after the latest renewal
    reconsume_times: int
    consume_timestamp: int = field(default_factory=now_ms)
    renew_times: int = 0
    renew_retry_times: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


_Key = tuple[str, str]  # (client id, group)


class ReceiptHandleManager:
    def __init__(self, config: ProxyConfig, consumer: ConsumerProcessor,
                 client_online: Callable[[str], bool], retry_delay: Callable[[str, int], int]) -> None:
        self.config = config
        self.consumer = consumer
        self.client_online = client_online
        self.retry_delay = retry_delay  # (group, reconsume times) -> ms: the nack once renewing has run its time
        self._groups: dict[_Key, dict[tuple[str, str], MessageReceiptHandle]] = {}
        self._task: asyncio.Task[None] | None = None
        self._work: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return sum(len(g) for g in self._groups.values())

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for key in list(self._groups):
            self.clear_group(key)
        if self._work:
            await asyncio.wait(self._work, timeout=self.config.request_timeout)

    def add(self, client_id: str, handle: MessageReceiptHandle) -> None:
        self._groups.setdefault((client_id, handle.group), {})[(handle.message_id, handle.original)] = handle

    async def remove(self, client_id: str, group: str, message_id: str, original: str) -> MessageReceiptHandle | None:
        """The handle no longer renewed (the client acks, nacks or forwards it); None if it is not one."""
        handles = self._groups.get((client_id, group))
        if handles is None:
            return None
        handle = handles.pop((message_id, original), None)
        if handle is None:
            return None
        if not handles:
            self._groups.pop((client_id, group), None)
        async with handle.lock:  # a renewal under way finishes first: its new handle is the one to use
            return handle

    async def remove_any(self, group: str, message_id: str, original: str) -> MessageReceiptHandle | None:
        """remove() for whichever client holds the handle (a message the proxy could not write to its client)."""
        for client_id, g in list(self._groups):
            if g == group and (message_id, original) in self._groups.get((client_id, g), {}):
                return await self.remove(client_id, group, message_id, original)
        return None

    def clear_client(self, client_id: str) -> None:
        for key in [k for k in self._groups if k[0] == client_id]:
            self.clear_group(key)

    def clear_group(self, key: _Key) -> None:
        """Every message of the client in the group visible again soon (the client went away)."""
        handles = self._groups.pop(key, None)
        for handle in (handles or {}).values():
            self._spawn(self._clear(handle))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.config.renew_schedule_period_millis / 1000)
            try:
                self.scan()
            except Exception:
                log.exception("auto renew scan failed")

    def scan(self) -> None:
        now = now_ms()
        for key, handles in list(self._groups.items()):
            if not self.client_online(key[0]):
                self.clear_group(key)
                continue
            for handle in list(handles.values()):
                if handle.lock.locked():
                    continue
                try:
                    next_visible = decode(handle.current).next_visible_time
                except GrpcProxyException:
                    handles.pop((handle.message_id, handle.original), None)
                    continue
                if next_visible - now <= self.config.renew_ahead_time_millis:
                    self._spawn(self._renew(key, handle))

    async def _renew(self, key: _Key, handle: MessageReceiptHandle) -> None:
        async with handle.lock:
            handles = self._groups.get(key)
            if handles is None or handles.get((handle.message_id, handle.original)) is not handle:
                return  # acked meanwhile
            c = self.config
            if handle.renew_retry_times >= c.max_renew_retry_times:
                handles.pop((handle.message_id, handle.original), None)
                return
            if now_ms() - handle.consume_timestamp >= c.renew_max_time_millis:
                handles.pop((handle.message_id, handle.original), None)
                delay = self.retry_delay(handle.group, handle.reconsume_times)
                await self._change(handle, delay, "stop renew")
                return
            step = c.renew_next_millis[min(handle.renew_times, len(c.renew_next_millis) - 1)]
            try:
                handle.current = await self.consumer.change_invisible_time(decode(handle.current), handle.group,
                                                                           handle.topic, step)
            except GrpcProxyException as e:  # an invalid or expired handle: no point in trying again
                log.warning("renew of %s in %s failed: %s", handle.message_id, handle.group, e.message)
                handles.pop((handle.message_id, handle.original), None)
                return
            except Exception as e:
                log.warning("renew of %s in %s failed: %s", handle.message_id, handle.group, e)
                handle.renew_retry_times += 1
                return
            handle.renew_retry_times = 0
            handle.renew_times += 1

    async def _clear(self, handle: MessageReceiptHandle) -> None:
        async with handle.lock:
            await self._change(handle, self.config.invisible_time_millis_when_clear, "clear")

    async def _change(self, handle: MessageReceiptHandle, invisible_time: int, why: str) -> None:
        try:
            await self.consumer.change_invisible_time(decode(handle.current), handle.group, handle.topic,
                                                      invisible_time)
        except Exception as e:
            log.info("%s of %s in %s: %s", why, handle.message_id, handle.group, e)
