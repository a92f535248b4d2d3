"""LocalFileOffsetStore's file discipline on a real disk: temp file, .bak of the previous table, rename."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pocketmq.client.consumer.store.local_file_offset_store import LocalFileOffsetStore
from pocketmq.client.consumer.store.offset_store import ReadOffsetType
from pocketmq.remoting import fastjson
from pocketmq.remoting.admin_body import mq_from_key
from pocketmq.remoting.client_body import MessageQueue

MQ0 = MessageQueue("TopicB", "broker-a", 0)
MQ1 = MessageQueue("TopicB", "broker-a", 1)


def offsets(path: Path) -> dict[int, int]:
    """The file's table, read as the Java client reads it: a MessageQueue object as each key."""
    return {mq_from_key(k, "").queue_id: v for k, v in fastjson.loads(path.read_text())["offsetTable"].items()}


async def test_each_write_keeps_the_previous_table_as_bak(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(str(tmp_path), "127.0.0.1@i", "G")
    path = Path(store.path)
    store.update_offset(MQ0, 5)
    await store.persist_all()
    assert offsets(path) == {0: 5} and not path.with_suffix(".json.bak").exists()
    store.update_offset(MQ0, 9)
    store.update_offset(MQ1, 2)
    await store.persist_all()
    assert offsets(path) == {0: 9, 1: 2}
    assert offsets(path.with_suffix(".json.bak")) == {0: 5}
    assert not path.with_suffix(".json.tmp").exists()


async def test_concurrent_persists_leave_one_whole_table(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(str(tmp_path), "127.0.0.1@i", "G")
    for q in range(64):
        store.update_offset(MessageQueue("TopicB", "broker-a", q), q * 10)
    await asyncio.gather(*(store.persist_all() for _ in range(8)))
    assert offsets(Path(store.path)) == {q: q * 10 for q in range(64)}


async def test_a_persist_cancelled_mid_write_still_writes_the_whole_table(tmp_path: Path) -> None:
    # A shutdown under a timeout cancels the persist wherever it is: the write under way goes on to its end.
    for hops in range(1, 10):
        store = LocalFileOffsetStore(str(tmp_path / str(hops)), "127.0.0.1@i", "G")
        store.update_offset(MQ0, 1)
        await store.persist_all()
        store.update_offset(MQ0, 7)
        store.update_offset(MQ1, 3)
        persist = asyncio.ensure_future(store.persist_all())
        for _ in range(hops):
            await asyncio.sleep(0)
        persist.cancel()
        await asyncio.gather(persist, return_exceptions=True)
        assert offsets(Path(store.path)) == {0: 7, 1: 3}, hops
        assert not Path(store.path + ".tmp").exists(), hops


async def test_a_torn_file_falls_back_to_its_backup(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(str(tmp_path), "127.0.0.1@i", "G")
    store.update_offset(MQ0, 3)
    await store.persist_all()
    store.update_offset(MQ0, 4)
    await store.persist_all()
    path = Path(store.path)
    path.write_bytes(path.read_bytes()[:20])  # a crash mid-write of a store that did not rename
    again = LocalFileOffsetStore(str(tmp_path), "127.0.0.1@i", "G")
    again.load()
    assert await again.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 3
    path.unlink()
    assert await again.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 3


def test_the_file_is_the_java_clients_and_pocketmqs_earlier_form_is_still_read(tmp_path: Path) -> None:
    # What RocketMQ's Java client 4.9.8 wrote for a broadcasting group (OffsetSerializeWrapper.toJson(true)):
    # pocketmq could not read it and fell back to consume_from_where, skipping what was sent meanwhile.
    store = LocalFileOffsetStore(str(tmp_path), "127.0.0.1@i", "G")
    path = Path(store.path)
    path.parent.mkdir(parents=True)
    path.write_text('{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":1,\n'
                    '\t\t\t"topic":"TopicB"\n\t\t}:5,{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":0,\n'
                    '\t\t\t"topic":"TopicB"\n\t\t}:3\n\t}\n}')
    store.load()
    assert store.offset_table == {MQ1: 5, MQ0: 3}
    path.write_text(json.dumps({"offsetTable": [{"topic": "TopicB", "brokerName": "broker-a", "queueId": 0,
                                                 "offset": 8}]}))
    again = LocalFileOffsetStore(str(tmp_path), "127.0.0.1@i", "G")
    again.load()
    assert again.offset_table == {MQ0: 8}


async def test_the_written_file_has_the_java_clients_form(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(str(tmp_path), "127.0.0.1@i", "G")
    store.update_offset(MQ1, 2)
    store.update_offset(MQ0, 9)
    await store.persist_all()
    assert Path(store.path).read_text() == ('{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicB"}:9,'
                                            '{"brokerName":"broker-a","queueId":1,"topic":"TopicB"}:2}}')
