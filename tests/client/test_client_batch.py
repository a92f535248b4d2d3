"""MessageBatch: the rules RocketMQ applies and the body format (§9.3), read back field by field."""

from __future__ import annotations

import struct

import pytest

from pocketmq.client import Message, MQClientException
from pocketmq.client.batch import MessageBatch, encode_message, generate_from_list
from pocketmq.client.impl.producer.send_request import SendRequestOptions, build_send_request
from pocketmq.common.message import string_to_properties
from pocketmq.remoting.client_body import MessageQueue

MAX = 4 * 1024 * 1024


def read_batch(body: bytes) -> list[tuple[int, int, int, int, bytes, dict[str, str]]]:
    """(totalsize, magic, bodycrc, flag, body, properties) per message, decoded by hand."""
    out = []
    pos = 0
    while pos < len(body):
        total, magic, crc, flag, body_len = struct.unpack_from(">iiiii", body, pos)
        payload = body[pos + 20 : pos + 20 + body_len]
        (props_len,) = struct.unpack_from(">h", body, pos + 20 + body_len)
        props = body[pos + 22 + body_len : pos + 22 + body_len + props_len].decode()
        assert total == 22 + body_len + props_len
        out.append((total, magic, crc, flag, payload, string_to_properties(props)))
        pos += total
    assert pos == len(body)
    return out


def test_batch_body_decodes_field_by_field() -> None:
    msgs = [
        Message("T", b"first", tags="A", keys="k1", flag=1),
        Message("T", bytes(range(256)) * 40, properties={"p": "v"}),  # big bodies are not compressed in a batch
        Message("T", "zwölf".encode(), keys=["x", "y"]),
    ]
    batch = generate_from_list(msgs, MAX)
    records = read_batch(batch.body)
    assert [r[1:4] for r in records] == [(0, 0, 1), (0, 0, 0), (0, 0, 0)]
    assert [r[4] for r in records] == [m.body for m in msgs]
    assert records[0][5] == {"TAGS": "A", "KEYS": "k1", "WAIT": "true", "UNIQ_KEY": msgs[0].uniq_key}
    assert records[1][5]["p"] == "v"
    assert records[2][5]["KEYS"] == "x y"
    assert all(m.uniq_key for m in msgs)
    assert batch.uniq_ids() == ",".join(m.uniq_key for m in msgs)  # type: ignore[misc]
    assert batch.topic == "T" and batch.properties == {"WAIT": "true"}


def test_batch_request_is_never_compressed() -> None:
    batch = generate_from_list([Message("T", b"z" * 10_000), Message("T", b"y")], MAX)
    header, body, uniq = build_send_request(batch, MessageQueue("T", "b", 1), SendRequestOptions("PG"))
    assert header.batch is True and header.sys_flag == 0
    assert body == batch.body and uniq == batch.uniq_ids()


def _prepared(m: Message) -> Message:
    """As the transactional producer marks its half message (a user cannot set TRAN_MSG)."""
    m.properties["TRAN_MSG"] = "true"
    return m


@pytest.mark.parametrize(
    ("msgs", "fragment"),
    [
        ([], "no messages"),
        ([Message("T", b"a"), Message("U", b"b")], "topic of the messages in one batch should be the same"),
        ([Message("T", b"a", delay_time_level=2)], "TimeDelayLevel is not supported"),
        ([Message("%RETRY%g", b"a")], "Retry Group is not supported"),
        ([Message("T", b"a"), Message("T", b"b", wait_store_msg_ok=False)], "waitStoreMsgOK"),
        ([Message("T", b"a"), Message("T", b"")], "body length is zero"),
        ([Message("T", b"a"), "not a message"], "is not a Message"),
        # A batch is sent without the prepared flag: a transactional message in it would be stored as an ordinary one.
        ([Message("T", b"a"), _prepared(Message("T", b"b"))], "Transactional messages"),
    ],
)
def test_batch_rules(msgs: list[Message], fragment: str) -> None:
    with pytest.raises(MQClientException, match=fragment):
        generate_from_list(msgs, MAX)


def _timer(m: Message, name: str, value: int) -> Message:
    setattr(m, name, value)
    return m


@pytest.mark.parametrize(
    ("name", "value"),
    [("delay_time_sec", 3), ("delay_time_ms", 3000), ("deliver_time_ms", 4102444800000)],
)
def test_a_batch_refuses_a_timer_that_asks_for_a_delay(name: str, value: int) -> None:
    """The broker would deliver it at once (RocketMQ's batch put reads no timer): refused, as a delay level is."""
    with pytest.raises(MQClientException, match="timer"):
        generate_from_list([Message("T", b"a"), _timer(Message("T", b"b"), name, value)], MAX)


def test_a_batch_takes_a_timer_that_asks_for_no_delay() -> None:
    msgs = [_timer(Message("T", b"a"), "delay_time_sec", 0), _timer(Message("T", b"b"), "deliver_time_ms", 1000),
            Message("T", b"c", delay_time_level=0)]
    assert len(read_batch(generate_from_list(msgs, MAX).body)) == 3


def test_batch_of_batches_is_refused() -> None:
    inner = MessageBatch([Message("T", b"a")])
    with pytest.raises(MQClientException, match="is not a Message"):
        generate_from_list([inner], MAX)


def test_matches_the_brokers_decoder() -> None:
    from pocketmq.common.message_batch import decode_message_batch as decode

    msgs = [Message("T", b"one", tags="A"), Message("T", b"two", flag=9)]
    items = decode(generate_from_list(msgs, MAX).body)
    assert [(i.flag, i.body) for i in items] == [(0, b"one"), (9, b"two")]
    assert string_to_properties(items[0].properties)["TAGS"] == "A"
    assert encode_message(msgs[1]) == generate_from_list([msgs[1]], MAX).body


@pytest.mark.parametrize("wait", [True, False])
def test_plain_messages_encode_as_any_other(wait: bool) -> None:
    # Messages with no property but WAIT take a shortcut; the body must be what the general encoder makes
    # of the same (stamped) messages, in the same order, mixed with messages that do not take it.
    msgs = [Message("T", b"a", wait_store_msg_ok=wait), Message("T", b"bb", tags="X", wait_store_msg_ok=wait),
            Message("T", b"ccc", flag=7, wait_store_msg_ok=wait), Message("T", b"d", wait_store_msg_ok=wait)]
    batch = generate_from_list(msgs, MAX)
    assert batch.body == b"".join(encode_message(m) for m in msgs)
    assert [r[5] for r in read_batch(batch.body)][2] == {"WAIT": str(wait).lower(), "UNIQ_KEY": msgs[2].uniq_key}
    assert len({m.uniq_key for m in msgs}) == 4
