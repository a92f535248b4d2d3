"""SendCallback (RocketMQ's client.producer.SendCallback) and how an async send or request calls it back."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from ..message import SendResult
from .request_future_holder import RequestCallback

log = logging.getLogger("pocketmq.client.producer.producer")


class SendCallback(Protocol):
    def on_success(self, result: SendResult) -> None: ...

    def on_exception(self, exc: BaseException) -> None: ...


def run_callback(callback: SendCallback | RequestCallback, task: asyncio.Task[Any]) -> None:
    try:
        if task.cancelled():
            callback.on_exception(asyncio.CancelledError())
        elif task.exception() is not None:
            callback.on_exception(task.exception())  # type: ignore[arg-type]
        else:
            callback.on_success(task.result())
    except Exception:
        log.exception("send callback %r failed", callback)
