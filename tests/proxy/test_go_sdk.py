"""Apache RocketMQ 5's Go SDK (github.com/apache/rocketmq-clients/golang/v5, pinned by
tests/native_clients/go5/go.mod and go.sum; `make go5-client` builds tests/native_clients/go5/main.go into
go5/bin/go5client, and `make test` does so first) against pocketmq's gRPC endpoint, with the SDK's defaults: TLS
on (the endpoint serves TLS and plaintext on one port), nothing configured but the endpoint.

One cluster for the module (each test its own topics and groups); each test runs the Go program once (one process,
one scenario, JSON lines out), and what the SDK sent is read back by pocketmq's own 4.x client, and what pocketmq's
client sent is what the SDK must receive: ids, keys, tags, properties and bodies.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pocketmq import embedded
from pocketmq.client.sync import SyncSimpleConsumer

from .sdk_driver import (
    CLUSTER,
    NATIVE_CLIENTS,
    TAGS,
    Driver,
    assert_back_after_invisible_time,
    assert_received_as_sent,
    assert_stored_as_sent,
    body_for,
    dead_letters,
    of,
    send_with_pocketmq,
    set_group,
)
from .sdk_helpers import create_topic, pull_all, wait_for, wait_pulled

GO5_DIR = NATIVE_CLIENTS / "go5"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.ThreadedCluster]:
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("go5"), grpc=True, **CLUSTER) as c:
        yield c


@pytest.fixture(scope="module")
def go5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    log_root = tmp_path_factory.mktemp("go5-logs")
    # The SDK logs to ~/logs/rocketmq unless told otherwise (an environment variable with dots in its name).
    driver = Driver(GO5_DIR / "bin" / "go5client", [GO5_DIR / n for n in ("main.go", "go.mod", "go.sum")],
                    "go5-client", log_root, env={"rocketmq.client.logRoot": str(log_root)},
                    log="rocketmq_client_go.log")
    driver.assert_built()
    yield driver
    driver.close()


# ---- the producer ------------------------------------------------------------------------------------------------


def test_go_sdk_normal_sends_arrive_with_ids_tags_keys_and_properties(cluster, go5):
    create_topic(cluster, "GoSend5")
    events = go5.run(cluster, "send", "--topic", "GoSend5", "--count", "20", "--prefix", "gs")
    sent = {e["message_id"]: e for e in of(events, "sent")}
    assert len(sent) == 20
    stored = wait_pulled(cluster, "GoSend5", 20)
    assert sorted(m.uniq_key for m in stored) == sorted(sent)
    for m in stored:
        assert_stored_as_sent(sent[m.uniq_key], m, "gs")
        assert m.properties["PGROUP"] == "GoSend5"  # the proxy makes the topic the producer group
    assert sent[stored[0].uniq_key]["keys"] != []
    assert {m.properties["city"] for m in stored if "city" in m.properties} == {"Zürich"}
    # The SDK spreads its sends over the topic's queues.
    assert {m.queue_id for m in stored} == {0, 1, 2, 3}
    # With its default settings the SDK speaks TLS (the module's clients are all the SDK's: no plaintext).
    connections = cluster.cluster.proxy.connections
    assert connections["tls"] >= 1 and connections["plaintext"] == 0


def test_go_sdk_fifo_groups_each_on_one_queue_in_order(cluster, go5):
    create_topic(cluster, "GoFifo5", queues=8)
    events = go5.run(cluster, "fifo", "--topic", "GoFifo5", "--count", "24", "--groups", "3", "--prefix", "gf")
    sent = {e["message_id"]: e for e in of(events, "sent")}
    stored = wait_pulled(cluster, "GoFifo5", 24)
    for g in range(3):
        mine = [m for m in stored if m.properties["__SHARDINGKEY"] == f"gf-{g}"]
        assert len({m.queue_id for m in mine}) == 1, f"group gf-{g} spread over queues"
        in_queue = sorted(mine, key=lambda m: m.queue_offset)
        assert [int(m.properties["idx"]) for m in in_queue] == list(range(g, 24, 3))
        for m in mine:
            assert_stored_as_sent(sent[m.uniq_key], m, "gf")
            assert sent[m.uniq_key]["message_group"] == f"gf-{g}"


def test_go_sdk_transactions_commit_roll_back_and_are_checked_back(cluster, go5):
    create_topic(cluster, "GoTxn5")
    broker = cluster.cluster.broker
    assert broker is not None
    rolled_back = broker.end_transaction_processor.rolled_back
    # A commit, a rollback, and a half message left open: the broker checks it back through the proxy, which asks
    # the producer on its Telemetry stream; the SDK's checker commits it (the scenario ends when it was asked).
    events = go5.run(cluster, "transaction", "--topic", "GoTxn5", "--prefix", "gt")
    sent = {e["decision"]: e for e in of(events, "sent")}
    assert set(sent) == {"commit", "rollback", "check"}
    assert all(e["transaction_id"] for e in sent.values())
    checked = [e for e in of(events, "checked") if e["decision"] == "check"]
    assert checked and checked[0]["message_id"] == sent["check"]["message_id"]
    assert checked[0]["body"] == sent["check"]["body"] and checked[0]["keys"] == sent["check"]["keys"]
    stored = wait_pulled(cluster, "GoTxn5", 2)
    assert sorted(m.uniq_key for m in stored) == sorted([sent["commit"]["message_id"], sent["check"]["message_id"]])
    for m in stored:
        i = int(m.properties["idx"])
        assert m.body.decode() == body_for("gt", i) and m.tags == TAGS[i % 3]
        assert "TRAN_MSG" not in m.properties or m.properties["TRAN_MSG"] == "true"
    wait_for(lambda: broker.end_transaction_processor.rolled_back > rolled_back)
    assert sent["rollback"]["message_id"] not in {m.uniq_key for m in wait_pulled(cluster, "GoTxn5", 2)}


def test_go_sdk_delay_message_is_not_delivered_before_its_time(cluster, go5):
    create_topic(cluster, "GoDelay5")
    # The SDK's SimpleConsumer is started first, then the message sent, 2 s ahead.
    events = go5.run(cluster, "delay", "--topic", "GoDelay5", "--prefix", "gd", "--delay-ms", "2000",
                 "--group", "GoDelayGroup5")
    [sent], [got] = of(events, "sent"), of(events, "received")
    deliver_at = sent["deliver_at"]
    assert got["message_id"] == sent["message_id"] and got["delivery_timestamp"] == deliver_at
    assert got["at"] >= deliver_at and got["delivery_attempt"] == 1
    [m] = wait_pulled(cluster, "GoDelay5", 1)
    assert_stored_as_sent(sent, m, "gd")
    # The timer wheel put it in the topic at its time, not before; TIMER_DELIVER_MS is the SDK's timestamp.
    assert m.store_timestamp >= deliver_at
    assert int(m.properties["TIMER_DELIVER_MS"]) == deliver_at


# ---- consumers ---------------------------------------------------------------------------------------------------


def test_go_sdk_simple_consumer_receives_acks_and_gets_back_what_it_did_not_ack(cluster, go5):
    create_topic(cluster, "GoSimple5")
    run = go5.start(cluster, "simple", "--topic", "GoSimple5", "--group", "GoSimpleGroup5", "--expect", "12",
                 "--hold", "sc-4", "--invisible-ms", "1000")
    run.started()
    sent = send_with_pocketmq(cluster, "GoSimple5", "sc", 12)
    events = run.done()
    received, acked = of(events, "received"), of(events, "acked")
    for e in received:
        assert_received_as_sent(e, sent)
        assert e["topic"] == "GoSimple5" and e["receipt_handle"]
    # Every message acked once; the one held back came again after its invisible second, with its next attempt
    # and a new receipt handle, and all others once.
    assert sorted(e["message_id"] for e in acked) == sorted(sent)
    held = [e for e in received if e["keys"] == ["sc-4"]]
    assert [e.get("held", False) for e in held] == [True, False]
    assert_back_after_invisible_time(*held)
    assert sorted(e["delivery_attempt"] for e in received if e["keys"] != ["sc-4"]) == [1] * 11
    # Acked is gone for the group: pocketmq's own POP consumer of the same group finds nothing.
    with SyncSimpleConsumer("GoSimpleGroup5", cluster.namesrv_addr, subscriptions={"GoSimple5": "*"},
                            await_duration=0.3) as consumer:
        assert consumer.receive(32, 10) == []


def test_go_sdk_fifo_consumer_gets_each_message_group_in_order(cluster, go5):
    create_topic(cluster, "GoFifoC5", queues=4)
    set_group(cluster, "GoFifoGroup5", consume_message_orderly=True)
    go5.run(cluster, "fifo", "--topic", "GoFifoC5", "--count", "12", "--groups", "2", "--prefix", "fc")
    events = go5.run(cluster, "simple", "--topic", "GoFifoC5", "--group", "GoFifoGroup5", "--expect", "12")
    received = of(events, "received")
    assert len(received) == 12  # each once: a FIFO group's next message came only after the previous ack
    for g in range(2):
        mine = [e for e in received if e["message_group"] == f"fc-{g}"]
        assert [int(e["props"]["idx"]) for e in mine] == list(range(g, 12, 2))


def test_go_sdk_push_consumers_retry_then_the_dead_letter_queue(cluster, go5):
    # Two groups of two attempts each, side by side (two processes): a standard consumer nacks a failure
    # (ChangeInvisibleDuration by the group's backoff) and the proxy sends the message to the DLQ when it is due a
    # third time; a FIFO consumer retries locally, then calls ForwardMessageToDeadLetterQueue.
    runs, sent, topics = {}, {}, {"GoDlqGroup5": "GoDlq5", "GoDlqFGroup5": "GoDlqF5"}
    for group, topic in topics.items():
        fifo = group == "GoDlqFGroup5"
        create_topic(cluster, topic)
        set_group(cluster, group, retry_max_times=1, consume_message_orderly=fifo)
        runs[group] = go5.start(cluster, "push", "--topic", topic, "--group", group, "--expect", "4", "--fail", "dl-2")
    for group, run in runs.items():
        run.started()
        sent[group] = send_with_pocketmq(cluster, topics[group], "dl", 5)
    dead = {}
    try:
        for group in runs:
            [dead[group]] = dead_letters(cluster, group, 1)
    finally:
        for run in runs.values():
            run.stop()
    for group, run in runs.items():
        consumed, mine = of(run.done(), "consumed"), sent[group]
        for e in consumed:
            assert_received_as_sent(e, mine)
        [poison_id] = [i for i, m in mine.items() if m["i"] == 2]
        assert sorted(e["message_id"] for e in consumed if e["result"] == "SUCCESS") == sorted(set(mine) - {poison_id})
        poison = [e for e in consumed if e["message_id"] == poison_id]
        assert [(e["result"], e["delivery_attempt"]) for e in poison] == [("FAILURE", 1), ("FAILURE", 2)], group
        assert dead[group].uniq_key == poison_id and dead[group].body.decode() == mine[poison_id]["body"]
        assert dead[group].keys == mine[poison_id]["keys"] and dead[group].tags == mine[poison_id]["tag"]


def test_go_sdk_push_group_of_two_shares_a_topic(cluster, go5):
    create_topic(cluster, "GoShare5")
    run = go5.start(cluster, "push", "--topic", "GoShare5", "--group", "GoShareGroup5", "--expect", "30",
                 "--consumers", "2")
    run.started()
    sent = send_with_pocketmq(cluster, "GoShare5", "sh", 30)
    consumed = of(run.done(), "consumed")
    # Each message once, to one member of the group, acked (the group's POP found nothing left).
    assert sorted(e["message_id"] for e in consumed) == sorted(sent)
    for e in consumed:
        assert_received_as_sent(e, sent)
        assert e["delivery_attempt"] == 1
    # The 5 KiB bodies were stored compressed by pocketmq's 4.x producer, and reached the SDK whole (a push consumer
    # discards a message whose body does not match its encoding and digest).
    big = [m for m in pull_all(cluster, "GoShare5") if int(m.properties["idx"]) % 10 == 3]
    assert len(big) == 3 and all(m.sys_flag & 1 for m in big)
    with SyncSimpleConsumer("GoShareGroup5", cluster.namesrv_addr, subscriptions={"GoShare5": "*"},
                            await_duration=0.3) as consumer:
        assert consumer.receive(32, 10) == []
