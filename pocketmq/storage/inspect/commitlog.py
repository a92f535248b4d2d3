"""The commit-log section: its files, their records and how each file ends."""

from __future__ import annotations

import bisect
import os
import struct

from pocketmq.common.codec import CorruptRecordError, decode
from pocketmq.common.message import MessageExt
from pocketmq.common.record_layout import SIZE_MAGIC

from ..recovery import check_record
from .files import ReadOnlyFiles, file_sizes, log_file_problems, numbered_files
from .options import Options
from .record import annotate, dispatch_note, summary, walk_file

NOT_UTF8 = "topic/properties not UTF-8 (bad bytes shown as U+FFFD)"


class CommitLogFiles:
    """The commit-log files of a store, walked once and looked up by physical offset."""

    def __init__(self, root: str, files: ReadOnlyFiles, walk_limit: int | None = None) -> None:
        """``walk_limit``: the records each file's walk reads at most (None: to the file's end)."""
        self.dir = os.path.join(root, "commitlog")
        self.walk_limit = walk_limit
        self.names = numbered_files(self.dir)
        self._bases = [int(name) for name in self.names]
        self._files = files
        self._walks: dict[str, tuple[list[tuple[int, int]], dict]] = {}
        self._starts: dict[str, set[int]] = {}
        self._decoded: dict[int, MessageExt | None] = {}
        self.not_utf8: set[int] = set()  # offsets of records whose topic or properties decoded with U+FFFD

    def map(self, name: str):
        return self._files.map(os.path.join(self.dir, name))

    def walk(self, name: str) -> tuple[list[tuple[int, int]], dict]:
        walk = self._walks.get(name)
        if walk is None:
            walk = self._walks[name] = walk_file(self.map(name), int(name), self.walk_limit)
            self._starts[name] = {pos for pos, _ in walk[0]}
        return walk

    def locate(self, offset: int) -> tuple[str, int] | None:
        """(file name, position in it) of a valid record starting at `offset`, or None."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return None
        name = self.names[i]
        pos = offset - self._bases[i]
        self.walk(name)
        return (name, pos) if pos in self._starts[name] else None

    def find(self, offset: int) -> tuple[str, int] | None:
        """(file name, position in it) of a valid record starting at `offset`, checked by itself as RocketMQ's
        lookMessageByOffset reads one (MAGICCODE, TOTALSIZE within the file, PHYSICALOFFSET == `offset`, and
        recovery's length and CRC checks), so its cost does not grow with the log. `locate` is the reference: it
        walks the file from its start, so it also refuses a record that lies behind one recovery would cut."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0:
            return None
        name = self.names[i]
        mm = self.map(name)
        pos = offset - self._bases[i]
        size, _timestamp = check_record(mm, pos, self._bases[i], len(mm), True)
        return (name, pos) if size > 0 else None

    def decode_at(self, name: str, pos: int) -> MessageExt | None:
        return self._decode(name, pos)

    def end_offset(self) -> int:
        """Where the valid data of the log ends, as read now."""
        if not self.names:
            return 0
        name = self.names[-1]
        end = self.walk(name)[1]
        return int(name) + len(self.map(name)) if end["kind"] == "blank" else end["offset"]

    def files_end(self) -> int:
        """Where the last file ends: the end of the log's bytes, valid or not."""
        return int(self.names[-1]) + len(self.map(self.names[-1])) if self.names else 0

    def record_at(self, offset: int) -> MessageExt | None:
        """The valid record starting at `offset`, or None (deleted, truncated, or not a record start)."""
        if offset not in self._decoded:
            where = self.locate(offset)
            self._decoded[offset] = self._decode(*where) if where else None
        return self._decoded[offset]

    def _decode(self, name: str, pos: int) -> MessageExt | None:
        mm = self.map(name)
        try:
            return decode(mm, pos)
        except CorruptRecordError as e:
            if not isinstance(e.__cause__, UnicodeDecodeError):
                return None
        except struct.error:
            return None
        # Recovery keeps such a record (no CRC covers topic or properties), and Apache's broker serves it, its
        # String decoding replacing the bad bytes: show it the same way, marked, rather than hide it.
        self.not_utf8.add(int(name) + pos)
        return decode(mm, pos, text_errors="replace")


def _matches(msg: MessageExt, opts: Options) -> bool:
    topic_ok = opts.topic is None or msg.topic == opts.topic
    return topic_ok and (opts.queue is None or msg.queue_id == opts.queue)


def _file_entry(log: CommitLogFiles, name: str, problems: list[str]) -> dict:
    records, end = log.walk(name)
    base = int(name)
    sizes = file_sizes(os.path.join(log.dir, name))
    wrote = sizes["size"] if end["kind"] == "blank" else end["offset"] - base
    mm = log.map(name)
    # (Warnings, not errors: a restart keeps these records; dispatch goes past them.)
    notes = [{"offset": base + pos, "note": note} for pos, _ in records if (note := dispatch_note(mm, pos))]
    return {"name": name, "from_offset": base, **sizes, "wrote": wrote, "record_count": len(records),
            "records_matched": 0, "end": end, "records": [], "notes": notes, "problems": problems}


def commitlog_section(log: CommitLogFiles, opts: Options) -> dict:
    files = []
    shown = matched = total = 0
    filtered = opts.topic is not None or opts.queue is not None
    problems = log_file_problems(log.dir, log.names)
    for name in log.names:
        entry = _file_entry(log, name, problems.get(name, []))
        mm, base = log.map(name), int(name)
        for pos, _size in log.walk(name)[0]:
            total += 1
            if opts.offset is not None and base + pos != opts.offset:
                continue
            msg = log.record_at(base + pos) if filtered or opts.limit is None or shown < opts.limit else None
            if filtered and (msg is None or not _matches(msg, opts)):
                continue
            matched += 1
            entry["records_matched"] += 1
            if msg is None or (opts.limit is not None and shown >= opts.limit):
                continue
            record = summary(msg, name, pos, base + pos in log.not_utf8, SIZE_MAGIC.unpack_from(mm, pos)[1])
            if opts.hex:
                record["fields"] = annotate(mm, pos)
            entry["records"].append(record)
            shown += 1
        files.append(entry)
    section = _section(files, total, matched, shown)
    if opts.offset is not None and not matched:
        section["offset_error"] = _no_record_at(log, opts.offset)
    return section


def _section(files: list[dict], total: int, matched: int, shown: int) -> dict:
    return {
        "dir": "commitlog",
        "file_size": files[0]["size"] if files else None,
        "min_offset": files[0]["from_offset"] if files else 0,
        "max_offset": files[-1]["from_offset"] + files[-1]["wrote"] if files else 0,
        "records_total": total,
        "records_matched": matched,
        "records_shown": shown,
        "files": files,
    }


def _no_record_at(log: CommitLogFiles, offset: int) -> str:
    starts = sorted(int(name) + pos for name in log.names for pos, _ in log.walk(name)[0])
    before = [s for s in starts if s < offset]
    after = [s for s in starts if s > offset]
    near = ", ".join(f"{s}" for s in (before[-1:] + after[:1]))
    return f"no record starts at offset {offset}" + (f"; the nearest records start at {near}" if near else "")
