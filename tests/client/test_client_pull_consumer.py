"""PullConsumer against a fake broker: the pull header, decoding and tag filtering, offsets, admin calls."""

from __future__ import annotations

import asyncio
import itertools
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from client_fakes import FakeBroker, FakeNamesrv, error, pull_response

from pocketmq.client import MQBrokerException, MQClientException, PullConsumer, PullStatus
from pocketmq.common.codec import encode
from pocketmq.common.constants import COMPRESSED_FLAG
from pocketmq.common.message import pack_host, properties_to_string
from pocketmq.remoting.body import decode_body
from pocketmq.remoting.client_body import HeartbeatData, MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    GetMaxOffsetRequestHeader,
    PullMessageRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)

_instances = itertools.count()
MQ = MessageQueue("T", "broker-a", 1)


@pytest.fixture
async def consumer(namesrv: FakeNamesrv, broker_a: FakeBroker) -> AsyncIterator[PullConsumer]:
    namesrv.set_route("T", [broker_a])
    async with PullConsumer("CG", namesrv.address, instance_name=f"c{next(_instances)}") as c:
        yield c


def record(offset: int, body: bytes, tags: str | None = None, sys_flag: int = 0, **props: str) -> bytes:
    properties = dict(props)
    if tags is not None:
        properties["TAGS"] = tags
    return encode(
        topic="T", body=body, properties=properties_to_string(properties), queue_id=1, queue_offset=offset,
        physical_offset=1000 + offset, sys_flag=sys_flag, born_host=pack_host("10.0.0.2", 5555),
        store_host=pack_host("127.0.0.1", 10911),
    )


def answer_with(response: RemotingCommand, delay: float = 0.0) -> Any:
    async def behaviour(channel: Any, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(delay)
        return response

    return behaviour


async def test_pull_header_and_status(consumer: PullConsumer, broker_a: FakeBroker) -> None:
    result = await consumer.pull(MQ, "TagA || TagB", 5, 16)
    assert result.pull_status is PullStatus.NO_NEW_MSG and result.msg_found_list == []
    h = broker_a.of_code(RequestCode.PULL_MESSAGE)[0].decode_header(PullMessageRequestHeader)
    assert (h.consumer_group, h.topic, h.queue_id, h.queue_offset, h.max_msg_nums) == ("CG", "T", 1, 5, 16)
    assert h.sys_flag == 0x4  # FLAG_SUBSCRIPTION only: no suspend, no commit
    assert (h.subscription, h.expression_type, h.commit_offset) == ("TagA || TagB", "TAG", 0)


async def test_pull_blocking_asks_the_broker_to_hold(consumer: PullConsumer, broker_a: FakeBroker) -> None:
    # The broker answers after the 0.2 s hold it was asked for: the RPC timeout must outlast that.
    broker_a.on_pull = answer_with(pull_response(ResponseCode.PULL_NOT_FOUND, 3), delay=0.3)
    result = await consumer.pull_blocking(MQ, None, 3, timeout=0.2)
    assert result.pull_status is PullStatus.NO_NEW_MSG and result.next_begin_offset == 3
    h = broker_a.of_code(RequestCode.PULL_MESSAGE)[0].decode_header(PullMessageRequestHeader)
    assert h.sys_flag == 0x6 and h.suspend_timeout_millis == 200 and h.subscription == "*"


async def test_found_messages_are_decoded_and_filtered_by_tag_string(
    consumer: PullConsumer, broker_a: FakeBroker
) -> None:
    big = b"compressible " * 1000
    body = record(0, b"a", "TagA", k="v") + record(1, zlib.compress(big), "TagA", COMPRESSED_FLAG) + record(
        2, b"b", "TagB"
    ) + record(3, b"none")
    broker_a.on_pull = answer_with(pull_response(ResponseCode.SUCCESS, 4, body, min_offset=0, max_offset=9))

    everything = await consumer.pull(MQ, "*", 0)
    assert everything.pull_status is PullStatus.FOUND and everything.next_begin_offset == 4
    assert [m.body for m in everything.msg_found_list] == [b"a", big, b"b", b"none"]
    first = everything.msg_found_list[0]
    assert (first.queue_offset, first.tags, first.properties["k"]) == (0, "TagA", "v")
    assert (first.properties["MIN_OFFSET"], first.properties["MAX_OFFSET"]) == ("0", "9")

    only_a = await consumer.pull(MQ, "TagA", 0)
    assert [m.queue_offset for m in only_a.msg_found_list] == [0, 1]
    # The broker only compares hash codes; a tag the client did not ask for is dropped here, and the
    # result stays FOUND even when nothing is left.
    nothing = await consumer.pull(MQ, "TagC", 0)
    assert nothing.pull_status is PullStatus.FOUND and nothing.msg_found_list == []
    assert nothing.next_begin_offset == 4


@pytest.mark.parametrize(
    ("code", "status"),
    [(ResponseCode.PULL_RETRY_IMMEDIATELY, PullStatus.NO_MATCHED_MSG),
     (ResponseCode.PULL_OFFSET_MOVED, PullStatus.OFFSET_ILLEGAL)],
)
async def test_pull_statuses(consumer: PullConsumer, broker_a: FakeBroker, code: int, status: PullStatus) -> None:
    broker_a.on_pull = answer_with(pull_response(code, 7, min_offset=7, max_offset=20))
    result = await consumer.pull(MQ, "*", 2)
    assert (result.pull_status, result.next_begin_offset, result.min_offset, result.max_offset) == (status, 7, 7, 20)


async def test_pull_errors(consumer: PullConsumer, broker_a: FakeBroker) -> None:
    broker_a.on_pull = error(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group not exist")
    with pytest.raises(MQBrokerException) as info:
        await consumer.pull(MQ, "*", 0)
    assert info.value.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    with pytest.raises(MQClientException, match="offset < 0"):
        await consumer.pull(MQ, "*", -1)
    with pytest.raises(MQClientException, match="maxNums <= 0"):
        await consumer.pull(MQ, "*", 0, 0)
    with pytest.raises(MQClientException, match="The broker\\[nope\\] not exist"):
        await consumer.pull(MessageQueue("T", "nope", 0), "*", 0)


async def test_offsets(consumer: PullConsumer, broker_a: FakeBroker, poll: Callable) -> None:
    assert await consumer.fetch_consume_offset(MQ) == -1  # QUERY_NOT_FOUND
    await consumer.update_consume_offset(MQ, 12)
    assert broker_a.offsets[("CG", "T", 1)] == 12  # stored before update_consume_offset returned
    assert await consumer.fetch_consume_offset(MQ, from_store=True) == 12

    other = MessageQueue("T", "broker-a", 2)
    await consumer.update_consume_offset(other, 5, flush=False)
    assert await consumer.fetch_consume_offset(other) == 5  # from memory
    assert ("CG", "T", 2) not in broker_a.offsets
    await consumer.persist()
    await poll(lambda: broker_a.offsets.get(("CG", "T", 2)) == 5)  # one-way, as the periodic persist sends
    updates = broker_a.of_code(RequestCode.UPDATE_CONSUMER_OFFSET)
    assert [u.is_oneway for u in updates] == [False, True]
    h = updates[1].decode_header(UpdateConsumerOffsetRequestHeader)
    assert (h.consumer_group, h.topic, h.queue_id, h.commit_offset) == ("CG", "T", 2, 5)


async def test_unflushed_offsets_are_persisted_on_shutdown(
    namesrv: FakeNamesrv, broker_a: FakeBroker, poll: Callable
) -> None:
    namesrv.set_route("T", [broker_a])
    consumer = PullConsumer("CG", namesrv.address, instance_name=f"c{next(_instances)}")
    await consumer.start()
    await consumer.update_consume_offset(MQ, 33, flush=False)
    await consumer.shutdown()
    await poll(lambda: broker_a.offsets.get(("CG", "T", 1)) == 33)


async def test_admin_offsets(consumer: PullConsumer, broker_a: FakeBroker) -> None:
    broker_a.max_offset, broker_a.min_offset, broker_a.search_result = 40, 3, 17
    assert await consumer.max_offset(MQ) == 40
    assert await consumer.min_offset(MQ) == 3
    assert await consumer.seek_by_timestamp(MQ, 1_700_000_000_000) == 17
    h = broker_a.of_code(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP)[0].decode_header(SearchOffsetRequestHeader)
    assert (h.topic, h.queue_id, h.timestamp) == ("T", 1, 1_700_000_000_000)
    h2 = broker_a.of_code(RequestCode.GET_MAX_OFFSET)[0].decode_header(GetMaxOffsetRequestHeader)
    assert (h2.topic, h2.queue_id) == ("T", 1)


async def test_fetch_subscribe_message_queues(consumer: PullConsumer, namesrv: FakeNamesrv) -> None:
    mqs = await consumer.fetch_subscribe_message_queues("T")
    assert mqs == [MessageQueue("T", "broker-a", i) for i in range(4)]
    with pytest.raises(MQClientException, match="Can not find Message Queue for this topic, Nope") as info:
        await consumer.fetch_subscribe_message_queues("Nope")
    assert info.value.response_code == ResponseCode.TOPIC_NOT_EXIST


async def test_heartbeat_reports_a_pull_consumer(consumer: PullConsumer, broker_a: FakeBroker) -> None:
    await consumer.pull(MQ, "TagA", 0)
    await consumer.instance.send_heartbeat_to_all_brokers()
    heartbeat = decode_body(broker_a.of_code(RequestCode.HEART_BEAT)[-1].body, HeartbeatData)
    (data,) = heartbeat.consumer_data_set
    assert (data.group_name, data.consume_type, data.message_model) == ("CG", "CONSUME_ACTIVELY", "CLUSTERING")
    assert [(s.topic, s.sub_string) for s in data.subscription_data_set] == [("T", "*")]


async def test_offsets_are_persisted_periodically(namesrv: FakeNamesrv, broker_a: FakeBroker, poll: Callable) -> None:
    namesrv.set_route("T", [broker_a])
    async with PullConsumer(
        "CG", namesrv.address, instance_name=f"c{next(_instances)}", persist_consumer_offset_interval=0.05
    ) as consumer:
        await consumer.update_consume_offset(MQ, 8, flush=False)
        await poll(lambda: broker_a.offsets.get(("CG", "T", 1)) == 8)
        sent = len(broker_a.of_code(RequestCode.UPDATE_CONSUMER_OFFSET))
        await asyncio.sleep(0.2)
        assert len(broker_a.of_code(RequestCode.UPDATE_CONSUMER_OFFSET)) == sent  # unchanged: not sent again


async def test_a_remembered_expression_skips_none_of_the_pull_checks(
    consumer: PullConsumer, broker_a: FakeBroker
) -> None:
    # The consumer parses each (topic, expression, type) once; what it checks on every pull it still checks.
    assert (await consumer.pull(MQ, "TagA", 0)).pull_status is PullStatus.NO_NEW_MSG  # "TagA" remembered
    with pytest.raises(MQClientException, match="offset < 0"):
        await consumer.pull(MQ, "TagA", -1)
    with pytest.raises(MQClientException, match="The broker\\[nope\\] not exist"):
        await consumer.pull(MessageQueue("T", "nope", 0), "TagA", 0)
    # A malformed expression is refused on every pull (a failure is not remembered), before anything is sent.
    for _ in range(2):
        with pytest.raises(MQClientException):
            await consumer.pull(MQ, "a >", 0, expression_type="SQL92")
    assert len(broker_a.of_code(RequestCode.PULL_MESSAGE)) == 1
