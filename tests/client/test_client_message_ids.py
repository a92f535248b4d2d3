"""Message ids as RocketMQ's clients have them: a consumed message's msg_id is the UNIQ_KEY its send returned,
offset_msg_id the broker's; a lookup by either finds the message (both wire protocols, a real cluster)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.client import Message, MessageQueue, Producer, PullConsumer


@pytest.fixture(params=["msgpack", "rocketmq"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path) as c:
        yield c


async def test_consumed_msg_id_is_the_sent_msg_id_and_lookups_take_either(cluster: Any, protocol: str) -> None:
    mq = MessageQueue("TopicIds", "broker-a", 2)
    async with Producer("PG", cluster.namesrv_addr, protocol=protocol) as producer, PullConsumer(
        "CG", cluster.namesrv_addr, protocol=protocol
    ) as consumer:
        sent = await producer.send(Message("TopicIds", b"find me", keys="k1"), mq)
        other = await producer.send(Message("TopicIds", b"not me"), mq)
        assert sent.msg_id != sent.offset_msg_id
        assert await cluster.wait_dispatched() and await cluster.wait_routed("TopicIds")

        [got, _] = (await consumer.pull(mq, "*", 0, 32)).msg_found_list
        assert got.msg_id == sent.msg_id == got.uniq_key
        assert got.offset_msg_id == sent.offset_msg_id

        by_uniq = await producer.view_message("TopicIds", sent.msg_id)
        by_offset = await producer.view_message("TopicIds", sent.offset_msg_id)
        assert by_uniq is not None and by_offset is not None
        assert by_uniq.body == by_offset.body == b"find me"
        assert by_uniq.offset_msg_id == by_offset.offset_msg_id == sent.offset_msg_id
        assert (await producer.view_message("TopicIds", other.msg_id)).body == b"not me"
        # A well-formed id that names nothing: not found, whichever kind it looks like.
        assert await producer.view_message("TopicIds", sent.msg_id[:-4] + "FFFF") is None
        missing_offset = sent.offset_msg_id[:-8] + "7FFFFFFF"
        assert await producer.view_message("TopicIds", missing_offset) is None
