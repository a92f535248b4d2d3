"""bench/storage.py's recovery figures: a writer killed (SIGKILL) with a commit-log file full, then the store's
load() and start() timed, after the crash and after a clean shutdown."""

from __future__ import annotations

import gc
import multiprocessing
import os
import shutil
import signal
import struct
import time

from bench.storage_runs import BATCH, batches_of, make_messages, open_store, perf, queue_total, record_size
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig


def _fill_and_hang(root: str, file_size: int, body_size: int, conn) -> None:
    """Child process: fill one commit-log file with 1 KiB TAGS messages, report, then wait to be killed."""
    store = open_store(root, mapped_file_size_commit_log=file_size)
    msgs = make_messages(BATCH * 256, bytes(body_size), "tags", "recovery")
    batches = batches_of(msgs)
    batch_bytes = BATCH * record_size(msgs[0])
    count = 0
    while store.get_max_phy_offset() + 2 * batch_bytes < file_size:
        for b in batches:
            store.put_messages(b)
            count += BATCH
            if store.get_max_phy_offset() + 2 * batch_bytes >= file_size:
                break
    conn.send((count, store.get_max_phy_offset(), store.dispatch_behind_bytes()))
    time.sleep(3600)


def bench_recovery(root: str, file_size: int, body_size: int) -> dict:
    """SIGKILL a writer that filled `file_size` bytes of commit log, then time load() + start()
    (start() returns once dispatch has caught up); then a clean shutdown and a normal restart."""
    store_dir = os.path.join(root, "recovery")
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_fill_and_hang, args=(store_dir, file_size, body_size, child), daemon=True)
    t0 = perf()
    proc.start()
    deadline = perf() + 900
    while not parent.poll(0.2):
        alive = proc.is_alive()
        if not alive or perf() > deadline:
            proc.kill()
            proc.join()
            raise RuntimeError(f"the recovery writer {'took over 15 min' if alive else 'died'}")
    written, log_bytes, lag_at_kill = parent.recv()
    fill_s = perf() - t0
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    with open(os.path.join(store_dir, "checkpoint"), "rb") as f:
        physic_ts, logics_ts = struct.unpack(">qq", f.read(16))
    out = {"written": written, "log_bytes": log_bytes, "lag_at_kill": lag_at_kill, "fill_s": fill_s,
           "checkpoint_stale": physic_ts == 0 or logics_ts == 0}
    for kind in ("abnormal", "normal"):
        gc.collect()
        t0 = perf()
        store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=store_dir,
                                                       mapped_file_size_commit_log=file_size))
        store.load()
        t1 = perf()
        store.start()
        t2 = perf()
        out[kind] = (t2 - t0, t1 - t0, t2 - t1, queue_total(store), store.get_max_phy_offset())
        store.shutdown()
    shutil.rmtree(store_dir)
    return out
