"""python -m pocketmq.storage inspect: the report agrees with what the demo wrote, and reading changes nothing
(unusual and damaged files: test_inspect_unusual.py, test_inspect_damaged.py)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import subprocess
import sys
import zlib
from collections import defaultdict
from pathlib import Path

from pocketmq.common.message import MessageExtBrokerInner, create_message_id, pack_host
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.demo import store_config
from pocketmq.storage.inspect import main as inspect_main

from .conftest import (
    DEMO_MESSAGES,
    all_records,
    demo,
    expected_messages,
    inspect_json,
    per_queue,
    run_tool,
)

ROOT = Path(__file__).resolve().parents[2]


# -- the report agrees with what was written ------------------------------------------------------

def test_records_match_what_was_written(report: dict) -> None:
    records = all_records(report)
    written = expected_messages(DEMO_MESSAGES)
    assert report["commitlog"]["records_total"] == len(records) == DEMO_MESSAGES
    assert [(r["topic"], r["queue_id"]) for r in records] == [(m.topic, m.queue_id) for m in written]
    assert [tuple(r["keys"]) for r in records] == [m.keys for m in written]
    assert [r["uniq_key"] for r in records] == [m.uniq_key for m in written]
    assert [r["tags"] for r in records] == [m.tags for m in written]
    assert [r["body_length"] for r in records] == [len(m.body) for m in written]


def test_records_are_contiguous_and_carry_their_own_offset(report: dict) -> None:
    store_host = pack_host("127.0.0.1", 10911)
    for f in report["commitlog"]["files"]:
        expect = f["from_offset"]
        for r in f["records"]:
            assert r["offset"] == r["physical_offset"] == expect
            assert r["msg_id"] == create_message_id(store_host, expect)
            expect += r["total_size"]
        assert f["end"]["offset"] == expect


def test_queue_offsets_count_up_per_queue(report: dict) -> None:
    seen: dict[tuple[str, int], list[int]] = defaultdict(list)
    for r in all_records(report):
        seen[(r["topic"], r["queue_id"])].append(r["queue_offset"])
    for key, offsets in seen.items():
        assert offsets == list(range(len(offsets))), key


def test_full_files_end_with_a_blank_record(report: dict) -> None:
    files = report["commitlog"]["files"]
    assert len(files) >= 2, "200 messages roll a 32 KiB commit log"
    for f in files[:-1]:
        end = f["end"]
        assert end["kind"] == "blank"
        assert end["magic"] == "0xCBD43194"
        assert end["offset"] + end["size"] == f["from_offset"] + f["size"]
        assert f["wrote"] == f["size"]
    assert files[-1]["end"]["kind"] == "unwritten"
    assert report["commitlog"]["max_offset"] == files[-1]["end"]["offset"]


def test_consume_queue_entries_point_at_their_records(report: dict) -> None:
    by_queue: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in all_records(report):
        by_queue[(r["topic"], r["queue_id"])].append(r)
    queues = {(q["topic"], q["queue_id"]): q for q in report["consumequeue"]["queues"]}
    written = per_queue(expected_messages(DEMO_MESSAGES))
    assert {k: q["entries_total"] for k, q in queues.items()} == dict(written)
    for key, q in queues.items():
        assert (q["min_offset"], q["max_offset"]) == (0, len(by_queue[key]))
        for entry, record in zip(q["entries"], by_queue[key], strict=True):
            assert entry["commitlog_offset"] == record["offset"]
            assert entry["size"] == record["total_size"]
            assert entry["check"] == "ok"
            assert entry["position"] == entry["index"] * 20 - int(entry["file"])
            if key[0] != "SCHEDULE_TOPIC_XXXX":
                assert entry["tag"] == record["tags"]
            else:
                assert entry["tags_code"] > record["store_timestamp"], "a delivery time, in the future"


def test_every_key_is_found_in_an_index_chain(report: dict) -> None:
    indexed = set()
    for f in report["index"]["files"]:
        for slot in f["slots"]:
            for e in slot["chain"]:
                assert e["key_hash"] % f["geometry"]["hash_slots"] == slot["slot"]
                indexed.add((e["key"], e["phy_offset"]))
    expected = set()
    for r in all_records(report):
        for key in [r["uniq_key"], *r["keys"]]:
            expected.add((f"{r['topic']}#{key}", r["offset"]))
    assert expected == indexed
    files = report["index"]["files"]
    assert len(files) >= 2, "about 500 keys roll 256-entry index files"
    assert sum(f["header"]["index_count"] - 1 for f in files) == len(expected)


def test_checkpoint_covers_every_record(report: dict) -> None:
    cp = report["checkpoint"]
    newest = max(r["store_timestamp"] for r in all_records(report))
    assert cp["physic_msg_timestamp"] >= newest
    assert cp["logics_msg_timestamp"] >= newest
    assert cp["min_timestamp"] == min(cp["physic_msg_timestamp"], cp["logics_msg_timestamp"]) - 3000
    assert cp["size"] == 4096 and cp["rest_zero"]
    lock = {"present": True, "held": False, "held_by_pid": None, "kind": None}
    assert report["state"] == {"abort": False, "lock": lock, "other_entries": []}


def test_hex_fields_cover_each_record_exactly(report: dict) -> None:
    for r in all_records(report):
        fields = [f for f in r["fields"] if not f["field"].startswith("  ")]
        pos = 0
        for f in fields:
            assert f["pos"] == pos, (r["offset"], f["field"])
            assert len(bytes.fromhex(f["hex"])) == f["len"]
            pos += f["len"]
        assert pos == r["total_size"]
        props = next(f for f in fields if f["field"] == "PROPERTIES")
        pairs = [f for f in r["fields"] if f["field"].startswith("  ")]
        assert "".join(p["hex"] for p in pairs) == props["hex"]
        assert {p["field"].strip(): p["value"] for p in pairs} == r["properties"]


def test_ipv6_and_compressed_records(report: dict) -> None:
    records = all_records(report)
    v6 = [r for r in records if "BORNHOST_V6_FLAG" in r["sys_flag_names"]]
    assert [r["born_host"] for r in v6] == ["[2001:db8::7]:53122"]
    fields = {f["field"]: f for f in v6[0]["fields"]}
    assert (fields["BORNHOST"]["pos"], fields["BORNHOST"]["len"]) == (48, 20)
    assert fields["STORETIMESTAMP"]["pos"] == 68
    props_len = fields["PROPERTIESLENGTH"]["value"]
    assert v6[0]["total_size"] == 103 + v6[0]["body_length"] + len("Payments") + props_len  # 91 + 12
    compressed = [r for r in records if "COMPRESSED_FLAG" in r["sys_flag_names"]]
    assert len(compressed) == 1
    body = bytes.fromhex({f["field"]: f for f in compressed[0]["fields"]}["BODY"]["hex"])
    assert len(zlib.decompress(body)) > 4096
    assert compressed[0]["body_preview"].startswith("<zlib, ")


def test_compression_types_are_named_and_only_zlib_is_inflated(tmp_path: Path) -> None:
    path = tmp_path / "s"
    store = DefaultMessageStore(store_config(str(path), small=True, flush="async"))
    store.load()
    store.start()
    text = b"compressed " * 40
    # RocketMQ 5's MessageSysFlag: COMPRESSED_FLAG with the codec in bits 8-10 (pocketmq's client sends 0x301).
    bodies = {0x101: b"\x04\x22\x4d\x18 an LZ4 frame", 0x201: b"\x28\xb5\x2f\xfd a ZSTD frame",
              0x301: zlib.compress(text), 0x1: zlib.compress(text), 0x501: b"?"}
    try:
        for sys_flag, body in bodies.items():
            store.put_message(MessageExtBrokerInner(topic="Z", body=body, queue_id=0, sys_flag=sys_flag,
                                                    born_timestamp=1_700_000_000_000,
                                                    born_host=pack_host("127.0.0.1", 5555)))
    finally:
        store.shutdown()
    records = {r["sys_flag"]: r for r in all_records(inspect_json(path, "--commitlog", "--hex"))}
    assert {f: r["sys_flag_names"] for f, r in records.items()} == {
        0x101: ["COMPRESSED_FLAG", "COMPRESSION_LZ4_TYPE"], 0x201: ["COMPRESSED_FLAG", "COMPRESSION_ZSTD_TYPE"],
        0x301: ["COMPRESSED_FLAG", "COMPRESSION_ZLIB_TYPE"], 0x1: ["COMPRESSED_FLAG"],
        0x501: ["COMPRESSED_FLAG", "compression type 0x500 (unknown)"]}
    assert records[0x101]["body_preview"] == f"<LZ4, {len(bodies[0x101])} bytes: not shown>"
    assert records[0x201]["body_preview"] == f"<ZSTD, {len(bodies[0x201])} bytes: not shown>"
    assert records[0x501]["body_preview"] == "<compression type 0x500, 1 bytes: not shown>"
    for zlib_flag in (0x301, 0x1):
        assert records[zlib_flag]["body_preview"].startswith(f"<zlib, {len(bodies[zlib_flag])} -> {len(text)} bytes> "
                                                             "compressed compressed")
    sysflag = next(f for f in records[0x301]["fields"] if f["field"] == "SYSFLAG")
    assert sysflag["text"] == "0x301 = COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE"


# -- text, filters, offsets -----------------------------------------------------------------------

def test_text_output(store: Path) -> None:
    code, out = run_tool(inspect_main, [str(store), "--limit", "2"])
    assert code == 0
    for heading in ("Store ", "Commit log (commitlog/)", "Consume queues (", "Index files (index/)",
                    "Checkpoint ("):
        assert heading in out
    assert "blank record: TOTALSIZE" in out and "MAGICCODE 0xCBD43194" in out
    assert "more records (--limit)" in out
    assert "lock        present, not held" in out


def test_topic_queue_and_offset_filters(store: Path, report: dict) -> None:
    only = inspect_json(store, "--topic", "Payments", "--queue", "1")
    records = all_records(only)
    assert records and {(r["topic"], r["queue_id"]) for r in records} == {("Payments", 1)}
    assert [(q["topic"], q["queue_id"]) for q in only["consumequeue"]["queues"]] == [("Payments", 1)]
    assert all(any((e["key"] or "").startswith("Payments#") for e in s["chain"])
               for f in only["index"]["files"] for s in f["slots"])

    target = all_records(report)[5]
    one = inspect_json(store, "--offset", str(target["offset"]), "--hex")
    assert [r["offset"] for r in all_records(one)] == [target["offset"]]
    entries = [e for q in one["consumequeue"]["queues"] for e in q["entries"]]
    assert [e["commitlog_offset"] for e in entries] == [target["offset"]]
    keys = {e["key"] for f in one["index"]["files"] for s in f["slots"] for e in s["chain"]
            if e["phy_offset"] == target["offset"]}
    assert keys == {f"{target['topic']}#{k}" for k in [target["uniq_key"], *target["keys"]]}

    inside = target["offset"] + 1
    missing = inspect_json(store, "--commitlog", "--offset", str(inside))
    assert missing["commitlog"]["offset_error"].startswith(f"no record starts at offset {inside}")


def test_limit_keeps_the_totals(store: Path) -> None:
    limited = inspect_json(store, "--limit", "3")
    assert limited["commitlog"]["records_shown"] == 3
    assert limited["commitlog"]["records_total"] == DEMO_MESSAGES
    assert all(len(q["entries"]) <= 3 for q in limited["consumequeue"]["queues"])
    assert all(len(f["slots"]) <= 3 for f in limited["index"]["files"])


# -- read-only ------------------------------------------------------------------------------------

def _snapshot(path: Path) -> dict[str, tuple[int, str]]:
    out = {}
    for root, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                out[full] = (os.stat(full).st_mtime_ns, hashlib.sha256(f.read()).hexdigest())
    return out


def test_inspect_changes_nothing(store: Path) -> None:
    before = _snapshot(store)
    runs = (["--hex"], ["--json", "--hex"], ["--offset", "0", "--hex"], ["--index", "--hash-slots", "7"])
    for argv in runs:
        assert run_tool(inspect_main, [str(store), *argv])[0] == 0
    assert _snapshot(store) == before


_HOLD_STORE = """
import sys
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.demo import store_config
store = DefaultMessageStore(store_config(sys.argv[1], small=True, flush="async"))
store.load()
store.start()
print("started", flush=True)
sys.stdin.read()
"""


def test_inspect_a_store_another_process_is_running(tmp_path: Path) -> None:
    path = tmp_path / "s"
    demo(path, "--small", "--messages", "50")
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_STORE, str(path)], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        running = inspect_json(path)
        assert running["state"]["lock"] == {"present": True, "held": True, "held_by_pid": proc.pid, "kind": "FLOCK"}
        assert running["state"]["abort"] is True
        assert running["commitlog"]["records_total"] == 50
        code, out = run_tool(inspect_main, [str(path), "--checkpoint"])
        assert f"held by pid {proc.pid}" in out
    finally:
        proc.kill()  # a crash: the abort file stays behind
        proc.wait()
    crashed = inspect_json(path, "--checkpoint")
    assert crashed["state"]["abort"] is True
    assert crashed["state"]["lock"]["held_by_pid"] is None


def test_a_store_locked_as_apache_rocketmq_locks_it_is_running(tmp_path: Path) -> None:
    path = tmp_path / "s"
    demo(path, "--small", "--messages", "3")
    fd = os.open(path / "lock", os.O_RDWR)
    try:
        # Apache's DefaultMessageStore: lockFile.getChannel().tryLock(0, 1, false), an fcntl record lock.
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        lock = inspect_json(path, "--checkpoint")["state"]["lock"]
        assert lock == {"present": True, "held": True, "held_by_pid": os.getpid(), "kind": "POSIX"}
        code, out = run_tool(inspect_main, [str(path), "--checkpoint"])
        assert f"held by pid {os.getpid()} (fcntl, as Apache RocketMQ takes it)" in out
    finally:
        os.close(fd)
    fd = os.open(path / "lock", os.O_RDWR)
    try:
        # An open-file-description lock (F_OFD_SETLK) belongs to no process: /proc/locks shows pid -1.
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0))
        lock = inspect_json(path, "--checkpoint")["state"]["lock"]
        assert lock == {"present": True, "held": True, "held_by_pid": None, "kind": "OFDLCK"}
    finally:
        os.close(fd)
    assert inspect_json(path, "--checkpoint")["state"]["lock"]["held"] is False
