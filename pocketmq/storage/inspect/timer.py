"""The timer files of a RocketMQ 5 store (storage/timer/, docs/storage.md "Timer files"): ``config/timercheck``,
``timerwheel`` (its slots in use) and ``timerlog/`` (its units), read-only."""

from __future__ import annotations

import bisect
import heapq
import mmap
import os
import struct
from collections.abc import Iterator

from ..timer.timer_log import BLANK_MAGIC_CODE, MAGIC_DELETE, MAGIC_ROLL, MIN_BLANK_LEN, UNIT, UNIT_SIZE
from ..timer.timer_message_store import DAY_SECS, TIMER_WHEEL_TTL_DAY
from ..timer.timer_wheel import SLOT_SIZE, data_ranges
from .files import ReadOnlyFiles, file_sizes, fmt_ms, log_file_problems, numbered_files

# The wheel's one size (TimerWheel's wheelLength): its slot count does not depend on the precision.
WHEEL_LENGTH = TIMER_WHEEL_TTL_DAY * DAY_SECS * 2 * SLOT_SIZE

_CHECK = struct.Struct(">qqqqqqq")
_CHECK_NAMES = ("last_read_time_ms", "last_timer_log_flush_pos", "last_timer_queue_offset",
                "master_timer_queue_offset", "state_version", "timestamp", "counter")
_SLOT = struct.Struct(">qqqii")
# Slots whose timer-log unit the precision check reads: the earliest in use. A wrong precision shows in every slot,
# so a sample finds it, and the check costs the same on a wheel of a million slots (every console storage page runs it).
PRECISION_CHECKS = 1000


def timer_section(root: str, files: ReadOnlyFiles, precision_ms: int, limit: int | None) -> dict:
    return {"checkpoint": _checkpoint(root, files), "wheel": _wheel(root, files, precision_ms, limit),
            "log": _log(root, files, limit)}


def _checkpoint(root: str, files: ReadOnlyFiles) -> dict:
    path = os.path.join(root, "config", "timercheck")
    if not os.path.isfile(path):
        return {"present": False}
    mm = files.map(path)
    if len(mm) < _CHECK.size:
        return {"present": True, "size": len(mm), "error": f"shorter than its {_CHECK.size} bytes"}
    out: dict = {"present": True, "size": len(mm), **dict(zip(_CHECK_NAMES, _CHECK.unpack_from(mm, 0), strict=True))}
    out["last_read_time"] = fmt_ms(out["last_read_time_ms"])
    return out


def _wheel(root: str, files: ReadOnlyFiles, precision_ms: int, limit: int | None) -> dict:
    path = os.path.join(root, "timerwheel")
    if not os.path.isfile(path):
        return {"present": False}
    mm = files.map(path)
    in_use = [0]

    def used() -> Iterator[tuple[int, int, int, int, int, int]]:
        for start, stop in data_ranges(path, len(mm) - len(mm) % SLOT_SIZE):
            for i, (t, first, last, num, magic) in enumerate(_SLOT.iter_unpack(mm[start:stop])):
                if t or first or last or num:
                    in_use[0] += 1
                    yield t, start // SLOT_SIZE + i, first, last, num, magic

    # A full wheel has 1,209,600 slots: a page shows the earliest few, so only those become dicts (heapq keeps
    # the time-then-index order a sort of all of them would give).
    keep = None if limit is None else max(limit, PRECISION_CHECKS)
    earliest = sorted(used()) if keep is None else heapq.nsmallest(keep, used())
    slots = [{"index": index, "time_ms": t * precision_ms, "time": fmt_ms(t * precision_ms), "first_pos": first,
              "last_pos": last, "num": num, "magic": magic} for t, index, first, last, num, magic in earliest]
    shown = slots if limit is None else slots[:limit]
    out = {"present": True, **file_sizes(path), "slot_count": len(mm) // SLOT_SIZE, "precision_ms": precision_ms,
           "slots_in_use": in_use[0], "slots": shown, "hidden": in_use[0] - len(shown)}
    if len(mm) not in (0, WHEEL_LENGTH):  # (0: created, not sized yet)
        out["problem"] = (f"{len(mm):,} bytes, not the wheel's {WHEEL_LENGTH:,}: pocketmq and Apache RocketMQ "
                          "(TimerWheel) refuse to load it")
    mismatch = _precision_mismatch(root, files, slots, precision_ms)
    if mismatch is not None:
        out["precision_mismatch"] = mismatch
    return out


def _precision_mismatch(root: str, files: ReadOnlyFiles, slots: list[dict], precision_ms: int) -> dict | None:
    """The wheel stores a slot's time divided by the precision, which the file does not record; the timer-log unit a
    slot starts with stores its due time in ms. Under the right precision, due time // precision is the slot's
    stored time: the slots where it is not, and the precision their units imply (due time // stored time).
    Only the first PRECISION_CHECKS slots (``slots`` is sorted by time) are checked; "checked" says how many."""
    directory = os.path.join(root, "timerlog")
    names = numbered_files(directory)
    bases = [int(n) for n in names]
    checked = slots[:PRECISION_CHECKS]
    wrong, implied = 0, None
    for slot in checked:
        stored = slot["time_ms"] // precision_ms
        due = _due_time(files, directory, names, bases, slot["first_pos"])
        if due is None or stored <= 0 or due // precision_ms == stored:
            continue
        wrong += 1
        implied = implied or due // stored
    return {"slots": wrong, "checked": len(checked), "implied_precision_ms": implied} if wrong else None


def _due_time(files: ReadOnlyFiles, directory: str, names: list[str], bases: list[int], pos: int) -> int | None:
    """The due time (enqueue time + delay) of the timer-log unit at log position ``pos``, or None: no such unit.
    ``bases``: the files' start positions (their names as ints), ascending."""
    i = bisect.bisect_right(bases, pos) - 1
    if i < 0:
        return None
    mm = files.map(os.path.join(directory, names[i]))
    at = pos - bases[i]
    if at + UNIT_SIZE > len(mm):
        return None
    size, _prev, _magic, enqueue, delay = UNIT.unpack_from(mm, at)[:5]
    return enqueue + delay if size == UNIT_SIZE else None


def _log(root: str, files: ReadOnlyFiles, limit: int | None) -> dict:
    directory = os.path.join(root, "timerlog")
    out = []
    names = numbered_files(directory)
    problems = log_file_problems(directory, names)
    for name in names:
        mm = files.map(os.path.join(directory, name))
        units, end = _units(mm, int(name))
        shown = units if limit is None else units[:limit]
        out.append({"name": name, "size": len(mm), "unit_count": len(units), "units": shown,
                    "hidden": len(units) - len(shown), "end": end, "problems": problems.get(name, [])})
    return {"files": out}


def _units(mm: mmap.mmap | bytes, base: int) -> tuple[list[dict], dict]:
    """The units of one file, in order, and how it ends: a blank, unwritten bytes, a torn unit, or its end."""
    units: list[dict] = []
    pos = 0
    while pos + MIN_BLANK_LEN <= len(mm):
        size, prev, magic = struct.unpack_from(">iqi", mm, pos)
        if magic == BLANK_MAGIC_CODE:
            return units, {"kind": "blank", "offset": base + pos, "size": size}
        if size == 0 and not any(mm[pos:pos + UNIT_SIZE]):
            return units, {"kind": "unwritten", "offset": base + pos}
        if size != UNIT_SIZE or pos + UNIT_SIZE > len(mm) or (magic | 0xF) != 0xF:
            return units, {"kind": "not a unit", "offset": base + pos}
        _, _, _, enqueue, delay, offset_py, size_py, hash_topic, _ = UNIT.unpack_from(mm, pos)
        units.append({"offset": base + pos, "prev_pos": prev, "magic": magic,
                      "roll": bool(magic & MAGIC_ROLL), "delete": bool(magic & MAGIC_DELETE),
                      "enqueue_time_ms": enqueue, "delayed_time_ms": enqueue + delay,
                      "delayed_time": fmt_ms(enqueue + delay), "commitlog_offset": offset_py, "size": size_py,
                      "topic_hash": hash_topic})
        pos += UNIT_SIZE
    return units, {"kind": "end", "offset": base + pos}
