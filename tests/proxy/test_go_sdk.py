"""Apache RocketMQ 5's Go SDK (github.com/apache/rocketmq-clients/golang/v5, pinned by
tests/native_clients/go5/go.mod and go.sum; `make go5-client` builds tests/native_clients/go5/main.go into
go5/bin/go5client, and `make test` does so first) against pocketmq's gRPC endpoint, with the SDK's defaults: TLS
on (the endpoint serves TLS and plaintext on one port), nothing configured but the endpoint.

One cluster for the module (each test its own topics and groups); each test runs the Go program once (one process,
one scenario, JSON lines out), and what the SDK sent is read back by pocketmq's own 4.x client, and what pocketmq's
client sent is what the SDK must receive: ids, keys, tags, properties and bodies.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pocketmq import embedded
from pocketmq.client.sync import SyncSimpleConsumer

from .sdk_driver import (
    CLUSTER,
    NATIVE_CLIENTS,
    Driver,
    assert_fifo_groups_read_back,
    assert_received_as_sent,
    assert_sends_read_back,
    assert_simple_consumer_receives,
    assert_stored_as_sent,
    assert_transactions_read_back,
    dead_letters,
    of,
    send_with_pocketmq,
)
from .sdk_helpers import create_topic, pull_all, set_group, wait_for, wait_pulled

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
    sent, stored = assert_sends_read_back(cluster, go5, "GoSend5", 20, "gs")
    assert sent[stored[0].uniq_key]["keys"] != []
    assert {m.properties["city"] for m in stored if "city" in m.properties} == {"Zürich"}
    # The SDK spreads its sends over the topic's queues.
    assert {m.queue_id for m in stored} == {0, 1, 2, 3}
    # With its default settings the SDK speaks TLS (the module's clients are all the SDK's: no plaintext).
    connections = cluster.cluster.proxy.connections
    assert connections["tls"] >= 1 and connections["plaintext"] == 0


def test_go_sdk_fifo_groups_each_on_one_queue_in_order(cluster, go5):
    sent = assert_fifo_groups_read_back(cluster, go5, "GoFifo5", 24, 3, "gf")
    assert {e["message_group"] for e in sent.values()} == {"gf-0", "gf-1", "gf-2"}
    assert all(e["message_group"] == f"gf-{e['i'] % 3}" for e in sent.values())


def test_go_sdk_transactions_commit_roll_back_and_are_checked_back(cluster, go5):
    sent, stored = assert_transactions_read_back(cluster, go5, "GoTxn5", "gt")
    checked = [e for e in of(go5.runs[-1].events, "checked") if e["decision"] == "check"]
    assert checked[0]["keys"] == sent["check"]["keys"]
    for m in stored:
        assert "TRAN_MSG" not in m.properties or m.properties["TRAN_MSG"] == "true"
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
    received = assert_simple_consumer_receives(cluster, go5, "GoSimple5", "GoSimpleGroup5", "sc")
    assert all(e["receipt_handle"] for e in received)
    # All but the one held back came once, at their first attempt.
    assert sorted(e["delivery_attempt"] for e in received if e["keys"] != ["sc-4"]) == [1] * 11


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
    # A --fail key no message has: the consumers run until told to stop, so the test can send more until both
    # members took part. Each member receives once it has its assignment (the SDK asks for it on a timer, so the
    # second may start seconds after the first), and POP hands a message to whichever member's receive is waiting.
    run = go5.start(cluster, "push", "--topic", "GoShare5", "--group", "GoShareGroup5", "--expect", "30",
                    "--consumers", "2", "--fail", "no-such-key")
    run.started()
    sent: dict[str, Any] = {}
    rounds = 0
    deadline = time.monotonic() + 45
    try:
        while rounds == 0 or {e["consumer"] for e in of(list(run.events), "consumed")} != {0, 1}:
            assert time.monotonic() < deadline, rounds
            if rounds:
                time.sleep(1.0)  # (the next scan of the assignments)
            sent |= send_with_pocketmq(cluster, "GoShare5", "sh", 30)
            rounds += 1
            wanted = len(sent)
            wait_for(lambda wanted=wanted: len({e["message_id"] for e in of(list(run.events), "consumed")}) >= wanted,
                     30)
    finally:
        run.stop()
    consumed = of(run.done(), "consumed")
    assert {e["consumer"] for e in consumed} == {0, 1}, rounds
    # Each message once, to one member of the group, acked (the group's POP found nothing left).
    assert sorted(e["message_id"] for e in consumed) == sorted(sent)
    for e in consumed:
        assert_received_as_sent(e, sent)
        assert e["delivery_attempt"] == 1
    # The 5 KiB bodies were stored compressed by pocketmq's 4.x producer, and reached the SDK whole (a push consumer
    # discards a message whose body does not match its encoding and digest).
    big = [m for m in pull_all(cluster, "GoShare5") if int(m.properties["idx"]) % 10 == 3]
    assert len(big) == 3 * rounds and all(m.sys_flag & 1 for m in big)
    with SyncSimpleConsumer("GoShareGroup5", cluster.namesrv_addr, subscriptions={"GoShare5": "*"},
                            await_duration=0.3) as consumer:
        assert consumer.receive(32, 10) == []
