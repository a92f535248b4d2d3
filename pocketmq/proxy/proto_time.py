"""protobuf-java's Durations and Timestamps as RocketMQ's proxy reads a request's times with them: a Duration or
Timestamp outside its proto definition's range (or a Duration whose seconds and nanos have two signs) is refused,
an IllegalArgumentException there, an internal error with its text here too; a valid one is read in Java's
integer arithmetic (nanos truncated towards zero)."""

from __future__ import annotations

from typing import Any

from .protocol import load
from .proxy_exception import GrpcProxyException

pb = load()

_DURATION_SECONDS = 315_576_000_000
_NANOS = 999_999_999
_TIMESTAMP_MIN, _TIMESTAMP_MAX = -62_135_596_800, 253_402_300_799


def _invalid(text: str) -> GrpcProxyException:
    return GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR, f"{text}. IllegalArgumentException")


def _checked_duration(duration: Any) -> tuple[int, int]:
    seconds, nanos = duration.seconds, duration.nanos
    if not (-_DURATION_SECONDS <= seconds <= _DURATION_SECONDS and -_NANOS <= nanos <= _NANOS
            and not ((seconds < 0 or nanos < 0) and (seconds > 0 or nanos > 0))):
        raise _invalid(f"Duration is not valid. See proto definition for valid values. Seconds ({seconds}) must be "
                       "in range [-315,576,000,000, +315,576,000,000]. Nanos ({nanos}) must be in range "
                       "[-999,999,999, +999,999,999]. Nanos must have the same sign as seconds".format(nanos=nanos))
    return seconds, nanos


def duration_millis(duration: Any) -> int:
    """Durations.toMillis."""
    seconds, nanos = _checked_duration(duration)
    return seconds * 1000 + int(nanos / 1_000_000)


def duration_seconds(duration: Any) -> int:
    """Durations.toSeconds."""
    return _checked_duration(duration)[0]


def timestamp_valid(timestamp: Any) -> bool:
    """Timestamps.isValid."""
    return _TIMESTAMP_MIN <= timestamp.seconds <= _TIMESTAMP_MAX and 0 <= timestamp.nanos <= _NANOS


def timestamp_millis(timestamp: Any) -> int:
    """Timestamps.toMillis."""
    if not timestamp_valid(timestamp):
        raise _invalid(f"Timestamp is not valid. See proto definition for valid values. Seconds ({timestamp.seconds}) "
                       "must be in range [-62,135,596,800, +253,402,300,799]. Nanos ({nanos}) must be in range "
                       "[0, +999,999,999]".format(nanos=timestamp.nanos))
    return int(timestamp.seconds * 1000 + timestamp.nanos // 1_000_000)
