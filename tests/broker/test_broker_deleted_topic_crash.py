"""A deleted topic stays deleted when the broker process is killed (SIGKILL) and started again, though a crash restart
dispatches the commit log again from a file's start, deleted records included; a topic whose config was lost is still
rebuilt from its queues (pocketmq/broker/deleted_topic_manager.py, docs/broker.md section 6)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from broker_harness import MQ, pull_all

from pocketmq.broker import BrokerConfig
from pocketmq.remoting.body import TopicConfigSerializeWrapper
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import (
    DeleteTopicRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
)


async def _topic_table(mq: MQ) -> dict:
    resp = await mq.invoke(RequestCode.GET_ALL_TOPIC_CONFIG)
    assert resp.code == ResponseCode.SUCCESS
    return resp.decode_body(TopicConfigSerializeWrapper).topic_config_table


async def _delete(mq: MQ, topic: str) -> None:
    assert (await mq.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic))).code == 0


async def _send(mq: MQ, topic: str, bodies: list[str], queues: int) -> None:
    for i, body in enumerate(bodies):
        assert (await mq.send(topic, body.encode(), queue_id=i % queues)).code == ResponseCode.SUCCESS


async def _queues(mq: MQ, topic: str, queues: int) -> dict[int, tuple[int, list[bytes]]]:
    """queue id -> (its max offset, the bodies pullable from its min offset)."""
    out = {}
    for q in range(queues):
        resp = await mq.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic, q))
        max_offset = resp.decode_header(GetMaxOffsetResponseHeader).offset if resp.code == 0 else -1
        resp = await mq.invoke(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic, q))
        start = resp.decode_header(GetMaxOffsetResponseHeader).offset if resp.code == 0 else 0
        out[q] = (max_offset, [body for _, body in await pull_all(mq, topic, q, start)])
    return out


async def _kill(dev) -> None:
    dev.proc.kill()
    await dev.proc.wait()


async def test_a_deleted_topic_is_not_back_after_a_kill_9(tmp_path: Path, dev_broker) -> None:
    store = tmp_path / "dev"
    async with dev_broker(store) as dev:
        mq = dev.mq
        assert (await mq.create_topic("Other", 1)).code == ResponseCode.SUCCESS
        assert (await mq.create_topic("Gone", 4)).code == ResponseCode.SUCCESS
        await _send(mq, "Gone", [f"deleted-{i}" for i in range(5)], 4)
        await _delete(mq, "Gone")
        await _delete(mq, "NeverWas")  # (nothing of it could come back: no entry)
        await _send(mq, "Other", ["after"] * 3, 1)
        await _kill(dev)
    async with dev_broker(store) as dev:
        mq = dev.mq
        assert "Gone" not in await _topic_table(mq)
        assert "Other" in await _topic_table(mq)
        for q in range(4):
            resp = await mq.pull("G", "Gone", q, 0)
            assert resp.code == ResponseCode.TOPIC_NOT_EXIST, (q, resp.code)
        assert (await mq.route(dev.namesrv, "Gone")).code == ResponseCode.TOPIC_NOT_EXIST
        assert await _queues(mq, "Other", 1) == {0: (3, [b"after"] * 3)}
        # Created again (Apache 4.9.7 serves the deleted messages then, from the queues its recovery rebuilt).
        assert (await mq.create_topic("Gone", 4)).code == ResponseCode.SUCCESS
        assert await _queues(mq, "Gone", 4) == {q: (0, []) for q in range(4)}
    deleted = json.loads((store / "store" / "config" / "deletedTopics.json").read_text())["deletedTopicTable"]
    assert list(deleted) == ["Gone"]


@pytest.mark.parametrize("stop", ["clean", "kill-9"])
async def test_a_deleted_topic_stays_deleted_when_a_delayed_message_to_it_fires_after_the_delete(
        tmp_path: Path, dev_broker, stop: str) -> None:
    # The delayed message fires into a queue the store makes after the delete; the next start must not take that
    # queue for a topic whose config was lost (Apache 4.9.7 keeps the topic deleted: its queue stays hidden).
    store = tmp_path / "dev"
    async with dev_broker(store, "messageDelayLevel=1s 2s\n") as dev:
        mq = dev.mq
        assert (await mq.create_topic("Late", 1)).code == ResponseCode.SUCCESS
        assert (await mq.send("Late", b"delayed", properties=MQ.props(DELAY="1"))).code == ResponseCode.SUCCESS
        await _delete(mq, "Late")

        for _ in range(300):  # (fired into the store's new queue of the deleted topic, about 1 s later)
            resp = await mq.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader("Late", 0))
            if resp.code == 0 and resp.decode_header(GetMaxOffsetResponseHeader).offset == 1:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the delayed message did not fire")
        if stop == "kill-9":
            await _kill(dev)
    async with dev_broker(store) as dev:
        assert "Late" not in await _topic_table(dev.mq)
        assert (await dev.mq.pull("G", "Late", 0, 0)).code == ResponseCode.TOPIC_NOT_EXIST
        assert (await dev.mq.route(dev.namesrv, "Late")).code == ResponseCode.TOPIC_NOT_EXIST


async def test_a_topic_deleted_created_again_and_sent_to_keeps_only_its_new_messages_after_a_kill_9(
        tmp_path: Path, dev_broker) -> None:
    store = tmp_path / "dev"
    async with dev_broker(store) as dev:
        mq = dev.mq
        assert (await mq.create_topic("Again", 4)).code == ResponseCode.SUCCESS
        await _send(mq, "Again", [f"old-{i}" for i in range(8)], 4)
        await _delete(mq, "Again")
        assert (await mq.create_topic("Again", 4)).code == ResponseCode.SUCCESS
        # Queues 2 and 3 get nothing new: no file of theirs exists for a crash restart to find.
        await _send(mq, "Again", [f"new-{i}" for i in range(4)], 2)
        await _kill(dev)
    async with dev_broker(store) as dev:
        mq = dev.mq
        tc = (await _topic_table(mq))["Again"]
        assert (tc.read_queue_nums, tc.write_queue_nums) == (4, 4)
        assert await _queues(mq, "Again", 4) == {
            0: (2, [b"new-0", b"new-2"]), 1: (2, [b"new-1", b"new-3"]), 2: (0, []), 3: (0, [])}
        # Killed once more after sending to a queue that had only old messages: still only the new ones.
        await _send(mq, "Again", ["newer"], 1)
        assert (await mq.send("Again", b"newer-3", queue_id=3)).code == ResponseCode.SUCCESS
        await _kill(dev)
    async with dev_broker(store) as dev:
        assert await _queues(dev.mq, "Again", 4) == {
            0: (3, [b"new-0", b"new-2", b"newer"]), 1: (2, [b"new-1", b"new-3"]), 2: (0, []), 3: (1, [b"newer-3"])}


async def test_lost_topic_configs_are_rebuilt_after_a_kill_9_but_not_a_deleted_topic(tmp_path: Path,
                                                                                      dev_broker) -> None:
    # topics.json, its .bak and its journal all lost: what the store holds decides. A live topic is rebuilt, a
    # deleted one is not, and one deleted and created again comes back with what was sent after the delete.
    store = tmp_path / "dev"
    async with dev_broker(store) as dev:
        mq = dev.mq
        for topic in ("Live", "Dead", "Reborn"):
            assert (await mq.create_topic(topic, 2)).code == ResponseCode.SUCCESS
            await _send(mq, topic, [f"{topic}-old-0", f"{topic}-old-1"], 2)
        await _delete(mq, "Dead")
        await _delete(mq, "Reborn")
        assert (await mq.create_topic("Reborn", 2)).code == ResponseCode.SUCCESS
        await _send(mq, "Reborn", ["Reborn-new"], 1)
        await _kill(dev)
    config = store / "store" / "config"
    assert (config / "topics.json.journal").exists()
    for name in ("topics.json", "topics.json.bak", "topics.json.journal", "topics.json.journal.old"):
        (config / name).unlink(missing_ok=True)
    async with dev_broker(store) as dev:
        table = await _topic_table(dev.mq)
        assert "Dead" not in table
        assert (table["Live"].read_queue_nums, table["Live"].write_queue_nums) == (2, 2)
        assert await _queues(dev.mq, "Live", 2) == {0: (1, [b"Live-old-0"]), 1: (1, [b"Live-old-1"])}
        assert (table["Reborn"].read_queue_nums, table["Reborn"].write_queue_nums) == (1, 1)
        assert await _queues(dev.mq, "Reborn", 1) == {0: (1, [b"Reborn-new"])}
        assert (await dev.mq.pull("G", "Dead", 0, 0)).code == ResponseCode.TOPIC_NOT_EXIST


async def test_deletions_are_forgotten_once_the_commit_log_no_longer_holds_their_records(tmp_path: Path) -> None:
    from pocketmq.broker.deleted_topic_manager import DeletedTopicManager  # (here: the module's others run without it)

    config = BrokerConfig(store_path_root_dir=str(tmp_path))
    manager = DeletedTopicManager(config)
    assert manager.load()
    await manager.record_deletion("A", 100, 0)
    await manager.record_deletion("B", 500, 0)
    await manager.record_deletion("A", 300, 200)  # (deleted again: the later offset)
    assert manager.deleted_topic_table == {"A": 300, "B": 500}
    await manager.record_deletion("C", 900, 400)  # the log now starts at 400: A's records are gone
    again = DeletedTopicManager(config)
    assert again.load()
    assert again.deleted_topic_table == {"B": 500, "C": 900} == manager.deleted_topic_table
    assert again.prune(900) and again.deleted_topic_table == {}
