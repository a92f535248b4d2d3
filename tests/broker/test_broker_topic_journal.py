"""Topic config persistence: each change is one journal line (O(1) per topic), compacted into topics.json."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys

from pocketmq.broker import BrokerConfig
from pocketmq.broker.topic_config_manager import TopicConfigManager
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import ResponseCode


def manager(tmp_path, **kw) -> TopicConfigManager:
    m = TopicConfigManager(BrokerConfig(store_path_root_dir=str(tmp_path), **kw))
    assert m.load()
    return m


def create(m: TopicConfigManager, topic: str, queues: int = 4) -> TopicConfig:
    tc = m.create_topic_in_send_message_method(topic, "TBW102", "test", queues)
    assert tc is not None
    return tc


async def test_topic_created_by_a_send_survives_a_killed_broker(tmp_path, cluster) -> None:
    # A real crash: the broker runs in a process of its own and gets SIGKILL right after acknowledging.
    store = tmp_path / "store"
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={store}\nlistenPort=0\nmappedFileSizeCommitLog=1048576\n"
                    "mappedFileSizeConsumeQueue=20000\nmaxHashSlotNum=64\nmaxIndexNum=256\n")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "pocketmq", "broker", "-c", str(conf),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert b"listening on" in line, line + await proc.stderr.read()
        addr = line.split(b"listening on ")[1].split(b",")[0].decode()
        mq = cluster.mq(addr)
        for i in range(3):
            resp = await mq.send(f"Crash{i}", b"x", default_topic_queue_nums=3)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
    finally:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    config_dir = store / "config"
    # Appended, not rewritten: topics.json (written at startup, if at all) does not hold them yet.
    assert "Crash0" in (config_dir / "topics.json.journal").read_text()
    if (config_dir / "topics.json").exists():
        assert "Crash0" not in (config_dir / "topics.json").read_text()
    broker = await cluster.broker(store_path_root_dir=str(store))
    for i in range(3):
        tc = broker.topic_config_manager.select_topic_config(f"Crash{i}")
        assert tc is not None and tc.write_queue_nums == 3
    # The restart compacted the journal into topics.json.
    assert "Crash2" in json.loads((config_dir / "topics.json").read_text())["topicConfigTable"]
    assert not (config_dir / "topics.json.journal").exists()


async def test_changes_replay_in_order_with_their_data_version(tmp_path) -> None:
    m = manager(tmp_path)
    create(m, "A")
    create(m, "B")
    m.update_topic_config(TopicConfig("A", 2, 2, 4))
    m.delete_topic_config("B")
    version = m.data_version.copy()
    m.close()  # no compaction: what a crash would leave (the lines are written already)
    again = manager(tmp_path)
    assert again.select_topic_config("B") is None
    a = again.select_topic_config("A")
    assert (a.write_queue_nums, a.perm) == (2, 4)
    assert again.data_version == version


async def test_journal_is_compacted_once_it_outgrows_the_table(tmp_path) -> None:
    m = manager(tmp_path)
    m.compact_min_entries = 5
    builtin = len(m.topic_config_table)
    n = builtin + 3
    for i in range(n):
        create(m, f"T{i}")
        await m.wait_persisted()
    # Compacted when the journal held half as many lines as the table has topics; only the lines since remain.
    k = next(k for k in range(1, n + 1) if k >= max(5, (builtin + k) // 2))
    assert m.journal.entries == n - k
    with open(m.config_file_path) as f:
        on_disk = json.load(f)["topicConfigTable"]
    assert f"T{k - 1}" in on_disk and f"T{k}" not in on_disk
    m.close()
    assert set(manager(tmp_path).topic_config_table) == set(m.topic_config_table)


async def test_a_crash_during_compaction_loses_nothing(tmp_path) -> None:
    m = manager(tmp_path)
    create(m, "Old")
    create(m, "Gone")
    m.delete_topic_config("Gone")
    # Compaction stopped after the snapshot was written but before .old was deleted; then more changes.
    m.journal.rotate()
    from pocketmq.broker.config_file import write_json_file_sync

    write_json_file_sync(m.config_file_path, m.encode())
    create(m, "New")
    m.update_topic_config(TopicConfig("Old", 1, 1))
    m.close()
    assert os.path.exists(m.journal.old_path)
    again = manager(tmp_path)
    assert again.select_topic_config("Gone") is None
    assert again.select_topic_config("New") is not None
    assert again.select_topic_config("Old").write_queue_nums == 1
    assert again.data_version == m.data_version
    assert not os.path.exists(m.journal.old_path)


async def test_a_torn_last_line_is_ignored(tmp_path) -> None:
    m = manager(tmp_path)
    create(m, "Whole")
    m.close()
    with open(m.journal.path, "ab") as f:
        f.write(b'{"put":{"topicName":"Torn","readQu')
    again = manager(tmp_path)
    assert again.select_topic_config("Whole") is not None and again.select_topic_config("Torn") is None


async def test_changes_since_lists_what_changed_after_a_version(tmp_path) -> None:
    m = manager(tmp_path)
    start = m.data_version.counter
    create(m, "A")
    mid = m.data_version.counter
    create(m, "B")
    create(m, "C")
    m.delete_topic_config("C")
    m.update_topic_config(TopicConfig("A", 1, 1))
    changed, deleted = m.changes_since(mid)
    assert set(changed) == {"A", "B"} and deleted == ["C"]
    changed, deleted = m.changes_since(start)
    assert set(changed) == {"A", "B"} and deleted == ["C"]
    assert m.changes_since(m.data_version.counter) == ({}, [])
    assert m.changes_since(m.data_version.counter + 1) is None  # a version this broker never had
    m.close()
    again = manager(tmp_path)
    assert again.changes_since(start) is None  # from before this process: unknown, so a full registration
    m.close()


async def test_the_change_history_keeps_at_most_history_max_names(tmp_path) -> None:
    # Topics created and deleted one after another left every name behind, for as long as the process lived.
    m = manager(tmp_path)
    m.history_max = 3
    start = m.data_version.counter
    for name in ("A", "B", "C", "D", "E"):
        create(m, name)
        m.delete_topic_config(name)
    assert len(m._changed_at) == 3
    assert m.changes_since(start) is None  # forgotten: the name server gets the whole table
    changed, deleted = m.changes_since(m.data_version.counter - 2)
    assert changed == {} and deleted == ["E"]
    m.close()
