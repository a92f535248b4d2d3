"""The timer files byte by byte (docs/storage.md, "Timer files"): timer log units and blanks, wheel slots, the
timercheck page; and recovery of a timer log whose tail is torn."""

from __future__ import annotations

import os
import struct

from pocketmq.storage.timer.timer_checkpoint import TimerCheckpoint
from pocketmq.storage.timer.timer_log import (
    BLANK_MAGIC_CODE,
    MAGIC_DEFAULT,
    MAGIC_ROLL,
    UNIT_SIZE,
    TimerLog,
    pack_unit,
)
from pocketmq.storage.timer.timer_wheel import IGNORE, SLOT_SIZE, TimerWheel


def test_unit_layout_and_blank(tmp_path) -> None:
    tlog = TimerLog(str(tmp_path / "timerlog"), UNIT_SIZE * 2 + 20)  # two units and 20 bytes: no third
    unit = pack_unit(-1, MAGIC_DEFAULT | MAGIC_ROLL, 1_000, 4_500, 123_456, 321, 77)
    assert len(unit) == UNIT_SIZE == 52
    assert struct.unpack(">iqiqiqiiq", unit) == (52, -1, 3, 1_000, 3_500, 123_456, 321, 77, 0)
    positions = [tlog.append(unit) for _ in range(3)]
    assert positions == [0, 52, 124]  # the third went to the next file, after a blank
    first = tlog.files[0].mm
    assert struct.unpack_from(">iqi", first, 104) == (20, 0, BLANK_MAGIC_CODE)
    assert BLANK_MAGIC_CODE & 0xFFFFFFFF == 0xCBD43194
    assert sorted(os.listdir(tmp_path / "timerlog")) == ["00000000000000000000", "00000000000000000124"]
    read = tlog.read_unit(52)
    assert read is not None and (read.delayed_time, read.offset_py, read.size_py, read.hash_topic) == (4500, 123_456,
                                                                                                        321, 77)
    assert tlog.read_unit(104) is None  # the blank
    tlog.shutdown()


def test_wheel_slot_layout(tmp_path) -> None:
    wheel = TimerWheel(str(tmp_path / "timerwheel"), slots_total=10, precision_ms=100)
    assert os.path.getsize(tmp_path / "timerwheel") == 10 * 2 * SLOT_SIZE == 640
    wheel.put_slot(2_350, 52, 104, 2, 0)  # slot of time 2300: index 23 % 20 = 3
    with open(tmp_path / "timerwheel", "rb") as f:
        raw = f.read()
    assert struct.unpack_from(">qqqii", raw, 3 * SLOT_SIZE) == (23, 52, 104, 2, 0)
    assert wheel.get_slot(2_399).last_pos == 104
    assert wheel.get_slot(4_300).time_ms == -1  # same index, another turn of the wheel: empty
    wheel.revise_slot(2_300, IGNORE, 156, force=False)
    assert (wheel.get_slot(2_300).first_pos, wheel.get_slot(2_300).last_pos) == (52, 156)
    wheel.revise_slot(4_300, IGNORE, 208, force=True)  # a unit of the new turn replaces the old slot
    assert (wheel.get_slot(4_300).first_pos, wheel.get_slot(4_300).last_pos) == (208, 208)
    assert wheel.check_phy_pos(4_000, 200) == 208 and wheel.check_phy_pos(4_000, 300) == 1 << 63
    assert wheel.get_all_num(4_000) == 0
    wheel.shutdown()


def test_checkpoint_layout(tmp_path) -> None:
    path = str(tmp_path / "config" / "timercheck")
    cp = TimerCheckpoint(path)
    assert not cp.existed
    cp.last_read_time_ms, cp.last_timer_log_flush_pos, cp.last_timer_queue_offset = 1_700, 520, 9
    cp.master_timer_queue_offset = 10
    cp.update_data_version(0)
    cp.shutdown()
    with open(path, "rb") as f:
        raw = f.read()
    assert len(raw) == 4096
    fields = struct.unpack_from(">qqqqqqq", raw)
    assert fields[:5] == (1_700, 520, 9, 10, 0) and fields[6] == 1 and fields[5] > 0
    again = TimerCheckpoint(path)
    assert again.existed and (again.last_read_time_ms, again.master_timer_queue_offset, again.counter) == (1_700, 10, 1)
    again.shutdown()


def test_the_documented_example_unit_and_slot() -> None:
    """docs/storage.md §13.2 and §13.3: the bytes of the example are what the code writes."""
    unit = pack_unit(-1, MAGIC_DEFAULT, 1795280095000, 1795280155000, 1305, 272, -1395865113)
    assert unit == bytes.fromhex("00000034 ffffffffffffffff 00000001 000001a1ff084718 0000ea60"
                                 "0000000000000519 00000110 accc c9e7 0000000000000000".replace(" ", ""))
    assert 1795280155 % (7 * 86400 * 2) * SLOT_SIZE == 7_480_160
