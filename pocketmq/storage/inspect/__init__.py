"""`python -m pocketmq.storage inspect STORE_DIR`: the files of a store, read directly and never modified.

It does not open DefaultMessageStore: it maps each file read-only and parses it with
pocketmq.common.codec and struct, so it works on a stopped store, a crashed one, or one another process
is running (without taking its lock). See docs/storage.md for the layouts it shows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..config import DEFAULT_DELAY_LEVELS, parse_delay_levels
from .commitlog import CommitLogFiles, commitlog_section
from .consumequeue import consumequeue_section
from .files import PROC_LOCKS, ReadOnlyFiles
from .indexfile import index_section
from .options import SECTIONS, Options
from .state import checkpoint_section, state_section
from .text import render
from .timer import timer_section

FORMAT = "pocketmq-inspect/1"


def inspect_store(root: str, opts: Options, locks_path: str = PROC_LOCKS) -> dict:
    """The report for one store: a JSON-ready dict with the requested sections. `locks_path`: the kernel's table
    of file locks, which says whether a store holds the lock."""
    report: dict = {"format": FORMAT, "store": root, "state": state_section(root, locks_path)}
    if opts.offset is not None:
        report["offset"] = opts.offset
    with ReadOnlyFiles() as files:
        log = CommitLogFiles(root, files)
        if "commitlog" in opts.sections:
            report["commitlog"] = commitlog_section(log, opts)
        if "consumequeue" in opts.sections:
            running = report["state"]["lock"]["held"]
            report["consumequeue"] = consumequeue_section(root, files, log, opts, running)
        if "index" in opts.sections:
            report["index"] = index_section(root, files, log, opts)
        if "checkpoint" in opts.sections:
            report["checkpoint"] = checkpoint_section(root, files)
        if "timer" in opts.sections:
            report["timer"] = timer_section(root, files, opts.timer_precision_ms, opts.limit)
    return report


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pocketmq.storage inspect",
        description="Show a store's files (commit log, consume queues, index files, checkpoint, timer files) "
                    "without "
                    "modifying anything. With no section option, all sections are shown.")
    p.add_argument("store_dir", metavar="STORE_DIR")
    for name, what in (("commitlog", "commit-log files and records"),
                       ("consumequeue", "consume-queue entries per topic and queue"),
                       ("index", "index files: header, used slots and their chains"),
                       ("checkpoint", "the checkpoint's three timestamps"),
                       ("timer", "RocketMQ 5's timer files: timercheck, the wheel's slots in use, timer-log units")):
        p.add_argument(f"--{name}", action="store_true", help=f"show {what}")
    p.add_argument("--topic", metavar="T", help="only records, queues and index keys of topic T")
    p.add_argument("--queue", type=int, metavar="Q", help="only records and consume queues with queue id Q")
    p.add_argument("--offset", type=int, metavar="PHY",
                   help="only the record at commit-log offset PHY, and the entries pointing at it")
    p.add_argument("--limit", type=int, metavar="N",
                   help="show at most N records, N entries per queue and N slots per index file "
                        "(default: all)")
    p.add_argument("--hex", action="store_true",
                   help="show each record's bytes field by field (position, length, bytes, field, value)")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.add_argument("--hash-slots", type=int, default=5_000_000, metavar="N",
                   help="index slots per file (default RocketMQ's 5,000,000; inferred when the file "
                        "size disagrees)")
    p.add_argument("--index-num", type=int, default=20_000_000, metavar="N",
                   help="index entries per file (default RocketMQ's 20,000,000)")
    p.add_argument("--timer-precision", type=int, default=1000, metavar="MS",
                   help="the store's timerPrecisionMs, to read the wheel's slot times (default 1000)")
    p.add_argument("--delay-levels", default=DEFAULT_DELAY_LEVELS, metavar="LEVELS",
                   help="the store's messageDelayLevel, to check SCHEDULE_TOPIC_XXXX entries' deliver times "
                        f"(default RocketMQ's {DEFAULT_DELAY_LEVELS!r})")
    return p


def options_from(args: argparse.Namespace) -> Options:
    chosen = frozenset(s for s in SECTIONS if getattr(args, s))
    return Options(sections=chosen or frozenset(SECTIONS), topic=args.topic, queue=args.queue,
                   limit=args.limit, offset=args.offset, hex=args.hex, hash_slots=args.hash_slots,
                   index_num=args.index_num, timer_precision_ms=args.timer_precision,
                   delay_levels=args.delay_levels)


# What every store holds once started (RocketMQ's and pocketmq's alike); a folder with none of them is no store.
STORE_ENTRIES = ("commitlog", "consumequeue", "index", "checkpoint")
NOT_A_STORE = "is not a RocketMQ store: it holds none of commitlog/, consumequeue/, index/ and checkpoint"


def is_store(folder: str) -> bool:
    return any(os.path.exists(os.path.join(folder, name)) for name in STORE_ENTRIES)


def store_folder(folder: str, tool: str = "inspect") -> str:
    """The store in ``folder``: ``pocketmq dev --store F`` keeps it in F/store, so given F, that one (said on stderr,
    by ``tool``)."""
    inner = os.path.join(folder, "store")
    if not is_store(folder) and is_store(inner):
        print(f"{tool}: reading {inner}, the store of `pocketmq dev --store {folder}`", file=sys.stderr)
        return inner
    return folder


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = args.store_dir
    if not os.path.isdir(root):
        print(f"inspect: {root} is not a directory", file=sys.stderr)
        return 2
    root = store_folder(root)
    if not is_store(root):
        print(f"inspect: {root} {NOT_A_STORE}", file=sys.stderr)
        return 2
    if args.limit is not None and args.limit < 0:
        print("inspect: --limit must not be negative", file=sys.stderr)
        return 2
    if args.timer_precision <= 0:  # (the wheel's slot times are stored divided by it)
        print("inspect: --timer-precision must be a positive number of milliseconds", file=sys.stderr)
        return 2
    try:
        parse_delay_levels(args.delay_levels)
    except ValueError as e:
        print(f"inspect: --delay-levels: {e}", file=sys.stderr)
        return 2
    report = inspect_store(root, options_from(args))
    if args.json:
        # One line, no indent: json's C encoder only runs without indent, and stores can be large.
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        sys.stdout.write(render(report))
    return 0


__all__ = ["Options", "inspect_store", "is_store", "main", "store_folder"]
