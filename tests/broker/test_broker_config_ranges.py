"""The range checks of BrokerConfig's counts, sizes, percentages, hours and names (config_checks.py): a value the
broker cannot work with is refused at start naming the key and what it takes, and the smallest value it takes works
(a store made from it writes, reads, indexes and delivers timer messages)."""

from __future__ import annotations

import os
import time

import pytest

from pocketmq.broker.config import BrokerConfig, BrokerConfigError
from pocketmq.common import MessageExtBrokerInner
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.results import PutMessageStatus

# key, the smallest value it takes, and what its refusal says past "must be at least <least>"
AT_LEAST = [
    # (0: every put refused, "does not fit a commit log file"; 92 bytes is the smallest record, 8 the file's end)
    ("mappedFileSizeCommitLog", 100, " bytes (the smallest message record and the blank that ends a file)"),
    ("mappedFileSizeConsumeQueue", 1, " byte (rounded up to whole 20-byte entries)"),
    ("mappedFileSizeTimerLog", 68, " bytes (a 52-byte unit and the blank that ends a file)"),
    ("maxHashSlotNum", 1, ""),  # (0: ZeroDivisionError in every dispatch, puts refused for good)
    # (0 or 1: no file ever takes an entry: every message hidden, thousands of index files a second)
    ("maxIndexNum", 2, " (an index file's entry 0 is never used)"),
    ("reviveQueueNum", 1, ""),
    ("pullMessageThreadPoolNums", 1, ""),
    ("timerPrecisionMs", 1, " millisecond"),
    ("timerMaxDelaySec", 1, " second"),  # (0: every pop refused, its checkpoint past the limit)
]


@pytest.mark.parametrize(("key", "least", "why"), AT_LEAST)
def test_a_count_or_size_below_its_least_is_refused_naming_it(key: str, least: int, why: str) -> None:
    for value in (least - 1, -5):
        with pytest.raises(BrokerConfigError) as refused:
            BrokerConfig.from_properties_text(f"{key}={value}\n")
        assert str(refused.value) == f"<string>: bad value for {key}: must be at least {least}{why}, got {value}"
    assert f"{key}={least}" in BrokerConfig.from_properties_text(f"{key}={least}\n").to_properties().splitlines()


PERCENTAGES = ["diskMaxUsedSpaceRatio", "diskSpaceWarningLevelRatio", "diskSpaceCleanForciblyRatio",
               "accessMessageInMemoryMaxRatio", "popFromRetryProbability"]


@pytest.mark.parametrize("key", PERCENTAGES)
def test_a_percentage_outside_0_to_100_is_refused(key: str) -> None:
    for value in ("-1", "101", "500"):
        with pytest.raises(BrokerConfigError, match=rf"^<string>: bad value for {key}: must be a percentage from 0 "
                                                    rf"to 100, got {value}$"):
            BrokerConfig.from_properties_text(f"{key}={value}\n")
    for value in ("0", "100"):
        assert f"{key}={value}" in BrokerConfig.from_properties_text(f"{key}={value}\n").to_properties().splitlines()


@pytest.mark.parametrize("value", ["24", "25", "04;24", "", ";", " "])
def test_delete_when_takes_hours_from_0_to_23(value: str) -> None:
    # (an hour that never comes: expired files deleted only once the disk fills)
    with pytest.raises(BrokerConfigError, match=r"^<string>: bad value for deleteWhen: expected hours from 0 to 23 "
                                                r"separated by ';' \(04, or 04;16\), got "):
        BrokerConfig.from_properties_text(f"deleteWhen={value}\n")


def test_delete_when_takes_every_hour_of_the_day() -> None:
    hours = ";".join(f"{h:02d}" for h in range(24))
    assert BrokerConfig.from_properties_text(f"deleteWhen={hours}\n").delete_when == hours
    assert BrokerConfig.from_properties_text("deleteWhen=0;;23;\n").delete_when == "0;;23;"


@pytest.mark.parametrize("key", ["brokerName", "brokerClusterName", "msgTraceTopicName"])
def test_an_empty_name_is_refused(key: str) -> None:
    for line in (f"{key}=\n", f"{key}=   \n"):
        with pytest.raises(BrokerConfigError, match=rf"^<string>: bad value for {key}: must not be empty$"):
            BrokerConfig.from_properties_text(line)
    with pytest.raises(BrokerConfigError, match=r"bad value for brokerName: must not be empty"):
        BrokerConfig(broker_name=" ")


def test_busy_poll_takes_0_for_off_and_no_negative() -> None:
    with pytest.raises(BrokerConfigError, match=r"^<string>: bad value for busyPollMicros: must be 0 \(off\) or a "
                                                r"positive number of microseconds, got -5$"):
        BrokerConfig.from_properties_text("busyPollMicros=-5\n")
    assert BrokerConfig.from_properties_text("busyPollMicros=0\n").busy_poll == 0


def test_a_register_broker_timeout_of_0_is_refused() -> None:
    # (0: every registration timed out before it connected, so the broker never had a route, one warning a period)
    for value in ("0", "-1"):
        with pytest.raises(BrokerConfigError, match=r"^<string>: bad value for registerBrokerTimeoutMills: must be a "
                                                    rf"positive number of milliseconds, got {value}$"):
            BrokerConfig.from_properties_text(f"registerBrokerTimeoutMills={value}\n")


def _put(store: DefaultMessageStore, topic: str, **props: str) -> None:
    result = store.put_message(MessageExtBrokerInner(topic=topic, body=b"", queue_id=0, properties=props))
    assert result.status is PutMessageStatus.PUT_OK, result.remark


def _until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_the_least_values_work(tmp_path) -> None:
    # One record a commit-log file, one entry a consume-queue file, one a timer-log file, one an index file.
    least = "\n".join(f"{key}={value}" for key, value, _ in AT_LEAST if key != "mappedFileSizeCommitLog")
    text = (f"storePathRootDir={tmp_path}\n{least}\ntimerFlushIntervalMs=50\ntimerPollIntervalMs=5\n"
            "mappedFileSizeCommitLog=%d\n")
    store = DefaultMessageStore(BrokerConfig.from_properties_text(text % 100).to_store_config())
    store.load()
    store.start()
    try:
        for _ in range(3):
            _put(store, "T")
        _until(lambda: store.get_max_offset_in_queue("T", 0) == 3)
        assert store.get_message("G", "T", 0, 2, 32).message_count == 1
    finally:
        store.shutdown()
    # Keys and timer messages do not fit 100 bytes: the same least values with room for them.
    store = DefaultMessageStore(BrokerConfig.from_properties_text(
        text % 65536, store_path_root_dir=str(tmp_path / "keyed")).to_store_config())
    store.load()
    store.start()
    try:
        for i in range(3):
            _put(store, "K", KEYS=f"k{i} j{i}")
        for _ in range(2):
            # Due half a second after its own put (under timerMaxDelaySec's 1 s): a loaded machine that reaches
            # the put late must still find it in the future, or it is stored at once and no timer log is written.
            _put(store, "Later", TIMER_DELIVER_MS=str(time.time_ns() // 1_000_000 + 500))
        _until(lambda: store.get_max_offset_in_queue("K", 0) == 3 and store.get_max_offset_in_queue("Later", 0) == 2)
        assert len(store.query_message("K", "j1", 32, 0, 2**62).buffers) == 1
        assert len(os.listdir(store.config.timer_log_path)) == 2  # (a unit a file)
    finally:
        store.shutdown()
