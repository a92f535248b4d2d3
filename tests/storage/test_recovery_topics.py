"""A record whose topic pocketmq cannot use, on real files: recovery keeps it unless its TOPICLENGTH reads as
negative in Java (as Apache RocketMQ's checkMessageAndReturnSize), dispatch goes past it, inspect notes it, and no
path is ever made of such a topic.

Each crafted record is structurally valid (TOTALSIZE, PHYSICALOFFSET, the lengths, BODYCRC): only its topic is
odd, one a put would refuse (validators.store_topic_error) or bytes that are not UTF-8. A store handed over from
Apache RocketMQ can hold such names (its topic rule is not pocketmq's in every corner), so recovery must not cut the
log there: every later message of every topic would be lost. Before this, dispatch failed on such a record every
round ("dispatch failed at offset ...; retrying"): puts were refused, start() never returned, nothing after it was
dispatched, and a ``../`` topic made a consume-queue directory outside the store.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import struct
import threading
import zlib

import pytest

from pocketmq.common import MessageExtBrokerInner, decode_all
from pocketmq.common.constants import MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.inspect import main as inspect_main

from .conftest import commit_log_files, msg, put_ok, read_cq_entries, small_config

LONG_RETRY = "%RETRY%" + "G" * 60 + "_" + "T" * 100  # (168 characters: a version 2 record)
V1, V2 = MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2
# Kept by recovery, skipped by dispatch. name -> (MAGICCODE, TOPIC bytes, what inspect's note says)
SKIPPED = {
    "v2_topic_300": (V2, b"%RETRY%" + b"q" * 293, "longer than 255"),
    "v2_not_utf8": (V2, b"%RETRY%\xff\xfe" + b"q" * 150, "not UTF-8"),
    "v1_not_utf8": (V1, b"Plain\xff", "not UTF-8"),
    # (consumequeue/../../ is tmp_path: see outside)
    "v1_dotdot": (V1, b"../../ESCAPED", "characters outside ^[%|a-zA-Z0-9_.-]+$"),
    "v2_dotdot": (V2, b"../../ESCAPED_" + b"q" * 120, "longer than 127"),
    "v1_slash": (V1, b"Plain/0", "characters outside"),
    "v1_two_plus": (V1, b"%RETRY%group+Topic+A", "characters outside"),  # (one "+": enableRetryTopicV2's, kept)
}
# Cut by recovery, as by Apache RocketMQ: TOPICLENGTH read as a negative signed short or byte.
TRUNCATED = {
    "v2_topic_40000": (V2, b"%RETRY%" + b"q" * 40_000, "TOPICLENGTH 40007 of a version 2 record reads as -25529"),
    "v1_topic_168": (V1, LONG_RETRY.encode(), "TOPICLENGTH 168 of a version 1 record reads as -88"),
}


def craft_record(magic: int, topic_b: bytes, phys: int, body: bytes = b"crafted", queue_offset: int = 0,
                 uniq_key: str = "CRAFTED") -> bytes:
    """A record of queue 0 laid out as record_layout describes it (IPv4 hosts), written here byte by byte so that
    the test does not lean on the code it tests; every length and the BODYCRC are right."""
    tlen = struct.pack(">H", len(topic_b)) if magic == V2 else struct.pack(">B", len(topic_b))
    props = f"UNIQ_KEY\x01{uniq_key}\x02TAGS\x01T".encode()
    host = b"\x7f\x00\x00\x01" + struct.pack(">i", 10911)
    rest = struct.pack(">Iiiiqqiq8sq8siqi", magic, zlib.crc32(body) & 0x7FFFFFFF, 0, 0, queue_offset, phys, 0,
                       1_700_000_000_000, host, 1_700_000_000_001, host, 0, 0, len(body))
    rest += body + tlen + topic_b + struct.pack(">h", len(props)) + props
    return struct.pack(">i", 4 + len(rest)) + rest


def append_crafted(root, magic: int, topic_b: bytes, queue_offset: int) -> tuple[int, int]:
    """Write the crafted record right after the last record of the log, and after it a good one of TopicA queue 0
    at ``queue_offset``: the offsets of the two."""
    path = commit_log_files(root)[-1]
    base = int(os.path.basename(path))
    with open(path, "r+b") as f:
        data = f.read()
        pos = 0
        while struct.unpack_from(">I", data, pos + 4)[0] in (V1, V2):
            pos += struct.unpack_from(">i", data, pos)[0]
        rec = craft_record(magic, topic_b, base + pos)
        good = craft_record(V1, b"TopicA", base + pos + len(rec), b"good-after", queue_offset, "GOODAFTER")
        assert pos + len(rec) + len(good) <= len(data)
        f.seek(pos)
        f.write(rec + good)
    return base + pos, base + pos + len(rec)


def open_in_time(stores, timeout: float = 30.0, **overrides) -> DefaultMessageStore:
    """stores.open(), which returns once dispatch has caught up: it never did while dispatch failed on a
    record in a loop, so it is awaited here with a bound."""
    opened: list[DefaultMessageStore] = []
    thread = threading.Thread(target=lambda: opened.append(stores.open(**overrides)), daemon=True)
    thread.start()
    thread.join(timeout)
    assert opened, f"the store did not start within {timeout} s (dispatch stuck on the crafted record?)"
    return opened[0]


def inspect_last(root) -> dict:
    """What `python -m pocketmq.storage inspect --commitlog` says of the last commit-log file."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert inspect_main([str(root), "--json", "--commitlog"]) == 0
    return json.loads(out.getvalue())["commitlog"]["files"][-1]


def good_traffic(store) -> list[int]:
    """A few messages, one of them in a version 2 record; their commit-log offsets."""
    return [put_ok(store, msg(topic, body=f"good-{i}".encode(), TAGS="T")).wrote_offset
            for i, topic in enumerate(("TopicA", LONG_RETRY, "TopicA"))]


def outside(tmp_path, store_root) -> list[str]:
    """What lies next to the store (a crafted ../ topic once made a consume-queue directory there)."""
    return sorted(name for name in os.listdir(tmp_path) if name != os.path.basename(store_root))


def crafted_store(stores, store_root, magic: int, topic_b: bytes, exit_kind: str) -> tuple[int, int]:
    """A store with good traffic, then the crafted record and a good one of TopicA after it, left by a normal or
    an abnormal exit: where the crafted record starts, and where the good one does."""
    store = stores.open()
    good_traffic(store)
    end = store.get_max_phy_offset()
    store.shutdown()
    crafted_at, good_at = append_crafted(store_root, magic, topic_b, queue_offset=2)
    assert crafted_at == end
    if exit_kind == "abnormal":
        open(os.path.join(str(store_root), "abort"), "w").close()
    return crafted_at, good_at


@pytest.mark.parametrize("exit_kind", ["normal", "abnormal"])
@pytest.mark.parametrize("case", sorted(SKIPPED))
def test_dispatch_goes_past_a_record_whose_topic_no_put_takes(stores, store_root, tmp_path, caplog, case,
                                                               exit_kind) -> None:
    """Recovery keeps the record and the good one after it; dispatch logs and skips the first, dispatches the
    second; inspect notes the first; puts work; nothing is made outside the store."""
    magic, topic_b, says = SKIPPED[case]
    crafted_at, good_at = crafted_store(stores, store_root, magic, topic_b, exit_kind)
    before = inspect_last(store_root)  # (its verdict is checked last: the fix is asserted first)

    with caplog.at_level(logging.ERROR, logger="pocketmq.storage.dispatch_request"):
        store = open_in_time(stores)
    assert store.last_exit_ok is (exit_kind == "normal")
    kept = store.select_one_message_by_offset(crafted_at)
    assert kept is not None and topic_b in kept  # (in the commit log still)
    good = store.look_message_by_offset(good_at)
    assert good is not None and good.body == b"good-after"
    end = good_at + good.store_size
    assert store.get_max_phy_offset() == end  # (nothing truncated)
    assert store.running_flags.is_writeable()
    assert put_ok(store, msg("TopicA", body=b"after")).wrote_offset == end
    assert store.wait_dispatched(10)
    got = store.get_message("g", "TopicA", 0, 0, 32)
    assert [m.body for m in decode_all(got.body)] == [b"good-0", b"good-2", b"good-after", b"after"]
    assert store.get_max_offset_in_queue(LONG_RETRY, 0) == 1
    assert outside(tmp_path, store_root) == []
    assert sorted(os.listdir(os.path.join(str(store_root), "consumequeue"))) == sorted(["TopicA", LONG_RETRY])
    for topic in ("TopicA", LONG_RETRY):
        assert crafted_at not in [phys for phys, _, _ in read_cq_entries(store_root, topic, 0)]
    [skipped] = [r.getMessage() for r in caplog.records if "dispatch skips a record" in r.getMessage()]
    assert f"the record at {crafted_at} " in skipped
    assert before["end"] == {"kind": "unwritten", "offset": end}  # (inspect: the log goes on past the record...)
    [note] = before.get("notes", [{}])  # (...which it notes)
    assert note.get("offset") == crafted_at and note["note"].startswith("dispatch skips it: ") and says in note["note"]
    assert [n["offset"] for n in inspect_last(store_root)["notes"]] == [crafted_at]  # (still in the log)


@pytest.mark.parametrize("exit_kind", ["normal", "abnormal"])
@pytest.mark.parametrize("case", sorted(TRUNCATED))
def test_recovery_ends_the_log_at_a_topic_length_java_reads_as_negative(stores, store_root, tmp_path, case,
                                                                          exit_kind) -> None:
    """RocketMQ reads a version 1 TOPICLENGTH as a signed byte and a version 2 one as a signed short, and finds a
    record whose length is negative corrupt: recovery ends the log there, the good record after it with it."""
    magic, topic_b, says = TRUNCATED[case]
    crafted_at, _good_at = crafted_store(stores, store_root, magic, topic_b, exit_kind)
    before = inspect_last(store_root)["end"]  # (checked last: the fix is asserted first)
    store = open_in_time(stores)
    assert store.get_max_phy_offset() == crafted_at  # truncated before the crafted record
    assert store.running_flags.is_writeable()
    assert put_ok(store, msg("TopicA", body=b"after")).wrote_offset == crafted_at
    assert store.wait_dispatched(10)
    assert store.get_max_offset_in_queue("TopicA", 0) == 3 and store.get_max_offset_in_queue(LONG_RETRY, 0) == 1
    assert sorted(os.listdir(os.path.join(str(store_root), "consumequeue"))) == sorted(["TopicA", LONG_RETRY])
    assert outside(tmp_path, store_root) == []
    assert before["kind"] == "invalid" and before["offset"] == crafted_at and before["reason"].startswith(says)
    assert inspect_last(store_root)["end"]["kind"] == "unwritten"


@pytest.mark.parametrize("per_record", [False, True], ids=["fast_twin", "reference"])
def test_dispatch_skips_a_record_whose_topic_a_put_refuses_in_a_file_recovery_did_not_read(
        stores, store_root, tmp_path, caplog, per_record) -> None:
    """After a clean exit recovery reads the last three commit-log files only; with the consume queues gone,
    dispatch goes over the whole log from its start. A record of the first file whose topic was made ``../..``
    (same length, in place) is logged and skipped: no path is made of it, and the rest is dispatched."""
    store = stores.open()
    body = b"b" * 2000
    first = put_ok(store, msg("Ab123", body=body, queue_id=1))
    count_a = 0
    while len(commit_log_files(store_root)) < 5:
        put_ok(store, msg("TopicA", body=body))
        count_a += 1
    put_ok(store, msg("Ab123", body=body, queue_id=1))
    store.shutdown()
    shutil.rmtree(os.path.join(str(store_root), "consumequeue"))
    path = commit_log_files(store_root)[0]
    with open(path, "r+b") as f:
        data = f.read(first.wrote_bytes)
        at = data.index(b"Ab123", 88 + len(body))
        f.seek(at)
        f.write(b"../..")

    config = small_config(store_root)
    store = DefaultMessageStore(config)
    stores.opened.append(store)
    store.reput_service.per_record = per_record
    with caplog.at_level(logging.ERROR, logger="pocketmq.storage.dispatch_request"):
        store.load()
        started = threading.Thread(target=store.start, daemon=True)
        started.start()
        started.join(30)
        assert not started.is_alive(), "start() did not return: dispatch stuck on the record"
    assert store.get_max_phy_offset() > first.wrote_offset + first.wrote_bytes  # (recovery kept the record)
    [skipped] = [r.getMessage() for r in caplog.records if "dispatch skips a record" in r.getMessage()]
    assert f"the record at {first.wrote_offset} " in skipped
    assert store.running_flags.is_writeable()
    assert store.get_max_offset_in_queue("TopicA", 0) == count_a
    # (queue offset 0 was the skipped record's: a pre-blank, as RocketMQ fills the slots before a queue's first)
    last_ab = store.get_max_phy_offset() - first.wrote_bytes
    assert read_cq_entries(store_root, "Ab123", 1) == [(0, 2**31 - 1, 0), (last_ab, first.wrote_bytes, 0)]
    assert outside(tmp_path, store_root) == []
    assert sorted(os.listdir(os.path.join(str(store_root), "consumequeue"))) == ["Ab123", "TopicA"]
    put_ok(store, MessageExtBrokerInner("TopicA", b"after"))
    assert store.wait_dispatched(10)


def test_files_in_the_consume_queue_folder_are_not_taken_for_topics(stores, store_root, caplog) -> None:
    # A topic may hold a "." now (a cluster named prod.eu): a file such as the Finder's .DS_Store passed the name
    # rule and the load listed it as a folder (NotADirectoryError: the store did not start). Apache skips files.
    store = stores.open()
    put_ok(store, msg("prod.eu", b"kept"))
    assert store.wait_dispatched(5.0)
    store.shutdown()
    for name in (".DS_Store", "notes.txt"):
        (store_root / "consumequeue" / name).write_bytes(b"\x00Bud1")
    with caplog.at_level(logging.WARNING, logger="pocketmq.storage"):
        again = stores.open()
    assert [m.body for m in decode_all(again.get_message("G", "prod.eu", 0, 0, 32).body)] == [b"kept"]
    assert sum("not a topic's folder" in r.getMessage() for r in caplog.records) == 2
