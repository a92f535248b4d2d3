"""RocketMQ 5's timer messages over real sockets: not delivered before their time and within the precision after
it; 10,000 across a broker restart arrive once each; a broker process killed with SIGKILL loses none. The
precision is set small (50-100 ms) so the tests wait seconds, not minutes; nothing asserts how late a message
may be beyond its slot, which is what the store decides (the slot before the delivery time)."""

from __future__ import annotations

import asyncio
import base64
import time
from collections import Counter

from broker_harness import MQ

from pocketmq.broker import BrokerController
from pocketmq.common.codec import decode, decode_all, decode_message_id
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import ViewMessageRequestHeader

GUARD = 120.0  # a bound for a loaded machine, not an expectation


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def wait_for(predicate, timeout: float = GUARD) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def pull_all(mq: MQ, topic: str, queue_id: int) -> list[bytes]:
    out: list[bytes] = []
    while True:
        resp = await mq.pull("G", topic, queue_id, len(out), max_nums=32)
        msgs = decode_all(resp.body) if resp.code == ResponseCode.SUCCESS else []
        if not msgs:
            return out
        out += [m.body for m in msgs]


async def delivered(mq: MQ, topic: str, queues: int) -> list[bytes]:
    return [body for q in range(queues) for body in await pull_all(mq, topic, q)]


async def test_timer_message_three_seconds_ahead(cluster) -> None:
    precision = 100
    mq = cluster.mq(await cluster.broker(timer_precision_ms=precision))
    deliver = now_ms() + 3_000
    resp = await mq.send("TimerT", b"at-3s", properties=MQ.props(TIMER_DELIVER_MS=str(deliver)))
    assert resp.code == ResponseCode.SUCCESS, resp
    while now_ms() < deliver - 20:  # not before its time
        assert await delivered(mq, "TimerT", 1) == []
        await asyncio.sleep(0.1)
    await wait_for(lambda: _has(mq, "TimerT"))
    resp = await mq.pull("G", "TimerT", 0, 0)
    [m] = decode_all(resp.body)
    assert m.body == b"at-3s" and m.store_timestamp >= deliver
    # The slot it waited in: the last one that starts before its time (so it comes within one precision).
    out = int(m.properties["TIMER_OUT_MS"])
    assert deliver - precision <= out < deliver and out % precision == 0
    assert int(m.properties["TIMER_DEQUEUE_MS"]) >= deliver


async def test_a_timer_delivery_is_stored_with_the_port_the_broker_listens_on(cluster) -> None:
    """The harness's broker listens on an ephemeral port (listen port 0). The timer's put names no store host, so
    the store's own was used: port 0, and an offset msg id that led viewMessage to 127.0.0.1:0."""
    broker = await cluster.broker(timer_precision_ms=50)
    mq = cluster.mq(broker)
    assert (await mq.send("TimerH", b"plain")).code == ResponseCode.SUCCESS
    assert (await mq.send("TimerH", b"timer", properties=MQ.props(TIMER_DELAY_MS="100"))).code == 0
    await wait_for(lambda: _count_one(mq, "TimerH", 2))
    msgs = {m.body: m for m in decode_all((await mq.pull("G", "TimerH", 0, 0)).body)}
    assert msgs[b"plain"].store_host == msgs[b"timer"].store_host == broker.address
    addr, offset = decode_message_id(msgs[b"timer"].offset_msg_id)
    viewed = await mq.invoke(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset), addr=addr)
    assert viewed.code == ResponseCode.SUCCESS and decode(viewed.body or b"").body == b"timer"


async def _has(mq: MQ, topic: str) -> bool:
    return len(await delivered(mq, topic, 1)) > 0


async def send_timers(mq: MQ, topic: str, n: int, first_due: int, spread_ms: int, queues: int = 4) -> None:
    for chunk in range(0, n, 500):
        answers = await asyncio.gather(*(
            mq.send(topic, b"%d" % i, queue_id=i % queues,
                    properties=MQ.props(TIMER_DELIVER_MS=str(first_due + i * spread_ms // n)))
            for i in range(chunk, min(chunk + 500, n))))
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}


async def test_ten_thousand_timers_across_a_restart_arrive_once_each(cluster) -> None:
    n = 10_000
    broker = await cluster.broker(timer_precision_ms=50)
    mq = cluster.mq(broker)
    await send_timers(mq, "TimerR", n, now_ms() + 4_000, 4_000)
    await wait_for(lambda: _at_least(broker, 1_000))
    broker = await cluster.restart(broker)  # in the middle of the deliveries
    mq = cluster.mq(broker)
    await wait_for(lambda: _count(mq, "TimerR", n))
    await asyncio.sleep(0.3)  # (a message delivered twice would show within a few slots)
    bodies = Counter(await delivered(mq, "TimerR", 4))
    assert len(bodies) == n and set(bodies.values()) == {1}


async def _at_least(broker: BrokerController, k: int) -> bool:
    timer = broker.store.timer_message_store
    return timer is not None and timer.delivered >= k


async def _count(mq: MQ, topic: str, n: int) -> bool:
    return len(await delivered(mq, topic, 4)) >= n


async def test_kill_9_loses_no_timer_message(tmp_path, dev_broker) -> None:
    """A broker process killed with SIGKILL mid-delivery: started again on its store, every timer message comes
    (RocketMQ's guarantee: at least once; those of the last moments before the kill may come twice)."""
    n = 3_000
    store = tmp_path / "dev"
    conf = "timerPrecisionMs=50\ntimerFlushIntervalMs=200\n"
    async with dev_broker(store, conf) as dev:
        await send_timers(dev.mq, "TimerK", n, now_ms() + 3_000, 3_000)
        await wait_for(lambda: _count(dev.mq, "TimerK", n // 5))
        dev.proc.kill()
        await dev.proc.wait()
    async with dev_broker(store, conf) as dev:
        await wait_for(lambda: _count(dev.mq, "TimerK", n))
        bodies = Counter(await delivered(dev.mq, "TimerK", 4))
        assert set(bodies) == {b"%d" % i for i in range(n)}


async def test_timer_refusals(cluster) -> None:
    mq = cluster.mq(await cluster.broker())
    resp = await mq.send("TimerX", properties=MQ.props(TIMER_DELAY_SEC=str(4 * 86400)))
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "max delay 259200000ms" in resp.remark
    off = cluster.mq(await cluster.broker("off", timer_wheel_enable=False))
    resp = await off.send("TimerX", properties=MQ.props(TIMER_DELAY_SEC="1"))
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark.startswith("accurate timer message is not enabled, timerWheelEnable is false")


async def test_a_recall_handle_reads_a_producers_timer_out_ms_as_java_does(cluster) -> None:
    """A message the producer gave TIMER_OUT_MS and REAL_TOPIC is stored as it is (no timer is read) and answered
    with a handle of that slot + 1 in Java's long arithmetic; none when Long.parseLong refuses the slot (5.5.0 then
    never answers the send)."""
    mq = cluster.mq(await cluster.broker())
    for out, stamp in (("5", "6"), ("+5", "6"), (str(2**63 - 1), str(-(2**63))), (" 5", None), ("1_0", None)):
        resp = await mq.send("TimerH", properties=MQ.props(TIMER_OUT_MS=out, REAL_TOPIC="TimerH", UNIQ_KEY="U"))
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        handle = resp.ext_fields.get("recallHandle")
        parts = base64.urlsafe_b64decode(handle).decode().split(" ") if handle else []
        assert parts == ([] if stamp is None else ["v1", "TimerH", parts[2], stamp, "U"]), (out, parts)


async def test_delay_levels_beside_timers(cluster) -> None:
    mq = cluster.mq(await cluster.broker(timer_precision_ms=50, message_delay_level="300ms 1s"))
    sent = now_ms()
    assert (await mq.send("TimerD", b"level", properties=MQ.props(DELAY="1"))).code == ResponseCode.SUCCESS
    assert (await mq.send("TimerD", b"timer", properties=MQ.props(TIMER_DELAY_MS="300"))).code == 0
    await wait_for(lambda: _count_one(mq, "TimerD", 2))
    msgs = decode_all((await mq.pull("G", "TimerD", 0, 0)).body)
    assert sorted(m.body for m in msgs) == [b"level", b"timer"]
    assert all(m.store_timestamp >= sent + 300 for m in msgs)
    timer = next(m for m in msgs if m.body == b"timer")
    assert timer.properties["REAL_TOPIC"] == "TimerD" and "TIMER_OUT_MS" in timer.properties


async def _count_one(mq: MQ, topic: str, n: int) -> bool:
    return len(await delivered(mq, topic, 1)) >= n
