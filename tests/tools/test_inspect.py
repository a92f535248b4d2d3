"""python -m pocketmq.storage inspect: the report agrees with what the demo wrote, and reading changes nothing."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import zlib
from collections import defaultdict
from pathlib import Path

from pocketmq.common.message import MessageExtBrokerInner, create_message_id, pack_host
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.config import MessageStoreConfig
from pocketmq.storage.demo import store_config
from pocketmq.storage.index_file import IndexFile
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


# -- damaged and unusual files --------------------------------------------------------------------

def test_a_damaged_record_is_reported_where_recovery_truncates(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    target = all_records(inspect_json(copy, "--commitlog"))[150]
    log = copy / "commitlog" / target["file"]
    with open(log, "r+b") as f:
        f.seek(target["position"] + 88 + 3)  # a body byte: only BODYCRC can tell
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    damaged = inspect_json(copy, "--commitlog")["commitlog"]
    end = next(f["end"] for f in damaged["files"] if f["name"] == target["file"])
    reason = f"body CRC mismatch at {target['position']}"
    assert end == {"kind": "invalid", "offset": target["offset"], "reason": reason}

    store_ = DefaultMessageStore(store_config(str(copy), small=True, flush="async"))
    store_.load()
    try:
        assert store_.get_max_phy_offset() == target["offset"]
    finally:
        store_.shutdown()


def test_a_record_whose_properties_are_not_utf8_is_listed_and_marked(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    target = all_records(inspect_json(copy, "--commitlog"))[7]
    with open(copy / "commitlog" / target["file"], "r+b") as f:
        f.seek(target["position"] + target["total_size"] - 3)  # in UNIQ_KEY's value; no CRC covers it
        f.write(b"\xff")
    report = inspect_json(copy, "--commitlog", "--consumequeue")
    records = all_records(report)
    assert len(records) == report["commitlog"]["records_total"] == DEMO_MESSAGES
    [bad] = [r for r in records if r["not_utf8"]]
    assert bad["offset"] == target["offset"]
    assert bad["uniq_key"] == target["uniq_key"][:-2] + "\ufffd" + target["uniq_key"][-1]
    assert (bad["topic"], bad["keys"], bad["tags"]) == (target["topic"], target["keys"], target["tags"])
    [entry] = [e for q in report["consumequeue"]["queues"] for e in q["entries"]
               if e["commitlog_offset"] == target["offset"]]
    assert entry["check"] == "topic/properties not UTF-8 (bad bytes shown as U+FFFD)"
    assert entry["tag"] == target["tags"]
    code, out = run_tool(inspect_main, [str(copy), "--commitlog", "--offset", str(target["offset"])])
    assert f"offset {target['offset']}  size {target['total_size']}" in out
    assert "! topic/properties not UTF-8" in out and "(--limit)" not in out


def test_delayed_entries_are_checked_against_the_stores_own_delay_levels(tmp_path: Path) -> None:
    path = tmp_path / "s"
    config = MessageStoreConfig(store_path_root_dir=str(path), timer_wheel_enable=False,
                                message_delay_level="1s 2s 25s", mapped_file_size_commit_log=32768,
                                mapped_file_size_consume_queue=320)
    store = DefaultMessageStore(config)
    store.load()
    store.start()
    try:
        store.put_message(MessageExtBrokerInner(
            topic="T", body=b"later", queue_id=0, properties={"TAGS": "a", "DELAY": "3"},
            born_timestamp=1_700_000_000_000, born_host=pack_host("127.0.0.1", 5555)))
        store.wait_dispatched(30.0)
    finally:
        store.shutdown()
    record = all_records(inspect_json(path, "--commitlog"))[0]

    def schedule_entry(*args: str) -> dict:
        queues = inspect_json(path, "--consumequeue", "--topic", "SCHEDULE_TOPIC_XXXX", *args)["consumequeue"]
        [queue] = queues["queues"]
        [entry] = queue["entries"]
        return entry

    own = schedule_entry("--delay-levels", "1s 2s 25s")
    assert own["tags_code"] == record["store_timestamp"] + 25_000
    assert own["check"] == "ok"
    # RocketMQ's default level 3 is 10s: the entry disagrees, and the message says which levels it assumed.
    default = schedule_entry()
    expect = record["store_timestamp"] + 10_000
    assert default["check"] == (f"tags code {own['tags_code']} is not STORETIMESTAMP + level 3's delay = {expect}, "
                                "assuming the delay levels '1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m "
                                "1h 2h' (--delay-levels)")
    assert run_tool(inspect_main, [str(path), "--delay-levels", "1s 2x"])[0] == 2


def test_index_geometry_is_inferred_when_the_options_do_not_fit(tmp_path: Path) -> None:
    path = tmp_path / "s"
    demo(path, "--small", "--messages", "10")
    odd = path / "index" / "20990101000000000"
    records = all_records(inspect_json(path, "--commitlog"))
    hash_slots = 100
    f = IndexFile(str(odd), hash_slots, 150)
    for r in records:
        f.put_key(f"{r['topic']}#{r['keys'][0]}", r["offset"], r["store_timestamp"])
    f.flush()
    f.close()
    files = {x["name"]: x for x in inspect_json(path, "--index")["index"]["files"]}
    assert files[odd.name]["geometry"] == {"hash_slots": hash_slots, "index_num": 150,
                                           "source": "search for the entry holding endPhyOffset"}
    assert {e["key"] for s in files[odd.name]["slots"] for e in s["chain"]} == {
        f"{r['topic']}#{r['keys'][0]}" for r in records}

    explicit = inspect_json(path, "--index", "--hash-slots", "100", "--index-num", "150")
    assert {x["name"]: x for x in explicit["index"]["files"]}[odd.name]["geometry"]["source"] == "options"

    empty = path / "index" / "20990101000000001"
    IndexFile(str(empty), 100, 150).close()
    files = {x["name"]: x for x in inspect_json(path, "--index")["index"]["files"]}
    assert "pass --hash-slots and --index-num" in files[empty.name]["error"]


def test_tag_keys_as_apache_rocketmq_5_indexes_them_are_named(tmp_path: Path) -> None:
    path = tmp_path / "s"
    demo(path, "--small", "--messages", "10")
    records = all_records(inspect_json(path, "--commitlog"))
    assert all(r["tags"] for r in records)
    # Apache 5's IndexService.buildKey(topic, tag, "T") for each tagged message, in a file of its own.
    tagged = path / "index" / "20990101000000000"
    f = IndexFile(str(tagged), 64, 256)
    for r in records:
        f.put_key(f"{r['topic']}#T#{r['tags']}", r["offset"], r["store_timestamp"])
    f.flush()
    f.close()
    files = {x["name"]: x for x in inspect_json(path, "--index")["index"]["files"]}
    keys = {(e["key"], e["phy_offset"]) for s in files[tagged.name]["slots"] for e in s["chain"]}
    assert keys == {(f"{r['topic']}#T#{r['tags']}", r["offset"]) for r in records}


def test_entries_past_the_saved_header_are_counted(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    first = inspect_json(copy, "--index")["index"]["files"][0]
    name, slots, count = first["name"], first["geometry"]["hash_slots"], first["header"]["index_count"]
    # A header saved two entries ago, as a crash between dispatch rounds leaves it.
    with open(copy / "index" / name, "r+b") as f:
        f.seek(40 + slots * 4 + (count - 3) * 20 + 4)
        end_phy = struct.unpack(">q", f.read(8))[0]
        f.seek(24)
        f.write(struct.pack(">q", end_phy))
        f.seek(36)
        f.write(struct.pack(">i", count - 2))
    again = {x["name"]: x for x in inspect_json(copy, "--index")["index"]["files"]}[name]
    assert again["entries_past_header"] == 2
    assert again["geometry"]["hash_slots"] == slots
    entries = {e["entry"] for s in again["slots"] for e in s["chain"]}
    assert entries == set(range(1, count)), "the two entries past the header are still shown"


def test_the_text_says_when_file_sizes_or_a_blank_record_disagree_with_the_files(store: Path, tmp_path: Path) -> None:
    """A first file cut short was listed as "2 file(s) of <its size>", and a blank record whose TOTALSIZE is not
    the bytes left as "(the rest of the file)": each now says what does not add up."""
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    names = sorted(os.listdir(copy / "commitlog"))
    size = os.path.getsize(copy / "commitlog" / names[0])
    with open(copy / "commitlog" / names[0], "r+b") as f:
        f.write(struct.pack(">iI", 50, 0xCBD43194))  # a blank record at 0 that says 50 bytes
    with open(copy / "commitlog" / names[1], "r+b") as f:
        f.truncate(1000)
    code, out = run_tool(inspect_main, [str(copy), "--commitlog", "--limit", "0"])
    assert code == 0
    assert f"! of different sizes: 1,000, {size:,} bytes" in out
    assert f"blank record: TOTALSIZE 50 (! the rest of the file is {size:,} bytes)" in out


def test_a_message_version_2_record_is_read_field_by_field_and_the_records_after_it(tmp_path: Path) -> None:
    """RocketMQ 5 writes a retry topic past 127 characters with MAGICCODE 0xDAA320AB and a 2-byte TOPICLENGTH:
    inspect lists it and every record after it, and its queue (4.9.x's layout would call it invalid there)."""
    path = tmp_path / "s"
    store = DefaultMessageStore(store_config(str(path), small=True, flush="async"))
    store.load()
    store.start()
    long_topic = "%RETRY%" + "G" * 60 + "_" + "T" * 100
    try:
        for topic in ("Before", long_topic, "After"):
            store.put_message(MessageExtBrokerInner(topic=topic, body=b"body", queue_id=0,
                                                    properties={"TAGS": "t"}, born_host=pack_host("127.0.0.1", 5)))
    finally:
        store.shutdown()
    report = inspect_json(path, "--commitlog", "--hex")
    records = all_records(report)
    assert [(r["topic"], r["magic"], r["message_version"]) for r in records] == [
        ("Before", "0xDAA320A7", 1), (long_topic, "0xDAA320AB", 2), ("After", "0xDAA320A7", 1)]
    v2 = records[1]
    fields = {f["field"]: f for f in v2["fields"]}
    assert (fields["TOPICLENGTH"]["pos"], fields["TOPICLENGTH"]["len"], fields["TOPICLENGTH"]["value"]) == (
        92, 2, len(long_topic))
    assert fields["MAGICCODE"]["text"].startswith("0xDAA320AB = MESSAGE_MAGIC_CODE_V2")
    assert fields["TOPIC"]["value"] == long_topic and fields["PROPERTIESLENGTH"]["pos"] == 94 + len(long_topic)
    assert sum(f["len"] for f in v2["fields"] if not f["field"].startswith("  ")) == v2["total_size"]
    assert v2["total_size"] == 92 + 4 + len(long_topic) + fields["PROPERTIESLENGTH"]["value"]
    assert [f["end"]["kind"] for f in report["commitlog"]["files"]] == ["unwritten"]
    code, out = run_tool(inspect_main, [str(path), "--consumequeue"])
    assert code == 0 and long_topic in out
