"""The value checks of BrokerConfig's keys: one table for both ways a value arrives, the properties file (and
BrokerConfig's constructor) at start and UPDATE_BROKER_CONFIG at run time, so that a value one refuses the other
refuses too, with the same one-line reason ("bad value for <key>: ...").

Only values the broker would fail on, or that cannot mean what their key says, are refused: a period of 0
(RocketMQ's ``scheduleAtFixedRate`` refuses it, its ``waitForRunning(0)`` spins a core; pocketmq's timers would spin
too, and a pass that never awaits stops the event loop), TBW102 without a queue, every put refused, a clean round
that fails at each run, a file size no record fits, an index file that never takes an entry, a percentage outside
0-100, an hour past 23, an empty name. Small positive periods and sizes stay allowed, unclamped: tests run the timers
in milliseconds and the store in small files (docs/compatibility.md, deliberate differences).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pocketmq.common.constants import END_FILE_MIN_BLANK_LENGTH
from pocketmq.common.record_layout import record_struct
from pocketmq.storage.timer.timer_log import MIN_BLANK_LEN as TIMER_BLANK_LEN
from pocketmq.storage.timer.timer_log import UNIT_SIZE as TIMER_UNIT_SIZE

from .config_properties import format_value

__all__ = ["check_value", "checked_fields", "value_error"]

Check = Callable[[dataclasses.Field[Any], Any], str | None]

# The smallest record (no body, a one-character topic, no properties, IPv4 hosts) and the blank that ends a file:
# a commit-log file smaller than this refuses every put ("does not fit a commit log file").
MIN_COMMIT_LOG_FILE = record_struct(0, 1, 0).size + END_FILE_MIN_BLANK_LENGTH
# One 52-byte unit and the 16-byte blank that ends a timer-log file: with less, the first unit overruns its file.
MIN_TIMER_LOG_FILE = TIMER_UNIT_SIZE + TIMER_BLANK_LEN


def _at_least(least: int, unit: str = "", why: str = "") -> Check:
    def check(f: dataclasses.Field[Any], value: Any) -> str | None:
        if value >= least:
            return None
        return f"must be at least {least}{unit}{why}, got {format_value(f, value)}"
    return check


_at_least_one = _at_least(1)


def _period(f: dataclasses.Field[Any], value: Any) -> str | None:
    """A period of a timer or wait loop, or a timeout (None: the key's own default, where it has one)."""
    if value is None or value > 0:
        return None
    unit = {"ms": " milliseconds", "us": " microseconds"}.get(f.metadata.get("unit") or "", "")
    return f"must be a positive number of{unit or ' seconds'}, got {format_value(f, value)}"


def _off_or_positive(f: dataclasses.Field[Any], value: Any) -> str | None:
    if value >= 0:
        return None
    unit = {"ms": " milliseconds", "us": " microseconds"}.get(f.metadata.get("unit") or "", " seconds")
    return f"must be 0 (off) or a positive number of{unit}, got {format_value(f, value)}"


def _percent(f: dataclasses.Field[Any], value: Any) -> str | None:
    # (RocketMQ takes any int and clamps some of them, diskMaxUsedSpaceRatio to 10-95: 200 is a typo, not 95)
    return None if 0 <= value <= 100 else f"must be a percentage from 0 to 100, got {format_value(f, value)}"


def _hours(f: dataclasses.Field[Any], value: Any) -> str | None:
    # (ASCII digits: str.isdigit also takes "²", which int() refuses at every clean round; an hour past 23 never
    # comes, so files would expire only when the disk fills)
    hours = [h.strip() for h in value.split(";") if h.strip()]
    if hours and all(h.isascii() and h.isdigit() and int(h) <= 23 for h in hours):
        return None
    return f"expected hours from 0 to 23 separated by ';' (04, or 04;16), got {value!r}"


def _name(f: dataclasses.Field[Any], value: Any) -> str | None:
    # (an empty broker name routes as "", a cluster nobody can name in updateTopic -c, a trace topic never created)
    return None if value.strip() else "must not be empty"


# Attribute name -> check. Every period of a periodic job (remoting.tasks.TaskTracker.periodic) or a wait loop
# (the store's threads, the transaction check, the timer) is here; a key whose 0 means something (busyPollMicros,
# serverFrameReadTimeoutMillis: off; maxTransferCountOnMessageInMemory: one message a pull; the polling sizes: no
# parking) or that is no period (the pop margins) is not, nor a count pocketmq already reads as at least 1
# (diskSpaceCheckBytes).
_CHECKS: dict[str, Check] = {
    "broker_name": _name,
    "broker_cluster_name": _name,
    "msg_trace_topic_name": _name,
    "default_topic_queue_nums": _at_least_one,
    "server_max_inflight_requests": _at_least_one,
    "max_message_size": _at_least_one,
    "mapped_file_size_commit_log": _at_least(
        MIN_COMMIT_LOG_FILE, " bytes", " (the smallest message record and the blank that ends a file)"),
    "mapped_file_size_consume_queue": _at_least(1, " byte", " (rounded up to whole 20-byte entries)"),
    "mapped_file_size_timer_log": _at_least(
        MIN_TIMER_LOG_FILE, " bytes", " (a 52-byte unit and the blank that ends a file)"),
    "max_hash_slot_num": _at_least_one,
    "max_index_num": _at_least(2, why=" (an index file's entry 0 is never used)"),
    "revive_queue_num": _at_least_one,
    "pull_thread_pool_nums": _at_least_one,
    "timer_precision_ms": _at_least(1, " millisecond"),
    "timer_max_delay_sec": _at_least(1, " second"),
    "delete_when": _hours,
    "busy_poll": _off_or_positive,
    **{name: _percent for name in (
        "disk_max_used_space_ratio", "disk_space_warning_level_ratio", "disk_space_clean_forcibly_ratio",
        "access_message_in_memory_max_ratio", "pop_from_retry_probability",
        "pop_from_retry_probability_for_priority",
    )},
    **{name: _period for name in (
        "flush_interval_commit_log", "flush_interval_consume_queue", "clean_resource_interval",
        "register_name_server_period", "pull_request_hold_check_interval", "revive_interval",
        "pop_buffer_scan_interval", "load_balance_poll_name_server_interval", "flush_delay_offset_interval",
        "timer_flush_interval", "timer_poll_interval", "transaction_check_interval", "flush_consumer_offset_interval",
        "client_housekeeping_interval", "stats_sample_interval", "register_broker_timeout",
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
