"""The write side against an independent encoder and decoder (hypothesis).

Random messages and batches (topics, queue ids, tags, keys, properties with non-ASCII text, empty and large bodies,
IPv4 and IPv6 born and store hosts, properties handed over as a dict or as an encoded string) go through a real
store on real files. Once dispatched:

- every commit-log record is byte for byte what this file's encoder makes of the message, and this file's decoder,
  walking the commit-log files from the first byte, reads back exactly the messages put, in order;
- every consume queue holds, at entry n, the offset, size and tags hash code of its n-th message;
- the index finds every message by each of its keys.

The encoder, the decoder and the Java string hash below are written from the byte layout in docs/storage.md
(RocketMQ's CommitLog record), and import nothing of pocketmq's record code: a mistake shared by the store and its
own codec cannot hide here.
"""

from __future__ import annotations

import os
import socket
import struct
import zlib
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common import MessageExtBrokerInner
from pocketmq.storage import DefaultMessageStore

from .conftest import small_config

MAGIC = 0xDAA320A7
BLANK = 0xCBD43194
BORN_V6, STORE_V6 = 0x10, 0x20


# -- the independent reference --------------------------------------------------------------------------

def host_bytes(ip: str, port: int) -> bytes:
    family = socket.AF_INET6 if ":" in ip else socket.AF_INET
    return socket.inet_pton(family, ip) + struct.pack(">i", port)


def java_hash(s: str) -> int:
    """String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def properties_text(props: dict[str, str]) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


def parse_properties(text: str) -> dict[str, str]:
    out = {}
    for pair in text.split("\x02"):
        name, sep, value = pair.partition("\x01")
        if sep:
            out[name] = value
    return out


@dataclass
class Rec:
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    store_timestamp: int
    store_host: bytes
    body: bytes
    topic: str
    properties: bytes


def encode(r: Rec) -> bytes:
    """One commit-log record, field after field (docs/storage.md section 2.1)."""
    topic = r.topic.encode()
    sys_flag = r.sys_flag | (BORN_V6 if len(r.born_host) == 20 else 0) | (STORE_V6 if len(r.store_host) == 20 else 0)
    fields = [
        struct.pack(">I", MAGIC),
        struct.pack(">i", zlib.crc32(r.body) & 0x7FFFFFFF),
        struct.pack(">i", r.queue_id),
        struct.pack(">i", r.flag),
        struct.pack(">q", r.queue_offset),
        struct.pack(">q", r.physical_offset),
        struct.pack(">i", sys_flag),
        struct.pack(">q", r.born_timestamp),
        r.born_host,
        struct.pack(">q", r.store_timestamp),
        r.store_host,
        struct.pack(">i", 0),  # RECONSUMETIMES
        struct.pack(">q", 0),  # PREPAREDTRANSACTIONOFFSET
        struct.pack(">i", len(r.body)), r.body,
        struct.pack(">B", len(topic)), topic,
        struct.pack(">h", len(r.properties)), r.properties,
    ]
    rest = b"".join(fields)
    return struct.pack(">i", 4 + len(rest)) + rest


def decode_log(root: str) -> list[Rec]:
    """Every record of the commit-log files, from the first byte, skipping the blank record at each file's end."""
    path = os.path.join(root, "commitlog")
    out = []
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            data = f.read()
        pos = 0
        while pos + 8 <= len(data):
            size, magic = struct.unpack_from(">iI", data, pos)
            if magic == BLANK or (size, magic) == (0, 0):
                break
            assert magic == MAGIC, f"bad magic at {int(name) + pos}"
            rec = data[pos:pos + size]
            at = 8
            crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts = struct.unpack_from(">iiiqqiq", rec, at)
            at += 40
            born_len = 20 if sys_flag & BORN_V6 else 8
            born = rec[at:at + born_len]
            at += born_len
            (store_ts,) = struct.unpack_from(">q", rec, at)
            at += 8
            store_len = 20 if sys_flag & STORE_V6 else 8
            store = rec[at:at + store_len]
            at += store_len
            reconsume, prepared, body_len = struct.unpack_from(">iqi", rec, at)
            at += 16
            body = rec[at:at + body_len]
            at += body_len
            topic_len = rec[at]
            topic = rec[at + 1:at + 1 + topic_len].decode()
            at += 1 + topic_len
            (props_len,) = struct.unpack_from(">h", rec, at)
            props = rec[at + 2:at + 2 + props_len]
            assert at + 2 + props_len == size
            assert (reconsume, prepared) == (0, 0)
            assert crc == zlib.crc32(body) & 0x7FFFFFFF
            assert phys == int(name) + pos
            out.append(Rec(queue_id, flag, queue_offset, phys, sys_flag & ~(BORN_V6 | STORE_V6), born_ts, born,
                           store_ts, store, body, topic, props))
            pos += size
    return out


# -- what hypothesis puts -----------------------------------------------------------------------------

TEXT = st.text(alphabet=st.sampled_from("abcXYZ019_-.:é漢ß€ \u00a0"), min_size=1, max_size=12).filter(str.strip)
KEY = st.text(alphabet=st.sampled_from("abcXYZ019_-é漢€"), min_size=1, max_size=10)
HOSTS = st.sampled_from([("10.0.0.7", 53112), ("127.0.0.1", 1), ("2001:db8::7", 53122), ("::1", 65535)])
BODY = st.one_of(st.binary(max_size=64), st.binary(min_size=1000, max_size=4000))


@st.composite
def messages(draw, topic: str, queue_id: int) -> MessageExtBrokerInner:
    props: dict[str, str] = {}
    if draw(st.booleans()):
        props["TAGS"] = draw(TEXT)
    keys = draw(st.lists(KEY, max_size=3, unique=True))
    if keys:
        props["KEYS"] = " ".join(keys)
    for name in draw(st.lists(st.sampled_from(["color", "n", "ünï", "x-y"]), max_size=3, unique=True)):
        props[name] = draw(TEXT)
    props = dict(draw(st.permutations(list(props.items()))))  # TAGS and KEYS anywhere, first or last
    as_string = None
    if props and draw(st.booleans()):  # a producer's encoded string, with or without the last separator
        as_string = properties_text(props)
        if draw(st.booleans()):
            as_string = as_string[:-1]
    born = host_bytes(*draw(HOSTS))
    return MessageExtBrokerInner(
        topic=topic, body=draw(BODY), queue_id=queue_id, properties=props, flag=draw(st.integers(0, 9)),
                   born_timestamp=draw(st.integers(0, 2**41)), born_host=born, properties_string=as_string)


@st.composite
def puts(draw) -> tuple[str, list[MessageExtBrokerInner]]:
    """("one", [message]) or ("batch", messages of one topic and queue)."""
    # (Few queues, so that most get several runs: a queue's first entry takes another path than the later ones.)
    topic = draw(st.sampled_from(["%RETRY%g|1", "T" * 100]))
    queue_id = draw(st.integers(0, 1))
    if draw(st.integers(0, 3)) == 0:
        return "batch", draw(st.lists(messages(topic, queue_id), min_size=1, max_size=5))
    return "one", [draw(messages(topic, queue_id))]


# -- the property ----------------------------------------------------------------------------------

# (data_too_large: a run whose draws mostly came out big failed the health check once under a full suite;
# an oversized plan is only discarded, the rest still run.)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.data_too_large])
@given(st.lists(puts(), min_size=1, max_size=14), st.sampled_from([None, ("10.9.8.7", 10911), ("fe80::1", 10911)]))
def test_what_the_store_writes_agrees_with_an_independent_codec(tmp_path_factory, plan, store_addr):
    root = str(tmp_path_factory.mktemp("diff"))
    overrides = {"store_host": store_addr[0], "store_port": store_addr[1]} if store_addr else {}
    store = DefaultMessageStore(small_config(root, **overrides))
    store.load()
    store.start()
    try:
        store_host = host_bytes(store.config.store_host, store.config.store_port)
        expected: list[Rec] = []
        next_offset: dict[tuple[str, int], int] = {}
        for kind, msgs in plan:
            r = store.put_message(msgs[0]) if kind == "one" else store.put_messages(msgs)
            assert r.status.name == "PUT_OK", (r.status, r.remark)
            a = r.append_result
            offsets = [a.wrote_offset] if kind == "one" else a.record_offsets
            for m, phys in zip(msgs, offsets, strict=True):
                key = (m.topic, m.queue_id)
                text = m.properties_string if m.properties_string is not None else properties_text(m.properties)
                expected.append(Rec(m.queue_id, m.flag, next_offset.get(key, 0), phys, 0, m.born_timestamp,
                                    m.born_host, a.store_timestamp, store_host, m.body, m.topic, text.encode()))
                next_offset[key] = next_offset.get(key, 0) + 1
        assert store.wait_dispatched()

        # The commit log: each record is the reference encoding, and the reference decoder reads back the puts.
        for rec in expected:
            raw = store.select_one_message_by_offset(rec.physical_offset)
            assert raw == encode(rec)
        assert decode_log(root) == expected

        # The consume queues: entry n of a queue is its n-th message.
        for (topic, queue_id), count in next_offset.items():
            mine = [r for r in expected if (r.topic, r.queue_id) == (topic, queue_id)]
            assert store.get_max_offset_in_queue(topic, queue_id) == count
            for n, rec in enumerate(mine):
                tags = parse_properties(rec.properties.decode()).get("TAGS")
                entry = store.get_consume_queue(topic, queue_id).get_entry(n)
                assert entry == (rec.physical_offset, len(encode(rec)), java_hash(tags) if tags else 0)

        # The index: every key finds its message.
        for rec in expected:
            for key in parse_properties(rec.properties.decode()).get("KEYS", "").split(" "):
                if key:
                    found = store.query_message(rec.topic, key, 64, 0, 2**62).buffers
                    assert encode(rec) in [bytes(b) for b in found], (rec.topic, key)
    finally:
        store.shutdown()
