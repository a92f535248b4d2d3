"""python -m pocketmq.storage inspect on unusual stores: a damaged record, properties that are not UTF-8, delayed
entries, an index of other geometry or with Apache RocketMQ 5's tag keys, index entries past the saved header, file
sizes that disagree with the files, a message version 2 record."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

from pocketmq.common.message import MessageExtBrokerInner, pack_host
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.config import MessageStoreConfig
from pocketmq.storage.demo import store_config
from pocketmq.storage.index_file import IndexFile
from pocketmq.storage.inspect import main as inspect_main

from .conftest import (
    DEMO_MESSAGES,
    all_records,
    demo,
    inspect_json,
    run_tool,
)

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
