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

from .sdk_driver import (
    CLUSTER,
    NATIVE_CLIENTS,
    Driver,
    assert_fifo_groups_read_back,
    assert_sends_read_back,
    assert_simple_consumer_receives,
    assert_stored_as_sent,
    assert_transactions_read_back,
    of,
)
from .sdk_helpers import create_topic, wait_pulled

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
    assert_sends_read_back(cluster, rust5, "RustSend5", 12, "rs")
    # With its default settings the SDK speaks plaintext (the module's clients are all the SDK's: no TLS).
    connections = cluster.cluster.proxy.connections
    assert connections["plaintext"] >= 1 and connections["tls"] == 0


def test_rust_sdk_fifo_groups_each_on_one_queue_in_order(cluster, rust5):
    assert_fifo_groups_read_back(cluster, rust5, "RustFifo5", 12, 3, "rf")


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
    assert_transactions_read_back(cluster, rust5, "RustTxn5", "rt")


def test_rust_sdk_simple_consumer_receives_acks_and_gets_back_what_it_did_not_ack(cluster, rust5):
    assert_simple_consumer_receives(cluster, rust5, "RustSimple5", "RustSimpleGroup5", "rc")
