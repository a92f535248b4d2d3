"""The wall clock in milliseconds, as RocketMQ's System.currentTimeMillis (timestamps on messages, offsets and
checkpoints are all in it)."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
