"""python -m pocketmq.storage demo: what it writes, and how it treats the directory it is given."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from pocketmq.client import Producer
from pocketmq.client.message import Message
from pocketmq.common import MessageExtBrokerInner
from pocketmq.common.codec import decode
from pocketmq.embedded import EmbeddedCluster
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.demo import MARKER, run, store_config
from pocketmq.storage.demo import main as demo_main
from pocketmq.storage.inspect.files import ReadOnlyFiles

from .conftest import demo, expected_messages, inspect_json, per_queue, run_tool


def test_summary_counts_every_queue(tmp_path: Path) -> None:
    out = demo(tmp_path / "s", "--small", "--messages", "200")
    for (topic, queue_id), n in per_queue(expected_messages(200)).items():
        assert f"  {topic + '/' + str(queue_id):<22} {n:>5}" in out
    assert "2 delayed (stored in SCHEDULE_TOPIC_XXXX)" in out
    assert f"Next: python -m pocketmq.storage inspect {tmp_path / 's'} --limit 5" in out
    assert not (tmp_path / "s" / "abort").exists(), "a clean shutdown removes the abort file"


def test_running_twice_replaces_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s"
    demo(path, "--small", "--messages", "30")
    out = demo(path, "--small", "--messages", "30")
    assert "(the previous demo store was removed)" in out and (path / MARKER).is_file()
    assert inspect_json(path, "--commitlog")["commitlog"]["records_total"] == 30


def test_refuses_a_directory_that_is_not_a_store(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    code, _ = run_tool(demo_main, [str(tmp_path), "--messages", "5"])
    assert code == 1
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert not (tmp_path / "commitlog").exists()


async def test_refuses_a_stopped_broker_s_store(tmp_path: Path, capsys) -> None:
    # It deleted the broker's messages and config/ (topics, consumer offsets): a typo for `inspect` lost them.
    async with EmbeddedCluster(tmp_path) as cluster:
        async with Producer("DemoPG", cluster.namesrv_addr) as p:
            await p.send(Message("Invoices", b"invoice 1", keys="inv-1"))
        assert await cluster.wait_dispatched()
    store = tmp_path / "store"
    code, out = run_tool(demo_main, [str(store), "--small", "--messages", "5"])
    err = capsys.readouterr().err
    assert (code, out) == (1, "")
    assert err.startswith(f"demo: {store} holds config/, a broker's topics and consumer offsets: it is a broker's "
                          f"store, not one the demo wrote; refusing to clear {store}")
    assert "Invoices" in (store / "config" / "topics.json").read_text()
    files = inspect_json(store, "--commitlog", "--topic", "Invoices")["commitlog"]["files"]
    assert [r["keys"] for f in files for r in f["records"]] == [["inv-1"]]


def test_refuses_a_store_it_did_not_write(tmp_path: Path, capsys) -> None:
    # A store of the storage engine's own, without the marker, holding a topic the demo never writes.
    path = tmp_path / "s"
    store = DefaultMessageStore(store_config(str(path), True, "async"))
    store.load()
    store.start()
    try:
        assert store.put_message(MessageExtBrokerInner(topic="Invoices", body=b"invoice 1", queue_id=0)).is_ok
        assert store.wait_dispatched(10.0)
    finally:
        store.shutdown()
    code, _ = run_tool(demo_main, [str(path), "--small", "--messages", "7"])
    err = capsys.readouterr().err
    assert code == 1 and f"was not written by the demo (it has no {MARKER} file, and holds topics the demo does " \
                         "not write: Invoices)" in err
    assert inspect_json(path, "--commitlog")["commitlog"]["records_total"] == 1


def test_replaces_a_store_an_older_demo_wrote_before_the_marker(tmp_path: Path) -> None:
    # Demos before the marker wrote no marker; before the wheel was turned off they also wrote config/timercheck.
    path = tmp_path / "s"
    config = store_config(str(path), True, "async")
    config.timer_wheel_enable = True
    run(config, 30)
    (path / MARKER).unlink()
    assert os.listdir(path / "config") == ["timercheck"]
    out = demo(path, "--small", "--messages", "20")
    assert "(the previous demo store was removed)" in out and (path / MARKER).is_file()
    assert not (path / "config").exists()
    assert inspect_json(path, "--commitlog")["commitlog"]["records_total"] == 20


def test_refuses_a_store_whose_lock_is_held(tmp_path: Path) -> None:
    path = tmp_path / "s"
    demo(path, "--small", "--messages", "5")
    fd = os.open(path / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, _ = run_tool(demo_main, [str(path), "--small", "--messages", "5"])
    finally:
        os.close(fd)
    assert code == 1
    assert inspect_json(path, "--commitlog")["commitlog"]["records_total"] == 5


def _records_without_timestamps(path: Path) -> list:
    out = []
    with ReadOnlyFiles() as files:
        for name in sorted(os.listdir(path / "commitlog")):
            mm = files.map(str(path / "commitlog" / name))
            pos = 0
            while pos + 8 <= len(mm) and mm[pos + 4:pos + 8] == bytes.fromhex("daa320a7"):
                msg = decode(mm, pos)
                msg.born_timestamp = msg.store_timestamp = 0
                out.append(msg)
                pos += msg.store_size
    return out


def test_output_is_the_same_apart_from_timestamps(tmp_path: Path) -> None:
    demo(tmp_path / "a", "--small", "--messages", "120")
    demo(tmp_path / "b", "--small", "--messages", "120")
    a, b = _records_without_timestamps(tmp_path / "a"), _records_without_timestamps(tmp_path / "b")
    assert len(a) == 120
    assert a == b


def test_sync_flush(tmp_path: Path) -> None:
    out = demo(tmp_path / "s", "--small", "--messages", "40", "--flush", "sync")
    assert "pocketmq demo: 40 messages" in out
    assert inspect_json(tmp_path / "s", "--commitlog")["commitlog"]["records_total"] == 40


def test_default_sizes_are_rocketmqs_and_reserved(tmp_path: Path) -> None:
    path = tmp_path / "s"
    out = demo(path, "--messages", "30")
    assert "commit log files    1,073,741,824 bytes (1 GiB)" in out
    log = path / "commitlog" / ("0" * 20)
    assert log.stat().st_size == 1 << 30
    # Reserved when created (posix_fallocate), so that no write through the mapping can fault on a full disk.
    assert log.stat().st_blocks * 512 >= 1 << 30
    index = inspect_json(path, "--index")["index"]["files"]
    assert [f["size"] for f in index] == [420_000_040]
    assert index[0]["geometry"] == {"hash_slots": 5_000_000, "index_num": 20_000_000, "source": "options"}


def test_a_directory_it_cannot_create_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "file").write_text("")
    code, _ = run_tool(demo_main, [str(tmp_path / "file" / "s"), "--messages", "5"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("demo: [Errno 20] Not a directory") and err.count("\n") == 1, err


def test_ctrl_c_exits_130_after_a_clean_shutdown(tmp_path: Path, capsys, monkeypatch) -> None:
    import pocketmq.storage.demo as demo_module

    def interrupted(store, count):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo_module, "write_messages", interrupted)
    code, out = run_tool(demo_main, [str(tmp_path / "s"), "--small", "--messages", "5"])
    assert (code, out, capsys.readouterr().err) == (130, "", "")
    assert not (tmp_path / "s" / "abort").exists(), "the store was shut down"
