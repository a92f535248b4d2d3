"""The report as text for a person: the same data as --json, laid out section by section."""

from __future__ import annotations

from .commitlog import NOT_UTF8
from .files import fmt_bytes
from .pop import describe

HEX_ROW = 8  # bytes per row in the --hex field table
BODY_HEX_ROWS = 4  # a body can be megabytes: show its first rows only
WRONG_SIZE = ("pocketmq and Apache RocketMQ (MappedFileQueue.doLoad) refuse to load a log holding a file of "
              "another size than the configured one")
_LOCK_KINDS = {"FLOCK": "flock, as pocketmq takes it", "POSIX": "fcntl, as Apache RocketMQ takes it",
               "OFDLCK": "OFD lock"}


def render(report: dict) -> str:
    lines: list[str] = []
    _state(lines, report)
    running = report["state"]["lock"]["held"]
    if "commitlog" in report:
        _commitlog(lines, report["commitlog"], running)
    if "consumequeue" in report:
        _consumequeue(lines, report["consumequeue"], report.get("offset"))
    if "index" in report:
        _index(lines, report["index"], report.get("offset"))
    if "checkpoint" in report:
        _checkpoint(lines, report["checkpoint"])
    if "timer" in report:
        _timer(lines, report["timer"])
    return "\n".join(lines) + "\n"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _more(lines: list[str], indent: str, hidden: int, one: str, many: str) -> None:
    if hidden > 0:
        lines.append(f"{indent}... {hidden} more {one if hidden == 1 else many} (--limit)")


# -- store state ----------------------------------------------------------------------------------

def _state(lines: list[str], report: dict) -> None:
    state = report["state"]
    lines.append(f"Store {report['store']}")
    if state["abort"]:
        lines.append("  abort       present: the store is running, or did not shut down cleanly "
                     "(its next start runs abnormal recovery)")
    else:
        lines.append("  abort       absent: the last shutdown was clean")
    lock = state["lock"]
    if not lock["present"]:
        lines.append("  lock        absent: no store was ever started here")
    elif lock["held"] is None:
        lines.append(f"  lock        present, state unknown ({lock['held_unknown']}): a store may be running on this "
                     "directory")
    elif not lock["held"]:
        lines.append("  lock        present, not held: no store is running on this directory")
    else:
        who = (f"by pid {lock['held_by_pid']} ({_LOCK_KINDS[lock['kind']]})" if lock["held_by_pid"] is not None
               else "by an open file description (an OFD lock: /proc/locks names no process)")
        lines.append(f"  lock        held {who}: a store is running; files may change while they are read")
    if state["other_entries"]:
        lines.append(f"  other       {', '.join(state['other_entries'])}")


# -- commit log -----------------------------------------------------------------------------------

def _commitlog(lines: list[str], section: dict, running: bool | None) -> None:
    files = section["files"]
    lines.append("")
    if not files:
        lines.append("Commit log (commitlog/): no files")
        return
    lines.append(f"Commit log (commitlog/): {_files_of(files, section['file_size'])}, "
                 f"data from offset {section['min_offset']:,} to {section['max_offset']:,}, "
                 f"{section['records_total']} records")
    for f in files:
        lines.append(f"  {f['name']}  {f['size']:,} bytes ({fmt_bytes(f['allocated'])} on disk)  "
                     f"wrote {f['wrote']:,}  {f['record_count']} records")
        _problems(lines, "    ", f["problems"])
        for record in f["records"]:
            _record(lines, record)
        _more(lines, "    ", f["records_matched"] - len(f["records"]), "record", "records")
        for note in f["notes"]:
            lines.append(f"    offset {note['offset']}  ! {note['note']}")
        _file_end(lines, f["end"], f["from_offset"] + f["size"], running, bool(f["problems"]))
    if "offset_error" in section:
        lines.append(f"  {section['offset_error']}")


def _record(lines: list[str], r: dict) -> None:
    flags = f"{r['sys_flag']:#x}" + (f" ({' | '.join(r['sys_flag_names'])})" if r["sys_flag_names"] else "")
    lines.append(f"    offset {r['offset']}  size {r['total_size']}  magic {r['magic']}  topic {r['topic']}  "
                 f"queueId {r['queue_id']}  queueOffset {r['queue_offset']}  sysflag {flags}")
    keys = " ".join(r["keys"]) or "-"
    lines.append(f"      stored {r['store_time']}  tags {r['tags'] or '-'}  keys {keys}")
    lines.append(f"      msgId {r['msg_id']}  UNIQ_KEY {r['uniq_key'] or '-'}")
    lines.append(f"      body {r['body_preview']}")
    if r.get("pop"):
        lines += [f"      {line}" for line in describe(r["pop"])]
    if r["physical_offset"] != r["offset"]:
        lines.append(f"      ! PHYSICALOFFSET says {r['physical_offset']}")
    if r["not_utf8"]:
        lines.append(f"      ! {NOT_UTF8}")
    if "fields" in r:
        _fields(lines, r["fields"])


def _files_of(files: list[dict], first_size: int) -> str:
    """"N file(s) of S bytes", or each size when they differ (a file cut short, or a store made with other sizes)."""
    sizes = sorted({f["size"] for f in files})
    if len(sizes) <= 1:
        return f"{len(files)} file(s) of {first_size:,} bytes"
    return f"{len(files)} file(s), ! of different sizes: " + ", ".join(f"{s:,}" for s in sizes) + " bytes"


def _problems(lines: list[str], indent: str, problems: list[str]) -> None:
    if problems:
        lines.append(f"{indent}! {'; '.join(problems)}: {WRONG_SIZE}")


def _invalid_why(reason: str, running: bool | None, wrong_size: bool) -> str:
    """What an invalid record at a file's end means, from whether a store is running (the lock is held; None:
    unknown)."""
    if running:
        return "a store is running: it may be a record being written"
    if running is None:
        return ("whether a store runs is unknown: a running store may be writing this record, or, if none runs, the "
                "file was cut short" + ("; it is not the store's file size, so the store does not load"
                                        if wrong_size else " or a restart truncates the log here"))
    if wrong_size:
        return "no store is running; this file is not the store's file size, so the store does not load"
    if reason.endswith("the end of the file"):
        return ("no store is running: if the file has the store's file size, a restart truncates the log here; if "
                "it was cut short, the store does not load")
    return "no store is running: a restart would truncate the log here"


def _file_end(lines: list[str], end: dict, file_end: int, running: bool | None, wrong_size: bool) -> None:
    kind = end["kind"]
    if kind == "blank":
        rest = file_end - end["offset"]
        span = "the rest of the file" if end["size"] == rest else f"! the rest of the file is {rest:,} bytes"
        lines.append(f"    offset {end['offset']}  blank record: TOTALSIZE {end['size']} "
                     f"({span}), MAGICCODE {end['magic']}; the next record did not fit")
    elif kind == "unwritten":
        lines.append(f"    offset {end['offset']}  end of data: zeros up to {file_end:,} (not written yet)")
    elif kind == "full":
        lines.append(f"    offset {end['offset']}  end of file: the last record fills it")
    elif kind == "empty":
        lines.append("    empty file (0 bytes), as a crash while the file was being created leaves it")
    elif kind == "invalid":
        lines.append(f"    offset {end['offset']}  INVALID record: {end['reason']} "
                     f"({_invalid_why(end['reason'], running, wrong_size)})")


def _fields(lines: list[str], fields: list[dict]) -> None:
    lines.append(f"      {'pos':>5} {'len':>4}  {'bytes':<{HEX_ROW * 3}} {'field':<26} value")
    for f in fields:
        raw = bytes.fromhex(f["hex"])
        rows = [raw[i:i + HEX_ROW] for i in range(0, len(raw), HEX_ROW)] or [b""]
        if f["field"] == "PROPERTIES":
            rows = [b""]  # its bytes follow, pair by pair
        hidden = 0
        if f["field"] == "BODY" and len(rows) > BODY_HEX_ROWS:
            hidden = len(raw) - BODY_HEX_ROWS * HEX_ROW
            rows = rows[:BODY_HEX_ROWS]
        lines.append(f"      {f['pos']:>5} {f['len']:>4}  {rows[0].hex(' '):<{HEX_ROW * 3}} {f['field']:<26} "
                     f"{f['text']}".rstrip())
        lines.extend(f"      {'':>5} {'':>4}  {row.hex(' ')}" for row in rows[1:])
        if hidden:
            lines.append(f"      {'':>5} {'':>4}  ... {hidden} more bytes")


# -- consume queues -------------------------------------------------------------------------------

def _consumequeue(lines: list[str], section: dict, offset: int | None) -> None:
    lines.append("")
    what = f" pointing at offset {offset}" if offset is not None else ""
    lines.append(f"Consume queues (consumequeue/<topic>/<queue id>/, 20-byte entries){what}: "
                 f"{len(section['queues'])} queue(s)")
    for q in section["queues"]:
        entries = _plural(q["entries_total"], "entry", "entries")
        lines.append(f"  {q['topic']}/{q['queue_id']}  minOffset {q['min_offset']}  "
                     f"maxOffset {q['max_offset']}  "
                     f"({entries} in {_files_of(q['files'], q['file_size'] or 0)})")
        for f in q["files"]:
            first = f["from_index"]
            span = f"entries {first}..{first + f['entries'] - 1}" if f["entries"] else "no entries"
            lines.append(f"    file {f['name']}  {span}")
            _problems(lines, "      ", f["problems"])
        if q["end"]["kind"] == "invalid":
            lines.append(f"    ! entry {q['end']['index']} has offset < 0 or size <= 0: "
                         "recovery cuts the queue there")
        for e in q["entries"]:
            lines.append("    " + _cq_entry(e))
            if "hex" in e:
                raw = _grouped(e["hex"], (8, 4, 8))
                lines.append(f"          at byte {e['position']} of file {e['file']}: {raw}")
        _more(lines, "    ", q["entries_matched"] - len(q["entries"]), "entry", "entries")


def _cq_entry(e: dict) -> str:
    text = (f"#{e['index']:<4} commitlog {e['commitlog_offset']:<8} size {e['size']:<5} "
            f"tagsCode {e['tags_code']}")
    if "delivery_time" in e:
        text += f" = delivery at {e['delivery_time']} (tag {e.get('tag') or '-'})"
    elif e.get("tag"):
        text += f" = hash of {e['tag']!r}"
    return f"{text}  [{e['check']}]"


# -- index files ----------------------------------------------------------------------------------

def _index(lines: list[str], section: dict, offset: int | None) -> None:
    lines.append("")
    what = f" with entries pointing at offset {offset}" if offset is not None else ""
    lines.append(f"Index files (index/){what}: {len(section['files'])} file(s)")
    for f in section["files"]:
        lines.append(f"  {f['name']} (created {f['created']})  {f['size']:,} bytes "
                     f"({fmt_bytes(f['allocated'])} on disk)")
        if "header" in f:
            h = f["header"]
            lines.append(f"    header  beginTimestamp {h['begin_timestamp']} ({h['begin_time']})  "
                         f"endTimestamp {h['end_timestamp']} ({h['end_time']})")
            lines.append(f"            beginPhyOffset {h['begin_phy_offset']}  "
                         f"endPhyOffset {h['end_phy_offset']}  "
                         f"hashSlotCount {h['hash_slot_count']}  indexCount {h['index_count']}")
        if "error" in f:
            lines.append(f"    ! {f['error']}")
            continue
        g = f["geometry"]
        source = "" if g["source"] == "options" else f" (found by {g['source']})"
        lines.append(f"    layout  40 + {g['hash_slots']:,} slots x 4 + {g['index_num']:,} entries x 20"
                     f"{source}")
        if f["entries_past_header"]:
            lines.append(f"    ! {f['entries_past_header']} entries past indexCount "
                         "(written after the header was last saved)")
        lines.append(f"    {f['used_slots']} used slots")
        for slot in f["slots"]:
            _slot(lines, slot, offset)
        _more(lines, "    ", f["slots_matched"] - len(f["slots"]), "slot", "slots")


def _slot(lines: list[str], slot: dict, offset: int | None) -> None:
    path = " -> ".join(str(e["entry"]) for e in slot["chain"])
    lines.append(f"    slot {slot['slot']} -> {path or slot['head']}")
    if "hex" in slot:
        lines.append(f"          slot at byte {slot['position']}: {_grouped(slot['hex'], (4,))}")
    for e in slot["chain"]:
        mark = "  <-" if offset is not None and e["phy_offset"] == offset else ""
        key = e["key"] or "(key not found)"
        lines.append(f"      #{e['entry']:<4} keyHash {e['key_hash']:<11} phyOffset {e['phy_offset']:<8} "
                     f"timeDiff {e['time_diff']:<3} prev {e['prev']:<4} {key}{mark}")
        if "hex" in e:
            lines.append(f"            at byte {e['position']}: {_grouped(e['hex'], (4, 8, 4, 4))}")


def _grouped(hex_text: str, widths: tuple[int, ...]) -> str:
    """Hex bytes split into fields: "00 00 05 19 | 00 00 01 10" for widths (4, 4)."""
    raw = bytes.fromhex(hex_text)
    parts, at = [], 0
    for w in widths:
        parts.append(raw[at:at + w].hex(" "))
        at += w
    return " | ".join(parts)


# -- checkpoint -----------------------------------------------------------------------------------

def _checkpoint(lines: list[str], cp: dict) -> None:
    lines.append("")
    if not cp["present"]:
        lines.append("Checkpoint: absent")
        return
    lines.append(f"Checkpoint (checkpoint, {cp['size']:,} bytes)")
    if "error" in cp:
        lines.append(f"  ! {cp['error']}")
        return
    rows = (("physicMsgTimestamp", "physic_msg", "commit log flushed up to this store time"),
            ("logicsMsgTimestamp", "logics_msg", "consume queues flushed up to this store time"),
            ("indexMsgTimestamp", "index_msg", "index files flushed up to this store time"),
            ("minTimestamp", "min", "min(physic, logics) - 3 s: abnormal recovery starts at the file "
                                    "whose first record is older"))
    for label, key, meaning in rows:
        lines.append(f"  {label:<19} {cp[key + '_timestamp']:<14} {cp[key + '_time']:<24} {meaning}")


# -- timer files (RocketMQ 5) ----------------------------------------------------------------------

def _mismatch(wheel: dict) -> str:
    m = wheel["precision_mismatch"]
    of = (f"of {m['checked']:,} slots checked (the earliest of {wheel['slots_in_use']:,} in use)"
          if m["checked"] < wheel["slots_in_use"] else f"of {m['checked']:,} slots in use")
    return (f"{m['slots']:,} {of} disagree with the due times of the timer-log units they point at, read at "
            f"{wheel['precision_ms']} ms precision: those units imply --timer-precision {m['implied_precision_ms']}")


def _timer(lines: list[str], section: dict) -> None:
    cp, wheel, tlog = section["checkpoint"], section["wheel"], section["log"]
    if not cp["present"] and not wheel["present"] and not tlog["files"]:
        return  # a store without timers (timerWheelEnable=false, or written before them): nothing to say
    lines.append("")
    lines.append("Timer checkpoint (config/timercheck)" + ("" if cp["present"] else ": absent"))
    if cp.get("error"):
        lines.append(f"  ! {cp['error']}")
    elif cp["present"]:
        lines.append(f"  lastReadTimeMs          {cp['last_read_time_ms']:<14} {cp['last_read_time']:<24} "
                     "slots before it are delivered")
        lines.append(f"  lastTimerLogFlushPos    {cp['last_timer_log_flush_pos']}")
        lines.append(f"  lastTimerQueueOffset    {cp['last_timer_queue_offset']:<14} "
                     "rmq_sys_wheel_timer is enqueued up to this offset")
        lines.append(f"  masterTimerQueueOffset  {cp['master_timer_queue_offset']}")
        lines.append(f"  dataVersion             stateVersion {cp['state_version']}, timestamp {cp['timestamp']}, "
                     f"counter {cp['counter']}")
    if wheel["present"]:
        lines.append(f"Timer wheel (timerwheel, {fmt_bytes(wheel['size'])}, {fmt_bytes(wheel['allocated'])} "
                     f"allocated): {wheel['slot_count']:,} slots of 32 bytes, {wheel['slots_in_use']} in use "
                     f"(times at {wheel['precision_ms']} ms precision, --timer-precision)")
        if "problem" in wheel:
            lines.append(f"  ! {wheel['problem']}")
        if "precision_mismatch" in wheel:
            lines.append(f"  ! {_mismatch(wheel)}")
        for s in wheel["slots"]:
            lines.append(f"  slot {s['index']:<8} {s['time']:<24} first {s['first_pos']:<10} last "
                         f"{s['last_pos']:<10} num {s['num']}")
        _more(lines, "  ", wheel["hidden"], "slot", "slots")
    for f in tlog["files"]:
        end = f["end"]
        units = _plural(f["unit_count"], "unit", "units")
        lines.append(f"Timer log file timerlog/{f['name']} ({fmt_bytes(f['size'])}): {units} of 52 bytes; ends: "
                     f"{end['kind']} at {end['offset']}")
        _problems(lines, "  ", f["problems"])
        for u in f["units"]:
            flags = "".join(("R" if u["roll"] else "-", "D" if u["delete"] else "-"))
            # Every field of the unit in its order (docs/storage.md §13.2), the due time being enqueue + delay.
            lines.append(f"  @{u['offset']:<10} prev {u['prev_pos']:<10} magic {u['magic']} {flags} due "
                         f"{u['delayed_time']:<24} commitlog {u['commitlog_offset']} ({u['size']} bytes)  enqueued "
                         f"{u['enqueue_time_ms']} + delay {u['delayed_time_ms'] - u['enqueue_time_ms']}  topic hash "
                         f"{u['topic_hash']}")
        _more(lines, "  ", f["hidden"], "unit", "units")
