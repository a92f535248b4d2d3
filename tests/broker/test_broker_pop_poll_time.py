"""How long a pop or notification that found nothing is parked, as Apache RocketMQ 5.5.0 parks it: until bornTime +
pollTime, in Java's long arithmetic (a bornTime of 0 is the request's arrival), after the pop's "timeout too much"
check in the same arithmetic. Found by tests/apache/test_differential_fuzz_pop_5.py: a pop whose bornTime and
pollTime wrap past a long's end is answered at once by 5.5.0, where pocketmq parked it for good."""

from __future__ import annotations

from broker_harness import Cluster
from test_broker_pop_answers import client, dispatched

from pocketmq.broker.longpolling.pop_long_polling_service import FOREVER_MS, poll_wait_ms, timeout_too_much
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.pop_header import (
    NotificationRequestHeader,
    NotificationResponseHeader,
    PopMessageRequestHeader,
)

MAX_LONG = 2**63 - 1
MIN_LONG = -(2**63)
NOW = 1_800_000_000_000


def test_a_request_is_parked_until_its_born_time_plus_its_poll_time() -> None:
    assert poll_wait_ms(NOW - 200, 1_000, NOW) == 800
    assert poll_wait_ms(NOW + 5_000, 1_000, NOW) == 6_000  # (a client clock ahead: its own time counts)
    assert poll_wait_ms(NOW - 1_000, 1_000, NOW) is None  # its poll time already spent
    assert poll_wait_ms(NOW, 40, NOW) is None  # within RocketMQ's 50 ms margin
    assert poll_wait_ms(NOW, 0, NOW) is None
    assert poll_wait_ms(NOW, -5, NOW) is None


def test_a_born_time_plus_poll_time_past_a_long_wraps_as_in_java() -> None:
    assert poll_wait_ms(MAX_LONG, MAX_LONG, NOW) is None  # -2: long past
    assert poll_wait_ms(MIN_LONG, MAX_LONG, NOW) is None  # -1: long past
    # The sum wraps to Long.MIN_VALUE, and its 50 ms margin back to near Long.MAX_VALUE: an expiry never reached.
    assert poll_wait_ms(1, MAX_LONG, NOW) == FOREVER_MS


def test_timeout_too_much_in_javas_arithmetic() -> None:
    assert timeout_too_much(NOW - 1_000, 400, NOW)
    assert not timeout_too_much(NOW - 1_000, 600, NOW)
    assert timeout_too_much(MIN_LONG, MAX_LONG, NOW)  # (wraps to NOW + 1)
    assert timeout_too_much(MAX_LONG, MAX_LONG, NOW)  # (wraps to NOW + 2)
    assert not timeout_too_much(1, MAX_LONG, NOW)


async def test_a_pop_and_a_notification_whose_times_wrap_past_a_long_are_answered_at_once(cluster: Cluster) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Wrap", 4)
    await pc.mq.create_group("GW")
    # Nothing to pop: before, each was parked for pollTime from its arrival (2^63 - 1 ms), and never answered.
    for born in (MIN_LONG, MAX_LONG):
        pop = await pc.mq.invoke(RequestCode.POP_MESSAGE,
                                 PopMessageRequestHeader("GW", "Wrap", -1, 1, 60_000, MAX_LONG, born, 0))
        assert (pop.code, pop.remark) == (ResponseCode.POLLING_TIMEOUT,
                                          f"the broker[{broker.broker_config.broker_ip1}] pop message is timeout "
                                          "too much")
        note = await pc.mq.invoke(RequestCode.NOTIFICATION,
                                  NotificationRequestHeader("GW", "Wrap", -1, MAX_LONG, born))
        assert note.code == ResponseCode.SUCCESS
        assert note.decode_header(NotificationResponseHeader).has_msg is False


async def test_a_born_time_of_0_is_the_requests_arrival(cluster: Cluster) -> None:
    """As 5.5.0 (and the proxy, which sends 0): a bornTime of 0 is not "timeout too much"; the pop is served."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Born0", 1)
    await pc.mq.create_group("GB")
    assert (await pc.mq.send("Born0", b"m", queue_id=0)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    pop = await pc.mq.invoke(RequestCode.POP_MESSAGE, PopMessageRequestHeader("GB", "Born0", 0, 1, 60_000, 1_000, 0, 0))
    assert pop.code == ResponseCode.SUCCESS
