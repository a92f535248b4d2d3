"""The value checks of BrokerConfig's keys: one table for both ways a value arrives, the properties file (and
BrokerConfig's constructor) at start and UPDATE_BROKER_CONFIG at run time, so that a value one refuses the other
refuses too, with the same one-line reason ("bad value for <key>: ...").

Only values the broker would fail on are refused: a period of 0 (RocketMQ's ``scheduleAtFixedRate`` refuses it, its
``waitForRunning(0)`` spins a core; pocketmq's timers would spin too, and a pass that never awaits stops the event
loop), TBW102 without a queue, every put refused, a clean round that fails at each run. Small positive periods stay
allowed, unclamped: tests run the timers in milliseconds (docs/compatibility.md, deliberate differences).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from .config_properties import format_value

__all__ = ["check_value", "checked_fields", "value_error"]


def _at_least_one(f: dataclasses.Field[Any], value: Any) -> str | None:
    return None if value >= 1 else f"must be at least 1, got {format_value(f, value)}"


def _period(f: dataclasses.Field[Any], value: Any) -> str | None:
    """A period of a timer or wait loop (None: the key's own default, where it has one)."""
    if value is None or value > 0:
        return None
    unit = {"ms": " milliseconds", "us": " microseconds"}.get(f.metadata.get("unit") or "", "")
    return f"must be a positive number of{unit or ' seconds'}, got {format_value(f, value)}"


def _hours(f: dataclasses.Field[Any], value: Any) -> str | None:
    # (ASCII digits: str.isdigit also takes "²", which int() refuses at every clean round)
    if all(h.strip().isascii() and h.strip().isdigit() for h in value.split(";") if h.strip()):
        return None
    return f"expected hours separated by ';' (04, or 04;16), got {value!r}"


# Attribute name -> check. Every period of a periodic job (remoting.tasks.TaskTracker.periodic) or a wait loop
# (the store's threads, the transaction check, the timer) is here; a key whose 0 means something (busyPollMicros,
# serverFrameReadTimeoutMillis: off) or that is no period (timeouts, the pop margins) is not.
_CHECKS: dict[str, Callable[[dataclasses.Field[Any], Any], str | None]] = {
    "default_topic_queue_nums": _at_least_one,
    "server_max_inflight_requests": _at_least_one,
    "max_message_size": _at_least_one,
    "delete_when": _hours,
    **{name: _period for name in (
        "flush_interval_commit_log", "flush_interval_consume_queue", "clean_resource_interval",
        "register_name_server_period", "pull_request_hold_check_interval", "revive_interval",
        "pop_buffer_scan_interval", "load_balance_poll_name_server_interval", "flush_delay_offset_interval",
        "timer_flush_interval", "timer_poll_interval", "transaction_check_interval", "flush_consumer_offset_interval",
        "client_housekeeping_interval", "stats_sample_interval",
    )},
}


def checked_fields() -> frozenset[str]:
    """The attribute names that have a check (tests: every period is among them)."""
    return frozenset(_CHECKS)


def check_value(f: dataclasses.Field[Any], value: Any) -> None:
    """ValueError("bad value for <key>: <why>") when the broker cannot work with ``value`` (an attribute value:
    seconds for the millisecond keys) for field ``f``."""
    check = _CHECKS.get(f.name)
    why = None if check is None else check(f, value)
    if why is not None:
        raise ValueError(value_error(f.metadata["key"], why))


def value_error(key: str, why: str) -> str:
    return f"bad value for {key}: {why}"
