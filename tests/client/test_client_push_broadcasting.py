"""BROADCASTING: every consumer of the group gets every message; offsets live in a local file per client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from push_helpers import create_topic, make_consumer, send_many, unique

from pocketmq.client import ConsumeConcurrentlyStatus, MessageModel
from pocketmq.client.consumer.store.local_file_offset_store import LocalFileOffsetStore


def _read_offsets(path: Path) -> dict[Any, int]:
    """The offsets file as a LocalFileOffsetStore reads it back."""
    store = LocalFileOffsetStore(str(path.parents[2]), path.parent.parent.name, path.parent.name)
    store.load()
    return store.offset_table


async def test_every_consumer_gets_every_message_and_offsets_survive_a_restart(push_cluster, poll, tmp_path) -> None:
    topic, group = unique("BcastT"), unique("BcastG")
    await create_topic(push_cluster, topic, 2)
    got: dict[str, list[bytes]] = {"b1": [], "b2": []}

    def start(name: str) -> Any:
        c = make_consumer(
            push_cluster, group, instance_name=name, message_model=MessageModel.BROADCASTING,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET", offset_store_dir=str(tmp_path / "offsets"),
        )
        c.subscribe(topic, "*")

        async def on_messages(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
            got[name].extend(m.body for m in msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        c.register_message_listener(on_messages)
        return c

    first = [f"a{i}".encode() for i in range(40)]
    async with start("b1") as b1, start("b2") as b2:
        # Each holds every queue (and no retry topic: broadcasting failures are not retried).
        for c in (b1, b2):
            await poll(lambda c=c: [(q.topic, q.queue_id) for q in c.assigned_queues()] == [(topic, 0), (topic, 1)])
        await send_many(push_cluster, topic, first, 2, batch=10)
        await poll(lambda: sorted(got["b1"]) == sorted(got["b2"]) == sorted(first))
        client_ip = b1.client_config.client_ip
    # The brokers keep nothing for a broadcasting group; each client wrote its own file at shutdown.
    om = push_cluster.broker.consumer_offset_manager
    assert om.query_offset(group, topic, 0) == om.query_offset(group, topic, 1) == -1
    for name in ("b1", "b2"):
        path = tmp_path / "offsets" / f"{client_ip}@{name}" / group / "offsets.json"
        table = {(mq.topic, mq.queue_id): offset for mq, offset in _read_offsets(path).items()}
        assert table == {(topic, 0): 20, (topic, 1): 20}

    second = [f"b{i}".encode() for i in range(10)]
    await send_many(push_cluster, topic, second, 2, batch=5)
    got = {"b1": [], "b2": []}
    async with start("b1"), start("b2"):  # FIRST_OFFSET would replay all 50 without the stored offsets
        await poll(lambda: sorted(got["b1"]) == sorted(got["b2"]) == sorted(second))
