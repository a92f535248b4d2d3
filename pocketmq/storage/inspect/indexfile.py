"""The index section: each index file's header, its used hash slots and the chains hanging off them.

An index file is 40 + slots x 4 + entries x 20 bytes, and nothing in it records the slot count.
The geometry is therefore taken from --hash-slots/--index-num when the file size agrees, else
inferred (see infer_geometry), and every guess is checked against the header before it is used.
"""

from __future__ import annotations

import os
import struct
from typing import Any

from pocketmq.common.constants import INDEX_ENTRY_SIZE, INDEX_HASH_SLOT_SIZE, INDEX_HEADER_SIZE

from ..index_file import ENTRY, HEADER, key_hash
from .commitlog import CommitLogFiles
from .files import INDEX_NAME_DIGITS, ReadOnlyFiles, file_sizes, fmt_ms, index_name_time, numbered_files
from .options import Options

_INT = struct.Struct(">i")
_SEARCH_LIMIT = 200_000  # candidate positions tried when searching for the last entry


def file_size_for(slots: int, num: int) -> int:
    return INDEX_HEADER_SIZE + slots * INDEX_HASH_SLOT_SIZE + num * INDEX_ENTRY_SIZE


def read_header(mm) -> dict:
    begin_ts, end_ts, begin_phy, end_phy, slot_count, index_count = HEADER.unpack_from(mm, 0)
    return {"begin_timestamp": begin_ts, "begin_time": fmt_ms(begin_ts), "end_timestamp": end_ts,
            "end_time": fmt_ms(end_ts), "begin_phy_offset": begin_phy, "end_phy_offset": end_phy,
            "hash_slot_count": slot_count, "index_count": index_count}


def entry_position(slots: int, n: int) -> int:
    return INDEX_HEADER_SIZE + slots * INDEX_HASH_SLOT_SIZE + n * INDEX_ENTRY_SIZE


def slot_position(slot: int) -> int:
    return INDEX_HEADER_SIZE + slot * INDEX_HASH_SLOT_SIZE


def _entry(mm, slots: int, n: int) -> tuple[int, int, int, int]:
    return ENTRY.unpack_from(mm, entry_position(slots, n))


def _slot(mm, slot: int) -> int:
    return _INT.unpack_from(mm, slot_position(slot))[0]


def plausible(mm, slots: int, num: int, header: dict) -> bool:
    """Does the header agree with the entries when the file is read with this geometry?

    Entry 0 is never written; entry 1 starts a chain (prev 0) at beginPhyOffset and its slot points
    into the file (possibly past indexCount, after a crash); the last counted entry holds endPhyOffset.
    """
    count = header["index_count"]
    if slots <= 0 or num <= 0 or file_size_for(slots, num) != len(mm) or count > num:
        return False
    if count <= 1:
        return _entry(mm, slots, 0) == (0, 0, 0, 0)
    kh, phy, _diff, prev = _entry(mm, slots, 1)
    last = _entry(mm, slots, count - 1)
    return (_entry(mm, slots, 0) == (0, 0, 0, 0) and prev == 0 and phy == header["begin_phy_offset"]
            and 0 < _slot(mm, kh % slots) < num and last[1] == header["end_phy_offset"]
            and 0 <= last[3] < count - 1)


def infer_geometry(mm, header: dict, slots: int, num: int) -> tuple[int, int, str] | None:
    """(hash slots, index num, how they were found), trying in turn:

    1. the given counts (--hash-slots/--index-num, RocketMQ's 5,000,000 / 20,000,000 by default);
    2. RocketMQ's ratio indexNum = 4 x hashSlotNum, solved from the file size: slots = (size - 40) / 84;
    3. a search for the last counted entry: its phyOffset must equal the header's endPhyOffset, and
       where it sits fixes the slot count: 40 + slots x 4 + (indexCount - 1) x 20 + 4 = position.
    """
    size = len(mm)
    if plausible(mm, slots, num, header):
        return slots, num, "options"
    ratio_slots, rest = divmod(size - INDEX_HEADER_SIZE, 84)  # 84 = 4 bytes a slot + 4 x 20 bytes of entries
    if not rest and plausible(mm, ratio_slots, ratio_slots * 4, header):
        return ratio_slots, ratio_slots * 4, "file size, indexNum = 4 x hashSlotNum"
    count = header["index_count"]
    if count <= 1:
        return None
    pattern = struct.pack(">q", header["end_phy_offset"])
    fixed = INDEX_HEADER_SIZE + (count - 1) * INDEX_ENTRY_SIZE + 4
    at = mm.find(pattern, fixed)
    for _ in range(_SEARCH_LIMIT):
        if at < 0:
            break
        s, rem = divmod(at - fixed, INDEX_HASH_SLOT_SIZE)
        n, rem2 = divmod(size - INDEX_HEADER_SIZE - s * INDEX_HASH_SLOT_SIZE, INDEX_ENTRY_SIZE)
        if not rem and not rem2 and plausible(mm, s, n, header):
            return s, n, "search for the entry holding endPhyOffset"
        at = mm.find(pattern, at + 1)
    return None


def entries_past_header(mm, slots: int, num: int, count: int) -> int:
    """Entries written after the header last counted them (the store writes the header once per
    dispatch round; a crash in between leaves these, and loading the file rolls forward over them)."""
    n = max(count, 1)
    while n < num:
        entry = _entry(mm, slots, n)
        if entry == (0, 0, 0, 0) or entry[3] >= n:
            break
        n += 1
    return n - max(count, 1)


# RocketMQ 5's IndexService also indexes every tagged message under buildKey(topic, tag, "T"): topic#T#tag.
TAG_KEY_TYPE = "T"


def _resolve_key(log: CommitLogFiles, key_hash_value: int, phy: int) -> str | None:
    """The "topic#key" (or "topic#T#tag") whose hash this entry stores, found among the keys of the record it
    points at."""
    msg = log.record_at(phy)
    if msg is None:
        return None
    keys = [f"{msg.topic}#{key}" for key in ([msg.uniq_key] if msg.uniq_key else []) + msg.keys]
    if msg.tags:
        keys.append(f"{msg.topic}#{TAG_KEY_TYPE}#{msg.tags}")
    return next((key for key in keys if key_hash(key) == key_hash_value), None)


def chain(mm, slots: int, count: int, head: int, log: CommitLogFiles, with_hex: bool) -> list[dict]:
    """Follow prev links from `head`, as selectPhyOffset does: stop at 0, out of range or a loop."""
    out, seen, n = [], set(), head
    while 0 < n < count and n not in seen:
        seen.add(n)
        pos = entry_position(slots, n)
        kh, phy, diff, prev = ENTRY.unpack_from(mm, pos)
        item = {"entry": n, "position": pos, "key_hash": kh, "phy_offset": phy, "time_diff": diff,
                "prev": prev, "key": _resolve_key(log, kh, phy)}
        if with_hex:
            item["hex"] = bytes(mm[pos:pos + INDEX_ENTRY_SIZE]).hex()
        out.append(item)
        n = prev
    return out


def _wanted(slot: dict, opts: Options) -> bool:
    entries = slot["chain"]
    if opts.offset is not None and not any(e["phy_offset"] == opts.offset for e in entries):
        return False
    return opts.topic is None or any((e["key"] or "").startswith(opts.topic + "#") for e in entries)


def index_file_entry(path: str, files: ReadOnlyFiles, log: CommitLogFiles, opts: Options) -> dict:
    name = os.path.basename(path)
    mm = files.map(path)
    out: dict = {"name": name, "created": index_name_time(name), **file_sizes(path)}
    if len(mm) < INDEX_HEADER_SIZE:
        return {**out, "error": "shorter than the 40-byte header"}
    header = out["header"] = read_header(mm)
    geometry = infer_geometry(mm, header, opts.hash_slots, opts.index_num)
    if geometry is None:
        return {**out, "error": f"cannot tell the slot and entry counts of a {len(mm):,}-byte file; "
                                "pass --hash-slots and --index-num"}
    slots, num, source = geometry
    count = max(header["index_count"], 1)
    out["geometry"] = {"hash_slots": slots, "index_num": num, "source": source}
    out["entries_past_header"] = entries_past_header(mm, slots, num, count)
    count += out["entries_past_header"]  # show them, as loading the file would count them in
    used = sorted({_entry(mm, slots, n)[0] % slots for n in range(1, count)})
    out["used_slots"] = len(used)
    matched = []
    for slot in used:
        head = _slot(mm, slot)
        item: dict[str, Any] = {"slot": slot, "position": slot_position(slot), "head": head,
                "chain": chain(mm, slots, count, head, log, opts.hex)}
        if opts.hex:
            item["hex"] = bytes(mm[item["position"]:item["position"] + INDEX_HASH_SLOT_SIZE]).hex()
        if _wanted(item, opts):
            matched.append(item)
    out["slots_matched"] = len(matched)
    out["slots"] = matched if opts.limit is None else matched[:opts.limit]
    return out


def index_section(root: str, files: ReadOnlyFiles, log: CommitLogFiles, opts: Options) -> dict:
    directory = os.path.join(root, "index")
    entries = [index_file_entry(os.path.join(directory, name), files, log, opts)
               for name in numbered_files(directory, INDEX_NAME_DIGITS)]
    if opts.offset is not None or opts.topic is not None:
        entries = [e for e in entries if e.get("slots_matched")]
    return {"dir": "index", "files": entries}
