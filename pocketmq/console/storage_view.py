"""The storage page's data: a store's files read directly, read-only, as `python -m pocketmq.storage inspect`
reads them (the same walkers and field annotator: pocketmq.storage.inspect), shaped for drawing.

Nothing here writes, locks or opens the store: it is safe next to the broker that owns the store.
"""

from __future__ import annotations

import os
from typing import Any

from pocketmq.common.constants import (
    CQ_STORE_UNIT_SIZE,
    INDEX_HASH_SLOT_SIZE,
    INDEX_HEADER_SIZE,
    TRANSACTION_PREPARED_TYPE,
)
from pocketmq.common.message import MessageExt
from pocketmq.storage.consume_queue import CQ_ENTRY
from pocketmq.storage.index_file import ENTRY, key_hash
from pocketmq.storage.inspect.commitlog import CommitLogFiles
from pocketmq.storage.inspect.consumequeue import PRE_BLANK_SIZE, queue_dirs, read_entries
from pocketmq.storage.inspect.files import INDEX_NAME_DIGITS, ReadOnlyFiles, numbered_files
from pocketmq.storage.inspect.indexfile import entry_position, infer_geometry, read_header, slot_position
from pocketmq.storage.inspect.record import annotate, body_text
from pocketmq.storage.inspect.state import CHECKPOINT_FIELDS
from pocketmq.storage.inspect.timer import timer_section

MAX_RECORDS = 2000  # records read per file: enough to draw, bounded for a big store
MAX_ENTRIES = 500  # consume-queue entries read per queue
MAX_QUEUES_CHECKED = 1000  # queues whose last entry may prove a record's dispatch passed (one bisection each)


def files_view(root: str, max_records: int = MAX_RECORDS, timer_precision_ms: int = 1000,
               max_entries: int = MAX_ENTRIES) -> dict[str, Any]:
    """The commit-log files, each with its size, its first ``max_records`` records (position, size, topic, queue)
    and how it ends (the blank record of a full file, or unwritten bytes); the consume queues, index files and
    RocketMQ 5's timer files (timercheck, the wheel's slots in use, the timer log's units).

    Walks stop after ``max_records`` records per file and ``max_entries`` entries per queue, so a big store costs
    no more than a small one; such a file or queue says "more": true and its counts are the ones read."""
    out: list[dict[str, Any]] = []
    with ReadOnlyFiles() as files:
        log = CommitLogFiles(root, files, walk_limit=max_records)
        out = [_file_view(log, name) for name in log.names]
        queues = _queues_view(root, files, max_entries)
        index = _index_files_view(root, files)
        timer = timer_section(root, files, timer_precision_ms, max_entries)
    return {"store": root, "files": out, "consume_queues": queues, "index_files": index, "timer": timer,
            "max_records": max_records, "max_entries": max_entries}


def _file_view(log: CommitLogFiles, name: str) -> dict[str, Any]:
    mm = log.map(name)
    base = int(name)
    records, end = log.walk(name)
    rows = []
    for pos, size in records:
        msg = log.record_at(base + pos)
        rows.append({"offset": base + pos, "position": pos, "size": size,
                     "topic": msg.topic if msg else "?", "queue_id": msg.queue_id if msg else -1,
                     "queue_offset": msg.queue_offset if msg else -1})
    # With "more", `written` is where the walk stopped: the file holds at least that much.
    written = len(mm) if end["kind"] in ("blank", "full") else end["offset"] - base
    return {"name": name, "base": base, "size": len(mm), "records": rows, "record_count": len(records),
            "more": end["kind"] == "more", "end": end, "written": written}


def _queues_view(root: str, files: ReadOnlyFiles, max_entries: int) -> list[dict[str, Any]]:
    """Every consume queue: its files (size, entries read) and its first entries."""
    out = []
    for topic, queue_id in queue_dirs(root):
        qdir = os.path.join(root, "consumequeue", topic, str(queue_id))
        infos, entries, end = read_entries(files, qdir, max_entries)
        out.append({"topic": topic, "queue_id": queue_id, "entry_count": len(entries), "end": end,
                    "more": end["kind"] == "more",
                    "files": [{"name": i["name"], "size": i["size"], "entries": i["entries"]} for i in infos],
                    "entries": [{"index": e[0], "commitlog_offset": e[1], "size": e[2], "tags_code": e[3],
                                 "file": e[4], "position": e[5]} for e in entries]})
    return out


def _index_files_view(root: str, files: ReadOnlyFiles) -> list[dict[str, Any]]:
    directory = os.path.join(root, "index")
    out = []
    for name in numbered_files(directory, INDEX_NAME_DIGITS):
        mm = files.map(os.path.join(directory, name))
        if len(mm) < INDEX_HEADER_SIZE:
            out.append({"name": name, "size": len(mm), "error": "shorter than the 40-byte header"})
            continue
        out.append({"name": name, "size": len(mm), "header": read_header(mm)})
    return out


def record_view(root: str, offset: int, hash_slots: int = 5_000_000, index_num: int = 20_000_000) -> dict[str, Any]:
    """One record field by field, the consume-queue entry that points at it, and the index entries (slot and
    chain) that find it by its keys."""
    with ReadOnlyFiles() as files:
        log = CommitLogFiles(root, files)
        where = log.find(offset)
        msg = log.decode_at(*where) if where is not None else None
        if where is None or msg is None:
            raise LookupError(f"no record starts at commit-log offset {offset}")
        name, pos = where
        fields = annotate(log.map(name), pos)
        return {
            "offset": offset, "file": name, "position": pos,
            "topic": msg.topic, "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
            "keys": msg.keys, "uniq_key": msg.uniq_key, "tags": msg.tags,
            "body_preview": body_text(msg.body, msg.sys_flag, 200),
            "fields": fields,
            "consume_queue": _cq_entry(root, files, msg, offset),
            "index": _index_entries(root, files, msg, offset, hash_slots, index_num),
        }


def _cq_entry(root: str, files: ReadOnlyFiles, msg: MessageExt, offset: int) -> dict[str, Any]:
    """The entry at the record's QUEUEOFFSET, and whether it is this record's: "state" is "dispatched" (it points at
    this offset and size), "pending" (not written yet, and dispatch may not have reached this record), or "none"
    (no entry points at this record, nor will: the record is a transaction's prepared or rolled-back half, its
    topic's queues were deleted since ("topic deleted"), or its QUEUEOFFSET belongs to an older queue of the topic,
    deleted and re-created since ("older queue"))."""
    rel = f"consumequeue/{msg.topic}/{msg.queue_id}"
    out: dict[str, Any] = {"path": rel, "index": msg.queue_offset, "dispatched": False}
    if msg.sys_flag & TRANSACTION_PREPARED_TYPE:  # (PREPARED and ROLLBACK: the dispatcher writes no entry for them)
        return {**out, "state": "none", "reason": "transaction"}
    qdir = os.path.join(root, "consumequeue", msg.topic, str(msg.queue_id))
    found = _entry_at(files, qdir, msg.queue_offset * CQ_STORE_UNIT_SIZE)
    if found is None:
        if not _dispatch_passed(root, files, msg, offset):
            return {**out, "state": "pending"}
        gone = not os.path.isdir(os.path.join(root, "consumequeue", msg.topic))
        return {**out, "state": "none", "reason": "topic deleted" if gone else "older queue"}
    name, position, raw = found
    phys, size, code = CQ_ENTRY.unpack(raw)
    entry = {**out, "path": f"{rel}/{name}", "file": name, "position": position, "hex": raw.hex(),
             "commitlog_offset": phys, "size": size, "tags_code": code,
             "fields": [{"pos": 0, "len": 8, "field": "CommitLogOffset", "value": phys},
                        {"pos": 8, "len": 4, "field": "MsgSize", "value": size},
                        {"pos": 12, "len": 8, "field": "TagsCode", "value": code}]}
    if (phys, size) == (offset, msg.store_size):
        return {**entry, "state": "dispatched", "dispatched": True}
    return {**entry, "state": "none", "reason": "older queue"}


def _dispatch_passed(root: str, files: ReadOnlyFiles, msg: MessageExt, offset: int) -> bool:
    """Whether dispatch has gone past the record, so that a missing entry will never be written. Dispatch runs in
    commit-log order: the checkpoint's logicsMsgTimestamp (the last record dispatched and flushed) at or after the
    record's store time proves it, and so does any consume queue whose last entry points at or past the record.
    At most MAX_QUEUES_CHECKED queues are looked at (a bisection each), so a store with many costs no more."""
    path = os.path.join(root, "checkpoint")
    if os.path.isfile(path):
        mm = files.map(path)
        if len(mm) >= CHECKPOINT_FIELDS.size and CHECKPOINT_FIELDS.unpack_from(mm, 0)[1] >= msg.store_timestamp > 0:
            return True
    for topic, queue_id in queue_dirs(root)[:MAX_QUEUES_CHECKED]:
        last = _last_entry(files, os.path.join(root, "consumequeue", topic, str(queue_id)))
        if last is not None and last[1] != PRE_BLANK_SIZE and last[0] >= offset:
            return True
    return False


def _entry_at(files: ReadOnlyFiles, qdir: str, at: int) -> tuple[str, int, bytes] | None:
    """(file, position, bytes) of the written entry at byte ``at`` of the queue, or None (no file holds it, or its
    slot is not written: size <= 0)."""
    for name in numbered_files(qdir):
        mm = files.map(os.path.join(qdir, name))
        base = int(name)
        if base <= at <= base + len(mm) - CQ_STORE_UNIT_SIZE:
            raw = bytes(mm[at - base:at - base + CQ_STORE_UNIT_SIZE])
            return (name, at - base, raw) if CQ_ENTRY.unpack(raw)[1] > 0 else None
    return None


def _last_entry(files: ReadOnlyFiles, qdir: str) -> tuple[int, int, int] | None:
    """The queue's last written entry (commit-log offset, size, tags code), found by bisection: a queue is written
    front to back, so each file holds written entries, then zeros."""
    for name in reversed(numbered_files(qdir)):
        mm = files.map(os.path.join(qdir, name))
        lo, hi = 0, len(mm) // CQ_STORE_UNIT_SIZE  # entries [0, lo) written, [hi, end) not
        while lo < hi:
            mid = (lo + hi) // 2
            if CQ_ENTRY.unpack_from(mm, mid * CQ_STORE_UNIT_SIZE)[1] > 0:
                lo = mid + 1
            else:
                hi = mid
        if lo:
            return CQ_ENTRY.unpack_from(mm, (lo - 1) * CQ_STORE_UNIT_SIZE)
    return None


def _index_entries(root: str, files: ReadOnlyFiles, msg: MessageExt, offset: int, hash_slots: int,
                   index_num: int) -> list[dict[str, Any]]:
    """For each key the dispatcher indexed ("topic#key": the UNIQ_KEY and every KEYS entry), the slot its hash
    falls in and the chain from the slot's head down to the entry holding this record's offset."""
    keys = ([msg.uniq_key] if msg.uniq_key else []) + list(msg.keys)
    directory = os.path.join(root, "index")
    out: list[dict[str, Any]] = []
    names = numbered_files(directory, INDEX_NAME_DIGITS)
    for name in names:
        mm = files.map(os.path.join(directory, name))
        if len(mm) < INDEX_HEADER_SIZE:
            continue
        header = read_header(mm)
        if header["index_count"] > 1 and offset < header["begin_phy_offset"]:
            continue
        if header["index_count"] > 1 and offset > header["end_phy_offset"] and name != names[-1]:
            continue  # (a file before the newest is full: its end is final; the newest's lags a dispatch round)
        geometry = infer_geometry(mm, header, hash_slots, index_num)
        if geometry is None:
            continue
        slots, num, _source = geometry
        for key in keys:
            full = f"{msg.topic}#{key}"
            h = key_hash(full)
            slot = h % slots
            spos = slot_position(slot)
            head = int.from_bytes(mm[spos:spos + INDEX_HASH_SLOT_SIZE], "big", signed=True)
            chain: list[dict[str, Any]] = []
            n, seen, found = head, set(), None
            while 0 < n < num and n not in seen and len(chain) < 64:
                seen.add(n)
                epos = entry_position(slots, n)
                kh, phy, diff, prev = ENTRY.unpack_from(mm, epos)
                item = {"entry": n, "position": epos, "key_hash": kh, "phy_offset": phy, "time_diff": diff,
                        "prev": prev, "hex": bytes(mm[epos:epos + ENTRY.size]).hex()}
                chain.append(item)
                if kh == h and phy == offset:
                    found = n
                    break
                n = prev
            out.append({"file": name, "key": full, "hash": h, "slot": slot, "slot_position": spos,
                        "head": head, "chain": chain, "found": found, "hash_slots": slots})
    return out
