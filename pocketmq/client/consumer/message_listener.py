"""Message listeners of the push consumer: what they return and the context they get.

A concurrent listener is ``fn(msgs, context) -> ConsumeConcurrentlyStatus``, an orderly one
``fn(msgs, context) -> ConsumeOrderlyStatus``; either may be ``async def`` (run as a task on the event loop)
or a plain function (run on the consumer's thread pool). An exception, or a return that is not a status,
counts as failure (RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT), as in RocketMQ.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pocketmq.common.message import MessageExt
from pocketmq.remoting.client_body import MessageQueue


class ConsumeConcurrentlyStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
    # With ConsumeOrderlyContext.auto_commit False (RocketMQ deprecates both, as it does manual commits): COMMIT
    # commits every batch consumed since the last commit; ROLLBACK consumes them all again. With auto_commit
    # True both count as SUCCESS.
    COMMIT = "COMMIT"
    ROLLBACK = "ROLLBACK"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """RocketMQ's ConsumeConcurrentlyContext: what a concurrent listener gets with a batch, and sets to say how
    much of it failed and when to retry it."""

    message_queue: MessageQueue
    # 0: the broker picks the level (3 + reconsumeTimes); -1: straight to the DLQ; > 0: this level.
    delay_level_when_next_consume: int = 0
    # The last message of the batch that succeeded when the listener returns CONSUME_SUCCESS (-1 = none);
    # the rest of the batch is sent back. None means the whole batch.
    ack_index: int | None = None


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """RocketMQ's ConsumeOrderlyContext: what an orderly listener gets with a batch, and sets to say whether the
    offset is committed and how long the queue waits before a retry."""

    message_queue: MessageQueue
    # False: SUCCESS leaves the offset where it is, until a batch answers COMMIT (or ROLLBACK to go back).
    auto_commit: bool = True
    # How long to wait before the batch is retried in place; None = the consumer's suspend_current_queue_time.
    suspend_current_queue_time: float | None = None


MessageListenerConcurrently = Callable[[list[MessageExt], ConsumeConcurrentlyContext], Any]
MessageListenerOrderly = Callable[[list[MessageExt], ConsumeOrderlyContext], Any]


def is_async_listener(fn: Callable[..., Any]) -> bool:
    """``async def`` functions and objects whose ``__call__`` is ``async def``."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def call_listener(fn: Callable[..., Any], is_async: bool, run_sync: Callable[..., Awaitable[Any]],
                        msgs: list[MessageExt], context: Any) -> Any:
    """The listener's answer: awaited on the loop when async, else on the thread pool through ``run_sync``."""
    if is_async:
        return await fn(msgs, context)
    result = await run_sync(fn, msgs, context)
    if inspect.isawaitable(result):  # a plain function that returned a coroutine
        result = await result
    return result
