"""ProcessQueue on its own: the offset map, the commit rule, flow-control measures and orderly batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.client.impl.consumer.process_queue import CONSUME_START_TIME, ProcessQueue, now_ms
from pocketmq.common.message import MessageExt, encoded_property, properties_to_string, string_to_properties


def msg(offset: int, body: bytes = b"xx", **props: str) -> MessageExt:
    return MessageExt(
        store_size=0, body_crc=0, queue_id=0, flag=0, queue_offset=offset, commit_log_offset=offset * 100,
        sys_flag=0, born_timestamp=0, born_host="127.0.0.1:1", store_timestamp=0, store_host="127.0.0.1:2",
        reconsume_times=0, prepared_transaction_offset=0, body=body, topic="T",
        properties_string=properties_to_string(props),
    )


def test_commit_offset_is_the_smallest_still_held() -> None:
    pq = ProcessQueue()
    assert pq.remove_message([msg(0)]) == -1  # nothing held at all
    batch = [msg(o) for o in range(10, 15)]
    pq.put_message(batch)
    assert (pq.msg_count, pq.msg_size, pq.get_max_span()) == (5, 10, 4)
    assert pq.remove_message([batch[1], batch[3]]) == 10  # 10 still in flight holds the offset back
    assert pq.remove_message([batch[0]]) == 12
    assert pq.remove_message([batch[2], batch[4]]) == 15  # empty: one past the highest ever added
    assert (pq.msg_count, pq.msg_size) == (0, 0)
    assert pq.remove_message([batch[2]]) == -1


def test_put_ignores_duplicates_and_keeps_offsets_sorted() -> None:
    pq = ProcessQueue()
    pq.put_message([msg(5), msg(7)])
    pq.put_message([msg(6), msg(5), msg(3)])
    assert [m.queue_offset for m in pq.messages()] == [3, 5, 6, 7]
    assert pq.msg_count == 4 and pq.first_offset() == 3 and pq.get_max_span() == 4


def test_the_commit_offset_stays_past_the_highest_ever_added_after_lower_puts() -> None:
    pq = ProcessQueue()
    first = [msg(5), msg(7)]
    pq.put_message(first)
    assert pq.remove_message(first) == 8
    late = [msg(6), msg(3)]  # below what was held before, out of order
    pq.put_message(late)
    assert [m.queue_offset for m in pq.messages()] == [3, 6]
    assert pq.remove_message([late[1]]) == 6
    assert pq.remove_message([late[0]]) == 8  # not 7: offset 7 was consumed already


def test_dispatch_to_consume_once_per_idle_period() -> None:
    pq = ProcessQueue()
    assert pq.put_message([msg(0)]) is True
    assert pq.put_message([msg(1)]) is False  # a consume request is already on its way
    assert [m.queue_offset for m in pq.take_messages(5)] == [0, 1]
    assert pq.take_messages(5) == [] and pq.consuming is False  # drained: the next put dispatches again
    assert pq.put_message([msg(2)]) is True


def test_orderly_take_commit_and_consume_again() -> None:
    pq = ProcessQueue()
    pq.put_message([msg(o, b"abc") for o in range(4)])
    first = pq.take_messages(2)
    assert [m.queue_offset for m in first] == [0, 1] and pq.msg_count == 4  # taken messages still count
    pq.make_message_to_consume_again(first)
    again = pq.take_messages(3)
    assert [m.queue_offset for m in again] == [0, 1, 2]  # back at the head, in order
    assert pq.commit() == 3
    assert (pq.msg_count, pq.msg_size) == (1, 3)
    assert pq.commit() == -1


def test_backlog_and_expired_messages() -> None:
    pq = ProcessQueue()
    old = str(now_ms() - 60_000)
    pq.put_message([msg(0, **{CONSUME_START_TIME: old}), msg(1, **{CONSUME_START_TIME: old}), msg(2),
                    msg(3, MAX_OFFSET="100")])
    assert pq.msg_acc_cnt == 97  # MAX_OFFSET minus the last offset, as RocketMQ counts it
    assert [m.queue_offset for m in pq.expired_messages(30.0)] == [0, 1]  # stops at the first not started
    assert pq.expired_messages(120.0) == []


def test_backlog_read_without_building_the_properties() -> None:
    pq = ProcessQueue()
    last = msg(3, MAX_OFFSET="100", TAGS="a")
    pq.put_message([msg(2), last])
    assert pq.msg_acc_cnt == 97
    assert last._properties is None  # read off the stored string: the dict is built only if someone asks
    last.put_encoded_properties(properties_to_string({"MAX_OFFSET": "", "X": "1"}))  # an empty value is no pair
    assert last.get_property("MAX_OFFSET") == "100" and last.get_property("X") == "1"
    assert last.properties["MAX_OFFSET"] == "100" and last.get_property("TAGS") == "a"  # (now from the dict)


_PAIR_TEXT = st.text(alphabet="AB\x01\x02", max_size=12)


@given(st.lists(st.tuples(_PAIR_TEXT, _PAIR_TEXT), max_size=6), st.sampled_from(["A", "AB", "B"]),
       st.booleans())
@settings(max_examples=400)
def test_encoded_property_agrees_with_string_to_properties(pairs: list[tuple[str, str]], name: str,
                                                           last_separator: bool) -> None:
    """The fast read (no dict) against the reference parse, on strings of any shape: empty names and values,
    separators inside them, a name repeated, the last separator left out."""
    encoded = "".join(f"{k}\x01{v}\x02" for k, v in pairs)
    if encoded and not last_separator:
        encoded = encoded[:-1]
    assert encoded_property(encoded, name) == string_to_properties(encoded).get(name)
