"""bench/storage.py's runs: the messages it puts, the bare struct + CRC + mmap baseline they are held against,
and the timed puts, gets and index queries on a store."""

from __future__ import annotations

import gc
import mmap
import os
import random
import resource
import statistics
import struct
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pocketmq.common import MessageExtBrokerInner, pack_host, properties_to_string
from pocketmq.common.message import MessageExtBatch
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig

TOPIC = "BenchTopic"
GROUP = "bench-group"
QUEUES = 4
BATCH = 32
MAGIC = 0xDAA320A7
HEADER = struct.Struct(">iIiiiqqiq8sq8siqi")  # the 88 fixed bytes, IPv4 hosts
SHORT = struct.Struct(">h")
BORN_HOST = pack_host("10.0.0.7", 53112)
STORE_HOST = pack_host(MessageStoreConfig.store_host, MessageStoreConfig.store_port)  # the defaults
MIN_FREE = 3 << 30
VARIANTS = ("tags", "tags+str", "keys")  # TAGS only; TAGS pre-encoded as properties_string; TAGS + unique KEYS
perf = time.perf_counter



# -- messages and the baseline ----------------------------------------------------------------------
def make_messages(n: int, body: bytes, variant: str, tag: str) -> list[MessageExtBrokerInner]:
    """n messages of one topic, 4 queues (a batch of 32 shares a queue), as a producer would send them.
    Without keys they may share one properties dict: the store only reads it."""
    now = time.time_ns() // 1_000_000
    tags = {"TAGS": "TagA"}
    tags_str = properties_to_string(tags) if variant == "tags+str" else None
    out = []
    for i in range(n):
        props = {"TAGS": "TagA", "KEYS": f"ORDER-{tag}-{i}"} if variant == "keys" else tags
        out.append(MessageExtBrokerInner(topic=TOPIC, body=body, properties=props, queue_id=(i // BATCH) % QUEUES,
                           born_timestamp=now, born_host=BORN_HOST, properties_string=tags_str))
    return out


def as_batch(msgs: list[MessageExtBrokerInner]) -> MessageExtBatch:
    """A batch of 32 as the broker hands it to the store: shared fields once, properties encoded by the
    producer (the broker's decoding of the request is not the store's work, so it is done before timing)."""
    first = msgs[0]
    return MessageExtBatch(
        first.topic, first.queue_id, [m.flag for m in msgs], [m.body for m in msgs],
        [(m.properties_string or properties_to_string(m.properties)).encode() for m in msgs],
        first.sys_flag, first.born_timestamp, first.born_host,
    )


def batches_of(msgs: list[MessageExtBrokerInner]) -> list[MessageExtBatch]:
    return [as_batch(msgs[i:i + BATCH]) for i in range(0, len(msgs), BATCH)]


def record_size(m: MessageExtBrokerInner) -> int:
    return 91 + len(m.body) + len(m.topic.encode()) + len(properties_to_string(m.properties).encode())


def baseline(msgs: Sequence[MessageExtBrokerInner], path: str) -> tuple[float, int]:
    """(seconds, bytes) of the bare loop: per record CRC, one pack_into of the header, then body, topic and
    properties by slice assignment, into the mmap of a fresh sparse file. Properties come pre-encoded.
    The file stays (the caller deletes it later), so that, like the store's, its pages are new ones and
    not those of a file just deleted, which are cheaper to fault in."""
    props = [properties_to_string(m.properties).encode() for m in msgs]
    topic_b = TOPIC.encode()
    tlen = len(topic_b)
    total = sum(91 + len(m.body) + tlen + len(p) for m, p in zip(msgs, props, strict=True))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, total)
    mm = mmap.mmap(fd, total)
    pack, pack_short, crc32 = HEADER.pack_into, SHORT.pack_into, zlib.crc32
    store_ts = time.time_ns() // 1_000_000
    gc.collect()
    t0 = perf()
    pos = 0
    for i, (m, pb) in enumerate(zip(msgs, props, strict=True)):
        body = m.body
        blen, plen = len(body), len(pb)
        size = 91 + blen + tlen + plen
        pack(mm, pos, size, MAGIC, crc32(body) & 0x7FFFFFFF, m.queue_id, m.flag, i, pos, m.sys_flag,
             m.born_timestamp, m.born_host, store_ts, STORE_HOST, m.reconsume_times,
             m.prepared_transaction_offset, blen)
        p = pos + 88
        mm[p:p + blen] = body
        p += blen
        mm[p] = tlen
        mm[p + 1:p + 1 + tlen] = topic_b
        p += 1 + tlen
        pack_short(mm, p, plen)
        mm[p + 2:p + 2 + plen] = pb
        pos = p + 2 + plen
    elapsed = perf() - t0
    mm.close()
    os.close(fd)
    return elapsed, total


# -- the store --------------------------------------------------------------------------------------
def open_store(root: str, **overrides) -> DefaultMessageStore:
    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=root, **overrides))
    store.load()
    store.start()
    return store


@dataclass
class PutRun:
    seconds: float
    nbytes: int
    lags: list[int]
    drain_s: float


def timed_puts(store: DefaultMessageStore, msgs: list[MessageExtBrokerInner], batch: bool, sample_every: int) -> PutRun:
    """Put all msgs (one by one or in batches of 32), sampling the dispatch lag every `sample_every`
    messages; then time how long the dispatcher takes to drain what is left."""
    units: list = batches_of(msgs) if batch else msgs
    per = max(1, sample_every // BATCH) if batch else sample_every
    chunks = [units[i:i + per] for i in range(0, len(units), per)]
    put: Callable = store.put_messages if batch else store.put_message
    behind = store.dispatch_behind_bytes
    lags = []
    start = store.get_max_phy_offset()
    gc.collect()
    t0 = perf()
    for chunk in chunks:
        for unit in chunk:
            put(unit)
        lags.append(behind())
    seconds = perf() - t0
    t0 = perf()
    store.wait_dispatched(120.0)
    return PutRun(seconds, store.get_max_phy_offset() - start, lags, perf() - t0)


def lag_growing(lags: list[int], floor: float) -> bool:
    """The lag grows when the median of the last third of the samples is over twice that of the first
    third and above `floor` bytes (below it, the lag is the GIL's time slicing: see add_row)."""
    k = max(1, len(lags) // 3)
    first, last = statistics.median(lags[:k]), statistics.median(lags[-k:])
    return last > floor and last > 2 * first


def queue_total(store: DefaultMessageStore) -> int:
    return sum(store.get_max_offset_in_queue(TOPIC, q) for q in range(QUEUES))


def major_faults() -> int:
    """Page faults of this process that had to read from disk (pages the kernel had evicted)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


def get_rate(store: DefaultMessageStore, limit: int) -> tuple[float, float, int]:
    """(msgs/s, bytes/s, major faults) pulling every queue from offset 0 with get_message(..., 32)."""
    count = nbytes = 0
    faults = major_faults()
    t0 = perf()
    for q in range(QUEUES):
        offset, end = 0, min(store.get_max_offset_in_queue(TOPIC, q), limit // QUEUES)
        while offset < end:
            r = store.get_message(GROUP, TOPIC, q, offset, 32)
            count += r.message_count
            nbytes += r.buffer_total_size
            offset = r.next_begin_offset
    s = perf() - t0
    return count / s, nbytes / s, major_faults() - faults


def query_latency(store: DefaultMessageStore, keys: list[str], samples: int) -> tuple[float, float, float, int]:
    """(p50 µs, p99 µs, hit fraction, major faults) of query_message for random existing keys."""
    end = time.time_ns() // 1_000_000 + 3_600_000
    rng = random.Random(7)
    times, hits = [], 0
    faults = major_faults()
    for key in rng.sample(keys, min(samples, len(keys))):
        t0 = time.perf_counter_ns()
        r = store.query_message(TOPIC, key, 32, 0, end)
        times.append((time.perf_counter_ns() - t0) / 1000)
        hits += len(r.buffers) > 0
    q = statistics.quantiles(times, n=100)
    return q[49], q[98], hits / len(times), major_faults() - faults

