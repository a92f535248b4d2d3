"""Apache RocketMQ 5's Rust SDK (crates.io `rocketmq` 5.0.0, pinned by tests/native_clients/rust5/Cargo.lock; `make
rust5-client` builds tests/native_clients/rust5 into rust5/bin/rust5client; `make test-rust5` builds it and runs this
module, which `make test` leaves out: a new machine spends minutes building the crate) against
pocketmq's gRPC endpoint, with the SDK's defaults: TLS off (as the SDK ships), nothing configured but the endpoint.
The SDK has a producer (transactional too) and a SimpleConsumer, no push consumer.

One cluster for the module; each test runs the Rust program once, and what it sent is read back by pocketmq's own
4.x client, and what pocketmq's client sent is what the SDK must receive.
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
    of,
    send_with_pocketmq,
)
from .sdk_helpers import create_topic, wait_for, wait_pulled

RUST5_DIR = NATIVE_CLIENTS / "rust5"

pytestmark = pytest.mark.rust5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.ThreadedCluster]:
    with embedded.ThreadedCluster(tmp_path_factory.mktemp("rust5"), grpc=True, **CLUSTER) as c:
        yield c


@pytest.fixture(scope="module")
def rust5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    # The SDK logs to its terminal (stderr): the driver's stderr file.
    driver = Driver(RUST5_DIR / "bin" / "rust5client",
                    [RUST5_DIR / n for n in ("src/main.rs", "Cargo.toml", "Cargo.lock")], "rust5-client",
                    tmp_path_factory.mktemp("rust5-logs"))
    driver.assert_built()
    yield driver
    driver.close()


def test_rust_sdk_normal_sends_arrive_with_ids_tags_keys_and_properties(cluster, rust5):
    create_topic(cluster, "RustSend5")
    events = rust5.run(cluster, "send", "--topic", "RustSend5", "--count", "12", "--prefix", "rs")
    sent = {e["message_id"]: e for e in of(events, "sent")}
    assert len(sent) == 12
    stored = wait_pulled(cluster, "RustSend5", 12)
    assert sorted(m.uniq_key for m in stored) == sorted(sent)
    for m in stored:
        assert_stored_as_sent(sent[m.uniq_key], m, "rs")
        assert m.properties["PGROUP"] == "RustSend5"
    # With its default settings the SDK speaks plaintext (the module's clients are all the SDK's: no TLS).
    connections = cluster.cluster.proxy.connections
    assert connections["plaintext"] >= 1 and connections["tls"] == 0


def test_rust_sdk_fifo_groups_each_on_one_queue_in_order(cluster, rust5):
    create_topic(cluster, "RustFifo5", queues=8)
    events = rust5.run(cluster, "fifo", "--topic", "RustFifo5", "--count", "12", "--groups", "3", "--prefix", "rf")
    sent = {e["message_id"]: e for e in of(events, "sent")}
    stored = wait_pulled(cluster, "RustFifo5", 12)
    for g in range(3):
        mine = sorted((m for m in stored if m.properties["__SHARDINGKEY"] == f"rf-{g}"), key=lambda m: m.queue_offset)
        assert len({m.queue_id for m in mine}) == 1, f"group rf-{g} spread over queues"
        assert [int(m.properties["idx"]) for m in mine] == list(range(g, 12, 3))
        for m in mine:
            assert_stored_as_sent(sent[m.uniq_key], m, "rf")


def test_rust_sdk_delay_message_is_not_delivered_before_its_time(cluster, rust5):
    create_topic(cluster, "RustDelay5")
    # The SDK sends whole seconds: the message is due at the start of a second 2 s ahead.
    events = rust5.run(cluster, "delay", "--topic", "RustDelay5", "--prefix", "rd", "--delay-s", "2")
    [sent] = of(events, "sent")
    [m] = wait_pulled(cluster, "RustDelay5", 1)
    assert_stored_as_sent(sent, m, "rd")
    assert int(m.properties["TIMER_DELIVER_MS"]) == sent["deliver_at"]
    assert m.store_timestamp >= sent["deliver_at"]  # the timer wheel put it in the topic at its time, not before


def test_rust_sdk_transactions_commit_roll_back_and_are_checked_back(cluster, rust5):
    create_topic(cluster, "RustTxn5")
    broker = cluster.cluster.broker
    assert broker is not None
    rolled_back = broker.end_transaction_processor.rolled_back
    events = rust5.run(cluster, "transaction", "--topic", "RustTxn5", "--prefix", "rt")
    sent = {e["decision"]: e for e in of(events, "sent")}
    assert set(sent) == {"commit", "rollback", "check"} and all(e["transaction_id"] for e in sent.values())
    # The half message left open was checked back through the proxy and the producer's Telemetry stream.
    checked = [e for e in of(events, "checked") if e["decision"] == "check"]
    assert checked and checked[0]["message_id"] == sent["check"]["message_id"]
    assert checked[0]["body"] == sent["check"]["body"]
    stored = wait_pulled(cluster, "RustTxn5", 2)
    assert sorted(m.uniq_key for m in stored) == sorted([sent["commit"]["message_id"], sent["check"]["message_id"]])
    for m in stored:
        i = int(m.properties["idx"])
        assert m.body.decode() == body_for("rt", i) and m.tags == TAGS[i % 3]
    wait_for(lambda: broker.end_transaction_processor.rolled_back > rolled_back)


def test_rust_sdk_simple_consumer_receives_acks_and_gets_back_what_it_did_not_ack(cluster, rust5):
    create_topic(cluster, "RustSimple5")
    run = rust5.start(cluster, "simple", "--topic", "RustSimple5", "--group", "RustSimpleGroup5", "--expect", "12",
                      "--hold", "rc-4", "--invisible-ms", "1000")
    run.started()
    sent = send_with_pocketmq(cluster, "RustSimple5", "rc", 12)
    events = run.done()
    received, acked = of(events, "received"), of(events, "acked")
    for e in received:
        assert_received_as_sent(e, sent)
        assert e["topic"] == "RustSimple5"
    assert sorted(e["message_id"] for e in acked) == sorted(sent)
    held = [e for e in received if e["keys"] == ["rc-4"]]
    assert [e.get("held", False) for e in held] == [True, False]
    assert_back_after_invisible_time(*held)
    with SyncSimpleConsumer("RustSimpleGroup5", cluster.namesrv_addr, subscriptions={"RustSimple5": "*"},
                            await_duration=0.3) as consumer:
        assert consumer.receive(32, 10) == []
