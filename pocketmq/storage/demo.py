"""`python -m pocketmq.storage demo STORE_DIR`: fill a store with sample messages, to look at with `inspect`.

The messages are generated from a fixed seed, so two runs write the same bytes apart from the
timestamps (born and store times, index file names). A run replaces a store an earlier run wrote in
STORE_DIR (it holds the demo's marker file; a store from before the marker holds only the demo's topics), so
`make demo` works any number of times; a directory holding anything else, a broker's store included, is left alone.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import random
import shutil
import sys
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from pocketmq.common.constants import COMPRESSED_FLAG, CQ_STORE_UNIT_SIZE
from pocketmq.common.message import MessageExtBrokerInner, pack_host

from .config import FlushDiskType, MessageStoreConfig
from .inspect.files import fmt_bytes
from .inspect.indexfile import file_size_for
from .inspect.state import DEMO_MARKER
from .message_store import DefaultMessageStore
from .schedule_routing import SCHEDULE_TOPIC
from .store_lock import StoreLockedError

SEED = 20240601
TOPICS = {"OrderEvents": 4, "Payments": 2}
MARKER = DEMO_MARKER  # written into each store the demo makes: the demo clears only a directory that holds it
# What a demo store may hold besides the marker; anything else means STORE_DIR is not (only) the demo's store.
# (Not config/: a broker writes it, with the topics and offsets of its store.)
STORE_ENTRIES = frozenset({"commitlog", "consumequeue", "index", "checkpoint", "abort", "lock",
                           "dispatch_manifest.json", "timerwheel", "timerlog", MARKER})
# A store without the marker is an older demo's (from before the marker) only when its consume queues are the
# topics the demo writes, and its config/, if any, holds no more than the timer wheel's checkpoint.
DEMO_TOPICS = frozenset(TOPICS) | {SCHEDULE_TOPIC}
LEGACY_CONFIG = frozenset({"timercheck"})

# --small: sizes at which a few hundred messages roll every kind of file.
SMALL_COMMIT_LOG = 32 * 1024
SMALL_CQ_ENTRIES = 16
SMALL_HASH_SLOTS = 64
SMALL_INDEX_NUM = 4 * SMALL_HASH_SLOTS  # RocketMQ's ratio: maxIndexNum = 4 x maxHashSlotNum

PRODUCER_V4 = pack_host("127.0.0.1", 53011)
PRODUCER_V6 = pack_host("2001:db8::7", 53122)  # one producer on IPv6 shows the wider BORNHOST field
DELAYS = ((3, "10s"), (5, "1m"))  # (level, delay) for the delayed messages


@dataclass
class Put:
    """One call to the store: a single message, or a batch (one topic and queue)."""

    messages: list[MessageExtBrokerInner]


@dataclass
class Summary:
    """What a demo run wrote, for its report."""

    singles: int = 0
    batches: int = 0
    delayed: int = 0
    per_queue: Counter = field(default_factory=Counter)


class UniqKeys:
    """UNIQ_KEY in MessageClientIDSetter's layout, with fixed values so the demo is reproducible:
    client IP 127.0.0.1 (4 bytes), pid (2), class-loader hash (4), ms since the month began (4),
    counter (2) = 16 bytes = 32 upper-case hex chars."""

    def __init__(self, rng: random.Random) -> None:
        pid, class_loader_hash = (4242).to_bytes(2, "big"), rng.getrandbits(32).to_bytes(4, "big")
        self._prefix = bytes([127, 0, 0, 1]) + pid + class_loader_hash
        self._ms = 1_000_000
        self._counter = 0

    def next(self) -> str:
        self._ms += 3
        self._counter += 1
        raw = self._prefix + self._ms.to_bytes(4, "big") + (self._counter & 0xFFFF).to_bytes(2, "big")
        return raw.hex().upper()


class Producer:
    """Builds the demo's messages: order events in 4 queues, payments in 2, keyed by order."""

    EVENTS = (("OrderCreated", "TagA"), ("OrderPaid", "TagB"), ("OrderShipped", "TagC"))
    ITEMS = ("keyboard", "mouse", "monitor", "cable", "lamp", "chair", "desk", "headset")

    def __init__(self, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        self.uniq = UniqKeys(self.rng)
        self.order = 0
        self.payment = 0

    def _message(self, topic: str, queue_id: int, tags: str, keys: str, body: dict, **extra) -> MessageExtBrokerInner:
        props = {"KEYS": keys, "TAGS": tags, "WAIT": "true", "UNIQ_KEY": self.uniq.next()}
        props.update(extra.pop("properties", {}))
        raw = json.dumps(body, separators=(",", ":")).encode()
        return MessageExtBrokerInner(topic=topic, body=raw, properties=props, queue_id=queue_id,
                       born_timestamp=int(time.time() * 1000), born_host=extra.pop("born_host", PRODUCER_V4),
                       **extra)

    def order_event(self, order: int, step: int) -> MessageExtBrokerInner:
        event, tags = self.EVENTS[step]
        items = self.rng.sample(self.ITEMS, self.rng.randint(1, 3))
        body = {"order": order, "event": event, "items": items,
                "amount": f"{self.rng.randint(500, 99_999) / 100:.2f}", "currency": "EUR"}
        return self._message("OrderEvents", order % TOPICS["OrderEvents"], tags, f"order-{order}", body)

    def new_order(self) -> MessageExtBrokerInner:
        self.order += 1
        return self.order_event(self.order, 0)

    def payment_for(self, order: int, ipv6: bool = False) -> MessageExtBrokerInner:
        self.payment += 1
        method, tags = self.rng.choice((("card", "TagA"), ("wallet", "TagB")))
        body = {"payment": self.payment, "order": order, "method": method,
                "amount": f"{self.rng.randint(500, 99_999) / 100:.2f}"}
        keys = f"pay-{self.payment} order-{order}"
        return self._message("Payments", self.payment % TOPICS["Payments"], tags, keys, body,
                             born_host=PRODUCER_V6 if ipv6 else PRODUCER_V4)

    def delayed_check(self, order: int, level: int, delay: str) -> MessageExtBrokerInner:
        body = {"order": order, "event": "PaymentTimeoutCheck", "after": delay}
        return self._message("OrderEvents", order % TOPICS["OrderEvents"], "TagD", f"order-{order}", body,
                             properties={"DELAY": str(level)})

    def compressed_invoice(self, order: int) -> MessageExtBrokerInner:
        """A body over 4 KiB, zlib-compressed with SYSFLAG bit 0 set, as RocketMQ's producer does."""
        rng = self.rng
        lines = [{"line": i, "item": rng.choice(self.ITEMS), "qty": rng.randint(1, 9)} for i in range(160)]
        msg = self.order_event(order, 1)
        raw = json.dumps({"order": order, "event": "Invoice", "lines": lines}, separators=(",", ":")).encode()
        msg.body = zlib.compress(raw)
        msg.sys_flag |= COMPRESSED_FLAG
        msg.properties["TAGS"] = "TagE"
        return msg


def plan(count: int, seed: int = SEED) -> Iterator[Put]:
    """The demo's puts, `count` messages in all. Most puts are single messages; every 7th is a
    batch of an order's three events; a few messages show IPv6, delay levels and compression."""
    p = Producer(seed)
    specials = {3: "ipv6", 6: "delay0", count // 2: "delay1", count - 4: "compressed"}
    written = 0
    n_put = 0
    while written < count:
        left = count - written
        n_put += 1
        kind = specials.get(written, "")
        if n_put % 7 == 0 and left >= 3 and not any(written <= s < written + 3 for s in specials):
            order = p.order + 1
            p.order = order
            put = Put([p.order_event(order, step) for step in range(3)])
        elif kind == "ipv6" and p.order:
            put = Put([p.payment_for(p.order, ipv6=True)])
        elif kind.startswith("delay") and p.order:
            level, delay = DELAYS[int(kind[-1])]
            put = Put([p.delayed_check(p.order, level, delay)])
        elif kind == "compressed" and count >= 100 and p.order:
            put = Put([p.compressed_invoice(p.order)])
        elif p.order and p.rng.random() < 0.35:
            put = Put([p.payment_for(p.rng.randint(max(1, p.order - 5), p.order))])
        elif p.order and p.rng.random() < 0.3:
            order = p.rng.randint(max(1, p.order - 8), p.order)
            put = Put([p.order_event(order, p.rng.randint(1, 2))])
        else:
            put = Put([p.new_order()])
        written += len(put.messages)
        yield put


# -- the store directory --------------------------------------------------------------------------

class DemoError(Exception):
    pass


def prepare_directory(path: str) -> bool:
    """Make `path` an empty directory for the demo, with its marker. Returns True when an old store was removed.

    Only a store an earlier run wrote (it holds MARKER, and nothing but store files; or, written before the
    marker, no topic but the demo's) is cleared, and only when no process holds the store's lock: the demo never
    deletes what it did not write.
    """
    if not os.path.exists(path):
        os.makedirs(path)
    elif not os.path.isdir(path):
        raise DemoError(f"{path} exists and is not a directory")
    entries = set(os.listdir(path))
    if entries:
        _check_demo_store(path, entries)
        _check_unlocked(os.path.join(path, "lock"))
        for name in entries:
            full = os.path.join(path, name)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)
            else:
                os.unlink(full)
    with open(os.path.join(path, MARKER), "w") as f:
        f.write("A store written by `python -m pocketmq.storage demo`, which replaces it when run again here.\n")
    return bool(entries)


def _check_demo_store(path: str, entries: set[str]) -> None:
    refuse = f"refusing to clear {path}: pass a new or empty directory (or delete it yourself)"
    legacy = MARKER not in entries
    config = os.path.join(path, "config")
    # Demo stores written before the wheel was turned off hold config/timercheck, the wheel's own checkpoint.
    if "config" in entries and not (legacy and _only(config, LEGACY_CONFIG)):
        raise DemoError(f"{path} holds config/, a broker's topics and consumer offsets: it is a broker's store, "
                        f"not one the demo wrote; {refuse}")
    foreign = sorted(entries - STORE_ENTRIES - {"config"})
    if foreign:
        raise DemoError(f"{path} holds files that are not part of the demo's store ({', '.join(foreign[:5])}); "
                        f"{refuse}")
    if legacy:
        others = sorted(set(_entries(os.path.join(path, "consumequeue"))) - DEMO_TOPICS)
        if others:
            raise DemoError(f"{path} was not written by the demo (it has no {MARKER} file, and holds topics the "
                            f"demo does not write: {', '.join(others[:5])}); {refuse}")


def _entries(directory: str) -> list[str]:
    return os.listdir(directory) if os.path.isdir(directory) else []


def _only(directory: str, allowed: frozenset[str]) -> bool:
    return os.path.isdir(directory) and not os.path.islink(directory) and set(os.listdir(directory)) <= allowed


def _check_unlocked(lock_path: str) -> None:
    if not os.path.exists(lock_path):
        return
    fd = os.open(lock_path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        raise DemoError(f"a running store holds {lock_path}; stop it before replacing the demo store")
    finally:
        os.close(fd)


def store_config(path: str, small: bool, flush: str) -> MessageStoreConfig:
    config = MessageStoreConfig(
        store_path_root_dir=path,
        flush_disk_type=FlushDiskType.SYNC_FLUSH if flush == "sync" else FlushDiskType.ASYNC_FLUSH,
        # On a nearly full disk, cleanup would delete even young files; the demo's must survive.
        clean_resource_interval=3600.0,
        # The demo writes no timer message (docs/storage.md's worked example shows the files it does write);
        # docs/storage.md §13 shows the timer files of a store that has some.
        timer_wheel_enable=False,
    )
    if small:
        config.mapped_file_size_commit_log = SMALL_COMMIT_LOG
        config.mapped_file_size_consume_queue = SMALL_CQ_ENTRIES * CQ_STORE_UNIT_SIZE
        config.max_hash_slot_num = SMALL_HASH_SLOTS
        config.max_index_num = SMALL_INDEX_NUM
    return config


# -- running it -----------------------------------------------------------------------------------

def write_messages(store: DefaultMessageStore, count: int) -> Summary:
    summary = Summary()
    for put in plan(count):
        msgs = put.messages
        result = store.put_messages(msgs) if len(msgs) > 1 else store.put_message(msgs[0])
        if not result.is_ok:
            raise DemoError(f"put failed: {result.status.value} {result.remark}")
        if len(msgs) > 1:
            summary.batches += 1
        else:
            summary.singles += 1
        for m in msgs:  # the store rewrites a delayed message's topic and queue in place
            summary.per_queue[(m.topic, m.queue_id)] += 1
            summary.delayed += m.topic == SCHEDULE_TOPIC
    return summary


def run(config: MessageStoreConfig, count: int) -> tuple[Summary, bool]:
    """Write `count` messages into a fresh store; returns the summary and whether an old store was removed."""
    replaced = prepare_directory(config.store_path_root_dir)
    store = DefaultMessageStore(config)
    store.load()
    store.start()
    try:
        summary = write_messages(store, count)
        if not store.wait_dispatched(30.0):
            raise DemoError("dispatch did not catch up within 30 s")
    finally:
        store.shutdown()
    return summary, replaced


def _files(path: str) -> list[tuple[str, int, int]]:
    """(name relative to the store, apparent size, bytes allocated on disk) of every file under `path`."""
    out = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(root, name)
            st = os.stat(full)
            out.append((os.path.relpath(full, path), st.st_size, st.st_blocks * 512))
    return out


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def describe_sizes(config: MessageStoreConfig) -> list[str]:
    slots, num = config.max_hash_slot_num, config.max_index_num
    index_size = file_size_for(slots, num)
    cq = config.mapped_file_size_consume_queue
    log = config.mapped_file_size_commit_log
    return [
        f"commit log files    {log:>13,} bytes ({fmt_bytes(log)})",
        f"consume queue files {cq:>13,} bytes ({cq // CQ_STORE_UNIT_SIZE:,} entries of 20 bytes)",
        f"index files         {index_size:>13,} bytes (40 + {slots:,} slots x 4 + {num:,} entries x 20)",
    ]


def report(path: str, config: MessageStoreConfig, count: int, summary: Summary, replaced: bool) -> str:
    removed = " (the previous demo store was removed)" if replaced else ""
    lines = [f"pocketmq demo: {count} messages in {path}{removed}"]
    lines += ["", "File sizes (--small)" if config.mapped_file_size_commit_log == SMALL_COMMIT_LOG
              else "File sizes (RocketMQ's defaults)"]
    lines += ["  " + s for s in describe_sizes(config)]
    singles, batches = _count(summary.singles, "single message"), _count(summary.batches, "batch", "batches")
    lines += ["", f"Puts: {singles}, {batches} of 3 messages, {summary.delayed} delayed "
              f"(stored in {SCHEDULE_TOPIC})"]
    lines += ["", "Messages per queue (consume queue = consumequeue/<topic>/<queue id>/):"]
    for (topic, qid), n in sorted(summary.per_queue.items()):
        lines.append(f"  {topic + '/' + str(qid):<22} {n:>5}")
    lines += ["", "Files:"]
    files = _files(path)
    apparent = sum(f[1] for f in files)
    allocated = sum(f[2] for f in files)
    for kind in ("commitlog", "consumequeue", "index"):
        group = [f for f in files if f[0].startswith(kind + os.sep)]
        if group:
            size = fmt_bytes(sum(f[1] for f in group))
            lines.append(f"  {kind + '/':<14} {len(group):>3} file(s)  {size:>10} apparent")
    for name, nbytes, _ in files:
        if os.sep not in name:
            lines.append(f"  {name:<14} {nbytes:>9,} bytes")
    lines.append(f"  {fmt_bytes(apparent)} apparent, {fmt_bytes(allocated)} allocated on disk: "
                 "commit-log and index files reserve their disk space when created (a full disk then refuses puts "
                 "instead of faulting); consume-queue files reserve it in chunks, ahead of the dispatcher.")
    lines += ["", "Shut down cleanly: the abort file is gone and the checkpoint is flushed.",
              f"Next: python -m pocketmq.storage inspect {path} --limit 5"]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pocketmq.storage demo",
                                     description="Write sample messages into a store, for inspect.")
    parser.add_argument("store_dir", metavar="STORE_DIR",
                        help="directory for the store (a store an earlier demo run wrote there is replaced; any other "
                             "non-empty directory is refused)")
    parser.add_argument("--messages", type=int, default=1000, metavar="N",
                        help="how many messages (default 1000)")
    parser.add_argument("--flush", choices=("async", "sync"), default="async",
                        help="ASYNC_FLUSH (default) or SYNC_FLUSH: every put waits for its group commit")
    parser.add_argument("--small", action="store_true",
                        help="32 KiB commit-log files, 16-entry consume-queue files, 64-slot index files")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.messages < 1:
        print("demo: --messages must be at least 1", file=sys.stderr)
        return 2
    config = store_config(args.store_dir, args.small, args.flush)
    try:
        summary, replaced = run(config, args.messages)
    except (DemoError, StoreLockedError, OSError) as e:  # OSError: a directory it cannot create or write
        print(f"demo: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: run() has shut the store down cleanly already; no traceback
        return 130
    print(report(args.store_dir, config, args.messages, summary, replaced))
    return 0
