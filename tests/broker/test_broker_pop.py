"""RocketMQ 5's POP on the broker, over real sockets in both codecs: pop, ack, batch ack, change invisible time,
the revive service (retry with the attempt count, then the DLQ), long polling, peek, notification, polling info,
restarts, and a group's offsets shared between pops and pulls."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from broker_harness import MQ, Cluster
from pop_wire import FAST_REVIVE, PopClient, Popped, revive_records, set_retry_max_times

from pocketmq.broker import BrokerController
from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import parse_extra_info, parse_msg_offset_info, parse_start_offset_info
from pocketmq.common.pop_ack_constants import PROPERTY_FIRST_POP_TIME, PROPERTY_POP_CK
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.pop_header import (
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
)
from pocketmq.remoting.wire_protocol import WireProtocol
from pocketmq.storage.pop import PopCheckPoint

PROTOCOLS = pytest.mark.parametrize("protocol", [WireProtocol.MSGPACK, WireProtocol.NATIVE])
FAST = FAST_REVIVE


def client(cluster: Cluster, broker: BrokerController, protocol: WireProtocol = WireProtocol.MSGPACK) -> PopClient:
    rc = RemotingClient(wire_protocol=protocol)
    cluster.clients.append(rc)
    return PopClient(MQ(rc, broker.address), broker.broker_config.broker_name, protocol == WireProtocol.NATIVE)


async def send(pc: PopClient, topic: str, bodies: list[bytes], queue_id: int = 0, tags: str | None = None) -> None:
    for body in bodies:
        resp = await pc.mq.send(topic, body, queue_id=queue_id, tags=tags)
        assert resp.code == ResponseCode.SUCCESS, resp.remark


async def dispatched(broker: BrokerController) -> None:
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)


async def pop_until(pc: PopClient, group: str, topic: str, n: int, **kw: Any) -> Popped:
    """Pop (long polling) until a pop brings ``n`` messages; fails after 50 empty polls."""
    for _ in range(50):
        got = await pc.pop(group, topic, poll=500, **kw)
        if got.messages:
            assert len(got.messages) == n, got.bodies
            return got
    raise AssertionError("nothing came")


@PROTOCOLS
async def test_pop_answers_with_offsets_and_handles_and_ack_takes_the_messages(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    broker = await cluster.broker(**FAST)
    pc = client(cluster, broker, protocol)
    assert (await pc.mq.create_topic("PopT", 2)).code == ResponseCode.SUCCESS
    await send(pc, "PopT", [b"a", b"b"], queue_id=0)
    await send(pc, "PopT", [b"c"], queue_id=1)
    await dispatched(broker)
    got = await pc.pop("G", "PopT", max_nums=32, invisible=60_000)
    assert got.response.code == ResponseCode.SUCCESS, got.response.remark
    assert sorted(got.bodies) == [b"a", b"b", b"c"]
    h = got.header
    assert h is not None and h.rest_num == 0 and h.invisible_time == 60_000 and 0 <= h.revive_qid < 8
    assert parse_start_offset_info(h.start_offset_info) == {"0@0": 0, "0@1": 0}
    assert parse_msg_offset_info(h.msg_offset_info) == {"0@0": [0, 1], "0@1": [0]}
    for m, handle in zip(got.messages, got.handles, strict=True):
        e = parse_extra_info(handle)
        assert (e.queue_id, e.queue_offset, e.pop_time, e.broker_name) == (m.queue_id, m.queue_offset, h.pop_time,
                                                                         broker.broker_config.broker_name)
    # A second pop finds nothing (POLLING_TIMEOUT without a poll time); the group's offsets are committed once
    # the checkpoints are resolved (here: acked in the buffer, never written).
    again = await pc.pop("G", "PopT")
    assert again.response.code == ResponseCode.POLLING_TIMEOUT and not again.messages
    assert [broker.consumer_offset_manager.query_offset("G", "PopT", q) for q in (0, 1)] == [0, 0]
    await pc.ack_all("G", "PopT", got)
    assert [broker.consumer_offset_manager.query_offset("G", "PopT", q) for q in (0, 1)] == [2, 1]
    assert broker.pop_message_processor.buffer_merge.merged == 2
    await dispatched(broker)
    await broker.pop_revive_service.revive_all()
    assert broker.pop_revive_service.held_count == 0 and broker.pop_revive_service.revived == 0


async def test_without_the_buffer_a_pop_commits_at_once_and_writes_checkpoint_and_ack_records(
    cluster: Cluster,
) -> None:
    broker = await cluster.broker(enable_pop_buffer_merge=False, **FAST)
    pc = client(cluster, broker)
    await pc.mq.create_topic("PopW", 1)
    await send(pc, "PopW", [b"a", b"b"])
    await dispatched(broker)
    got = await pc.pop("G", "PopW")
    assert broker.consumer_offset_manager.query_offset("G", "PopW", 0) == 2
    await pc.ack("G", "PopW", got.handles[0])
    assert (await pc.batch_ack("G", "PopW", got.handles[1:])).code == ResponseCode.SUCCESS
    await dispatched(broker)
    records = revive_records(broker)
    assert sorted(m.tags for m in records) == ["ack", "bAck", "ck"]
    await broker.pop_revive_service.revive_all()
    assert broker.pop_revive_service.held_count == 0 and broker.pop_revive_service.revived == 0


@PROTOCOLS
async def test_a_message_not_acked_comes_back_after_its_invisible_time_with_the_attempt_count(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    broker = await cluster.broker(**FAST)
    pc = client(cluster, broker, protocol)
    await pc.mq.create_topic("PopR", 1)
    await send(pc, "PopR", [b"x", b"y"], tags="TagA")
    await dispatched(broker)
    first = await pc.pop("G", "PopR", invisible=300)
    assert first.bodies == [b"x", b"y"] and [m.reconsume_times for m in first.messages] == [0, 0]
    await pc.ack("G", "PopR", first.handles[1])  # y is done; x is not acked
    second = await pop_until(pc, "G", "PopR", 1, invisible=60_000)
    [m] = second.messages
    assert (m.body, m.topic, m.reconsume_times, m.tags) == (b"x", "PopR", 1, "TagA")
    assert m.properties[PROPERTY_FIRST_POP_TIME] == str(first.header.pop_time)  # type: ignore[union-attr]
    handle = parse_extra_info(m.properties[PROPERTY_POP_CK])  # read from the retry topic: its own handle
    assert handle.retry == "1" and handle.queue_offset == m.queue_offset
    assert (await pc.ack("G", "PopR", second.handles[0])).code == ResponseCode.SUCCESS
    await asyncio.sleep(0.1)
    await broker.pop_revive_service.revive_all()
    assert broker.pop_revive_service.revived == 1 and broker.pop_revive_service.held_count == 0
    assert (await pc.pop("G", "PopR")).messages == []


@PROTOCOLS
async def test_after_the_groups_retry_maximum_the_message_goes_to_the_dlq(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    broker = await cluster.broker(**FAST)
    pc = client(cluster, broker, protocol)
    await pc.mq.create_topic("PopD", 1)
    await set_retry_max_times(pc, "GD", 2)
    await send(pc, "PopD", [b"poison"])
    await dispatched(broker)
    attempts = []
    for _ in range(3):  # the first delivery and two retries, never acked
        got = await pop_until(pc, "GD", "PopD", 1, invisible=100)
        attempts.append(got.messages[0].reconsume_times)
    assert attempts == [0, 1, 2]
    for _ in range(1500):
        await asyncio.sleep(0.02)
        await dispatched(broker)
        dlq = decode_all(broker.store.get_message("t", "%DLQ%GD", 0, 0, 10).body)
        if dlq:
            break
    assert [(m.body, m.reconsume_times) for m in dlq] == [(b"poison", 3)]
    assert (await pc.pop("GD", "PopD", poll=200)).messages == []


async def test_two_consumers_popping_one_queue_never_get_the_same_message_while_it_is_invisible(
    cluster: Cluster,
) -> None:
    broker = await cluster.broker()
    producer = client(cluster, broker)
    await producer.mq.create_topic("Pop2", 1)
    bodies = [f"m{i}".encode() for i in range(200)]
    await send(producer, "Pop2", bodies)
    await dispatched(broker)
    seen: list[bytes] = []

    async def consume(pc: PopClient) -> None:
        while True:
            got = await pc.pop("G2", "Pop2", 0, max_nums=3, invisible=60_000)
            if not got.messages:
                return
            seen.extend(got.bodies)
            await pc.batch_ack("G2", "Pop2", got.handles[:1])  # some acked, most left invisible

    await asyncio.gather(consume(client(cluster, broker)), consume(client(cluster, broker)))
    assert sorted(seen) == sorted(bodies) and len(seen) == len(set(seen))


@PROTOCOLS
async def test_batch_ack_and_change_invisible_time(cluster: Cluster, protocol: WireProtocol) -> None:
    broker = await cluster.broker(**FAST)
    pc = client(cluster, broker, protocol)
    await pc.mq.create_topic("PopB", 1)
    await send(pc, "PopB", [b"1", b"2", b"3"])
    await dispatched(broker)
    got = await pc.pop("G", "PopB", invisible=60_000)
    assert (await pc.batch_ack("G", "PopB", got.handles[:2])).code == ResponseCode.SUCCESS
    # 3: visible again in 100 ms instead of a minute, under a new handle.
    resp, handle = await pc.change_invisible("G", "PopB", got.handles[2], 100)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert parse_extra_info(handle).invisible_time == 100
    back = await pop_until(pc, "G", "PopB", 1)
    assert back.bodies == [b"3"] and back.messages[0].reconsume_times == 1
    # A change then an ack with the new handle: it does not come back.
    resp, handle = await pc.change_invisible("G", "PopB", back.handles[0], 100)
    assert (await pc.ack("G", "PopB", handle)).code == ResponseCode.SUCCESS
    await asyncio.sleep(0.2)
    await broker.pop_revive_service.revive_all()
    assert (await pc.pop("G", "PopB")).messages == [] and broker.pop_revive_service.held_count == 0


@PROTOCOLS
async def test_a_parked_pop_is_answered_when_a_message_arrives(cluster: Cluster, protocol: WireProtocol) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, protocol)
    await pc.mq.create_topic("PopL", 4)
    parked = asyncio.ensure_future(pc.pop("GL", "PopL", poll=10_000))
    info = PollingInfoResponseHeader(0)
    for _ in range(1000):  # (a loaded machine parks it late)
        resp = await pc.mq.invoke(RequestCode.POLLING_INFO, PollingInfoRequestHeader("GL", "PopL", -1))
        info = resp.decode_header(PollingInfoResponseHeader)
        if info.polling_num:
            break
        await asyncio.sleep(0.01)
    assert info.polling_num == 1 and not parked.done()
    await send(pc, "PopL", [b"late"], queue_id=3)
    got = await asyncio.wait_for(parked, 5)
    assert got.bodies == [b"late"]
    # The poll time runs out: POLLING_TIMEOUT.
    empty = await pc.pop("GL", "PopL", poll=50)
    assert empty.response.code == ResponseCode.POLLING_TIMEOUT


@PROTOCOLS
async def test_peek_and_notification_do_not_take_messages(cluster: Cluster, protocol: WireProtocol) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, protocol)
    await pc.mq.create_topic("PopP", 1)
    note = NotificationRequestHeader("GP", "PopP", -1, 0, 0)
    resp = await pc.mq.invoke(RequestCode.NOTIFICATION, note)
    assert resp.decode_header(NotificationResponseHeader).has_msg is False
    await send(pc, "PopP", [b"p1", b"p2"])
    await dispatched(broker)
    resp = await pc.mq.invoke(RequestCode.NOTIFICATION, note)
    assert resp.decode_header(NotificationResponseHeader).has_msg is True
    for _ in range(2):
        resp = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("PopP", -1, 32, "GP"))
        assert resp.code == ResponseCode.SUCCESS and [m.body for m in decode_all(resp.body)] == [b"p1", b"p2"]
    got = await pc.pop("GP", "PopP", init_mode=0)
    assert got.bodies == [b"p1", b"p2"]
    resp = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("PopP", -1, 32, "GP"))
    assert resp.code == ResponseCode.PULL_NOT_FOUND


@PROTOCOLS
async def test_bad_pop_input_gets_rocketmq_error_codes(cluster: Cluster, protocol: WireProtocol) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, protocol)
    await pc.mq.create_topic("PopX", 2)
    await send(pc, "PopX", [b"x"])
    await dispatched(broker)
    assert (await pc.pop("G", "PopX", max_nums=33)).response.code == ResponseCode.INVALID_PARAMETER
    assert (await pc.pop("G", "PopX", 2)).response.code == ResponseCode.INVALID_PARAMETER
    assert (await pc.pop("G", "NoSuchTopic")).response.code == ResponseCode.TOPIC_NOT_EXIST
    got = await pc.pop("G", "PopX")
    for bad in ["nonsense", "1 2 3 4 5 broker 0 x", "0 1 2 3 7 broker 0 0"]:
        resp = await pc.mq.invoke(RequestCode.ACK_MESSAGE, _ack_header("PopX", bad, 0))
        assert resp.code == ResponseCode.INVALID_PARAMETER, (bad, resp)
    resp = await pc.mq.invoke(RequestCode.ACK_MESSAGE, _ack_header("PopX", got.handles[0], 77))
    assert resp.code == ResponseCode.NO_MESSAGE  # past the queue's end
    bad_qid = got.handles[0].split(" ")
    bad_qid[3] = "55"
    resp = await pc.mq.invoke(RequestCode.ACK_MESSAGE, _ack_header("PopX", " ".join(bad_qid), 0))
    assert resp.code == ResponseCode.INVALID_PARAMETER
    resp = await pc.mq.invoke(RequestCode.BATCH_ACK_MESSAGE, None, b"\xc1garbage")
    assert resp.code == ResponseCode.SYSTEM_ERROR  # an undecodable body, answered
    assert (await pc.ack("G", "PopX", got.handles[0])).code == ResponseCode.SUCCESS


def _ack_header(topic: str, extra_info: str, offset: int) -> Any:
    from pocketmq.remoting.pop_header import AckMessageRequestHeader

    return AckMessageRequestHeader("G", topic, 0, extra_info, offset)


async def test_what_was_popped_and_not_acked_comes_back_after_a_restart(cluster: Cluster) -> None:
    broker = await cluster.broker(revive_interval=0.02)
    pc = client(cluster, broker)
    await pc.mq.create_topic("PopS", 1)
    await send(pc, "PopS", [b"s1", b"s2"])
    await dispatched(broker)
    got = await pc.pop("GS", "PopS", invisible=1_000)
    await pc.ack("GS", "PopS", got.handles[0])
    broker = await cluster.restart(broker)
    pc = client(cluster, broker)
    back = await pop_until(pc, "GS", "PopS", 1)
    assert back.bodies == [b"s2"] and back.messages[0].reconsume_times == 1
    assert broker.consumer_offset_manager.query_offset("GS", "PopS", 0) == 2


async def test_pops_and_pulls_share_the_groups_offsets(cluster: Cluster) -> None:
    """A group that pulls part of a queue and pops the rest (and the other way round) gets every message once."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("PopO", 1)
    await send(pc, "PopO", [f"o{i}".encode() for i in range(6)])
    await dispatched(broker)
    pulled = await pc.mq.pull("GO", "PopO", 0, 0, max_nums=2)
    first = [m.body for m in decode_all(pulled.body)]
    await pc.mq.update_offset("GO", "PopO", 0, 2)
    popped = await pc.pop("GO", "PopO", max_nums=2)
    await pc.ack_all("GO", "PopO", popped)
    offset = (await pc.mq.query_offset("GO", "PopO", 0)).ext_fields["offset"]  # type: ignore[index]
    pulled = await pc.mq.pull("GO", "PopO", 0, int(offset), max_nums=32)
    rest = [m.body for m in decode_all(pulled.body)]
    assert first + popped.bodies + rest == [f"o{i}".encode() for i in range(6)]


async def test_a_buffered_checkpoint_not_acked_in_time_is_written_and_the_offset_moves(cluster: Cluster) -> None:
    # The checkpoint stays buffered 1 s: the offset read and the first ack below must come within that time, which
    # 50 ms did not always leave a loaded machine (the checkpoint written first, the first ack a record of its own).
    broker = await cluster.broker(pop_ck_stay_buffer_time=1.0, pop_buffer_scan_interval=0.01, **FAST)
    pc = client(cluster, broker)
    await pc.mq.create_topic("PopK", 1)
    await send(pc, "PopK", [b"k1", b"k2"])
    await dispatched(broker)
    got = await pc.pop("G", "PopK", invisible=60_000)
    assert broker.consumer_offset_manager.query_offset("G", "PopK", 0) == 0  # buffered
    await pc.ack("G", "PopK", got.handles[0])
    for _ in range(1000):
        if broker.consumer_offset_manager.query_offset("G", "PopK", 0) == 2:
            break
        await asyncio.sleep(0.01)
    assert broker.consumer_offset_manager.query_offset("G", "PopK", 0) == 2
    await pc.ack("G", "PopK", got.handles[1])  # after the write: an ack record
    await dispatched(broker)
    assert sorted(m.tags for m in revive_records(broker)) == ["ack", "ck"]
    await broker.pop_revive_service.revive_all()
    assert broker.pop_revive_service.held_count == 0 and broker.pop_message_processor.buffer_merge.merged == 0


@pytest.mark.parametrize("probability", [0, 100])
async def test_the_retry_topic_is_read_first_with_pop_from_retry_probability(
    cluster: Cluster, probability: int
) -> None:
    broker = await cluster.broker(pop_from_retry_probability=probability, **FAST)
    pc = client(cluster, broker)
    await pc.mq.create_topic("PopP", 1)
    await send(pc, "PopP", [b"old"])
    await dispatched(broker)
    await pc.pop("G", "PopP", invisible=50)  # not acked: revived into %RETRY%G_PopP
    for _ in range(1000):
        await asyncio.sleep(0.01)
        if broker.pop_revive_service.revived:
            break
    await send(pc, "PopP", [b"new"])
    await dispatched(broker)
    got = await pc.pop("G", "PopP", max_nums=1)
    assert got.bodies == ([b"old"] if probability == 100 else [b"new"])


async def pop_all_of(pc: PopClient, group: str, topic: str, want: set[bytes]) -> tuple[list[bytes], list[str]]:
    """Pops until ``want`` came: a pop answers with what is dispatched when it arrives, which under load may be
    the first of three messages sent just before."""
    bodies: list[bytes] = []
    handles: list[str] = []
    for _ in range(20):
        got = await pc.pop(group, topic, invisible=600_000, poll=2_000, init_mode=0)
        bodies += got.bodies
        handles += got.handles
        if want <= set(bodies):
            break
    return bodies, handles


async def test_a_broker_killed_with_pops_in_the_buffer_loses_no_message(tmp_path: Any, dev_broker: Any) -> None:
    """kill -9 of a `pocketmq dev` process (a real crash): the buffered checkpoints are gone, but the group's
    offset was never committed past them, so the restarted broker hands the messages out again."""
    store = tmp_path / "dev"
    conf = "brokerName=broker-a\nflushConsumerOffsetInterval=50\n"
    async with dev_broker(store, conf) as dev:
        pc = PopClient(dev.mq, "broker-a")
        assert (await dev.mq.create_topic("PopCrash", 1)).code == ResponseCode.SUCCESS
        for body in (b"c1", b"c2", b"c3"):
            assert (await dev.mq.send("PopCrash", body)).code == ResponseCode.SUCCESS
        bodies, handles = await pop_all_of(pc, "GC", "PopCrash", {b"c1", b"c2", b"c3"})
        assert bodies == [b"c1", b"c2", b"c3"]
        assert (await pc.ack("GC", "PopCrash", handles[0])).code == ResponseCode.SUCCESS
        await asyncio.sleep(0.3)  # offsets flushed meanwhile: none past the buffered pop
        dev.proc.kill()
        await dev.proc.wait()
    async with dev_broker(store, conf) as dev:
        pc = PopClient(dev.mq, "broker-a")
        again, _ = await pop_all_of(pc, "GC", "PopCrash", {b"c2", b"c3"})
        assert {b"c2", b"c3"} <= set(again)  # at least once: c1 may come again too


async def test_a_checkpoint_of_a_group_the_broker_does_not_hold_is_skipped_by_the_revive(cluster: Cluster) -> None:
    # CHANGE_INVISIBLE_TIME takes any group name; RocketMQ's revive skips a checkpoint whose group it does not hold
    # rather than make a retry topic (and a group) for each name it was given.
    broker = await cluster.broker(enable_pop_buffer_merge=False, revive_queue_num=1,
                                  **{**FAST, "revive_interval": 3600.0})
    mq = cluster.mq(broker)
    await mq.send("PT", b"m0", queue_id=0)
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    pop = PopClient(mq, broker.broker_config.broker_name)
    [handle] = (await pop.pop("G", "PT", 0, invisible=1, init_mode=1)).handles
    for i in range(5):
        resp, _ = await pop.change_invisible(f"NoSuchGroup{i}", "PT", handle, 0)
        assert resp.code == ResponseCode.SUCCESS
    revive = broker.pop_revive_service
    for _ in range(1000):  # until the six checkpoints are read and done with
        await revive.revive_all()
        if revive.revived and revive.held_count == 0:
            break
        await asyncio.sleep(0.01)
    assert revive.revived == 1  # G's own message, once
    topics = broker.topic_config_manager.topic_config_table
    assert [t for t in topics if "NoSuchGroup" in t] == []
    assert not [g for g in broker.subscription_group_manager.subscription_group_table if "NoSuchGroup" in g]
    assert revive.held_count == 0


async def test_parked_pops_in_all_are_bounded_by_max_pop_polling_size(cluster: Cluster) -> None:
    broker = await cluster.broker(max_pop_polling_size=2)
    mq = cluster.mq(broker)
    assert (await mq.create_topic("PCap", queues=4)).code == ResponseCode.SUCCESS
    pop = PopClient(mq, broker.broker_config.broker_name)
    parked = [asyncio.ensure_future(pop.pop(f"G{i}", "PCap", i, poll=30_000, init_mode=1)) for i in range(2)]
    waiting = broker.pop_message_processor.long_polling
    for _ in range(3000):
        if waiting.parked == 2:
            break
        await asyncio.sleep(0.01)
    assert waiting.parked == 2
    full = await pop.pop("G2", "PCap", 2, poll=30_000, init_mode=1)
    assert full.response.code == ResponseCode.POLLING_FULL
    await mq.send("PCap", b"m", queue_id=0)
    assert (await asyncio.wait_for(parked[0], 5)).bodies == [b"m"]
    assert waiting.parked == 1
    parked[1].cancel()


async def test_checkpoints_whose_group_names_run_into_their_offsets_are_kept_apart(cluster: Cluster) -> None:
    # Group G at queue 1 offset 13 and group G1 at queue 1 offset 3, popped in one millisecond: RocketMQ's key
    # ("TG113..." for both) let the second checkpoint take the first's place, and G's message never came back.
    broker = await cluster.broker(revive_interval=3600.0)
    merge = broker.pop_message_processor.buffer_merge
    name = broker.broker_config.broker_name
    g = PopCheckPoint(13, 1_000, 60_000, 1, 1, "T", "G", name, queue_offset_diff=[0])
    g1 = PopCheckPoint(3, 1_000, 60_000, 1, 1, "T", "G1", name, queue_offset_diff=[0])
    merge.add_ck(g, 0, 14)
    merge.add_ck(g1, 0, 4)
    assert {entry.ck.cid for entry in merge.buffer.values()} == {"G", "G1"}
