"""Crash test: a SYNC_FLUSH writer process is SIGKILLed at a random moment, again and again;
after each kill the store recovers (abnormally: the abort file is left behind) and must still
hold every acknowledged message, byte for byte, with queues that agree with the commit log.

Reproduce a failure with the seed it prints: POCKETMQ_CRASH_SEED=<seed> pytest tests/storage/test_crash.py
"""

from __future__ import annotations

import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

from pocketmq.common import decode, decode_all
from pocketmq.storage import DefaultMessageStore, GetMessageStatus

from .crash_writer import QUEUES, TOPIC, writer_config

WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_writer.py")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MESSAGE_MAGIC = 0xDAA320A7
BLANK_MAGIC = 0xCBD43194


class Child:
    """The writer process, with a thread draining its stdout so it never blocks on the pipe."""

    def __init__(self, root: str, seed: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, WRITER, root, str(seed)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": REPO_ROOT},
        )
        self.lines: list[bytes] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            if line == b"READY\n":
                self.ready.set()

    def kill(self) -> tuple[int, bytes]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        rc = self.proc.wait(timeout=60)
        self._reader.join(timeout=60)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc, err


def parse_acks(lines: list[bytes]) -> list[tuple[int, int, bytes]]:
    acks = []
    for line in lines:
        if not line.endswith(b"\n"):
            continue  # cut by the kill: never acknowledged
        parts = line.split()
        if parts[0] == b"ACK":
            acks.append((int(parts[1]), int(parts[2]), bytes.fromhex(parts[3].decode()) if len(parts) > 3 else b""))
        elif parts[0] == b"ERR":
            raise AssertionError(f"writer refused a put: {line!r}")
    return acks


def read_queue(store, qid: int) -> dict[int, bytes]:
    out = {}
    if store.get_consume_queue(TOPIC, qid) is None:
        return out
    offset = store.get_min_offset_in_queue(TOPIC, qid)
    while offset < store.get_max_offset_in_queue(TOPIC, qid):
        res = store.get_message("verify", TOPIC, qid, offset, 32)
        assert res.status == GetMessageStatus.FOUND, (qid, offset, res.status)
        for m in decode_all(res.body):
            out[m.queue_offset] = m.body
        offset = res.next_begin_offset
    return out


def verify(store: DefaultMessageStore, root: str, acked: dict[tuple[int, int], bytes], context: str) -> None:
    # 1. every acknowledged message is at its queue offset, byte for byte
    queues = {qid: read_queue(store, qid) for qid in range(QUEUES)}
    for (qid, qoff), body in acked.items():
        got = queues[qid].get(qoff)
        assert got == body, f"{context}: acked message {qid}/{qoff} is {'missing' if got is None else 'different'}"

    # 2. the commit log, walked as recovery does: valid records up to the max offset, zeros after
    max_phy = store.get_max_phy_offset()
    records = {}
    cl_dir = os.path.join(root, "commitlog")
    names = sorted(os.listdir(cl_dir)) if os.path.isdir(cl_dir) else []
    if not names:
        assert max_phy == 0 and not acked, f"{context}: no commit log"
    for name in names:
        base = int(name)
        with open(os.path.join(cl_dir, name), "rb") as f:
            data = f.read()
        pos = 0
        blank = False
        while base + pos < max_phy:
            size, magic = struct.unpack_from(">iI", data, pos)
            if magic == BLANK_MAGIC:
                assert size == len(data) - pos, f"{context}: blank record of the wrong size"
                blank = True
                break
            assert magic == MESSAGE_MAGIC, f"{context}: no record at {base + pos} below the max offset"
            m = decode(data, pos, check_crc=True)
            assert m.commit_log_offset == base + pos, context
            records[base + pos] = m
            pos += size
        if not blank:
            assert base + pos == max_phy or name != names[-1], f"{context}: log ends at {base + pos}, not {max_phy}"
        if name == names[-1]:
            # a kill between writing the blank record and creating the next file leaves a full last file
            end = len(data) if blank else pos
            assert base + end == max_phy, f"{context}: log ends at {base + end}, store says {max_phy}"
            tail = pos + 8 if blank else pos
            assert data[tail:] == bytes(len(data) - tail), f"{context}: bytes after the end of the log"

    # 3. queues agree with the log, point at nothing past it, and cover every record
    covered = set()
    for qid in range(QUEUES):
        cq = store.get_consume_queue(TOPIC, qid)
        if cq is None:
            continue
        for n in range(cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()):
            phys, size, _ = cq.get_entry(n)
            assert phys + size <= max_phy, f"{context}: queue {qid} entry {n} points past the log"
            m = records.get(phys)
            assert m is not None, f"{context}: queue {qid} entry {n} points at no record ({phys})"
            assert (m.topic, m.queue_id, m.queue_offset, m.store_size) == (TOPIC, qid, n, size), context
            covered.add(phys)
    assert covered == set(records), f"{context}: records missing from the queues"
    assert set(store.consume_queue_table) <= {(TOPIC, q) for q in range(QUEUES)}

    # 4. the index still finds messages by key (a sample, newest first)
    for phys in sorted(records)[-5:]:
        key = records[phys].properties["KEYS"]
        found = [decode(b).commit_log_offset for b in store.query_message(TOPIC, key, 4, 0, 2**62).buffers]
        assert found == [phys], f"{context}: key {key}"


def run_rounds(tmp_path, rounds: int, seed: int, rounds_per_store: int = 25) -> None:
    print(f"crash test seed: {seed} (rerun with POCKETMQ_CRASH_SEED={seed})")
    rnd = random.Random(seed)
    acked: dict[tuple[int, int], bytes] = {}
    root = None
    total_acks = 0
    verified = 0
    for rnd_no in range(rounds):
        if rnd_no % rounds_per_store == 0:  # bound the log so later rounds stay fast
            root = str(tmp_path / f"store-{rnd_no}")
            acked = {}
        child_seed = rnd.randrange(2**31)
        early = rnd.random() < 0.2  # sometimes while the child is still loading / recovering
        delay = rnd.uniform(0, 0.4) if early else rnd.uniform(0, 0.25)
        context = f"seed {seed} round {rnd_no} child seed {child_seed} early={early} delay={delay:.3f}"
        child = Child(root, child_seed)
        try:
            if not early:
                assert child.ready.wait(60), f"{context}: writer never became ready"
            time.sleep(delay)  # the random kill moment (not a wait for a condition)
        finally:
            rc, err = child.kill()
        assert rc == -signal.SIGKILL, f"{context}: writer exited with {rc}: {err.decode(errors='replace')}"
        for qid, qoff, body in parse_acks(child.lines):
            key = (qid, qoff)
            assert key not in acked, f"{context}: queue offset {key} acknowledged twice"
            acked[key] = body
            total_acks += 1
        started = b"READY\n" in child.lines
        # Sometimes the next writer starts on the crashed store itself: its abnormal recovery may
        # be killed in turn (early kills), and the acknowledged messages must survive that too.
        last_of_store = rnd_no == rounds - 1 or (rnd_no + 1) % rounds_per_store == 0
        if not last_of_store and rnd.random() < 0.3:
            continue

        store = DefaultMessageStore(writer_config(root))
        store.load()
        if started:
            assert store.last_exit_ok is False, f"{context}: the killed writer left no abort file"
        store.start()
        try:
            verify(store, root, acked, context)
        finally:
            store.shutdown()
        verified += 1
    print(f"crash test: {rounds} rounds, {verified} recoveries verified, {total_acks} acknowledged messages")
    assert total_acks > rounds  # the kills did not all land before any write


def _seed() -> int:
    env = os.environ.get("POCKETMQ_CRASH_SEED")
    return int(env) if env else random.randrange(2**32)


def test_crash_recovery_keeps_every_acknowledged_message(tmp_path):
    run_rounds(tmp_path, 20, _seed())


@pytest.mark.slow
def test_crash_recovery_many_rounds(tmp_path):
    run_rounds(tmp_path, 200, _seed())
