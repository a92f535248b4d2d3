"""Long polling: pulls with FLAG_SUSPEND park on PULL_NOT_FOUND and are answered by arrivals or timeouts."""

from __future__ import annotations

import asyncio
import socket

import pytest

from pocketmq.common.codec import decode_all
from pocketmq.remoting.codec import decode_frames, encode
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.transport import parse_address

FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
PARKED = FLAG_SUSPEND | FLAG_SUBSCRIPTION

pytestmark = pytest.mark.both_loops


def parked(broker) -> int:
    return broker.pull_request_hold_service.parked_count


async def test_parked_pull_returns_as_soon_as_a_message_arrives(cluster, broker, poll) -> None:
    consumer, producer = cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicLp", queues=2)
    loop = asyncio.get_running_loop()
    pull = asyncio.create_task(consumer.pull("G", "TopicLp", 1, 0, sys_flag=PARKED, suspend_ms=5000, timeout=10))
    await poll(lambda: parked(broker) == 1)
    assert not pull.done()
    started = loop.time()
    assert (await producer.send("TopicLp", b"wake up", queue_id=1)).code == ResponseCode.SUCCESS
    resp = await asyncio.wait_for(pull, 4.0)
    elapsed = loop.time() - started
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_all(resp.body)] == [b"wake up"]
    assert resp.ext_fields["nextBeginOffset"] == 1
    # Answered by the arrival, well before the 5 s suspend timeout.
    assert elapsed < 2.0
    assert parked(broker) == 0 and broker.pull_request_hold_service.wakeups == 1


async def test_a_woken_pull_is_answered_in_the_callback_that_wakes_it(cluster, broker, poll, dispatched) -> None:
    """The answer of a woken pull is on the socket when the wake-up returns: not left to a task, nor to the end of
    the loop turn, each a loop iteration later (bench/README.md, "Why the Java client's round trip is slower")."""
    producer = cluster.mq(broker)
    await producer.create_topic("TopicLpNow", queues=1)
    loop = asyncio.get_running_loop()
    host, port = parse_address(broker.address)
    with socket.socket() as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, (host, port))
        header = producer.pull_request("G", "TopicLpNow", 0, 0, sys_flag=PARKED, subscription="Wanted",
                                       suspend_ms=60_000)
        pull = RemotingCommand.request(RequestCode.PULL_MESSAGE, header)
        await loop.sock_sendall(sock, encode(pull))
        await poll(lambda: parked(broker) == 1)
        assert (await producer.send("TopicLpNow", b"other", tags="Other")).code == ResponseCode.SUCCESS
        await dispatched(broker)
        await asyncio.sleep(0.05)  # the arrival's report reaches the loop; the filter keeps the pull parked
        assert parked(broker) == 1
        with pytest.raises(BlockingIOError):
            sock.recv(65536)
        # The periodic re-check: any new data wakes a parked pull, which is run again at once.
        broker.pull_request_hold_service.check_hold_request()
        # No await since: the loop has not turned, and the answer is already on the socket.
        (answer,) = decode_frames(sock.recv(65536))
    assert answer.opaque == pull.opaque and answer.is_response
    assert answer.code != ResponseCode.SUCCESS and answer.ext_fields["nextBeginOffset"] == 1  # past the rejected one
    assert parked(broker) == 0 and broker.pull_request_hold_service.wakeups == 1


async def test_parked_pull_times_out_with_pull_not_found(cluster, broker) -> None:
    mq = cluster.mq(broker)
    await mq.create_topic("TopicLpIdle")
    loop = asyncio.get_running_loop()
    started = loop.time()
    resp = await mq.pull("G", "TopicLpIdle", 0, 0, sys_flag=PARKED, suspend_ms=150, timeout=4.0)
    assert resp.code == ResponseCode.PULL_NOT_FOUND
    assert loop.time() - started >= 0.14  # held for its suspend time, not answered at once
    assert resp.ext_fields["nextBeginOffset"] == 0
    assert parked(broker) == 0 and broker.pull_request_hold_service.wakeups == 0


async def test_without_suspend_flag_not_found_is_immediate(cluster, broker) -> None:
    mq = cluster.mq(broker)
    await mq.create_topic("TopicNoSuspend")
    resp = await mq.pull("G", "TopicNoSuspend", 0, 0, sys_flag=FLAG_SUBSCRIPTION, suspend_ms=5000)
    assert resp.code == ResponseCode.PULL_NOT_FOUND and parked(broker) == 0


async def test_parked_pull_ignores_arrivals_its_filter_rejects(cluster, broker, poll, dispatched) -> None:
    consumer, producer = cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicLpTags")
    pull = asyncio.create_task(
        consumer.pull("G", "TopicLpTags", 0, 0, sys_flag=PARKED, subscription="Wanted", suspend_ms=5000, timeout=10)
    )
    await poll(lambda: parked(broker) == 1)
    await producer.send("TopicLpTags", b"other", tags="Other")
    await dispatched(broker)
    await asyncio.sleep(0.05)  # give a (wrong) wake-up the chance to happen
    assert not pull.done() and parked(broker) == 1
    await producer.send("TopicLpTags", b"wanted", tags="Wanted")
    resp = await asyncio.wait_for(pull, 4.0)
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_all(resp.body)] == [b"wanted"]
    assert resp.ext_fields["nextBeginOffset"] == 2


async def test_only_the_queue_that_got_a_message_wakes(cluster, broker, poll) -> None:
    c0, c1, producer = cluster.mq(broker), cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicLpQ", queues=2)
    p0 = asyncio.create_task(c0.pull("G", "TopicLpQ", 0, 0, sys_flag=PARKED, suspend_ms=5000, timeout=10))
    p1 = asyncio.create_task(c1.pull("G", "TopicLpQ", 1, 0, sys_flag=PARKED, suspend_ms=5000, timeout=10))
    await poll(lambda: parked(broker) == 2)
    await producer.send("TopicLpQ", b"for q1", queue_id=1)
    assert (await asyncio.wait_for(p1, 4.0)).code == ResponseCode.SUCCESS
    assert not p0.done() and parked(broker) == 1
    await producer.send("TopicLpQ", b"for q0", queue_id=0)
    assert (await asyncio.wait_for(p0, 4.0)).code == ResponseCode.SUCCESS


async def test_many_arrivals_answer_every_parked_pull(cluster, broker, poll) -> None:
    consumers = [cluster.mq(broker) for _ in range(5)]
    producer = cluster.mq(broker)
    await producer.create_topic("TopicLpMany", queues=1)
    pulls = [
        asyncio.create_task(c.pull(f"G{i}", "TopicLpMany", 0, 0, sys_flag=PARKED, suspend_ms=5000, timeout=10))
        for i, c in enumerate(consumers)
    ]
    await poll(lambda: parked(broker) == 5)
    await asyncio.gather(*(producer.send("TopicLpMany", f"m{i}".encode()) for i in range(20)))
    results = await asyncio.wait_for(asyncio.gather(*pulls), 4.0)
    assert all(r.code == ResponseCode.SUCCESS and decode_all(r.body) for r in results)


async def test_a_pull_parking_behind_a_relaxed_dispatcher_wakes_it(cluster, broker, poll) -> None:
    # With no pull parked, a busy dispatcher sleeps the relaxed interval between rounds (60 s here). A pull
    # that parks must end that sleep: the message sent just before it, not dispatched yet, answers it.
    broker.store.reput_service.relaxed_poll_interval = 60.0
    consumer, producer = cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicLpRelaxed", queues=1)
    assert (await producer.send("TopicLpRelaxed", b"first")).code == ResponseCode.SUCCESS
    await poll(lambda: broker.store.dispatch_behind_bytes() == 0)  # it found work, so it now sleeps relaxed
    assert (await producer.send("TopicLpRelaxed", b"second")).code == ResponseCode.SUCCESS
    resp = await consumer.pull("G", "TopicLpRelaxed", 0, 1, sys_flag=PARKED, suspend_ms=30_000, timeout=10)
    assert resp.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_all(resp.body)] == [b"second"]


async def test_a_closed_channel_drops_its_parked_pull(cluster, broker, poll) -> None:
    mq = cluster.mq(broker)
    await mq.create_topic("TopicLpClose")
    pull = asyncio.create_task(mq.pull("G", "TopicLpClose", 0, 0, sys_flag=PARKED, suspend_ms=5000))
    await poll(lambda: parked(broker) == 1)
    await mq.client.close()
    await poll(lambda: parked(broker) == 0)
    with pytest.raises(RemotingError):
        await pull


async def test_short_polling_holds_for_short_polling_time(cluster) -> None:
    broker = await cluster.broker(long_polling_enable=False, short_polling_time=0.1)
    mq = cluster.mq(broker)
    await mq.create_topic("TopicSp")
    # The requested 60 s suspend is replaced by shortPollingTimeMills.
    loop = asyncio.get_running_loop()
    started = loop.time()
    resp = await mq.pull("G", "TopicSp", 0, 0, sys_flag=PARKED, suspend_ms=60_000, timeout=4.0)
    assert resp.code == ResponseCode.PULL_NOT_FOUND
    assert loop.time() - started >= 0.09


async def test_periodic_recheck_answers_a_pull_whose_arrival_was_missed(cluster, poll) -> None:
    broker = await cluster.broker(pull_request_hold_check_interval=0.05)
    consumer, producer = cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicRecheck")
    hold = broker.pull_request_hold_service
    # Stop arrival notifications reaching the hold service: only the re-check can answer now.
    broker.store.message_arriving_listener = None
    pull = asyncio.create_task(consumer.pull("G", "TopicRecheck", 0, 0, sys_flag=PARKED, suspend_ms=5000, timeout=10))
    await poll(lambda: hold.parked_count == 1)
    await producer.send("TopicRecheck", b"late")
    resp = await asyncio.wait_for(pull, 4.0)
    assert resp.code == ResponseCode.SUCCESS and hold.wakeups == 1


async def test_parked_pulls_are_bounded_and_hold_no_body(cluster, poll) -> None:
    # A peer may park pulls without end (RocketMQ parks any number): past maxPullPollingSize a pull that finds
    # nothing is answered at once, and a parked one keeps no body it was sent with.
    broker = await cluster.broker(max_pull_polling_size=2)
    consumer, producer = cluster.mq(broker), cluster.mq(broker)
    await producer.create_topic("TopicLpCap", queues=3)
    hold = broker.pull_request_hold_service
    pulls = []
    for queue_id in range(2):
        header = consumer.pull_request("G", "TopicLpCap", queue_id, 0, sys_flag=PARKED, suspend_ms=60_000)
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, header, body=b"x" * 100_000)
        pulls.append(asyncio.ensure_future(consumer.client.invoke(broker.address, request, 10)))
        await poll(lambda n=queue_id + 1: parked(broker) == n)
    assert all(r.request.body is None for rs in hold.pull_request_table.values() for r in rs)
    third = await consumer.pull("G", "TopicLpCap", 2, 0, sys_flag=PARKED, suspend_ms=60_000, timeout=2)
    assert third.code == ResponseCode.PULL_NOT_FOUND and parked(broker) == 2
    assert (await producer.send("TopicLpCap", b"wake", queue_id=0)).code == ResponseCode.SUCCESS
    assert (await asyncio.wait_for(pulls[0], 5)).code == ResponseCode.SUCCESS
    assert parked(broker) == 1 == sum(len(rs) for rs in hold.pull_request_table.values())
    again = asyncio.ensure_future(consumer.pull("G", "TopicLpCap", 2, 0, sys_flag=PARKED, suspend_ms=60_000,
                                                timeout=10))
    await poll(lambda: parked(broker) == 2)  # room again
    assert (await producer.send("TopicLpCap", b"wake", queue_id=2)).code == ResponseCode.SUCCESS
    assert (await asyncio.wait_for(again, 5)).code == ResponseCode.SUCCESS
    pulls[1].cancel()
