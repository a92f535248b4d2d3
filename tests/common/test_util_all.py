"""common.util_all: RocketMQ's UtilAll time texts, in this process's local time as Java's Calendar writes them."""

from __future__ import annotations

import datetime as dt

import pytest

from pocketmq.common.util_all import (
    format_date_millis,
    seconds_text,
    time_millis_to_human_string,
    time_millis_to_human_string2,
)


@pytest.mark.parametrize("ms", [0, 1, 999, 1_700_000_000_123, 1_700_000_000_999, -1, -1001, 253_402_300_799_999])
def test_each_form_writes_the_local_time_to_the_millisecond(ms: int) -> None:
    seconds, millis = divmod(ms, 1000)
    t = dt.datetime.fromtimestamp(seconds)  # local time, as Calendar.getInstance()
    assert time_millis_to_human_string(ms) == t.strftime("%Y%m%d%H%M%S") + f"{millis:03d}"
    assert time_millis_to_human_string2(ms) == t.strftime("%Y-%m-%d %H:%M:%S") + f",{millis:03d}"
    assert format_date_millis(ms) == t.strftime("%Y-%m-%d#%H:%M:%S") + f":{millis:03d}"


def test_a_negative_time_is_before_1970_as_java_s_calendar_has_it() -> None:
    assert time_millis_to_human_string(-1)[-3:] == "999"
    assert time_millis_to_human_string(-1)[:14] == dt.datetime.fromtimestamp(-1).strftime("%Y%m%d%H%M%S")


def test_any_long_is_written_never_raised() -> None:
    """A born timestamp is whatever the client sent: mqadmin's queryMsgById must still print the message. Java's
    Calendar writes Long.MAX_VALUE in the year 292278994, as this platform's calendar does; a time beyond any
    calendar here is written as its number."""
    assert time_millis_to_human_string2(2**63 - 1).startswith("292278994-")
    assert format_date_millis(-(2**63)).startswith("-292275055-")
    for form in (time_millis_to_human_string, time_millis_to_human_string2, format_date_millis):
        assert form(10**20) == str(10**20)


@pytest.mark.parametrize(("seconds", "text"), [(0.2989999999997963, "0.3s"), (2.0, "2s"), (1e7, "10000000s"),
                                                (0.05, "0.05s"), (4.999, "5s"), (0.01, "0.01s")])
def test_a_timeout_is_written_to_the_hundredth_never_as_an_exponent(seconds: float, text: str) -> None:
    assert seconds_text(seconds) == text


@pytest.mark.parametrize(("seconds", "text"), [(0.001, "0.001s"), (0.0004, "0.0004s"), (4e-7, "0.0000004s"),
                                                (0.00734829, "0.00735s")])
def test_a_timeout_under_a_hundredth_is_written_as_given_not_as_0_01(seconds: float, text: str) -> None:
    # (--timeout 0.001 was reported as 0.01s: not the figure the user gave)
    assert seconds_text(seconds) == text
