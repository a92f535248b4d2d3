"""RocketMQ's UtilAll time texts: a time in milliseconds written in local time, in the forms RocketMQ's files and
tools use (its index files' names, mqadmin's columns, QueueTimeSpan's fields).

A negative time is Java's Calendar's (-1 is the last millisecond before 1970), which floor division gives. A time
no calendar of this platform can hold (a born timestamp a client made up) is written as its number.
"""

from __future__ import annotations

import time
from decimal import Decimal


def _local(ms: int, date_format: str, millis_format: str) -> str:
    seconds, millis = divmod(int(ms), 1000)
    try:
        return time.strftime(date_format, time.localtime(seconds)) + millis_format.format(millis)
    except (OverflowError, OSError, ValueError):
        return str(ms)


def time_millis_to_human_string(ms: int) -> str:
    """UtilAll.timeMillisToHumanString: yyyyMMddHHmmssSSS (an index file's name)."""
    return _local(ms, "%Y%m%d%H%M%S", "{:03d}")


def time_millis_to_human_string2(ms: int) -> str:
    """UtilAll.timeMillisToHumanString2: yyyy-MM-dd HH:mm:ss,SSS (mqadmin's times)."""
    return _local(ms, "%Y-%m-%d %H:%M:%S", ",{:03d}")


def format_date_millis(ms: int) -> str:
    """UtilAll.formatDate(date, YYYY_MM_DD_HH_MM_SS_SSS): yyyy-MM-dd#HH:mm:ss:SSS (QueueTimeSpan's texts, and what
    mqadmin's -s/-b options read)."""
    return _local(ms, "%Y-%m-%d#%H:%M:%S", ":{:03d}")


def seconds_text(seconds: float) -> str:
    """A timeout as an error message gives it, never in exponent form: to the hundredth of a second ("0.3s", "2s",
    "10000000s"; a time left computed as 0.2989999999997963 reads 0.3), and one shorter than that to three
    significant digits ("0.001s", "0.0004s"), so the figure a user gave (``--timeout 0.001``) is the one shown."""
    if seconds >= 0.01:
        return f"{seconds:.2f}".rstrip("0").rstrip(".") + "s"
    return format(Decimal(f"{seconds:.3g}"), "f") + "s"
