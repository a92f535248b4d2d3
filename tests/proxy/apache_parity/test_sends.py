"""Sends asked of both servers: refusals, a batch past the message size, query assignment, transactions' ends and
ids, message ids, what is whitespace to Java."""

from __future__ import annotations

import pytest

from ..conftest import D, S
from .calls import (
    TOPIC,
    TXN_TOPIC,
    ask,
    assert_same_status,
    message,
    statuses,
)


@pytest.mark.parametrize("case", ["too large", "empty", "no id", "system key", "bad tag", "no message",
                                  "control character key"])
def test_send_refusals(both_servers, case):
    if case == "no message":
        request = S.SendMessageRequest()
    else:
        msg = {"too large": lambda: message(body=b"x" * (4 * 1024 * 1024 + 1)),
               "empty": lambda: message(body=b""),
               "no id": lambda: message(message_id=""),
               "system key": lambda: message(),
               "bad tag": lambda: message(tag="a|b"),
               "control character key": lambda: message(keys=["a\x01b"])}[case]()
        if case == "system key":
            msg.user_properties["UNIQ_KEY"] = "mine"
        request = S.SendMessageRequest(messages=[msg])
    assert_same_status(ask(both_servers, "SendMessage", request))


def test_a_batch_past_the_broker_s_message_size(both_servers):
    # Two messages of 2.5 MiB: each within the proxy's limit, together past the broker's 4 MiB.
    big = [message(b"y" * (5 << 19), message_id=f"0102FC0000000171190B1C3CCC0000C{i:03X}") for i in range(2)]
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=big))
    codes = {name: a.status.code for name, a in answers.items()}
    assert codes["pocketmq"] == codes["apache"], statuses(answers)


def test_query_assignment(both_servers):
    answers = ask(both_servers, "QueryAssignment", S.QueryAssignmentRequest(topic=D.Resource(name=TOPIC),
                                                                     group=D.Resource(name="ParityGroup")))
    assert_same_status(answers)
    shape = {name: [(x.message_queue.id, x.message_queue.permission, x.message_queue.broker.id)
                    for x in a.assignments] for name, a in answers.items()}
    assert shape["pocketmq"] == shape["apache"]


def test_end_transaction_of_an_unknown_transaction(both_servers):
    assert_same_status(ask(both_servers, "EndTransaction", S.EndTransactionRequest(
        topic=D.Resource(name=TOPIC), message_id="m", transaction_id="unknown",
        resolution=D.TransactionResolution.COMMIT, source=D.TransactionSource.SOURCE_CLIENT)))
    assert_same_status(ask(both_servers, "EndTransaction", S.EndTransactionRequest(topic=D.Resource(name=TOPIC))))


def test_a_send_answers_with_the_clients_message_id(both_servers):
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[message(
        b"parity", message_id="0102FC0000000171190B1C3CCC0000AAAA", tag="TagP", keys=["k1"])]))
    assert_same_status(answers)
    entries = {name: [(e.status.code, e.message_id, e.transaction_id, e.recall_handle) for e in a.entries]
               for name, a in answers.items()}
    # (Apache 5's broker gives every send a transaction id: the message id; a recall handle to timer messages only.)
    assert entries["pocketmq"] == entries["apache"] == [(D.Code.OK, "0102FC0000000171190B1C3CCC0000AAAA",
                                                         "0102FC0000000171190B1C3CCC0000AAAA", "")]


def test_a_half_message_gets_a_transaction_id(both_servers):
    half = message(b"half", message_id="0102FC0000000171190B1C3CCC0000BBBB")
    half.topic.name = TXN_TOPIC
    half.system_properties.message_type = D.MessageType.TRANSACTION
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[half]))
    assert_same_status(answers)
    for answer in answers.values():
        [entry] = answer.entries
        assert entry.message_id == "0102FC0000000171190B1C3CCC0000BBBB" and entry.transaction_id


def test_a_message_id_with_a_comma(both_servers):
    """One message, one entry with the whole id, also as the transaction id (pocketmq split the broker's joined
    ids on commas: two entries, and the SDK sent the message again). A batch gets an entry per message on
    pocketmq; Apache 5.5.0's cluster mode answers one, the ids joined with commas."""
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[message(
        b"comma", message_id="0102FC0000000171190B1C3CCC0000EE01,x")]))
    assert_same_status(answers)
    entries = {name: [(e.status.code, e.message_id, e.transaction_id) for e in a.entries]
               for name, a in answers.items()}
    assert entries["pocketmq"] == entries["apache"] == [
        (D.Code.OK, "0102FC0000000171190B1C3CCC0000EE01,x", "0102FC0000000171190B1C3CCC0000EE01,x")]


# U+00A0 is no whitespace to Java's Character.isWhitespace (StringUtils.isBlank), U+3000 is; U+0085 is a control
# character to both, whitespace to Python only.
@pytest.mark.parametrize("case", ["NBSP tag", "NBSP key", "NBSP message id", "ideographic space key", "NEL tag"])
def test_whitespace_is_java_s(both_servers, case):
    nbsp = "\u00a0"
    system = {"NBSP tag": {"tag": nbsp}, "NBSP key": {"keys": [nbsp]}, "NBSP message id": {"message_id": nbsp},
              "ideographic space key": {"keys": ["\u3000"]}, "NEL tag": {"tag": "\x85"}}[case]
    answers = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[message(b"ws", **system)]))
    assert_same_status(answers)
