"""The consume-queue section: per topic and queue, the 20-byte entries and the records they point at."""

from __future__ import annotations

import functools
import os

from pocketmq.common.constants import CQ_STORE_UNIT_SIZE, PROPERTY_DELAY_TIME_LEVEL
from pocketmq.common.java_hash import tags_code
from pocketmq.common.message import MessageExt, delay_time_level

from ..config import DEFAULT_DELAY_LEVELS, parse_delay_levels
from ..consume_queue import CQ_ENTRY  # commit-log offset, size, tags code
from ..schedule_routing import SCHEDULE_TOPIC
from .commitlog import NOT_UTF8, CommitLogFiles
from .files import ReadOnlyFiles, file_sizes, fmt_ms, log_file_problems, numbered_files
from .options import Options

PRE_BLANK_SIZE = 0x7FFFFFFF  # fillPreBlank: the slots before a queue's first real entry


def queue_dirs(root: str) -> list[tuple[str, int]]:
    """(topic, queue id) of every consumequeue/<topic>/<queue id>/ directory, sorted."""
    base = os.path.join(root, "consumequeue")
    if not os.path.isdir(base):
        return []
    out = []
    for topic in sorted(os.listdir(base)):
        tdir = os.path.join(base, topic)
        if os.path.isdir(tdir):
            out += [(topic, int(q)) for q in os.listdir(tdir)
                    if q.isdigit() and os.path.isdir(os.path.join(tdir, q))]
    return sorted(out)


Entry = tuple[int, int, int, int, str, int]  # index, commit-log offset, size, tags code, file, position


def read_entries(files: ReadOnlyFiles, qdir: str, limit: int | None = None) -> tuple[list[dict], list[Entry], dict]:
    """The queue's files and its valid entries as (index, offset, size, tags code, file name, position).

    Like ConsumeQueue.recover, the entries end at the first one with offset < 0 or size <= 0
    (a never-written entry is all zeros); the returned end says where and why: "unwritten",
    "invalid" (recovery cuts the queue there), or "end of files" when every file is full; "more"
    when it stopped after `limit` entries without reading further.
    """
    infos: list[dict] = []
    entries: list[Entry] = []
    end: dict = {"kind": "end of files"}
    names = numbered_files(qdir)
    problems = log_file_problems(qdir, names, CQ_STORE_UNIT_SIZE)
    for name in names:
        mm = files.map(os.path.join(qdir, name))
        base = int(name)
        info = {"name": name, "from_index": base // CQ_STORE_UNIT_SIZE,
                **file_sizes(os.path.join(qdir, name)), "entries": 0, "problems": problems.get(name, [])}
        infos.append(info)
        if end["kind"] != "end of files":
            continue  # recovery would not read past the first invalid entry
        usable = len(mm) - len(mm) % CQ_STORE_UNIT_SIZE
        if limit is not None:  # (a slice of the map is a copy: take no more than the entries still wanted)
            usable = min(usable, (limit - len(entries) + 1) * CQ_STORE_UNIT_SIZE)
        whole = mm[:usable]
        for i, (phys, size, code) in enumerate(CQ_ENTRY.iter_unpack(whole)):
            index = (base + i * CQ_STORE_UNIT_SIZE) // CQ_STORE_UNIT_SIZE
            if phys < 0 or size <= 0:
                end = {"kind": "unwritten" if (phys, size, code) == (0, 0, 0) else "invalid", "index": index}
                break
            if limit is not None and len(entries) >= limit:
                end = {"kind": "more", "index": index}
                break
            entries.append((index, phys, size, code, name, i * CQ_STORE_UNIT_SIZE))
            info["entries"] += 1
    return infos, entries, end


def resolve(topic: str, queue_id: int, entry: Entry, log: CommitLogFiles, raw: bytes | None = None,
            delay_levels: str = DEFAULT_DELAY_LEVELS, running: bool | None = True) -> dict:
    """An entry, with the tag it stands for and whether the record it points at agrees with it.
    `delay_levels`: the store's messageDelayLevel, which SCHEDULE_TOPIC_XXXX entries are checked against;
    `running`: whether a store holds the lock (so that the log may have grown since it was read); None when
    that is unknown."""
    index, phys, size, code, name, pos = entry
    out: dict = {"index": index, "commitlog_offset": phys, "size": size, "tags_code": code, "file": name,
                 "position": pos}
    if raw is not None:
        out["hex"] = raw.hex()
    if size == PRE_BLANK_SIZE:
        out["check"] = "pre-blank (no message: the queue's first file starts before its first message)"
        return out
    msg = log.record_at(phys)
    if msg is None:
        out["check"] = _missing(phys, size, log, running)
        return out
    problems = _disagreements(topic, queue_id, index, size, msg)
    if phys in log.not_utf8:
        problems.append(NOT_UTF8)
    if topic == SCHEDULE_TOPIC:
        out["tag"] = msg.tags
        out["delivery_time"] = fmt_ms(code)
        expect = _delivery_time(msg, _delays(delay_levels))
        if expect is not None and expect != code:
            level = msg.properties.get(PROPERTY_DELAY_TIME_LEVEL)
            problems.append(f"tags code {code} is not STORETIMESTAMP + level {level}'s delay = {expect}, "
                            f"assuming the delay levels {delay_levels!r} (--delay-levels)")
    elif tags_code(msg.tags) == code:
        out["tag"] = msg.tags
    else:
        out["tag"] = None
        problems.append(f"tags code is not the hash of the record's TAGS {msg.tags!r} "
                        f"({tags_code(msg.tags)})")
    out["check"] = "; ".join(problems) if problems else "ok"
    return out


def _missing(phys: int, size: int, log: CommitLogFiles, running: bool | None) -> str:
    """Why no record is found where an entry points."""
    if phys < log.end_offset():
        return "no record starts at this commit-log offset (deleted, or cut off by recovery)"
    if running:
        return "past the end of the commit log as read (a running store appended since)"
    if running is None:
        return ("past the end of the commit log as read (whether a store runs is unknown: a running store may have "
                "appended since, or a commit-log file was cut short or removed)")
    # No store runs, so nothing was appended since: the log lost what the queue saw written.
    if phys + size > log.files_end():
        return (f"past the end of the commit-log files (at {log.files_end():,}): a commit-log file was cut short "
                "or removed")
    return "past the end of the commit log's valid data: its tail was lost (recovery drops such entries)"


def _disagreements(topic: str, queue_id: int, index: int, size: int, msg: MessageExt) -> list[str]:
    problems = []
    if msg.store_size != size:
        problems.append(f"the record is {msg.store_size} bytes, not {size}")
    if msg.topic != topic or msg.queue_id != queue_id:
        problems.append(f"the record belongs to {msg.topic}/{msg.queue_id}")
    if msg.queue_offset != index:
        problems.append(f"the record's QUEUEOFFSET is {msg.queue_offset}, not {index}")
    return problems


@functools.cache
def _delays(spec: str) -> list[int]:
    return parse_delay_levels(spec)


def _delivery_time(msg: MessageExt, delays: list[int]) -> int | None:
    """What the dispatcher stores as a delayed message's tags code: store time + its level's delay."""
    try:
        level = delay_time_level(msg.properties)
    except ValueError:
        return None
    if level <= 0:
        return None
    return msg.store_timestamp + delays[min(level, len(delays)) - 1]


def queue_entry(root: str, files: ReadOnlyFiles, log: CommitLogFiles, topic: str, queue_id: int,
                opts: Options, running: bool | None = True) -> dict:
    qdir = os.path.join(root, "consumequeue", topic, str(queue_id))
    infos, entries, end = read_entries(files, qdir)
    real = [e for e in entries if e[2] != PRE_BLANK_SIZE]
    selected = [e for e in entries if opts.offset is None or e[1] == opts.offset]
    shown = selected if opts.limit is None else selected[:opts.limit]
    return {
        "topic": topic,
        "queue_id": queue_id,
        "dir": os.path.relpath(qdir, root),
        "file_size": infos[0]["size"] if infos else None,
        "files": infos,
        "min_offset": real[0][0] if real else (entries[-1][0] + 1 if entries else 0),
        "max_offset": entries[-1][0] + 1 if entries else (infos[0]["from_index"] if infos else 0),
        "entries_total": len(entries),
        "entries_matched": len(selected),
        "end": end,
        "entries": [resolve(topic, queue_id, e, log, _raw(files, qdir, e) if opts.hex else None,
                            opts.delay_levels, running) for e in shown],
    }


def _raw(files: ReadOnlyFiles, qdir: str, entry: Entry) -> bytes:
    pos = entry[5]
    return bytes(files.map(os.path.join(qdir, entry[4]))[pos:pos + CQ_STORE_UNIT_SIZE])


def consumequeue_section(root: str, files: ReadOnlyFiles, log: CommitLogFiles, opts: Options,
                         running: bool | None = True) -> dict:
    queues = []
    for topic, queue_id in queue_dirs(root):
        if opts.topic is not None and topic != opts.topic:
            continue
        if opts.queue is not None and queue_id != opts.queue:
            continue
        queue = queue_entry(root, files, log, topic, queue_id, opts, running)
        if opts.offset is None or queue["entries_matched"]:
            queues.append(queue)
    return {"dir": "consumequeue", "queues": queues}
