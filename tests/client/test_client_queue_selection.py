"""Routes → queue lists, round-robin selection, avoiding a failed broker, latency faults, selectors."""

from __future__ import annotations

from collections import Counter

import pytest

from pocketmq.client import Message, select_message_queue_by_hash
from pocketmq.client.impl.producer.topic_publish_info import (
    TopicPublishInfo,
    topic_route_data_to_publish_info,
    topic_route_data_to_subscribe_info,
)
from pocketmq.client.producer.fault_strategy import MQFaultStrategy, compute_not_available_duration
from pocketmq.common.java_hash import java_string_hash
from pocketmq.remoting.body import BrokerData, QueueData, TopicRouteData
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import PermName

R, W = PermName.PERM_READ, PermName.PERM_WRITE


def route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[
            QueueData("broker-b", 3, 2, R | W),
            QueueData("broker-a", 2, 2, R | W),
            QueueData("broker-ro", 2, 2, R),  # read-only: no writes
            QueueData("broker-slaveonly", 2, 2, R | W),  # no master: no writes
        ],
        broker_datas=[
            BrokerData("c", "broker-a", {0: "a:1"}),
            BrokerData("c", "broker-b", {0: "b:1", 1: "b:2"}),
            BrokerData("c", "broker-ro", {0: "r:1"}),
            BrokerData("c", "broker-slaveonly", {1: "s:1"}),
        ],
    )


def names(mqs: list[MessageQueue]) -> list[tuple[str, int]]:
    return [(mq.broker_name, mq.queue_id) for mq in mqs]


def test_publish_info_has_the_write_queues_of_writeable_masters_in_broker_order() -> None:
    info = topic_route_data_to_publish_info("T", route())
    assert names(info.message_queue_list) == [("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
    assert info.ok() and not info.order_topic
    assert info.get_queue_id_by_broker("broker-b") == 2 and info.get_queue_id_by_broker("nope") == -1


def test_order_topic_conf_overrides_queue_data() -> None:
    r = route()
    r.order_topic_conf = "broker-b:2;broker-a:1"
    info = topic_route_data_to_publish_info("T", r)
    assert info.order_topic
    assert names(info.message_queue_list) == [("broker-b", 0), ("broker-b", 1), ("broker-a", 0)]


def test_subscribe_info_has_the_read_queues_of_readable_brokers() -> None:
    mqs = topic_route_data_to_subscribe_info("T", route())
    assert Counter(mq.broker_name for mq in mqs) == {
        "broker-a": 2, "broker-b": 3, "broker-ro": 2, "broker-slaveonly": 2
    }
    assert mqs == sorted(mqs, key=lambda q: (q.broker_name, q.queue_id))


def four_queues() -> TopicPublishInfo:
    info = topic_route_data_to_publish_info("T", route())
    info.send_which_queue = 0x7FFFFFFF  # the next index wraps to 0
    return info


def test_round_robin_over_all_queues() -> None:
    info = four_queues()
    picked = [info.select_one_message_queue() for _ in range(8)]
    assert names(picked) == names(info.message_queue_list) * 2


def test_a_retry_avoids_the_broker_that_just_failed() -> None:
    info = four_queues()
    for _ in range(6):
        assert info.select_one_message_queue("broker-a").broker_name == "broker-b"  # type: ignore[union-attr]
    only_a = TopicPublishInfo(message_queue_list=[MessageQueue("T", "broker-a", i) for i in range(2)])
    assert only_a.select_one_message_queue("broker-a").broker_name == "broker-a"  # type: ignore[union-attr]
    assert TopicPublishInfo().select_one_message_queue() is None


def test_default_strategy_is_plain_round_robin() -> None:
    strategy = MQFaultStrategy()
    info = four_queues()
    strategy.update_fault_item("broker-a", 100.0, isolation=True)  # ignored while latency faults are off
    assert Counter(strategy.select_one_message_queue(info, None).broker_name for _ in range(8)) == {  # type: ignore[union-attr]
        "broker-a": 4, "broker-b": 4
    }


def test_latency_fault_tolerance_steers_away_until_the_broker_recovers() -> None:
    now = [1000.0]
    strategy = MQFaultStrategy(send_latency_fault_enable=True, clock=lambda: now[0])
    info = four_queues()
    strategy.update_fault_item("broker-a", 0.01, isolation=True)  # a failure: out for 600 s
    assert {strategy.select_one_message_queue(info, None).broker_name for _ in range(8)} == {"broker-b"}  # type: ignore[union-attr]
    now[0] += 600.0
    assert {strategy.select_one_message_queue(info, None).broker_name for _ in range(8)} == {  # type: ignore[union-attr]
        "broker-a", "broker-b"
    }


def test_all_brokers_faulty_still_picks_one() -> None:
    strategy = MQFaultStrategy(send_latency_fault_enable=True, clock=lambda: 0.0)
    info = four_queues()
    strategy.update_fault_item("broker-a", 0.01, isolation=True)
    strategy.update_fault_item("broker-b", 0.01, isolation=True)
    mq = strategy.select_one_message_queue(info, None)
    assert mq is not None and mq.broker_name in {"broker-a", "broker-b"} and 0 <= mq.queue_id < 2


def test_all_brokers_faulty_moves_the_index_as_javas_strategy_does() -> None:
    # 4.9.7's MQFaultStrategy: one turn for the scan, then selectOneMessageQueue() and the queue id's own turn
    # when it falls back to the least bad broker: three turns per send, the queue id from the third.
    strategy = MQFaultStrategy(send_latency_fault_enable=True, clock=lambda: 0.0)
    info = four_queues()  # the next index is 0
    strategy.update_fault_item("broker-a", 0.01, isolation=True)
    strategy.update_fault_item("broker-b", 0.01, isolation=True)
    picked = [strategy.select_one_message_queue(info, None) for _ in range(2)]
    assert names(picked) == [("broker-a", 0), ("broker-a", 1)]  # type: ignore[arg-type]  # indexes 2 and 5
    assert info.send_which_queue == 5


@pytest.mark.parametrize(
    ("latency", "duration"), [(0.0, 0.0), (0.09, 0.0), (0.55, 30.0), (1.5, 60.0), (2.5, 120.0), (30.0, 600.0)]
)
def test_not_available_durations(latency: float, duration: float) -> None:
    assert compute_not_available_duration(latency) == duration


def test_select_by_hash_matches_javas_arithmetic() -> None:
    mqs = [MessageQueue("T", "b", i) for i in range(7)]
    msg = Message("T", b"x")
    for arg in ["order-1", "polygenelubricants", "", "订单"]:  # the second has a negative Java hash
        assert select_message_queue_by_hash(mqs, msg, arg).queue_id == abs(java_string_hash(arg)) % 7
    assert java_string_hash("polygenelubricants") < 0
    assert select_message_queue_by_hash(mqs, msg, -15).queue_id == 1  # Java: abs(-15 % 7) = 1
    # Long.hashCode: low word of v ^ (v >>> 32) = 3 ^ 256 = 259
    ten = [MessageQueue("T", "b", i) for i in range(10)]
    assert select_message_queue_by_hash(ten, msg, 2**40 + 3).queue_id == 9
