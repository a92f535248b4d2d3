"""BATCH_ACK_MESSAGE's body written directly (``BatchAckMessageRequestBody.to_fastjson``, the fast path every
native pop's ack takes) against fastjson's readable writer (``dumps_reference``), and read back: the same text for
any body, a body whose fields are not of their declared types left to the general writer, errors alike."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.remoting.body_codec import decode_body, encode_body
from pocketmq.remoting.codes import BodyDialect
from pocketmq.remoting.fastjson import dumps_reference
from pocketmq.remoting.pop_body import BatchAck, BatchAckMessageRequestBody

texts = st.text(st.characters(blacklist_categories=()) | st.sampled_from('\\u"\x00\x1f\x7f\x9f\ud800é€🚀'),
                max_size=12)
longs = st.integers(-(2**63), 2**63 - 1) | st.integers(-(2**70), 2**70)
acks = st.builds(BatchAck, texts, texts, st.sampled_from(["0", "1", "2"]) | texts, longs, longs, longs, longs, longs,
                 st.lists(st.integers(0, 300), max_size=40))
bodies = st.builds(BatchAckMessageRequestBody, texts, st.lists(acks, max_size=5))
# What a caller might put in a field instead of its type: each such body goes to the general writer
odd_values = st.sampled_from([None, True, 1.5, "7", 7, b"x", ["a"], {"k": 1}])


def _reference(obj: object) -> bytes | Exception:
    try:
        return dumps_reference(obj).encode("utf-8")
    except Exception as e:  # (compared by type and text)
        return e


def _written(obj: object) -> bytes | Exception:
    try:
        return encode_body(obj, BodyDialect.FASTJSON)
    except Exception as e:
        return e


def _same(a: bytes | Exception, b: bytes | Exception) -> None:
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert (type(a), str(a)) == (type(b), str(b))
    else:
        assert a == b


@settings(max_examples=400, deadline=None)
@given(bodies)
def test_the_batch_ack_body_is_written_as_fastjson_writes_it(body: BatchAckMessageRequestBody) -> None:
    assert body.to_fastjson() is not None
    _same(_written(body), _reference(body))


INT32 = st.integers(-(2**31), 2**31 - 1)
readable = st.builds(BatchAckMessageRequestBody, texts, st.lists(st.builds(
    BatchAck, texts, texts, st.sampled_from(["0", "1", "2"]), INT32, INT32, INT32, INT32, INT32,
    st.lists(st.integers(0, 300), max_size=40)), max_size=5))


@settings(max_examples=200, deadline=None)
@given(readable)
def test_the_batch_ack_body_reads_back(body: BatchAckMessageRequestBody) -> None:
    back = decode_body(encode_body(body, BodyDialect.FASTJSON), BatchAckMessageRequestBody, BodyDialect.FASTJSON)
    for a in body.acks:
        a.offsets = sorted(set(a.offsets))
    assert back == body


FIELDS = ("consumer_group", "topic", "retry", "start_offset", "queue_id", "revive_queue_id", "pop_time",
          "invisible_time")


@settings(max_examples=300, deadline=None)
@given(bodies.filter(lambda b: bool(b.acks)), st.sampled_from(FIELDS), odd_values, st.data())
def test_a_field_of_another_type_is_left_to_the_general_writer(body: BatchAckMessageRequestBody, name: str,
                                                                value: Any, data: st.DataObject) -> None:
    ack = data.draw(st.sampled_from(body.acks))
    setattr(ack, name, value)
    if type(value) is type(getattr(BatchAck("", "", "", 0, 0, 0, 0, 0), name)):
        return  # (of its own type after all)
    assert body.to_fastjson() is None
    _same(_written(body), _reference(body))


@pytest.mark.parametrize("broker_name, acks", [
    (None, []), (5, []), ("b", ()), ("b", [{"c": "g"}]), ("b", None),
])
def test_a_body_of_other_types_is_left_to_the_general_writer(broker_name: Any, acks: Any) -> None:
    body = BatchAckMessageRequestBody(broker_name, acks)
    assert body.to_fastjson() is None
    _same(_written(body), _reference(body))


def test_a_negative_offset_fails_as_the_general_writer_fails() -> None:
    body = BatchAckMessageRequestBody("b", [BatchAck("g", "t", "0", 5, 1, 0, 1, 2, [3, -1])])
    with pytest.raises(ValueError) as fast:
        encode_body(body, BodyDialect.FASTJSON)
    with pytest.raises(ValueError) as reference:
        dumps_reference(body)
    assert str(fast.value) == str(reference.value)


def test_the_text_of_one_pop_ack() -> None:
    body = BatchAckMessageRequestBody("broker-a", [BatchAck("g", "TopicA", "0", 5, 1, 3, 1700000000000, 60000,
                                                            [0, 3, 9])])
    assert encode_body(body, BodyDialect.FASTJSON) == (
        b'{"acks":[{"b":"CQI=","c":"g","it":60000,"pt":1700000000000,"q":1,"r":"0","rq":3,"so":5,"t":"TopicA"}],'
        b'"brokerName":"broker-a"}')
