"""Many long-polling pulls parked on one connection whose peer does not read, then one big message: each parked pull
wakes, but what the broker holds for the connection stays about one answer past the write high-water mark (it took
N answers of the message: 3,000 parked pulls and one 1 MiB message cost 3 GB), and a peer that then reads gets
every answer, with the message. Parked pops of such a connection are not woken: another consumer of the group
pops what arrives, or, when none waits, the parked pop once its connection drains."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from broker_harness import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from pop_wire import PopClient

from pocketmq.common.codec import decode_all
from pocketmq.remoting.codec import FrameDecoder, encode
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.pop_header import PopMessageRequestHeader
from pocketmq.remoting.transport import parse_address

PARKED = 200
BODY = b"m" * 100_000  # 200 answers of it: 20 MB held before the fix
BIG = b"b" * 1_000_000  # (a few answers of it fill the socket's buffers: those after wait for the peer)


async def connect_without_reading(broker) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = parse_address(broker.address)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    return await asyncio.open_connection(sock=sock, limit=1 << 20)


def channel_of(broker, writer: asyncio.StreamWriter):
    local = "{}:{}".format(*writer.get_extra_info("sockname")[:2])
    (ch,) = [c for c in broker.remoting_server.channels if c.remote_address == local]
    return ch


async def broker_with_filler(cluster, dispatched, topic: str, queues: tuple[int, ...] = (0,)):
    """A broker that keeps idle connections, and a message of BODY in each of ``queues`` of ``topic``, whose pulls
    (``filling``) pause the writes of a connection that does not read them."""
    broker = await cluster.broker(server_channel_max_idle_time=0)
    mq = cluster.mq(broker)
    for queue_id in queues:
        assert (await mq.send(topic, BODY, queue_id=queue_id)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    return broker, mq


def filling(mq, topic: str, queue_id: int = 0, count: int = 100) -> list[RemotingCommand]:
    return [RemotingCommand.request(RequestCode.PULL_MESSAGE, mq.pull_request("G", topic, queue_id, 0))
            for _ in range(count)]


async def pops_parked_on_a_paused_connection(broker, mq, poll, topic: str, count: int):
    """``count`` pops of ``topic`` parked (60 s) on a connection that does not read, behind pulls of TopicFiller
    that pause its writes: (reader, writer, its channel, the pops, the pulls)."""
    await mq.create_topic(topic, 1)
    reader, writer = await connect_without_reading(broker)
    header = PopMessageRequestHeader("G", topic, 0, 32, 60_000, 60_000, int(time.time() * 1000), 0)
    pops = [RemotingCommand.request(RequestCode.POP_MESSAGE, header) for _ in range(count)]
    fill = filling(mq, "TopicFiller")
    writer.write(b"".join(encode(p) for p in [*pops, *fill]))
    ch = channel_of(broker, writer)
    await poll(lambda: ch.write_paused and broker.pop_message_processor.long_polling.parked == count)
    return reader, writer, ch, pops, fill


async def read_answers(reader: asyncio.StreamReader, count: int, ch, bound: int) -> list[RemotingCommand]:
    """``count`` answers, read slowly; the broker's output for the connection stays under ``bound`` meanwhile."""
    decoder = FrameDecoder()
    answers: list[RemotingCommand] = []
    while len(answers) < count:
        decoder.receive_data(await asyncio.wait_for(reader.read(32 * 1024), 10))
        answers.extend(decoder)
        assert ch.unwritten_bytes < bound, ch.unwritten_bytes
    return answers


@pytest.mark.parametrize("expression", [("TAG", "*"), ("SQL92", "a = 1")], ids=["tag", "sql92-on-a-pull-thread"])
async def test_parked_pulls_of_a_connection_that_does_not_read_hold_one_answer_past_the_mark(
    cluster, poll, dispatched, expression
) -> None:
    # SQL92 filters read on a pull thread: the answer comes back to a connection that may have stopped taking any.
    expression_type, subscription = expression
    broker = await cluster.broker(enable_property_filter=True, server_channel_max_idle_time=0)
    mq = cluster.mq(broker)
    assert (await mq.send("TopicParked", b"first", properties=mq.props(a="1"))).code == ResponseCode.SUCCESS
    await dispatched(broker)
    hold = broker.pull_request_hold_service
    reader, writer = await connect_without_reading(broker)
    header = mq.pull_request("G", "TopicParked", 0, 1, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
                             subscription=subscription, expression_type=expression_type, suspend_ms=60_000)
    pulls = [RemotingCommand.request(RequestCode.PULL_MESSAGE, header) for _ in range(PARKED)]
    writer.write(b"".join(encode(p) for p in pulls))
    await poll(lambda: hold.parked_count == PARKED)
    ch = channel_of(broker, writer)

    assert (await mq.send("TopicParked", BODY, properties=mq.props(a="1"))).code == ResponseCode.SUCCESS
    await poll(lambda: not hold.pull_request_table)  # every parked pull woken
    await poll(lambda: ch.write_paused)
    bound = broker.broker_config.write_buffer_high_water_mark + 2 * len(BODY)
    assert ch.unwritten_bytes < bound, ch.unwritten_bytes
    assert hold.parked_count > 0  # the rest wait for the connection to take what it was given

    # A slow but honest reader: every pull is answered, with the message, and the broker holds no more meanwhile.
    answers = await read_answers(reader, PARKED, ch, bound)
    assert sorted(a.opaque for a in answers) == sorted(p.opaque for p in pulls)
    for a in answers:
        assert a.code == ResponseCode.SUCCESS, (a.code, a.remark)
        assert [m.body for m in decode_all(a.body)] == [BODY]
    assert hold.parked_count == 0
    writer.close()


async def test_a_woken_pull_read_while_its_connection_paused_counts_only_when_its_answer_is_sent(
    cluster, poll, dispatched
) -> None:
    # Its answer was made, counted in the get stats and its pull offset moved, then dropped (the connection had
    # paused during the read on a pull thread): counted twice once read again, the pull offset ahead of what went.
    broker = await cluster.broker(enable_property_filter=True, server_channel_max_idle_time=0)
    mq = cluster.mq(broker)
    assert (await mq.send("TopicCounted", b"first", properties=mq.props(a="1"))).code == ResponseCode.SUCCESS
    await dispatched(broker)
    hold = broker.pull_request_hold_service
    reader, writer = await connect_without_reading(broker)
    groups = [f"G{i}" for i in range(40)]
    pulls = [RemotingCommand.request(RequestCode.PULL_MESSAGE, mq.pull_request(
        g, "TopicCounted", 0, 1, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, subscription="a = 1",
        expression_type="SQL92", suspend_ms=60_000)) for g in groups]
    writer.write(b"".join(encode(p) for p in pulls))
    await poll(lambda: hold.parked_count == len(groups))
    ch = channel_of(broker, writer)

    # All woken at once, each read on a pull thread: the answers that pause the connection leave the rest waiting.
    assert (await mq.send("TopicCounted", BIG, properties=mq.props(a="1"))).code == ResponseCode.SUCCESS
    await poll(lambda: ch.write_paused and not hold.pull_request_table and not any(
        t.get_name() == "pull-wakeup" for t in asyncio.all_tasks()))
    offsets, stats = broker.consumer_offset_manager, broker.broker_stats_manager.sets["GROUP_GET_NUMS"]
    waiting = len(hold.deferred[ch])
    assert 0 < waiting < len(groups)
    # (1: where each parked, the empty read's next offset; 2: past the message, for each answer sent)
    pull_offsets = [offsets.query_pull_offset(g, "TopicCounted", 0) for g in groups]
    assert sorted(pull_offsets) == [1] * waiting + [2] * (len(groups) - waiting)
    assert sum(stats.total(f"TopicCounted@{g}") for g in groups) == len(groups) - waiting

    bound = broker.broker_config.write_buffer_high_water_mark + 2 * len(BIG)
    answers = await read_answers(reader, len(groups), ch, bound)
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * len(groups)
    assert [offsets.query_pull_offset(g, "TopicCounted", 0) for g in groups] == [2] * len(groups)
    assert [stats.total(f"TopicCounted@{g}") for g in groups] == [1] * len(groups)
    writer.close()


async def test_a_pull_that_times_out_while_its_connection_does_not_read_is_answered_once_it_reads(
    cluster, poll, dispatched
) -> None:
    broker, mq = await broker_with_filler(cluster, dispatched, "TopicTimedOut", (0, 1))
    hold = broker.pull_request_hold_service
    reader, writer = await connect_without_reading(broker)
    parking = mq.pull_request("G", "TopicTimedOut", 0, 1, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, suspend_ms=200)
    parked = [RemotingCommand.request(RequestCode.PULL_MESSAGE, parking) for _ in range(5)]
    # Then answers enough to pause the connection's writes before the parked pulls' time is up.
    fill = filling(mq, "TopicTimedOut", 1)
    writer.write(b"".join(encode(p) for p in parked + fill))
    ch = channel_of(broker, writer)
    await poll(lambda: ch.write_paused and not hold.pull_request_table)  # timed out, the writes paused
    assert hold.parked_count == 5 and ch.unwritten_bytes < 1_000_000  # deferred, not answered

    answers = {a.opaque: a for a in await read_answers(reader, 105, ch, 1_000_000)}
    assert [answers[p.opaque].code for p in parked] == [ResponseCode.PULL_NOT_FOUND] * 5
    assert [answers[p.opaque].code for p in fill] == [ResponseCode.SUCCESS] * 100
    assert hold.parked_count == 0
    writer.close()


async def test_parked_pops_of_a_connection_that_does_not_read_leave_arrivals_to_consumers_that_do(
    cluster, poll, dispatched
) -> None:
    # Woken, a parked pop of a connection whose writes are paused popped a batch into output nobody took: the
    # messages, invisible meanwhile, were lost to the group's other consumers until their invisible time ran out.
    broker, mq = await broker_with_filler(cluster, dispatched, "TopicFiller")
    popping = broker.pop_message_processor.long_polling
    reader, writer, ch, _, _ = await pops_parked_on_a_paused_connection(broker, mq, poll, "TopicPopped", 5)

    sent = [b"p%d" % i for i in range(10)]
    for body in sent:
        assert (await mq.send("TopicPopped", body, queue_id=0)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    other = PopClient(mq, broker.broker_config.broker_name)
    got: list[bytes] = []
    while len(got) < len(sent):
        popped = await other.pop("G", "TopicPopped", 0, invisible=60_000, poll=2_000)
        assert popped.bodies, "a message was popped into the connection that does not read"
        got += popped.bodies
    assert sorted(got) == sorted(sent) and popping.parked == 5
    writer.close()


async def test_a_message_for_a_pop_parked_on_a_paused_connection_is_popped_once_the_connection_drains(
    cluster, poll, dispatched
) -> None:
    # An arrival skipped the pop (its connection paused a moment) and nothing told it again: the message waited for
    # the pop's timer, its whole poll time on a quiet queue, however soon the connection drained.
    broker, mq = await broker_with_filler(cluster, dispatched, "TopicFiller")
    popping = broker.pop_message_processor.long_polling
    reader, writer, ch, [pop], fill = await pops_parked_on_a_paused_connection(broker, mq, poll, "TopicWaited", 1)

    assert (await mq.send("TopicWaited", b"waited", queue_id=0)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    await mq.create_topic("TopicRoundTrip", 1)  # (a round trip: the loop has taken the arrival by its end)
    assert ch.write_paused and popping.parked == 1  # not woken into output its peer does not take

    answers = {a.opaque: a for a in await read_answers(reader, 1 + len(fill), ch, 1_000_000)}
    assert [answers[p.opaque].code for p in fill] == [ResponseCode.SUCCESS] * len(fill)
    popped = answers[pop.opaque]
    assert popped.code == ResponseCode.SUCCESS, (popped.code, popped.remark)
    assert [m.body for m in decode_all(popped.body)] == [b"waited"]
    assert popping.parked == 0
    writer.close()


async def test_a_drain_ends_when_its_paused_connection_is_closed(cluster, poll, dispatched) -> None:
    # A graceful close of a connection whose peer does not read never completes; what waited for the connection to
    # drain (deferred pulls, a pop's re-notification) waited until the idle timeout aborted it.
    broker, mq = await broker_with_filler(cluster, dispatched, "TopicClosed")
    reader, writer = await connect_without_reading(broker)
    writer.write(b"".join(encode(p) for p in filling(mq, "TopicClosed")))
    ch = channel_of(broker, writer)
    await poll(lambda: ch.write_paused)
    draining = asyncio.ensure_future(ch.drain())
    await asyncio.sleep(0.05)
    assert not draining.done()
    ch.close()
    await asyncio.wait_for(draining, 10)
    writer.close()
