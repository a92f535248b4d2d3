"""A recall in the timer store (RocketMQ 5's TIMER_DEL_UNIQKEY): a delete marker due in a message's slot keeps the
message from being delivered, on real files and across a restart; the handle the broker gives and reads
(pocketmq.common.recall_message_handle) in its codec's cases. Precision is 20 ms."""

from __future__ import annotations

import base64
import time

import pytest

from pocketmq.common.recall_message_handle import HandleV1, RecallHandleError, decode_handle
from pocketmq.storage.results import PutMessageStatus
from pocketmq.storage.timer.timer_log import MAGIC_DELETE, UNIT_SIZE
from pocketmq.storage.timer.timer_message_store import build_delete_key
from pocketmq.storage.timer.timer_routing import slot_time

from .conftest import msg, put_ok, wait_until
from .test_timer_store import all_messages

P = 20
FAST = {"timer_precision_ms": P, "timer_flush_interval": 0.05, "mapped_file_size_timer_log": UNIT_SIZE * 64 + 16}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def timer(topic: str, uniq: str, deliver: int, body: bytes = b"x"):
    return msg(topic, body=body, UNIQ_KEY=uniq, TIMER_DELIVER_MS=str(deliver))


def marker(topic: str, uniq: str, deliver: int):
    """What RecallMessageProcessor stores for a handle of ``deliver``'s slot (its timestamp is the slot + 1)."""
    return msg(topic, body=b"0", TAGS="_RECALL_TAG_", UNIQ_KEY=uniq, TIMER_DEL_UNIQKEY=build_delete_key(topic, uniq),
               TIMER_DELIVER_MS=str(slot_time(deliver, P) + 1))


def test_a_marker_keeps_its_message_from_delivery(stores) -> None:
    store = stores.open(**FAST)
    deliver = now_ms() + 2_000  # (the marker must be put before its slot is due, on a loaded machine too)
    put_ok(store, timer("T", "KEEP", deliver, b"kept"))
    put_ok(store, timer("T", "GONE", deliver, b"recalled"))
    put_ok(store, timer("Other", "GONE", deliver, b"same id, other topic"))
    put_ok(store, marker("T", "GONE", deliver))
    ts = store.timer_message_store
    wait_until(lambda: ts.enqueued == 4)
    slot = ts.timer_wheel.get_slot(slot_time(deliver, P))
    assert slot.num == 3 - 1  # a marker counts one less, as RocketMQ's
    units = ts._slot_units(slot.last_pos)
    assert [bool(u.magic & MAGIC_DELETE) for u in units] == [False, False, False, True]
    wait_until(lambda: ts.delivered == 2)
    wait_until(lambda: ts.recalled == 1)
    # Delivered is put: the consume queues have them once the dispatcher has run.
    wait_until(lambda: len(all_messages(store, "T")) + len(all_messages(store, "Other")) == 2)
    assert [m.body for m in all_messages(store, "T")] == [b"kept"]  # neither the recalled one nor the marker
    assert [m.body for m in all_messages(store, "Other")] == [b"same id, other topic"]


def test_a_recall_survives_a_restart(stores) -> None:
    config = stores.config(**FAST)
    store = stores.open(config)
    deliver = now_ms() + 2_500  # (the marker put and the restart before the slot is due, on a loaded machine too)
    put_ok(store, timer("T", "A", deliver, b"recalled"))
    put_ok(store, timer("T", "B", deliver, b"kept"))
    put_ok(store, marker("T", "A", deliver))
    wait_until(lambda: store.timer_message_store.enqueued == 3)
    store.shutdown()
    store = stores.open(config)
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 1)
    time.sleep(5 * P / 1000)  # (the recalled one would come in the same slot)
    assert [m.body for m in all_messages(store, "T")] == [b"kept"]
    assert store.timer_message_store.recalled == 1


def test_a_marker_too_late_is_never_delivered(stores) -> None:
    store = stores.open(**FAST)
    # Refused at put when its time has passed (RocketMQ's WHEEL_TIMER_MSG_ILLEGAL) ...
    late = msg("T", TIMER_DEL_UNIQKEY="T+X", TIMER_DELIVER_MS=str(now_ms() - 1))
    assert store.put_message(late).status is PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL
    # ... and one that names no message goes nowhere when its slot comes.
    deliver = now_ms() + 100
    put_ok(store, marker("T", "NOBODY", deliver))
    put_ok(store, timer("T", "SOMEONE", deliver + 2 * P, b"later"))
    wait_until(lambda: store.get_max_offset_in_queue("T", 0) == 1)
    assert [m.body for m in all_messages(store, "T")] == [b"later"]


def test_handle_round_trip() -> None:
    text = HandleV1.build_handle("T", "broker-a", "1700000000001", "0A0B")
    # RocketMQ's bytes: URL-safe Base64 (with padding) of the space-separated parts.
    assert base64.urlsafe_b64decode(text).decode() == "v1 T broker-a 1700000000001 0A0B"
    assert decode_handle(text) == HandleV1("T", "broker-a", "1700000000001", "0A0B")
    assert decode_handle(text.rstrip("=")) == decode_handle(text)  # padding optional, as Java's decoder
    extra = base64.urlsafe_b64encode(b"v1 T b 1 id more parts").decode()
    assert decode_handle(extra).message_id == "id"
    assert base64.urlsafe_b64decode(HandleV1.build_handle("T", "b", "1", None)).decode() == "v1 T b 1 null"


@pytest.mark.parametrize("text", [
    "", "not a handle", "djE", "v1+/", "a===",
    base64.urlsafe_b64encode(b"v1 T b 1").decode(),  # four parts
    base64.urlsafe_b64encode(b"v2 T b 1 id").decode(),  # another version
    base64.urlsafe_b64encode(b"v1 T b 1 ").decode(),  # Java's split drops the trailing empty part
])
def test_handles_that_do_not_decode(text) -> None:
    with pytest.raises(RecallHandleError, match="^recall handle is invalid$"):
        decode_handle(text)
