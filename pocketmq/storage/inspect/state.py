"""The checkpoint file, and the abort and lock files that say whether a store is running."""

from __future__ import annotations

import os
import struct

from .files import PROC_LOCKS, ReadOnlyFiles, fmt_ms, lock_holder

CHECKPOINT_FIELDS = struct.Struct(">qqq")  # physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp
# `python -m pocketmq.storage demo` marks each store it writes with this file, and clears only a store holding it.
DEMO_MARKER = "written-by-demo"
KNOWN_ENTRIES = ("commitlog", "consumequeue", "index", "checkpoint", "abort", "lock", "config",
                 "dispatch_manifest.json", "timerwheel", "timerlog", DEMO_MARKER)


def checkpoint_section(root: str, files: ReadOnlyFiles) -> dict:
    path = os.path.join(root, "checkpoint")
    if not os.path.isfile(path):
        return {"present": False}
    mm = files.map(path)
    out: dict = {"present": True, "size": len(mm)}
    if len(mm) < CHECKPOINT_FIELDS.size:
        return {**out, "error": f"shorter than the {CHECKPOINT_FIELDS.size} bytes of its three timestamps"}
    physic, logics, index = CHECKPOINT_FIELDS.unpack_from(mm, 0)
    for name, ms in (("physic_msg_timestamp", physic), ("logics_msg_timestamp", logics),
                     ("index_msg_timestamp", index)):
        out[name] = ms
        out[name.replace("timestamp", "time")] = fmt_ms(ms)
    # StoreCheckpoint.getMinTimestamp: abnormal recovery re-checks the log from this point on.
    min_ts = max(min(physic, logics) - 3000, 0)
    out["min_timestamp"] = min_ts
    out["min_time"] = fmt_ms(min_ts)
    out["rest_zero"] = not any(mm[CHECKPOINT_FIELDS.size:])
    return out


def state_section(root: str, locks_path: str = PROC_LOCKS) -> dict:
    """The abort file, the lock (lock.held is None, with lock.held_unknown saying why, when the table of locks
    cannot be read), and the entries no store writes."""
    path = os.path.join(root, "lock")
    present = os.path.exists(path)
    lock: dict = {"present": present, "held": False, "held_by_pid": None, "kind": None}
    if present:
        try:
            holder = lock_holder(path, locks_path)
        except OSError as e:
            lock.update(held=None, held_unknown=str(e))
        else:
            if holder is not None:
                lock.update(held=True, kind=holder[0], held_by_pid=holder[1])
    return {
        "abort": os.path.exists(os.path.join(root, "abort")),
        "lock": lock,
        "other_entries": sorted(set(os.listdir(root)) - set(KNOWN_ENTRIES)),
    }
