"""A popped message the revive service cannot put back (its retry topic refuses it) is handed, as RocketMQ 5's
PopReviveService.rePutCK hands it, to a new checkpoint of its own (``rp`` = rePutTimes + 1) due the next rewrite
interval later, and the revive offset moves on past the old one: nothing is held in memory for good, and a restart
does not read the revive log again from the failed checkpoint. After the last interval it is dropped with
skipWhenCKRePutReachMaxTimes, else written again at the last interval. The intervals (RocketMQ: 10 s ... 2 h) run
in milliseconds here (popCkRewriteIntervals); revive rounds are run by hand."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from broker_harness import Cluster
from pop_wire import FAST_REVIVE, PopClient, read_queue, revive_records, settle_revive

from pocketmq.broker import BrokerController
from pocketmq.broker.config import BrokerConfig, BrokerConfigError
from pocketmq.common.mix_all import get_dlq_topic
from pocketmq.common.pop_ack_constants import CK_TAG, REVIVE_GROUP
from pocketmq.remoting.codes import ResponseCode
from pocketmq.storage.pop import PopCheckPoint

RE_PUT: dict[str, Any] = dict(FAST_REVIVE, enable_pop_buffer_merge=False, revive_queue_num=1,
                              revive_interval=3600.0, pop_ck_rewrite_intervals="100ms 200ms")
LOGGER = "pocketmq.broker.pop.pop_revive_service"


def committed(broker: BrokerController) -> int:
    return broker.consumer_offset_manager.query_offset(REVIVE_GROUP, broker.pop_revive_service.revive_topic, 0)


def written_cks(broker: BrokerController) -> list[PopCheckPoint]:
    """Every checkpoint written to the revive log so far (delivered or still in the timer wheel), by rePutTimes."""
    cks = [PopCheckPoint.decode(m.body) for m in revive_records(broker) if m.tags == CK_TAG]
    return sorted(cks, key=PopCheckPoint.parse_re_put_times)


def log_records(broker: BrokerController) -> list[Any]:
    return read_queue(broker.store, broker.pop_revive_service.revive_topic, 0)


async def rounds_until(broker: BrokerController, done: Callable[[], bool], guard: float = 30.0) -> None:
    """Revive rounds until ``done()`` (``guard``: a bound for a loaded machine, not an expectation)."""
    deadline = time.monotonic() + guard
    while not done():
        assert time.monotonic() < deadline, f"not done; {broker.pop_revive_service.held_count} held"
        await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
        await broker.pop_revive_service.revive_all()
        await asyncio.sleep(0.01)


async def popped(cluster: Cluster, broker: BrokerController, group: str, topic: str, **props: str) -> PopClient:
    """``topic`` with one message (``props`` its extra properties), popped by ``group`` for 200 ms and not acked."""
    mq = cluster.mq(broker)
    assert (await mq.create_topic(topic, 1)).code == ResponseCode.SUCCESS
    resp = await mq.send(topic, b"m", queue_id=0, properties=mq.props(tags="a", **props))
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    pc = PopClient(mq, broker.broker_config.broker_name)
    assert (await pc.pop(group, topic, 0, max_nums=1, invisible=200)).bodies == [b"m"]
    return pc


def nothing_put_back(broker: BrokerController, group: str, topic: str) -> None:
    store = broker.store
    assert store.get_max_offset_in_queue(broker.pop_message_processor.retry_topic(topic, group), 0) == 0
    assert store.get_max_offset_in_queue(get_dlq_topic(group), 0) == 0  # (RocketMQ never sends it to the DLQ)
    assert broker.pop_revive_service.revived == 0


async def test_properties_too_big_for_the_retry_topic_are_re_put_twice_then_dropped(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    # 32,700 bytes of properties pass the send and fail the revive's put once it adds 1ST_POP_TIME, RETRY_TOPIC
    # and ORIGIN_MESSAGE_ID (PROPERTIES_SIZE_EXCEEDED). Before, the checkpoint was held and tried every round for
    # ever, and the revive offset never passed it.
    caplog.set_level(logging.INFO, logger=LOGGER)
    broker = await cluster.broker(**RE_PUT, skip_when_ck_re_put_reach_max_times=True)
    await popped(cluster, broker, "GB", "PopBigProps", BIG="x" * 32700)
    await settle_revive(broker, guard=30.0)

    cks = written_cks(broker)
    # RocketMQ's new checkpoint: that one message (so its offset, n 1, d [0], bm 0), the pop time kept, the
    # invisible time + the next interval, rePutTimes + 1 as a string.
    assert [(ck.start_offset, ck.num, ck.queue_offset_diff, ck.bit_map, ck.pop_time) for ck in cks] == [
        (0, 1, [0], 0, cks[0].pop_time)] * 3
    assert [(ck.re_put_times, ck.invisible_time) for ck in cks] == [(None, 200), ("1", 300), ("2", 500)]
    revive = broker.pop_revive_service
    assert revive.ck_re_puts == 2 and revive.held_count == 0
    records = log_records(broker)
    assert len(records) == 3 and committed(broker) == 2  # every checkpoint processed, none read again
    messages = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert sum("put failed (PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)" in m for m in messages) == 3
    assert sum(m.startswith("rePut CK reach max times, drop it.") for m in messages) == 1
    nothing_put_back(broker, "GB", "PopBigProps")


async def test_a_retry_topic_too_long_is_re_put_at_the_last_interval_for_as_long_as_it_fails(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    # A 255-character group popping a 127-character topic: a retry topic of 390 characters, MESSAGE_ILLEGAL.
    # skipWhenCKRePutReachMaxTimes is false (RocketMQ's default): past the intervals, the last one over again.
    caplog.set_level(logging.WARNING, logger=LOGGER)
    broker = await cluster.broker(**dict(RE_PUT, pop_ck_rewrite_intervals="100ms 400ms"))
    group, topic = "G" * 255, "T" * 127
    await popped(cluster, broker, group, topic)
    revive = broker.pop_revive_service
    await rounds_until(broker, lambda: len(written_cks(broker)) >= 5)

    cks = written_cks(broker)
    assert [(ck.re_put_times, ck.invisible_time) for ck in cks] == [
        (None, 200), ("1", 300), ("2", 700), ("3", 1100), ("4", 1500)]
    assert {(ck.start_offset, ck.num, ck.topic, ck.cid) for ck in cks} == {(0, 1, topic, group)}
    # The four revived are behind the committed revive offset; the fifth waits in the timer wheel, or, on a loaded
    # machine, is in the log already (a checkpoint is delivered an ack interval before it is due), not yet read.
    assert revive.ck_re_puts == 4 and revive.held_count == 0
    in_log = [PopCheckPoint.decode(r.body).re_put_times for r in log_records(broker)]
    assert in_log in ([None, "1", "2", "3"], [None, "1", "2", "3", "4"]) and committed(broker) == 3
    assert not any("drop it" in r.getMessage() for r in caplog.records)
    assert sum("put failed (PutMessageStatus.MESSAGE_ILLEGAL)" in r.getMessage() for r in caplog.records) == 4
    nothing_put_back(broker, group, topic)


async def test_a_re_put_checkpoint_puts_the_message_back_once_its_retry_topic_takes_it(cluster: Cluster) -> None:
    # pocketmq refuses a put into a retry topic that is not writable (RocketMQ's store would take it): a failure
    # that can end, and the re-put checkpoint gives the message back then, with reconsumeTimes 1.
    broker = await cluster.broker(**RE_PUT)
    retry = broker.pop_message_processor.retry_topic("PopLater", "GR")
    mq = cluster.mq(broker)
    assert (await mq.create_topic(retry, 1, perm=4)).code == ResponseCode.SUCCESS
    pc = await popped(cluster, broker, "GR", "PopLater")
    revive = broker.pop_revive_service
    await rounds_until(broker, lambda: len(written_cks(broker)) >= 2)
    assert revive.ck_re_puts == 1 and revive.held_count == 0 and committed(broker) == 0
    assert (await mq.create_topic(retry, 1, perm=6)).code == ResponseCode.SUCCESS
    await settle_revive(broker, guard=30.0)
    assert revive.revived == 1 and [ck.re_put_times for ck in written_cks(broker)][-1] is not None
    assert committed(broker) == len(log_records(broker)) - 1
    got = await pc.pop("GR", "PopLater", max_nums=1, invisible=60_000, poll=5_000)
    assert got.bodies == [b"m"] and got.messages[0].reconsume_times == 1


def test_re_put_times_are_rocketmq_s_rp_string_and_the_intervals_a_setting() -> None:
    # RocketMQ 5.3.3 / 5.5.0 PopCheckPoint: @JSONField(name = "rp") String rePutTimes; parseRePutTimes gives 0 for
    # none and Byte.MAX_VALUE for what is no number. A checkpoint fastjson wrote (its fields in name order):
    apache = (b'{"bm":0,"bn":"broker-a","c":"G","d":[0],"it":10300,"n":1,"pt":1700000000000,"q":0,"ro":0,'
              b'"rp":"1","so":5,"t":"T"}')
    ck = PopCheckPoint.decode(apache)
    assert (ck.re_put_times, ck.parse_re_put_times(), ck.start_offset, ck.revive_time) == ("1", 1, 5, 1700000010300)
    ck.re_put_times = "2"
    assert json.loads(ck.encode())["rp"] == "2"  # a string, as Apache's field is
    assert PopCheckPoint.decode(apache.replace(b',"rp":"1"', b"")).parse_re_put_times() == 0
    assert PopCheckPoint.decode(apache.replace(b'"rp":"1"', b'"rp":"x"')).parse_re_put_times() == 127
    assert BrokerConfig.from_properties_text("popCkRewriteIntervals=50ms 1s 2m").pop_ck_rewrite_intervals == \
        "50ms 1s 2m"
    with pytest.raises(BrokerConfigError, match="popCkRewriteIntervals"):
        BrokerConfig(pop_ck_rewrite_intervals="10 s")
