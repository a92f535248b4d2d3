"""SendCallback (RocketMQ's client.producer.SendCallback) and how an async send or request calls it back."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable
from typing import Any, Protocol

from ..message import SendResult
from .request_future_holder import RequestCallback

log = logging.getLogger("pocketmq.client.producer.producer")

# An async callback's task, referenced until it ends (the loop keeps only a weak reference to a task).
_callback_tasks: set[asyncio.Task[None]] = set()


class SendCallback(Protocol):
    """``on_success`` / ``on_exception`` are called on the event loop when the send ends; either may be an
    ``async def``, whose coroutine then runs as a task of its own (nobody waits for it; a failure is logged)."""

    def on_success(self, result: SendResult) -> None | Awaitable[None]: ...

    def on_exception(self, exc: BaseException) -> None | Awaitable[None]: ...


def run_callback(callback: SendCallback | RequestCallback, task: asyncio.Task[Any]) -> None:
    try:
        if task.cancelled():
            answer = callback.on_exception(asyncio.CancelledError())
        elif task.exception() is not None:
            answer = callback.on_exception(task.exception())  # type: ignore[arg-type]
        else:
            answer = callback.on_success(task.result())
    except Exception:
        log.exception("send callback %r failed", callback)
        return
    if inspect.isawaitable(answer):
        # Called and dropped, an async callback's coroutine never ran ("coroutine ... was never awaited").
        run = asyncio.get_running_loop().create_task(_await_callback(callback, answer))
        _callback_tasks.add(run)
        run.add_done_callback(_callback_tasks.discard)


async def _await_callback(callback: object, answer: Awaitable[Any]) -> None:
    try:
        await answer
    except Exception:
        log.exception("send callback %r failed", callback)
