"""MessageClientIDSetter: the UNIQ_KEY a producer stamps on every message (SendResult.msg_id).

16 bytes as 32 upper-case hex chars: client IPv4 (4) + pid (2) + a per-process random int (4; RocketMQ uses
the class loader's hash code) + milliseconds since the start of the current month, local time (4) + a
counter (2). Unique enough without coordination; time-ordered within a process.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import random
import socket
import struct
import time

from .client_config import get_client_ip
from .message_const import PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX

_counter = itertools.count()  # next() is atomic under the GIL: safe across threads and event loops


def _fix_prefix() -> str:
    try:
        ip = socket.inet_aton(get_client_ip())
    except OSError:
        ip = socket.inet_aton("127.0.0.1")
    return (ip + struct.pack(">HI", os.getpid() & 0xFFFF, random.getrandbits(32))).hex().upper()


def _month_bounds(now_ms: int) -> tuple[int, int]:
    """(start of this month, start of next month) in epoch ms, local time, as Java's Calendar does."""
    now = dt.datetime.fromtimestamp(now_ms / 1000).astimezone()
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return int(start.timestamp() * 1000), int(nxt.timestamp() * 1000)


_FIX = _fix_prefix()
_start_ms, _next_start_ms = _month_bounds(int(time.time() * 1000))


def _new_prefix_after_fork() -> None:
    # A forked worker (multiprocessing, gunicorn --preload, celery prefork) would otherwise keep its parent's pid
    # and random int, and its counter where the parent's was: siblings sending in the same millisecond made the
    # same ids (RocketMQ builds the prefix in each process).
    global _FIX
    _FIX = _fix_prefix()


os.register_at_fork(after_in_child=_new_prefix_after_fork)


def _head() -> str:
    """The prefix and the time part (ms since the start of this month) of an id made now."""
    global _start_ms, _next_start_ms
    now_ms = int(time.time() * 1000)
    if now_ms >= _next_start_ms:
        _start_ms, _next_start_ms = _month_bounds(now_ms)
    diff = now_ms - _start_ms
    if -1_000_000 < diff < 0:  # clock stepped back across a month start
        diff = 0
    # Java writes (int) diff: the low 32 bits, read back unsigned by getNearlyTimeFromID, so a month's
    # ~2.7e9 ms fit. Masking to 31 bits (as before) lost 2^31 ms after the 24th day of a month.
    return _FIX + f"{diff & 0xFFFFFFFF:08X}"


def create_uniq_id() -> str:
    return f"{_head()}{next(_counter) & 0xFFFF:04X}"


def uniq_id_maker():
    """``next()`` gives UNIQ_KEYs for the messages of one batch, the clock read once per 4,096 of them (not per
    message: it is a batch's largest cost). Read once for the whole batch, a batch of more than 65,536 messages
    wrapped the 16-bit counter under one time and repeated its first ids."""
    head = ""
    for n in _counter:
        if not head or n % 4096 == 0:
            head = _head()
        yield f"{head}{n & 0xFFFF:04X}"


def set_uniq_id(msg) -> str:
    """Give ``msg`` a UNIQ_KEY unless it has one (a retried message keeps its id)."""
    props = msg.properties
    uid = props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if uid is None:
        uid = props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = create_uniq_id()
    return uid


def get_ip_str_from_id(msg_id: str) -> str:
    return socket.inet_ntoa(bytes.fromhex(msg_id[:8]))


def get_pid_from_id(msg_id: str) -> int:
    return int(msg_id[8:12], 16)


def get_nearly_time_from_id(msg_id: str) -> int:
    """The epoch ms a UNIQ_KEY was made, assuming it is less than a month old (getNearlyTimeFromID)."""
    raw = bytes.fromhex(msg_id)
    ip_len = 16 if len(raw) == 28 else 4
    span = int.from_bytes(raw[ip_len + 6:ip_len + 10], "big")
    now_ms = int(time.time() * 1000)
    start, _ = _month_bounds(now_ms)
    if start + span > now_ms:  # in the future for this month, so made last month
        prev = dt.datetime.fromtimestamp(start / 1000).astimezone() - dt.timedelta(days=1)
        start, _ = _month_bounds(int(prev.timestamp() * 1000))
    return start + span
