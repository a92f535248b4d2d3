"""Queue selectors for ordered messages: ``selector(mqs, msg, arg) -> MessageQueue``.

Messages sent with the same ``arg`` through the same selector land on the same queue, so they are stored,
and consumed, in send order (while the queue count does not change).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from pocketmq.common.java_hash import java_string_hash
from pocketmq.common.java_numbers import INT_MAX, INT_MIN, wrap_int
from pocketmq.remoting.client_body import MessageQueue

from ..message import Message

MessageQueueSelector = Callable[[list[MessageQueue], Message, Any], MessageQueue | None]


def _java_hash_code(arg: Any) -> int:
    if isinstance(arg, str):
        return java_string_hash(arg)
    if isinstance(arg, bool):
        return 1231 if arg else 1237
    if isinstance(arg, int):
        # Integer.hashCode for ints in range, Long.hashCode (high ^ low word) otherwise.
        if INT_MIN <= arg <= INT_MAX:
            return arg
        v = arg & 0xFFFFFFFFFFFFFFFF
        return wrap_int(v ^ (v >> 32))
    return hash(arg)


def select_message_queue_by_hash(mqs: list[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """SelectMessageQueueByHash: ``abs(arg.hashCode() % n)``, with Java's hash for str and int args, so a
    Java producer with the same argument picks the same queue."""
    h = _java_hash_code(arg)
    return mqs[abs(h) % len(mqs)]  # Java's remainder keeps the dividend's sign; abs() of it is abs(h) % n


def select_message_queue_by_random(mqs: list[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    return random.choice(mqs)
