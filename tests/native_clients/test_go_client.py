"""Apache RocketMQ's Go client (rocketmq-client-go v2) against pocketmq over the native protocol (issue 27).

go/main.go drives the published module (go.mod pins it, go.sum is committed) and prints JSON lines of what it
sent and received; `make go-client` builds it into go/bin/goclient, and `make test` does so first. The tests
start a cluster on free ports (the harness of real_clients.py) and check the Go client's reports against
what pocketmq stored, sent or received. A missing build fails the tests with the command that makes it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import (
    FAST_RETRY_BROKER,
    GO_CLIENT,
    TAGS,
    Clients,
    assert_stored_as_sent,
    body_for,
    by_keys,
    create_topic,
    expected,
    group_clients,
    pocketmq_messages,
    pull_with_pocketmq,
    reported,
    send_with_pocketmq,
    unique,
)

from pocketmq import embedded
from pocketmq.client import Message, MessageQueue, Producer

SOURCES = [Path(__file__).resolve().parent / "go" / name for name in ("main.go", "go.mod", "go.sum")]


@pytest.fixture(autouse=True)
def go_client_built() -> Iterator[None]:
    assert GO_CLIENT.exists(), f"the Go client driver is not built ({GO_CLIENT}): run `make go-client`"
    built = GO_CLIENT.stat().st_mtime
    stale = [src.name for src in SOURCES if src.stat().st_mtime > built]
    assert not stale, f"{GO_CLIENT} is older than {stale}: run `make go-client`"
    yield


# A half message left unknown is checked back after 2 s instead of 6 s, and checks run every 0.5 s, not 60 s.
FAST_TRANSACTION_CHECK: dict[str, Any] = {"transaction_timeout": 2.0, "transaction_check_interval": 0.5}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path / "pocketmq", **FAST_RETRY_BROKER, **FAST_TRANSACTION_CHECK) as c:
        yield c


@pytest.fixture
async def clients(cluster: Any, tmp_path: Path) -> AsyncIterator[Clients]:
    runner = Clients(cluster, tmp_path)
    try:
        yield runner
    finally:
        await runner.close()


def sent_by_index(events: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {e["i"]: e for e in events}


# ---- the Go producer ----------------------------------------------------------------------------------------


async def test_go_sync_sends_are_stored_intact_with_tags_keys_and_properties(cluster: Any, clients: Clients) -> None:
    topic, prefix = unique("GoSendT"), unique("gs")
    # No topic created first: the Go producer falls back to TBW102's route and the broker creates the topic.
    driver = await clients.run("go", "send", "--topic", topic, "--group", unique("GoPG"), "--count", "100",
                               "--prefix", prefix)
    sent = driver.of("sent")
    assert [e["i"] for e in sent] == list(range(100))
    stored = await pull_with_pocketmq(cluster, topic)
    assert_stored_as_sent(sent, stored)
    by_key = {" ".join(m.keys): m for m in stored}
    for e in sent:
        m = by_key[e["keys"]]
        # SendResult.MsgID is the client's UNIQ_KEY, OffsetMsgID the broker's (store host + commit-log offset).
        assert (m.uniq_key, m.offset_msg_id, m.queue_id) == (e["msg_id"], e["offset_msg_id"], e["queue_id"])
    assert {e["broker"] for e in sent} == {cluster.broker.broker_config.broker_name}
    # The topic has the Go producer's default queue count (4) and round robin used them evenly.
    config = cluster.broker.topic_config_manager.select_topic_config(topic)
    assert (config.read_queue_nums, config.write_queue_nums) == (4, 4)
    per_queue = Counter(e["queue_id"] for e in sent)
    assert set(per_queue) == {0, 1, 2, 3} and max(per_queue.values()) - min(per_queue.values()) <= 1


async def test_go_async_sends_call_back_once_each(cluster: Any, clients: Clients) -> None:
    topic, prefix = unique("GoAsyncT"), unique("ga")
    await create_topic(cluster, topic)
    driver = await clients.run("go", "send", "--mode", "async", "--topic", topic, "--count", "50",
                               "--prefix", prefix)
    sent = driver.of("sent")
    assert all(e.get("callback") for e in sent)
    assert sorted(e["i"] for e in sent) == list(range(50))  # one callback per message, no more
    assert driver.of("done")[-1]["ok"] == 50
    assert_stored_as_sent(sent, await pull_with_pocketmq(cluster, topic))


async def test_go_batch_arrives_whole_on_one_queue(cluster: Any, clients: Clients) -> None:
    topic, prefix = unique("GoBatchT"), unique("gb")
    await create_topic(cluster, topic)
    # Two batches: the second starts where the first ended on its queue, or on another queue at 0.
    first = await clients.run("go", "send", "--mode", "batch", "--topic", topic, "--count", "12", "--prefix", prefix)
    second = await clients.run("go", "send", "--mode", "batch", "--topic", topic, "--count", "12",
                               "--prefix", prefix + "x")
    stored = await pull_with_pocketmq(cluster, topic)
    assert len(stored) == 24
    for driver, pre in ((first, prefix), (second, prefix + "x")):
        (batch,) = driver.of("batch")
        assert (batch["status"], batch["count"]) == ("SEND_OK", 12)
        mine = sorted((m for m in stored if m.keys[0].startswith(f"{pre}-")), key=lambda m: m.queue_offset)
        # Whole: every message on the queue the result names, consecutive offsets from the result's offset, in
        # the order of the batch, each message's own tags, keys and properties.
        assert {m.queue_id for m in mine} == {batch["queue_id"]}
        assert [m.queue_offset for m in mine] == list(range(batch["offset"], batch["offset"] + 12))
        assert [m.body.decode() for m in mine] == [body_for(pre, i) for i in range(12)]
        assert [(m.tags, m.properties["idx"], m.properties.get("city")) for m in mine] == [
            (TAGS[i % 3], str(i), "Zürich" if i % 10 == 7 else None) for i in range(12)]
        assert [" ".join(m.keys) for m in mine] == [e["keys"] for e in driver.of("sent")]
        # The Go client compresses no batch; the broker answers each message's id, comma-separated.
        assert all(m.sys_flag & 1 == 0 for m in mine)
        assert batch["offset_msg_id"].split(",") == [m.offset_msg_id for m in mine]
        # The Go client gives a batch's messages no UNIQ_KEY (the Java client does): the broker adds none either.
        assert batch["msg_id"] == "" and all(m.uniq_key is None for m in mine)


@pytest.mark.parametrize("selector", ["order", "hash"])
async def test_go_selector_picks_the_queue_and_each_order_stays_in_sequence(
    cluster: Any, clients: Clients, selector: str
) -> None:
    topic, prefix = unique("GoSelT"), unique("gq")
    await create_topic(cluster, topic, queues=4)
    driver = await clients.run("go", "send", "--selector", selector, "--order-ids", "4", "--topic", topic,
                               "--count", "40", "--prefix", prefix)
    sent = sent_by_index(driver.of("sent"))
    stored = await pull_with_pocketmq(cluster, topic)
    assert_stored_as_sent(list(sent.values()), stored)
    order_queue = {}
    for order in range(4):
        in_order = [sent[i] for i in range(order, 40, 4)]
        queues = {e["queue_id"] for e in in_order}
        assert len(queues) == 1, f"order {order} spread over {queues}"
        order_queue[order] = queues.pop()
        if selector == "order":  # the driver's selector: order id n on the queue with id n
            assert order_queue[order] == order
        # In the queue, the order's messages in the order they were sent.
        in_queue = sorted((m for m in stored if m.queue_id == order_queue[order]), key=lambda m: m.queue_offset)
        assert [int(m.properties["idx"]) for m in in_queue if int(m.properties["idx"]) % 4 == order] == list(
            range(order, 40, 4))


async def test_go_transaction_producer_commits_rolls_back_and_answers_the_check(
    cluster: Any, clients: Clients
) -> None:
    topic, prefix = unique("GoTxnT"), unique("gt")
    await create_topic(cluster, topic)
    # idx % 3: commit, rollback, unknown; the broker checks the unknown ones back and the driver commits them.
    driver = await clients.run("go", "send", "--mode", "transaction", "--topic", topic, "--group", unique("GoTxnPG"),
                               "--count", "9", "--prefix", prefix)
    sent = sent_by_index(driver.of("sent"))
    assert [(sent[i]["status"], sent[i]["local_state"]) for i in range(9)] == [
        ("SEND_OK", ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW")[i % 3]) for i in range(9)]
    checked = {e["i"] for e in driver.of("check")}
    assert {2, 5, 8} <= checked
    assert all(e["topic"] == topic for e in driver.of("check"))  # the check carries the real topic back
    # A check's answer is one way: the broker may store the last commit just after the driver exits.
    for _ in range(600):
        stored = await pull_with_pocketmq(cluster, topic)
        if len(stored) >= 6:
            break
        await asyncio.sleep(0.05)
    assert sorted(int(m.properties["idx"]) for m in stored) == [0, 2, 3, 5, 6, 8]
    for m in stored:
        i = int(m.properties["idx"])
        assert (m.body.decode(), m.tags, " ".join(m.keys)) == (body_for(prefix, i), TAGS[i % 3], sent[i]["keys"])
        assert m.uniq_key == sent[i]["msg_id"]
    assert cluster.broker.end_transaction_processor.rolled_back >= 3


# ---- the Go push consumer -----------------------------------------------------------------------------------


async def test_go_push_consumer_gets_what_pocketmq_sent_filtered_by_tag(cluster: Any, clients: Clients) -> None:
    topic, group = unique("GoPushT"), unique("GoPushG")
    await create_topic(cluster, topic)
    msgs = pocketmq_messages(topic, unique("p"), 60)
    await send_with_pocketmq(cluster, msgs)
    wanted = [m for m in msgs if m.tags in ("TagA", "TagB")]
    driver = await clients.run("go", "push", "--topic", topic, "--group", group, "--expression", "TagA || TagB",
                               "--expect", str(len(wanted)), "--linger", "1")
    got = by_keys(driver.consumed)
    assert {k: reported(e) for k, e in got.items()} == {expected(m)["keys"]: expected(m) for m in wanted}
    assert all(e["topic"] == topic and e["reconsume_times"] == 0 for e in driver.consumed)
    stored = {" ".join(m.keys): m for m in await pull_with_pocketmq(cluster, topic)}
    for key, e in got.items():
        m = stored[key]
        assert (e["msg_id"], e["offset_msg_id"]) == (m.uniq_key, m.offset_msg_id)
        assert (e["queue_id"], e["queue_offset"]) == (m.queue_id, m.queue_offset)
        # Bodies over 4 KiB were stored compressed; the Go client inflated them.
        assert e["sys_flag"] & 1 == m.sys_flag & 1
    # Shutdown committed the offsets: each queue's is past its last wanted message.
    for q in range(4):
        last = max(e["queue_offset"] for e in driver.consumed if e["queue_id"] == q)
        committed = cluster.broker.consumer_offset_manager.query_offset(group, topic, q)
        assert last < committed <= cluster.store.get_max_offset_in_queue(topic, q)
    assert group_clients(cluster, group) == []  # and unregistered


async def test_go_orderly_push_consumer_gets_each_queue_in_order(cluster: Any, clients: Clients) -> None:
    topic, group = unique("GoOrderT"), unique("GoOrderG")
    await create_topic(cluster, topic)
    msgs = pocketmq_messages(topic, unique("o"), 80)

    def by_order(mqs: list[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
        return sorted(mqs, key=lambda mq: mq.queue_id)[arg % len(mqs)]

    async with Producer(unique("PocketPG"), cluster.namesrv_addr, instance_name=unique("p")) as producer:
        for i, msg in enumerate(msgs):
            await producer.send(msg, selector=by_order, arg=i)
    await cluster.wait_dispatched()
    driver = await clients.start("go", "push", "--orderly", "--topic", topic, "--group", group, "--linger", "0")
    await driver.started()
    await driver.wait_for(lambda d: len(d.consumed) >= len(msgs))
    # An orderly consumer consumes a queue only while it holds the broker's lock on it: until it stops, it does.
    (client_id,) = group_clients(cluster, group)
    locks, broker_name = cluster.broker.rebalance_lock_manager, cluster.broker.broker_config.broker_name
    assert all(locks.is_locked(group, MessageQueue(topic, broker_name, q), client_id) for q in range(4))
    await driver.stop()
    await driver.done()
    # Shutdown gave the locks back.
    assert not any(locks.is_locked(group, MessageQueue(topic, broker_name, q), client_id) for q in range(4))
    for q in range(4):
        seen = [int(e["props"]["idx"]) for e in driver.consumed if e["queue_id"] == q]
        assert seen == list(range(q, 80, 4)), f"queue {q}"
    got = by_keys(driver.consumed)
    assert {k: reported(e) for k, e in got.items()} == {expected(m)["keys"]: expected(m) for m in msgs}


async def test_go_reconsume_later_comes_back_with_reconsume_times_plus_one(cluster: Any, clients: Clients) -> None:
    topic, group = unique("GoRetryT"), unique("GoRetryG")
    await create_topic(cluster, topic)
    msgs = pocketmq_messages(topic, unique("r"), 10)
    await send_with_pocketmq(cluster, msgs)
    retry_key = expected(msgs[4])["keys"]
    # The retry topic routed before the consumer starts, as after an earlier run of the group: otherwise the Go
    # client learns its route only at its next route poll (a fixed 30 s) and the test waits for it.
    await create_topic(cluster, f"%RETRY%{group}", queues=1)
    driver = await clients.run("go", "push", "--topic", topic, "--group", group, "--expect", "10",
                               "--retry-key", retry_key, "--linger", "1")
    first, *again = [e for e in driver.messages if e["keys"] == retry_key]
    assert (first["answer"], first["reconsume_times"]) == ("RECONSUME_LATER", 0)
    # Back once, from the retry topic with the original topic restored by the client, and consumed then.
    assert [(e["answer"], e["reconsume_times"], e["topic"]) for e in again] == [("CONSUME_SUCCESS", 1, topic)]
    assert again[0]["props"]["RETRY_TOPIC"] == topic
    assert again[0]["props"]["ORIGIN_MESSAGE_ID"] == first["offset_msg_id"]
    assert reported(again[0]) == expected(msgs[4])
    assert set(by_keys(driver.consumed)) == {expected(m)["keys"] for m in msgs}
    assert cluster.store.get_max_offset_in_queue(f"%RETRY%{group}", 0) == 1


# ---- the Go admin API ---------------------------------------------------------------------------------------


async def test_go_admin_creates_lists_and_deletes_a_topic(cluster: Any, clients: Clients) -> None:
    topic = unique("GoAdminT")
    driver = await clients.run("go", "admin", "--topic", topic, "--broker", cluster.broker_addr, "--queues", "8")
    assert [e.get("error") for e in driver.events if e["event"] not in ("started", "done")] == [None] * 6
    # UPDATE_AND_CREATE_TOPIC to the broker (the Go admin ignores the response code: the config is the proof).
    assert driver.of("created")
    assert topic in driver.of("topics")[0]["topics"]
    assert driver.of("queues")[0]["queue_ids"] == list(range(8))  # the route the broker registered at once
    assert driver.of("clusters")[0]["clusters"] == [cluster.broker.broker_config.broker_cluster_name]
    assert "SELF_TEST_C_GROUP" in driver.of("groups")[0]["groups"]
    # DELETE_TOPIC_IN_BROKER, then DELETE_TOPIC_IN_NAMESRV.
    assert cluster.broker.topic_config_manager.select_topic_config(topic) is None
    assert topic not in cluster.namesrv.route_info_manager.get_all_topic_list().topic_list
