#!/usr/bin/env python3
"""Instruction counts of the storage hot paths, for before/after comparisons on a shared machine.

    python bench/instructions.py            # runs every path under cachegrind, prints instructions per message
    python bench/instructions.py [PATH ...]   # those paths only
    python bench/instructions.py --one PATH N SKIP  # one run (what cachegrind executes)

Wall time on a machine shared with other jobs moves by tens of percent; the number of instructions a path
executes does not. Each path runs under ``valgrind --tool=cachegrind --cache-sim=no`` with its set-up only
(SKIP=1) and with the set-up and the measured step, at N and at 2N messages; the figure is the marginal cost of
the second N messages, per message (one-time costs, such as creating a file, drop out). PYTHONHASHSEED is fixed
and the garbage collector off.
Everything runs in one thread: the store is loaded but not started, and dispatch is driven by calling
``ReputMessageService.do_reput`` directly.

Paths: put (CommitLog.put_message), batch (put_messages of MessageExtBatch, 32 a batch), dispatch (do_reput of
mixed traffic: 3 topics, 4 queues each, tags, some keys, sizes alternating, put one message at a time, round
robin over the queues), dispatch_rr (records of one shape, one topic, round robin over 4 queues: a queue change at
every record, without a change of shape), dispatch_rr_listener (the same with a listener that does nothing, as a
broker's long polling mostly does), dispatch_runs (batches: runs of one queue), recovery (load of a store whose
last exit crashed: the commit log scanned with CRC checks, consume queues recovered) and decode
(codec.decode_all of the records).
"""

from __future__ import annotations

import functools
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pocketmq.common import MessageExtBrokerInner, pack_host, properties_to_string  # noqa: E402
from pocketmq.common.codec import decode_all  # noqa: E402
from pocketmq.common.message import MessageExtBatch  # noqa: E402
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig  # noqa: E402

PATHS = ("put", "batch", "dispatch", "dispatch_rr", "dispatch_rr_listener", "dispatch_runs", "recovery", "decode")
BORN = pack_host("10.0.0.7", 53112)
N = 4096


def _config(root: str) -> MessageStoreConfig:
    return MessageStoreConfig(store_path_root_dir=root, mapped_file_size_commit_log=4 << 20,
                              mapped_file_size_consume_queue=300_000 * 20, clean_resource_interval=3600.0,
                              check_crc_on_recover=True)


def _messages(n: int) -> list[MessageExtBrokerInner]:
    out = []
    for i in range(n):
        props = {"TAGS": f"Tag{i % 3}"}
        if i % 4 == 0:
            props["KEYS"] = f"ORDER-{i}"
        out.append(MessageExtBrokerInner(
            topic=f"Topic{i % 3}", body=b"x" * (100 + i % 2), properties=props, queue_id=i % 4,
                           born_timestamp=1_700_000_000_000, born_host=BORN))
    return out


def _batches(n: int) -> list[MessageExtBatch]:
    out = []
    for b in range(n // 32):
        props = [properties_to_string({"TAGS": "TagA", "UNIQ_KEY": f"{b:08d}{i:024d}"}).encode() for i in range(32)]
        out.append(MessageExtBatch("BatchTopic", b % 4, [0] * 32, [b"y" * 200] * 32, props, 0,
                                   1_700_000_000_000, BORN))
    return out


def _nothing(*_args: object) -> None:
    pass


def run_one(path: str, n: int, skip: bool) -> None:
    # A collection runs after so many allocations, wherever that falls: with it on, a change that allocates a
    # few objects more or less at import moves a whole collection in or out of the measured step.
    gc.disable()
    if path not in _RUNS:
        raise SystemExit(f"unknown path {path}")
    root = tempfile.mkdtemp(prefix="pmq-instr-")
    try:
        store = DefaultMessageStore(_config(root))
        store.load()
        store = _RUNS[path](store, root, n, skip)
        if store._loaded:
            store.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)


# Each path: its set-up, then (unless skip) its measured step; the store it leaves, to shut down.
def _run_put(store: DefaultMessageStore, root: str, n: int, skip: bool) -> DefaultMessageStore:
    msgs = _messages(n)
    if not skip:
        for m in msgs:
            store.commit_log.put_message(m)
    return store


def _run_batch(store: DefaultMessageStore, root: str, n: int, skip: bool) -> DefaultMessageStore:
    batches = _batches(n)
    if not skip:
        for b in batches:
            store.commit_log.put_messages(b)
    return store


def _run_dispatch(store: DefaultMessageStore, root: str, n: int, skip: bool, kind: str) -> DefaultMessageStore:
    log = store.commit_log
    if kind == "dispatch":
        for m in _messages(n):
            log.put_message(m)
    elif kind.startswith("dispatch_rr"):
        if kind == "dispatch_rr_listener":
            store.message_arriving_listener = _nothing
        for i in range(n):
            log.put_message(MessageExtBrokerInner(
                topic="RoundRobin", body=b"z" * 100, properties={"TAGS": "TagA"}, queue_id=i % 4,
                born_timestamp=1_700_000_000_000, born_host=BORN))
    else:
        for b in _batches(n):
            log.put_messages(b)
    if not skip:
        store.reput_service.do_reput()
        assert store.reput_service.reput_from_offset == log.get_max_offset()
    return store


def _run_recovery(store: DefaultMessageStore, root: str, n: int, skip: bool) -> DefaultMessageStore:
    for m in _messages(n):
        store.commit_log.put_message(m)
    store.reput_service.do_reput()
    store.shutdown()  # (not started: the abort file stays, as after a crash)
    Path(root, "abort").touch()
    store = DefaultMessageStore(_config(root))
    if not skip:
        store.load()
        assert store.commit_log.get_max_offset() > 0
    return store


def _run_decode(store: DefaultMessageStore, root: str, n: int, skip: bool) -> DefaultMessageStore:
    log = store.commit_log
    for m in _messages(n):
        log.put_message(m)
    mf = log.mapped_file_queue.files[0]
    data = bytes(mf.mm[:mf.wrote_position])
    if not skip:
        assert len(decode_all(data)) == n
    return store


_RUNS: dict[str, Callable[[DefaultMessageStore, str, int, bool], DefaultMessageStore]] = {
    "put": _run_put,
    "batch": _run_batch,
    **{kind: functools.partial(_run_dispatch, kind=kind)
       for kind in ("dispatch", "dispatch_rr", "dispatch_rr_listener", "dispatch_runs")},
    "recovery": _run_recovery,
    "decode": _run_decode,
}
assert tuple(_RUNS) == PATHS


def _count(path: str, n: int, skip: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                               sys.executable, __file__, "--one", path, str(n), "1" if skip else "0"],
                              capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        m = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
        if m is None:
            raise RuntimeError(proc.stderr)
        return int(m.group(1).replace(",", ""))


def main() -> None:
    paths = sys.argv[1:] or PATHS
    for path in paths:
        once = _count(path, N, False) - _count(path, N, True)
        twice = _count(path, 2 * N, False) - _count(path, 2 * N, True)
        print(f"{path:14s} {(twice - once) / N:10.0f} instructions a message", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        run_one(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1")
    else:
        main()
