"""CHANGE_MESSAGE_INVISIBLETIME in quick succession, with the pop buffer merge on (pocketmq's default): a new
checkpoint never shares its merge key with the one it replaces; POLLING_INFO's refusals; the v1 retry topic after a
switch to v2; a checkpoint revived out of log order across a restart; the offset a first pop of an empty queue
commits."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from broker_harness import MQ, Cluster
from pop_wire import FAST_REVIVE, PopClient, settle_revive

from pocketmq.common.extra_info_util import parse_extra_info
from pocketmq.common.pop_ack_constants import CONSUME_INIT_MODE_MAX, CONSUME_INIT_MODE_MIN
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.pop_header import PollingInfoRequestHeader, PollingInfoResponseHeader


def pop_client(cluster: Cluster, broker: Any) -> PopClient:
    """A PopClient of its own connection to ``broker``, closed with the cluster."""
    rc = RemotingClient()
    cluster.clients.append(rc)
    return PopClient(MQ(rc, broker.address), broker.broker_config.broker_name)


async def test_changes_within_one_millisecond_each_leave_a_checkpoint_that_revives(cluster: Cluster) -> None:
    # Within a millisecond, the new checkpoint had the key of the one it replaced and took its place; the old
    # one's ack then marked it done, and the message never came back.
    broker = await cluster.broker(revive_interval=0.02)
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("Changed", 1)
    bodies = [b"c%d" % i for i in range(20)]
    for body in bodies:
        assert (await pc.mq.send("Changed", body, queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    for _ in bodies:
        popped = await pc.pop("G", "Changed", 0, max_nums=1, invisible=60_000)
        first, handle1 = await pc.change_invisible("G", "Changed", popped.handles[0], 300)
        second, handle2 = await pc.change_invisible("G", "Changed", handle1, 300)
        assert first.code == second.code == ResponseCode.SUCCESS
        times = [parse_extra_info(h).pop_time for h in (popped.handles[0], handle1, handle2)]
        assert times == sorted(set(times))  # each checkpoint later than the one it replaces
    back: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(back) < len(bodies) and time.monotonic() < deadline:
        back += [m.body for m in (await pc.pop("G", "Changed", -1, invisible=60_000, poll=300)).messages]
    assert sorted(back) == sorted(bodies)


async def test_polling_info_refuses_what_a_pop_would(cluster: Cluster) -> None:
    # (As RocketMQ's PollingInfoProcessor; it answered a count for a write-only topic and a disabled group.)
    broker = await cluster.broker()
    rc = RemotingClient()
    cluster.clients.append(rc)
    mq = MQ(rc, broker.address)
    await mq.create_topic("WriteOnly", 1, perm=2)
    await mq.create_topic("Readable", 1)
    body = encode_body(SubscriptionGroupConfig("Disabled", consume_enable=False), rc.body_dialect)
    assert (await mq.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)).code == ResponseCode.SUCCESS
    answers = [await mq.invoke(RequestCode.POLLING_INFO, PollingInfoRequestHeader(group, topic, 0))
               for group, topic in (("G", "WriteOnly"), ("Disabled", "Readable"), ("G", "Readable"))]
    assert [(a.code, a.remark) for a in answers[:2]] == [
        (ResponseCode.NO_PERMISSION, "the topic[WriteOnly] peeking message is forbidden"),
        (ResponseCode.NO_PERMISSION, "subscription group no permission, Disabled")]
    assert answers[2].decode_header(PollingInfoResponseHeader).polling_num == 0


async def popped_unacked(pc: PopClient, broker: Any, topic: str, body: bytes) -> Any:
    """``topic`` made with one message, ``body``, popped by group G for 300 ms and not acked: the pop's answer."""
    await pc.mq.create_topic(topic, 1)
    assert (await pc.mq.send(topic, body, queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    popped = await pc.pop("G", topic, -1, invisible=300)
    assert popped.bodies == [body]
    return popped


async def pop_until_back(pc: PopClient, group: str, topic: str, guard: float = 20.0) -> list[tuple[bytes, int]]:
    """Pops (long polling) until something comes: its bodies and reconsume times."""
    got: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + guard
    while not got:
        assert time.monotonic() < deadline, "never came back"
        got += [(m.body, m.reconsume_times) for m in
                (await pc.pop(group, topic, -1, invisible=60_000, poll=200)).messages]
    return got


async def test_after_a_switch_to_retry_topic_v2_the_v1_retry_topic_is_still_read(cluster: Cluster) -> None:
    # retrieveMessageFromPopRetryTopicV1 (RocketMQ's default): what was revived before the switch comes back.
    broker = await cluster.broker(revive_interval=0.02, enable_retry_topic_v2=False)
    pc = pop_client(cluster, broker)
    await popped_unacked(pc, broker, "Switched", b"before")
    deadline = time.monotonic() + 10
    while broker.store.get_max_offset_in_queue("%RETRY%G_Switched", 0) < 1:
        assert time.monotonic() < deadline, "never revived"
        await asyncio.sleep(0.02)
    broker = await cluster.restart(broker, enable_retry_topic_v2=True)
    rc2 = RemotingClient()
    cluster.clients.append(rc2)
    pc = PopClient(MQ(rc2, broker.address), broker.broker_config.broker_name)
    assert await pop_until_back(pc, "G", "Switched") == [(b"before", 1)]


async def test_with_retry_topic_v2_a_popped_message_comes_back_from_its_plus_topic(cluster: Cluster) -> None:
    # enableRetryTopicV2: revived into %RETRY%G+Topic (RocketMQ 5 takes the name at put; the store refused its "+").
    broker = await cluster.broker(revive_interval=0.02, enable_retry_topic_v2=True)
    pc = pop_client(cluster, broker)
    await popped_unacked(pc, broker, "PlusV2", b"again")
    assert await pop_until_back(pc, "G", "PlusV2") == [(b"again", 1)]
    assert broker.store.get_max_offset_in_queue("%RETRY%G+PlusV2", 0) == 1
    assert broker.pop_revive_service.ck_re_puts == 0


async def test_a_cluster_named_with_a_dot_revives_what_was_popped(cluster: Cluster) -> None:
    # RocketMQ takes any cluster name; "prod.eu" makes the revive topic rmq_sys_REVIVE_LOG_prod.eu, which the store
    # refused: every checkpoint was tried again for ever and no popped message came back.
    broker = await cluster.broker(revive_interval=0.02, broker_cluster_name="prod.eu")
    pc = pop_client(cluster, broker)
    popped = await popped_unacked(pc, broker, "Dotted", b"again")
    assert await pop_until_back(pc, "G", "Dotted") == [(b"again", 1)]
    assert broker.store.get_max_offset_in_queue("rmq_sys_REVIVE_LOG_prod.eu", popped.header.revive_qid) >= 1


async def test_a_pop_parked_after_a_live_switch_to_retry_topic_v2_is_woken_by_a_revive_into_its_plus_topic(
        cluster: Cluster) -> None:
    # UPDATE_BROKER_CONFIG turns enableRetryTopicV2 on at run time (Apache 5.5.0 too, whose long polling wakes a
    # group's pops on an arrival in either of its pop retry topics). The long polling kept the setting it started
    # with: a revive into %RETRY%G+Live woke nothing, and the parked pop waited out its whole poll.
    broker = await cluster.broker(revive_interval=0.02)
    pc = pop_client(cluster, broker)
    switch = b"enableRetryTopicV2=true\nretrieveMessageFromPopRetryTopicV1=false\n"  # (each pop reads the V2 one)
    assert (await pc.mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=switch)).code == ResponseCode.SUCCESS
    await popped_unacked(pc, broker, "Live", b"again")
    parked = asyncio.ensure_future(pc.pop("G", "Live", -1, invisible=60_000, poll=60_000))
    done, _ = await asyncio.wait([parked], timeout=20)  # (a bound, not a measure: the revive is due in 0.3 s)
    assert done, "the parked pop was not woken"
    assert [(m.body, m.reconsume_times) for m in parked.result().messages] == [(b"again", 1)]
    assert broker.store.get_max_offset_in_queue("%RETRY%G+Live", 0) == 1


async def test_a_revived_message_popped_and_acked_is_not_revived_again_after_a_restart(
        cluster: Cluster) -> None:
    # B, in the same revive queue as A (a minute long), falls due, is revived, popped from the retry topic and
    # acked; a clean restart must not revive it again. (A's checkpoint waits in the timer until its revive time,
    # so it holds nothing back here: a checkpoint read while still within its safety margin is the case
    # test_broker_pop_revive_offset's test_a_checkpoint_revived_behind_a_held_one_is_marked_done_for_a_restart
    # builds.)
    broker = await cluster.broker(revive_interval=0.05, pop_ck_stay_buffer_time=0.1)
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("Held", 1)
    for i in range(10):
        assert (await pc.mq.send("Held", b"h%d" % i, queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    a = await pc.pop("G", "Held", 0, max_nums=1, invisible=60_000)
    while True:  # B: one second, in A's revive queue (the queues are taken in turn)
        b = await pc.pop("G", "Held", 0, max_nums=1, invisible=1_000)
        if b.header.revive_qid == a.header.revive_qid:
            break
        await pc.ack_all("G", "Held", b)
    taken: list[bytes] = []
    deadline = time.monotonic() + 10
    while b.bodies[0] not in taken:
        assert time.monotonic() < deadline, "B never came back"
        back = await pc.pop("G", "Held", -1, invisible=60_000, poll=200)
        for msg, handle in zip(back.messages, back.handles, strict=True):
            taken.append(msg.body)
            assert (await pc.ack("G", "Held", handle)).code == ResponseCode.SUCCESS
    broker = await cluster.restart(broker)
    rc2 = RemotingClient()
    cluster.clients.append(rc2)
    pc = PopClient(MQ(rc2, broker.address), broker.broker_config.broker_name)
    again: list[bytes] = []
    for _ in range(5):
        again += (await pc.pop("G", "Held", -1, invisible=60_000, poll=200)).bodies
    assert b.bodies[0] not in again


async def test_a_change_naming_the_queues_max_offset_is_refused_an_ack_of_it_is_not(cluster: Cluster) -> None:
    """A handle whose offset is the queue's max offset names no message yet: the change wrote a checkpoint for it,
    and the next message stored there was revived after it was popped and acked (delivered twice). Apache 5.5.0's
    ChangeInvisibleTimeProcessor answers NO_MESSAGE for offset >= maxOffset; its AckMessageProcessor refuses only
    offset > maxOffset (the ack matches no checkpoint and does nothing)."""
    broker = await cluster.broker(revive_interval=0.02)
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("AtMax", 1)
    assert (await pc.mq.send("AtMax", b"m0", queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    popped = await pc.pop("G", "AtMax", 0, invisible=60_000)
    assert (await pc.ack("G", "AtMax", popped.handles[0])).code == ResponseCode.SUCCESS
    fields = popped.handles[0].split(" ")
    fields[7] = "1"  # (the same pop, the offset after m0: the queue's max offset)
    answer, _ = await pc.change_invisible("G", "AtMax", " ".join(fields), 100)
    assert answer.code == ResponseCode.NO_MESSAGE, answer
    assert (await pc.ack("G", "AtMax", " ".join(fields))).code == ResponseCode.SUCCESS
    assert (await pc.mq.send("AtMax", b"m1", queue_id=0)).code == ResponseCode.SUCCESS
    got = await pc.pop("G", "AtMax", 0, invisible=60_000, poll=2000)
    assert got.bodies == [b"m1"]
    await pc.ack_all("G", "AtMax", got)
    again = await pc.pop("G", "AtMax", -1, invisible=60_000, poll=1000)  # (a revive would be due by then)
    assert again.bodies == []


async def one_popped(cluster: Cluster, topic: str) -> tuple[PopClient, Any]:
    """A one-queue topic with one message, popped by group G for a minute."""
    broker = await cluster.broker()
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic(topic, 1)
    assert (await pc.mq.send(topic, b"m", queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    return pc, await pc.pop("G", topic, 0, invisible=60_000)


async def test_an_ack_or_change_naming_a_queue_past_the_topics_read_queues_is_refused(cluster: Cluster) -> None:
    """As Apache 5.5.0's AckMessageProcessor: MESSAGE_ILLEGAL for queueId >= readQueueNums (a handle of a queue the
    topic no longer reads; the queue past the last has no message, offset 0 is its min and max)."""
    pc, popped = await one_popped(cluster, "Narrow")
    fields = popped.handles[0].split(" ")
    fields[6] = "1"  # (the queue id)
    past = " ".join(fields)
    answers = [await pc.ack("G", "Narrow", past), (await pc.change_invisible("G", "Narrow", past, 100))[0]]
    assert [(a.code, (a.remark or "").split(" topic:")[0]) for a in answers] == [
        (ResponseCode.MESSAGE_ILLEGAL, "queueId[1] is illegal,")] * 2
    assert (await pc.ack("G", "Narrow", popped.handles[0])).code == ResponseCode.SUCCESS


async def test_a_change_of_invisible_time_outside_0_to_12_hours_is_refused(cluster: Cluster) -> None:
    """As RocketMQ's proxy bounds it (Apache 5.5.0's broker answers SUCCESS to -5 ms and to 13 h:
    docs/compatibility.md)."""
    pc, popped = await one_popped(cluster, "Bounds")
    for invisible in (-5, 13 * 3600 * 1000):
        answer, _ = await pc.change_invisible("G", "Bounds", popped.handles[0], invisible)
        assert answer.code == ResponseCode.INVALID_PARAMETER, (invisible, answer)
    answer, _ = await pc.change_invisible("G", "Bounds", popped.handles[0], 12 * 3600 * 1000)
    assert answer.code == ResponseCode.SUCCESS


async def test_the_retry_topic_is_popped_whatever_the_pops_filter(cluster: Cluster) -> None:
    """A message popped under tag A and not acked comes back through the group's retry topic to the group's next
    pop, though that pop asks for tag B. Apache 5.5.0 filters the retry topic by the pop's expression, so the
    message is skipped then, and by a later pop of tag A too: never delivered (docs/compatibility.md)."""
    broker = await cluster.broker(revive_interval=0.02)
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("Refiltered", 1)
    assert (await pc.mq.send("Refiltered", b"a0", queue_id=0, tags="A")).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    first = await pc.pop("G", "Refiltered", 0, invisible=200, exp="A")
    assert first.bodies == [b"a0"]  # (not acked: revived after 200 ms)
    back: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + 10
    while not back and time.monotonic() < deadline:
        got = await pc.pop("G", "Refiltered", -1, invisible=60_000, poll=300, exp="B")
        back += [(m.body, m.reconsume_times) for m in got.messages]
    assert back == [(b"a0", 1)]


async def test_a_filtered_pop_goes_on_past_a_read_window_of_messages_it_leaves_out(cluster: Cluster) -> None:
    # A read takes at most 800 consume-queue entries; when all of them were filtered out the pop parked for its
    # whole poll time before it looked at the next 800 (RocketMQ runs it again at once). Here the poll time is
    # far longer than the wait: only a pop that goes on finds the match.
    broker = await cluster.broker()
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("Skipped", 1)
    for i in range(2_000):
        assert (await pc.mq.send("Skipped", b"x%d" % i, queue_id=0, tags="X")).code == ResponseCode.SUCCESS
    assert (await pc.mq.send("Skipped", b"wanted", queue_id=0, tags="Y")).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 10.0)
    popped = await asyncio.wait_for(pc.pop("G", "Skipped", 0, poll=120_000, exp="Y"), 60)
    assert popped.bodies == [b"wanted"]


async def test_a_pop_from_an_offset_past_the_queues_end_commits_the_end(cluster: Cluster) -> None:
    """An offset past the queue's end (an admin's reset, a store emptied under its consumerOffset.json): the pop
    reads from the queue's end, and commits it. Left as it was, each pop would read from past the end again and
    jump to the end of then, over what was sent meanwhile: the group would never get a message."""
    broker = await cluster.broker()
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("Ahead", 1)
    assert (await pc.mq.send("Ahead", b"m0", queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    broker.consumer_offset_manager.commit_offset("reset", "G", "Ahead", 0, 100)
    assert (await pc.pop("G", "Ahead", 0)).bodies == []
    assert broker.consumer_offset_manager.query_offset("G", "Ahead", 0) == 1
    assert (await pc.mq.send("Ahead", b"m1", queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    assert (await pc.pop("G", "Ahead", 0, poll=2000)).bodies == [b"m1"]


@pytest.mark.parametrize("buffer_merge", [True, False])
async def test_the_acks_of_a_filtered_pop_over_a_gap_match_its_checkpoint(cluster: Cluster, buffer_merge: bool) -> None:
    """A pop of tag A over a0, x1, a2 hands out offsets 0 and 2: its checkpoint names them by their distance from
    the first (0 and 2). Counted as positions instead (0 and 1), the ack of a2 matched nothing, and the revive put
    back x1, which the group does not take, and a2, which it had acked."""
    broker = await cluster.broker(enable_pop_buffer_merge=buffer_merge, **FAST_REVIVE)
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("Gaps", 1)
    for body, tag in ((b"a0", "A"), (b"x1", "X"), (b"a2", "A")):
        assert (await pc.mq.send("Gaps", body, queue_id=0, tags=tag)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    # (Invisible 1 s: the acks must reach the revive before the checkpoint falls due, or it is revived whatever
    # they match; 300 ms did not always leave a loaded machine the time.)
    got = await pc.pop("G", "Gaps", 0, invisible=1_000, exp="A")
    assert got.bodies == [b"a0", b"a2"]
    await pc.ack_all("G", "Gaps", got)
    buffered = broker.pop_message_processor.buffer_merge.buffer
    deadline = time.monotonic() + 30  # (a bound for a loaded machine: a checkpoint not done is written by then)
    while buffered and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await settle_revive(broker)
    assert broker.pop_revive_service.revived == 0
    assert (await pc.pop("G", "Gaps", -1, exp="A")).bodies == []


async def test_a_new_group_popping_from_the_max_starts_at_the_last_message(cluster: Cluster) -> None:
    """ConsumeInitMode MAX without the in-memory check: the group starts at the queue's last message (RocketMQ's
    getInitOffset: max offset - 1), so that message is popped and only what is sent after it follows."""
    broker = await cluster.broker(init_pop_offset_by_check_msg_in_mem=False)
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("FromMax", 1)
    for body in (b"m0", b"m1", b"m2"):
        assert (await pc.mq.send("FromMax", body, queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    got = await pc.pop("G", "FromMax", 0, init_mode=CONSUME_INIT_MODE_MAX)
    assert got.bodies == [b"m2"]
    await pc.ack_all("G", "FromMax", got)
    assert broker.consumer_offset_manager.query_offset("G", "FromMax", 0) == 3


@pytest.mark.parametrize("order", [False, True])
async def test_a_first_pop_of_an_empty_queue_commits_0_and_a_later_pop_from_the_max_loses_nothing(
        cluster: Cluster, order: bool) -> None:
    """A MIN pop of a queue that never held a message (the store has no file of it: its min offset is -1) commits 0,
    as 5.5.0 does (tests/apache/test_apache_pop_init_offset.py). It committed -1, which is no offset: a later pop
    with initMode MAX then started the group anew at the queue's last message, past those sent meanwhile."""
    broker = await cluster.broker(init_pop_offset_by_check_msg_in_mem=False)
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("EmptyMin", 1)
    assert (await pc.pop("G", "EmptyMin", 0, order=order, init_mode=CONSUME_INIT_MODE_MIN)).bodies == []
    assert broker.consumer_offset_manager.query_offset("G", "EmptyMin", 0) == 0
    for body in (b"m0", b"m1", b"m2"):
        assert (await pc.mq.send("EmptyMin", body, queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    got = await pc.pop("G", "EmptyMin", 0, order=order, init_mode=CONSUME_INIT_MODE_MAX)
    assert got.bodies == [b"m0", b"m1", b"m2"]


async def test_a_group_whose_offset_is_gone_pops_past_what_its_buffered_pops_hold(cluster: Cluster) -> None:
    """The group's committed offset taken away (a commit of -1) while its pops wait in the buffer for their acks:
    the next pop starts past them, as RocketMQ 5's getPopOffset takes the buffer's offset over the initial one,
    and does not hand out the messages still invisible again."""
    broker = await cluster.broker()
    pc = pop_client(cluster, broker)
    await pc.mq.create_topic("Gone", 1)
    for body in (b"m0", b"m1"):
        assert (await pc.mq.send("Gone", body, queue_id=0)).code == ResponseCode.SUCCESS
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    assert (await pc.pop("G", "Gone", 0, max_nums=1, init_mode=CONSUME_INIT_MODE_MIN)).bodies == [b"m0"]
    await pc.mq.update_offset("G", "Gone", 0, -1)
    assert broker.consumer_offset_manager.query_offset("G", "Gone", 0) == -1
    assert (await pc.pop("G", "Gone", 0, init_mode=CONSUME_INIT_MODE_MIN)).bodies == [b"m1"]
