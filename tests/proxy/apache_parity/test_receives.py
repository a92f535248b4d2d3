"""A simple consumer's calls asked of both servers (consumer_sessions, conftest.py): receive refusals and
deadlines, bad receipt handles, receive, ack and change of invisible duration."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.duration_pb2 import Duration

from ..conftest import D, S, metadata
from .calls import (
    CONSUMER_ID,
    RECV_GROUP,
    RECV_TOPIC,
    ask,
    assert_same_status,
    receive_both,
    shape,
    without_frame,
)


@pytest.mark.parametrize("case", ["unknown topic", "system topic", "illegal group", "invisible time too small",
                                  "invisible time too large"])
def test_receive_refusals(both_servers, consumer_sessions, case):
    kwargs: dict[str, Any] = {
        "unknown topic": {"topic": "NoSuchTopic5"},
        "system topic": {"topic": "TBW102"},
        "illegal group": {"group": "bad group!"},
        "invisible time too small": {"invisible_ms": 9_999},
        "invisible time too large": {"invisible_ms": 12 * 3600 * 1000 + 1},
    }[case]
    got = {name: shape(r) for name, r in receive_both(both_servers, consumer_sessions, **kwargs).items()}
    assert got["pocketmq"] == got["apache"], got
    assert got["apache"][-1] == "delivery_timestamp"


def test_a_receive_whose_deadline_is_shorter_than_the_polling_time(both_servers, consumer_sessions):
    got = {name: shape(r) for name, r in receive_both(both_servers, consumer_sessions, timeout=3,
                                                      polling_ms=10_000).items()}
    assert got["pocketmq"] == got["apache"], got


# A handle that does not parse, one that is not numbers, and one whose invisible time ran out in 1970. Asked by
# a client with a Telemetry stream, as the SDKs are: without one, Apache 5.5.0's ChangeInvisibleDuration of a
# well-formed handle fails with a NullPointerException (its receipt-handle lookup keys on the missing channel),
# where pocketmq answers as for any client.
@pytest.mark.parametrize("handle", ["not a handle", "a b c d e f g h", "0 1 2 3 0 broker-a 0 0 5"])
def test_bad_receipt_handles(both_servers, consumer_sessions, handle):
    answers = ask(both_servers, "AckMessage", S.AckMessageRequest(
        group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC),
        entries=[S.AckMessageEntry(message_id="m", receipt_handle=handle)]), md=metadata(CONSUMER_ID))
    got = {name: (without_frame(a.status), [(without_frame(e.status), e.message_id, e.receipt_handle)
                                             for e in a.entries]) for name, a in answers.items()}
    assert got["pocketmq"] == got["apache"], got
    change = S.ChangeInvisibleDurationRequest(group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC),
                                              receipt_handle=handle, message_id="m",
                                              invisible_duration=Duration(seconds=10))
    answers = ask(both_servers, "ChangeInvisibleDuration", change, md=metadata(CONSUMER_ID))
    got = {name: without_frame(a.status) for name, a in answers.items()}
    assert got["pocketmq"] == got["apache"], got


def test_receive_ack_and_change_invisible_duration(both_servers, consumer_sessions):
    for i in range(2):
        answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[D.Message(
            topic=D.Resource(name=RECV_TOPIC), body=f"consume me {i}".encode(),
            system_properties=D.SystemProperties(message_id=f"0102FC0000000171190B1C3CCC0000CC0{i}", tag="TagR",
                                                 message_type=D.MessageType.NORMAL,
                                                 body_encoding=D.Encoding.IDENTITY))]))
        assert_same_status(answers)
    got: dict[str, list[Any]] = {"apache": [], "pocketmq": []}
    for _ in range(10):
        for name, responses in receive_both(both_servers, consumer_sessions).items():
            got[name].extend(r.message for r in responses if r.WhichOneof("content") == "message")
        if all(len(m) >= 2 for m in got.values()):
            break
    for name, msgs in got.items():
        assert sorted(m.body for m in msgs) == [b"consume me 0", b"consume me 1"], name
    views = {name: sorted((m.system_properties.message_id, m.system_properties.tag,
                           m.system_properties.delivery_attempt, m.system_properties.body_digest.checksum,
                           m.system_properties.body_encoding, m.system_properties.message_type) for m in msgs)
             for name, msgs in got.items()}
    assert views["pocketmq"] == views["apache"]
    first = {name: sorted(msgs, key=lambda m: m.body)[0] for name, msgs in got.items()}
    second = {name: sorted(msgs, key=lambda m: m.body)[1] for name, msgs in got.items()}
    acks = {name: stub.AckMessage(S.AckMessageRequest(
        group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC), entries=[S.AckMessageEntry(
            message_id=first[name].system_properties.message_id,
            receipt_handle=first[name].system_properties.receipt_handle)]), metadata=metadata(CONSUMER_ID), timeout=30)
        for name, stub in both_servers.items()}
    assert_same_status(acks)
    assert {n: [(e.status.code, e.status.message) for e in a.entries] for n, a in acks.items()}["pocketmq"] == \
        [(e.status.code, e.status.message) for e in acks["apache"].entries]
    changes = {name: stub.ChangeInvisibleDuration(S.ChangeInvisibleDurationRequest(
        group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC),
        receipt_handle=second[name].system_properties.receipt_handle,
        message_id=second[name].system_properties.message_id, invisible_duration=Duration(seconds=60)),
        metadata=metadata(CONSUMER_ID), timeout=30) for name, stub in both_servers.items()}
    assert_same_status(changes)
    for name, change in changes.items():
        assert change.receipt_handle and change.receipt_handle != second[name].system_properties.receipt_handle
        # The new handle acks it, on both.
        ack = both_servers[name].AckMessage(S.AckMessageRequest(
            group=D.Resource(name=RECV_GROUP), topic=D.Resource(name=RECV_TOPIC), entries=[S.AckMessageEntry(
                message_id=second[name].system_properties.message_id, receipt_handle=change.receipt_handle)]),
            metadata=metadata(CONSUMER_ID), timeout=30)
        assert ack.status.code == D.Code.OK, (name, ack.status)
    # Nothing left: the same "nothing" on both.
    nothing = {name: shape(r) for name, r in receive_both(both_servers, consumer_sessions).items()}
    assert nothing["pocketmq"] == nothing["apache"], nothing
