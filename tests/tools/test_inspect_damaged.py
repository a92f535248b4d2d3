"""inspect on a damaged store: what it blames depends on the lock (a running store may have appended since; a
stopped one did not), and a file whose size breaks its log's layout is flagged, since pocketmq and Apache RocketMQ
refuse to load it (MappedFileQueue.doLoad, TimerWheel)."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from pocketmq.common import MessageExtBrokerInner
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig
from pocketmq.storage.inspect import build_parser, inspect_store, options_from
from pocketmq.storage.inspect import main as inspect_main
from pocketmq.storage.inspect.text import render

from .conftest import inspect_json, run_tool

CUT = 3000  # bytes the commit log keeps: inside its 12th record


@pytest.fixture
def one_file_store(tmp_path: Path) -> Path:
    """A stopped store of one 64 KiB commit-log file holding 30 records, its file then cut to CUT bytes."""
    root = tmp_path / "store"
    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=str(root), mapped_file_size_commit_log=64 * 1024,
                                                   max_hash_slot_num=64, max_index_num=256))
    store.load()
    store.start()
    try:
        for i in range(30):
            msg = MessageExtBrokerInner(topic="CutT", body=b"x" * 200, queue_id=0, properties={"KEYS": f"k{i}"})
            assert store.put_message(msg).is_ok
        assert store.wait_dispatched(10.0)
    finally:
        store.shutdown()
    os.truncate(root / "commitlog" / ("0" * 20), CUT)
    return root


def checks(report: dict) -> list[str]:
    return [e["check"] for q in report["consumequeue"]["queues"] for e in q["entries"]]


def test_a_stopped_store_s_cut_log_is_not_blamed_on_a_running_writer(one_file_store: Path) -> None:
    report = inspect_json(one_file_store)
    assert report["state"]["lock"]["held"] is False
    lost = [c for c in checks(report) if c != "ok"]
    assert lost and all(c.startswith(f"past the end of the commit-log files (at {CUT:,}): a commit-log file was cut")
                        for c in lost), lost
    code, out = run_tool(inspect_main, [str(one_file_store)])
    assert code == 0 and "appended since" not in out and "in a running store" not in out
    assert "INVALID record" in out and "no store is running: if the file has the store's file size" in out


def test_a_running_store_may_have_appended_since(one_file_store: Path) -> None:
    fd = os.open(one_file_store / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as pocketmq's running store holds it
        report = inspect_json(one_file_store)
        code, out = run_tool(inspect_main, [str(one_file_store)])
    finally:
        os.close(fd)
    assert report["state"]["lock"]["held"] is True
    assert "past the end of the commit log as read (a running store appended since)" in checks(report)
    assert "(a store is running: it may be a record being written)" in out


def test_a_lock_whose_state_cannot_be_read_is_not_called_free(one_file_store: Path, tmp_path: Path) -> None:
    # Without a table of locks (macOS, a restricted /proc) the lock's state is unknown, not "not held": the wording
    # stays hedged instead of blaming a cut file on a store that may be running.
    locks = tmp_path / "no-locks"  # (as /proc/locks is on macOS: absent)
    report = inspect_store(str(one_file_store), options_from(build_parser().parse_args([str(one_file_store)])),
                           locks_path=str(locks))
    lock = report["state"]["lock"]
    assert lock["held"] is None and str(locks) in lock["held_unknown"]
    lost = [c for c in checks(report) if c != "ok"]
    assert lost and all("a running store may have appended since, or a commit-log file was cut short" in c
                        for c in lost), lost
    out = render(report)
    assert "lock        present, state unknown" in out and "not held" not in out and "no store is running" not in out
    assert "whether a store runs is unknown: a running store may be writing this record" in out


def test_a_commit_log_file_of_another_size_than_its_siblings_is_flagged(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    names = sorted(os.listdir(copy / "commitlog"))
    spacing = int(names[1]) - int(names[0])
    os.truncate(copy / "commitlog" / names[-1], 1000)
    files = inspect_json(copy, "--commitlog")["commitlog"]["files"]
    assert [f["problems"] for f in files[:-1]] == [[]] * (len(files) - 1)
    assert files[-1]["problems"] == [f"1,000 bytes, where its sibling files have {spacing:,}"]
    code, out = run_tool(inspect_main, [str(copy), "--commitlog", "--limit", "0"])
    assert "refuse to load a log holding a file of another size than the configured one" in out


def test_a_commit_log_file_misnamed_is_flagged(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    names = sorted(os.listdir(copy / "commitlog"))
    size = os.path.getsize(copy / "commitlog" / names[0])
    wrong = f"{int(names[-1]) + 100:020d}"
    os.rename(copy / "commitlog" / names[-1], copy / "commitlog" / wrong)
    files = {f["name"]: f for f in inspect_json(copy, "--commitlog")["commitlog"]["files"]}
    assert files[wrong]["problems"] == [f"its name is no multiple of the file size {size:,}"]
    assert files[names[-2]]["problems"] == [f"the next file starts {size + 100:,} bytes after it, not {size:,}"]


def test_a_consume_queue_file_of_no_whole_number_of_entries_is_flagged(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    qdir = copy / "consumequeue" / "Payments" / "0"
    first = sorted(os.listdir(qdir))[0]
    os.truncate(qdir / first, 50)
    (queue,) = inspect_json(copy, "--consumequeue", "--topic", "Payments", "--queue", "0")["consumequeue"]["queues"]
    assert "50 bytes is no whole number of 20-byte entries" in queue["files"][0]["problems"]
    code, out = run_tool(inspect_main, [str(copy), "--consumequeue", "--topic", "Payments", "--queue", "0"])
    assert "! 50 bytes is no whole number of 20-byte entries" in out


def test_a_timer_wheel_of_the_wrong_size_is_flagged(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    (copy / "timerwheel").write_bytes(bytes(100))
    wheel = inspect_json(copy, "--timer")["timer"]["wheel"]
    assert wheel["problem"].startswith("100 bytes, not the wheel's 38,707,200: pocketmq and Apache RocketMQ")
    (copy / "timerwheel").write_bytes(b"")  # (created, not sized yet: TimerWheel sizes it)
    assert "problem" not in inspect_json(copy, "--timer")["timer"]["wheel"]
