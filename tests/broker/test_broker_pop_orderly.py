"""Orderly (FIFO) POP on the broker, over real sockets: a queue blocked for the group until its batch is acked,
change invisible time counting attempts in place (orderCountInfo), and one queue's order kept across consumers,
a consumer that goes away mid-batch and a broker restart."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from broker_harness import MQ, Cluster
from pop_wire import PopClient

from pocketmq.broker import BrokerController
from pocketmq.common.extra_info_util import parse_extra_info, parse_order_count_info
from pocketmq.common.pop_ack_constants import POP_ORDER_REVIVE_QUEUE, PROPERTY_SHARDING_KEY
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.pop_header import NotificationRequestHeader, NotificationResponseHeader
from pocketmq.remoting.wire_protocol import WireProtocol

PROTOCOLS = pytest.mark.parametrize("protocol", [WireProtocol.MSGPACK, WireProtocol.NATIVE])


def client(cluster: Cluster, broker: BrokerController, protocol: WireProtocol = WireProtocol.MSGPACK) -> PopClient:
    rc = RemotingClient(wire_protocol=protocol)
    cluster.clients.append(rc)
    return PopClient(MQ(rc, broker.address), broker.broker_config.broker_name, protocol == WireProtocol.NATIVE)


async def send_group(pc: PopClient, topic: str, group: str, n: int, queue_id: int = 0) -> list[bytes]:
    bodies = [f"{group}-{i}".encode() for i in range(n)]
    for body in bodies:
        props = pc.mq.props(**{PROPERTY_SHARDING_KEY: group})
        resp = await pc.mq.send(topic, body, queue_id=queue_id, properties=props)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    return bodies


async def dispatched(broker: BrokerController) -> None:
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)


@PROTOCOLS
async def test_an_orderly_pop_blocks_the_queue_until_its_batch_is_acked(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    broker = await cluster.broker()
    a, b = client(cluster, broker, protocol), client(cluster, broker, protocol)
    await a.mq.create_topic("Fifo", 1)
    bodies = await send_group(a, "Fifo", "g1", 5)
    await dispatched(broker)
    first = await a.pop("GF", "Fifo", max_nums=2, order=True)
    assert first.bodies == bodies[:2] and first.header is not None
    assert first.header.revive_qid == POP_ORDER_REVIVE_QUEUE
    assert all(parse_extra_info(h).is_order for h in first.handles)
    assert parse_order_count_info(first.header.order_count_info) == {"0@0": 0}
    assert (await b.pop("GF", "Fifo", order=True)).messages == []  # blocked for the group
    assert (await b.pop("OtherGroup", "Fifo", order=True, max_nums=1)).bodies == bodies[:1]  # not for others
    waiting = asyncio.ensure_future(b.pop("GF", "Fifo", order=True, poll=10_000))
    await a.ack("GF", "Fifo", first.handles[0])
    await asyncio.sleep(0.05)
    assert not waiting.done()  # half the batch is still out
    await a.ack("GF", "Fifo", first.handles[1])
    second = await asyncio.wait_for(waiting, 5)
    assert second.bodies == bodies[2:]
    assert broker.consumer_offset_manager.query_offset("GF", "Fifo", 0) == 2


async def test_an_orderly_notification_answers_when_the_blocking_batch_is_acked_or_runs_out(
    cluster: Cluster,
) -> None:
    """NOTIFICATION with order=true parked on a queue an orderly batch blocks: answered hasMsg once the batch is
    acked, and once its invisible time runs out, not at its poll time (Apache 5.5.0 answers both within a
    second: ConsumerOrderInfoLockManager wakes the notification too)."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Fifo", 1)
    await send_group(pc, "Fifo", "g1", 4)
    await dispatched(broker)
    loop = asyncio.get_running_loop()

    async def notification(group: str) -> tuple[bool, float]:
        start = loop.time()
        resp = await pc.mq.invoke(RequestCode.NOTIFICATION, NotificationRequestHeader(
            group, "Fifo", -1, 30_000, 0, order=True), timeout=40)
        return resp.decode_header(NotificationResponseHeader).has_msg, loop.time() - start

    got = await pc.pop("GA", "Fifo", max_nums=2, order=True, invisible=60_000)
    waiting = asyncio.ensure_future(notification("GA"))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await pc.ack_all("GA", "Fifo", got)
    has_msg, waited = await asyncio.wait_for(waiting, 10)
    assert has_msg and waited < 10

    await pc.pop("GB", "Fifo", max_nums=2, order=True, invisible=300)
    has_msg, waited = await asyncio.wait_for(notification("GB"), 10)
    assert has_msg and waited < 10


@PROTOCOLS
async def test_change_invisible_time_on_an_orderly_batch_counts_attempts_in_place(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, protocol)
    await pc.mq.create_topic("Fifo", 1)
    bodies = await send_group(pc, "Fifo", "g1", 3)
    await dispatched(broker)
    got = await pc.pop("GF", "Fifo", max_nums=2, order=True, invisible=60_000)
    # A pop parked on the blocked queue is woken by the change (its wake-up was set for the old visible time).
    parked = asyncio.ensure_future(client(cluster, broker, protocol).pop("GF", "Fifo", max_nums=2, order=True,
                                                                        poll=60_000))
    while not broker.pop_message_processor.long_polling.polling_num("Fifo", "GF", -1):
        await asyncio.sleep(0.005)
    while time.time_ns() // 1_000_000 <= got.header.pop_time:
        await asyncio.sleep(0.001)
    for handle in got.handles:
        before = time.time_ns() // 1_000_000
        resp, new = await pc.change_invisible("GF", "Fifo", handle, 50)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        e = parse_extra_info(new)  # (the new handle: visible again 50 ms after the change, not after the pop)
        assert e.pop_time == got.header.pop_time
        assert before + 50 <= e.pop_time + e.invisible_time <= time.time_ns() // 1_000_000 + 50
    again = await asyncio.wait_for(parked, 20)  # (a bound for a loaded machine, well within the poll time)
    assert again.bodies == bodies[:2] and again.header is not None
    counts = parse_order_count_info(again.header.order_count_info)
    assert counts == {"0@qo0%0": 1, "0@qo0%1": 1, "0@0": 1}
    assert [m.reconsume_times for m in again.messages] == [0, 0]  # (the count travels in orderCountInfo)
    # Nothing went through a retry topic.
    assert broker.topic_config_manager.select_topic_config("%RETRY%GF_Fifo") is None
    await pc.ack_all("GF", "Fifo", again)
    # Acked already: nothing to change; the answer's header is left unset, every field 0, as 5.5.0's
    # (tests/apache/test_differential_pop_5.py), not a visible time counted from now.
    while time.time_ns() // 1_000_000 <= again.header.pop_time:
        await asyncio.sleep(0.001)
    resp, handle = await pc.change_invisible("GF", "Fifo", again.handles[0], 10_000)
    e = parse_extra_info(handle)
    assert resp.code == ResponseCode.SUCCESS and (e.pop_time, e.invisible_time) == (0, 0)
    assert (await pc.pop("GF", "Fifo", order=True)).bodies == bodies[2:]


async def test_a_batch_ack_of_an_orderly_batch_skips_an_offset_past_the_queues_max(cluster: Cluster) -> None:
    """As Apache 5.5.0's AckMessageProcessor: a batch ack's offsets outside the queue's min..max are left out,
    not answered MESSAGE_ILLEGAL as an offset of no batch is."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Fifo", 1)
    bodies = await send_group(pc, "Fifo", "g1", 3)
    await dispatched(broker)
    got = await pc.pop("GF", "Fifo", max_nums=2, order=True)
    fields = got.handles[1].split(" ")
    fields[7] = "4"  # (the queue's max offset is 3)
    resp = await pc.batch_ack("GF", "Fifo", [*got.handles, " ".join(fields)])
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert broker.consumer_offset_manager.query_offset("GF", "Fifo", 0) == 2
    assert (await pc.pop("GF", "Fifo", order=True)).bodies == bodies[2:]


async def test_a_parked_orderly_pop_wakes_when_the_first_of_its_blocked_queues_frees_up(cluster: Cluster) -> None:
    """A pop of every queue, each blocked by a batch, parks until the earliest of their visible times, not that of
    the queue it happened to look at first (the others stay blocked: what it then takes tells them apart)."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Fifo", 4)
    for q in range(4):
        await send_group(pc, "Fifo", f"g{q}", 1, queue_id=q)
    await dispatched(broker)
    got = await pc.pop("GF", "Fifo", order=True, invisible=60_000)
    assert sorted(m.queue_id for m in got.messages) == [0, 1, 2, 3]
    # The queue the parked pop looks at first: its processor's draws are seeded (a draw of 100 for the retry
    # topic, then the queue to start from), and the queue that frees up first is another one.
    broker.pop_message_processor._random = random.Random(7)
    draws = random.Random(7)
    draws.randrange(100)
    early = (draws.randrange(4) + 1) % 4
    for m, handle in zip(got.messages, got.handles, strict=True):
        resp, _ = await pc.change_invisible("GF", "Fifo", handle, 1_000 if m.queue_id == early else 10_000)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
    parked = await pc.pop("GF", "Fifo", order=True, invisible=60_000, poll=30_000)
    assert [m.queue_id for m in parked.messages] == [early]


async def test_a_message_group_stays_in_order_across_consumers_a_lost_consumer_and_a_restart(
    cluster: Cluster,
) -> None:
    broker = await cluster.broker()
    a = client(cluster, broker)
    await a.mq.create_topic("Fifo", 1)
    bodies = await send_group(a, "Fifo", "g1", 6)
    await dispatched(broker)
    got = await a.pop("GF", "Fifo", max_nums=3, order=True, invisible=5_000)  # (outlasts a slow restart)
    await a.ack("GF", "Fifo", got.handles[0])
    await cluster.clients[0].close()  # the consumer goes away mid-batch: 1 and 2 never acked
    broker = await cluster.restart(broker)
    b = client(cluster, broker)
    assert (await b.pop("GF", "Fifo", order=True)).messages == []  # still blocked after the restart
    delivered = [bodies[0]]
    while len(delivered) < len(bodies):
        got = await b.pop("GF", "Fifo", max_nums=2, order=True, poll=8_000, invisible=60_000)
        assert got.messages, "nothing came"
        delivered += got.bodies
        await b.ack_all("GF", "Fifo", got)
    assert delivered == bodies
