"""inspect's timer section and the console's storage view of it: a store's timercheck, wheel slots and timer-log
units as they are on disk, read-only."""

from __future__ import annotations

import struct
import time
import tracemalloc
from pathlib import Path

from pocketmq.common import MessageExtBrokerInner
from pocketmq.common.java_hash import java_string_hash
from pocketmq.console.storage_view import files_view
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig
from pocketmq.storage.inspect import main as inspect_main
from pocketmq.storage.inspect.files import ReadOnlyFiles
from pocketmq.storage.inspect.timer import timer_section
from pocketmq.storage.timer.timer_log import UNIT_SIZE

from .conftest import inspect_json, run_tool

P = 100
PRECISION_CHECKS = 1000  # (inspect.timer.PRECISION_CHECKS: the slots the precision check reads)


def timer_store(path: Path, count: int = 5, file_units: int = 3) -> tuple[list[int], list[int]]:
    """A stopped store with ``count`` timer messages a minute ahead, 100 ms apart, in timer-log files of
    ``file_units`` units."""
    config = MessageStoreConfig(store_path_root_dir=str(path), mapped_file_size_commit_log=1024 * 1024,
                                mapped_file_size_consume_queue=1000, max_hash_slot_num=64, max_index_num=256,
                                timer_precision_ms=P, mapped_file_size_timer_log=file_units * UNIT_SIZE + 16)
    store = DefaultMessageStore(config)
    store.load()
    store.start()
    base = (time.time_ns() // 1_000_000 // P + 600) * P + 50
    offsets = []
    for i in range(count):
        r = store.put_message(MessageExtBrokerInner("T", b"%d" % i, {"TIMER_DELIVER_MS": str(base + i * P)}))
        offsets.append(r.append_result.wrote_offset)
    deadline = time.monotonic() + 10
    while store.timer_message_store.enqueued < count:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    store.shutdown()
    return offsets, [base + i * P - 50 for i in range(count)]


def test_timer_section(tmp_path: Path) -> None:
    offsets, slot_times = timer_store(tmp_path / "s")
    report = inspect_json(tmp_path / "s", "--timer", "--timer-precision", str(P))
    timer = report["timer"]
    assert set(report) >= {"timer"} and "commitlog" not in report
    cp = timer["checkpoint"]
    assert cp["present"] and cp["last_timer_queue_offset"] == cp["master_timer_queue_offset"] == 5
    assert cp["last_timer_log_flush_pos"] == 5 * UNIT_SIZE + 16  # two files: 3 units and a blank, then 2
    wheel = timer["wheel"]
    assert wheel["slot_count"] == 7 * 86400 * 2 and wheel["slots_in_use"] == 5
    assert [s["time_ms"] for s in wheel["slots"]] == slot_times and {s["num"] for s in wheel["slots"]} == {1}
    files = timer["log"]["files"]
    assert [f["name"] for f in files] == ["00000000000000000000", "00000000000000000172"]
    assert [f["end"]["kind"] for f in files] == ["blank", "unwritten"]
    units = [u for f in files for u in f["units"]]
    assert [u["offset"] for u in units] == [0, 52, 104, 172, 224]
    assert [u["delayed_time_ms"] for u in units] == slot_times
    assert {u["prev_pos"] for u in units} == {-1} and {u["magic"] for u in units} == {1}
    # A unit's message is the record the timer topic holds, not the one sent (that went to rmq_sys_wheel_timer).
    assert [u["commitlog_offset"] for u in units] == offsets
    code, text = run_tool(inspect_main, [str(tmp_path / "s"), "--timer", "--timer-precision", str(P)])
    assert code == 0 and "Timer wheel (timerwheel" in text and "5 in use" in text
    assert "Timer log file timerlog/00000000000000000172" in text and "lastTimerQueueOffset    5" in text
    # Every field of a unit (docs/storage.md §13.2), as the JSON has them.
    u = units[0]
    assert (f"commitlog {u['commitlog_offset']} ({u['size']} bytes)  enqueued {u['enqueue_time_ms']} + delay "
            f"{u['delayed_time_ms'] - u['enqueue_time_ms']}  topic hash {java_string_hash('T')}\n") in text


def test_console_storage_view_has_the_timer_files(tmp_path: Path) -> None:
    _, slot_times = timer_store(tmp_path / "s")
    view = files_view(str(tmp_path / "s"), timer_precision_ms=P)
    assert [s["time_ms"] for s in view["timer"]["wheel"]["slots"]] == slot_times
    assert sum(f["unit_count"] for f in view["timer"]["log"]["files"]) == 5


def test_a_store_without_timers_prints_no_timer_section(store: Path) -> None:
    code, text = run_tool(inspect_main, [str(store)])  # (the demo's store: timerWheelEnable=false)
    assert code == 0 and "Timer" not in text
    assert inspect_json(store)["timer"]["wheel"] == {"present": False}


def test_a_precision_that_cannot_be_or_disagrees_with_the_timer_log_is_said(tmp_path: Path, capsys) -> None:
    # 0 and negative ones were taken (every slot "never"); a wrong one dated the slots decades off, unremarked.
    timer_store(tmp_path / "s")
    for bad in ("0", "-1000"):
        code, out = run_tool(inspect_main, [str(tmp_path / "s"), "--timer", "--timer-precision", bad])
        assert (code, out) == (2, "")
        assert "--timer-precision must be a positive number of milliseconds" in capsys.readouterr().err
    right = inspect_json(tmp_path / "s", "--timer", "--timer-precision", str(P))["timer"]["wheel"]
    assert "precision_mismatch" not in right
    wheel = inspect_json(tmp_path / "s", "--timer", "--timer-precision", "1000")["timer"]["wheel"]
    assert wheel["precision_mismatch"] == {"slots": 5, "checked": 5, "implied_precision_ms": P}
    assert files_view(str(tmp_path / "s"))["timer"]["wheel"]["precision_mismatch"] == wheel["precision_mismatch"]
    code, text = run_tool(inspect_main, [str(tmp_path / "s"), "--timer"])
    assert f"! 5 of 5 slots in use disagree with the due times of the timer-log units they point at, read at " \
           f"1000 ms precision: those units imply --timer-precision {P}" in text


def test_the_precision_check_reads_a_bounded_sample_of_slots(tmp_path: Path) -> None:
    # It read every slot in use, each with a linear search of the timer-log files: every console storage page paid
    # for the whole wheel. Now the earliest PRECISION_CHECKS slots, found by bisection, and the output says so.
    count = PRECISION_CHECKS + 200
    timer_store(tmp_path / "s", count, file_units=30)  # (41 timer-log files)
    wheel = inspect_json(tmp_path / "s", "--timer", "--timer-precision", "1000", "--limit", "0")["timer"]["wheel"]
    assert wheel["slots_in_use"] == count
    assert wheel["precision_mismatch"] == {"slots": PRECISION_CHECKS, "checked": PRECISION_CHECKS,
                                           "implied_precision_ms": P}
    code, text = run_tool(inspect_main, [str(tmp_path / "s"), "--timer", "--limit", "0"])
    assert f"! 1,000 of 1,000 slots checked (the earliest of {count:,} in use) disagree" in text


def test_a_page_of_a_crowded_wheel_holds_only_the_slots_it_shows(tmp_path: Path) -> None:
    # It made a dict of every slot in use before keeping a page of them: a console page of a full wheel (1,209,600
    # slots) took 3.3 s and 596 MiB. Now the earliest are picked from the file's tuples, in the same order.
    count = 100_000
    slot = struct.Struct(">qqqii")
    times = [count - i // 2 for i in range(count)]  # descending, each time in two slots: ties go by index
    with open(tmp_path / "timerwheel", "wb") as f:
        f.write(b"".join(slot.pack(t, i * 52, i * 52, 1, 0) for i, t in enumerate(times)))
    tracemalloc.start()
    try:
        page = timer_section(str(tmp_path), ReadOnlyFiles(), 1000, 5)["wheel"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak  # (a dict a slot: about 40 MiB)
    whole = timer_section(str(tmp_path), ReadOnlyFiles(), 1000, None)["wheel"]
    expected = sorted(range(count), key=lambda i: (times[i], i))
    assert [s["index"] for s in whole["slots"]] == expected and whole["hidden"] == 0
    assert page["slots"] == whole["slots"][:5] and [s["index"] for s in page["slots"]] == [99_998, 99_999, 99_996,
                                                                                             99_997, 99_994]
    assert page["slots_in_use"] == whole["slots_in_use"] == count and page["hidden"] == count - 5
