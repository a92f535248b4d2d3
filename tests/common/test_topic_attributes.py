"""RocketMQ 5's attribute modifications and message types (AttributeParser, AttributeUtil, TopicMessageType)."""

from __future__ import annotations

import re

import pytest

from pocketmq.common.attribute import AttributeError_, alter_current_attributes, parse_to_map, parse_to_string
from pocketmq.common.topic_attributes import ALL, TopicMessageType, message_type_of, topic_message_type, type_conflict


def test_parse_round_trip() -> None:
    parsed = parse_to_map("+message.type=FIFO,-reserve.time")
    assert parsed == {"+message.type": "FIFO", "-reserve.time": ""}
    assert parse_to_map(parse_to_string(parsed)) == parsed
    assert parse_to_map("") == {} and parse_to_map(None) == {}


@pytest.mark.parametrize(("text", "why"), [
    ("message.type=FIFO", "add/alter attribute format is wrong: message.type"),
    ("message.type", "delete attribute format is wrong: message.type"),
    ("+a=1,+a=2", "key duplication: +a"),
])
def test_parse_refusals(text: str, why: str) -> None:
    with pytest.raises(AttributeError_, match=re.escape(why)):
        parse_to_map(text)


def test_alter_create_update_delete() -> None:
    created = alter_current_attributes(True, ALL, {}, {"+message.type": "FIFO", "+queue.type": "SimpleCQ"})
    assert created == {"message.type": "FIFO", "queue.type": "SimpleCQ"}
    updated = alter_current_attributes(False, ALL, created, {"+message.type": "DELAY"})
    assert updated == {"message.type": "DELAY", "queue.type": "SimpleCQ"}
    assert alter_current_attributes(False, ALL, updated, {"-message.type": ""}) == {"queue.type": "SimpleCQ"}


@pytest.mark.parametrize(("create", "current", "mods", "why"), [
    (True, {}, {"-message.type": ""}, "only add attribute is supported while creating topic"),
    (True, {}, {"+color": "red"}, "unsupported key: color"),
    (True, {}, {"+message.type": "URGENT"}, "value is not in set"),
    (False, {"queue.type": "SimpleCQ"}, {"+queue.type": "BatchCQ"}, "attempt to update an unchangeable attribute"),
    (False, {}, {"-message.type": ""}, "attempt to delete a nonexistent key: message.type"),
    (True, {}, {"+reserve.time": "-2"}, r"value is not in range\(-1, "),
])
def test_alter_refusals(create: bool, current: dict[str, str], mods: dict[str, str], why: str) -> None:
    with pytest.raises(AttributeError_, match=why):
        alter_current_attributes(create, ALL, current, mods)


def test_message_types() -> None:
    assert message_type_of({}) is TopicMessageType.NORMAL
    assert message_type_of({"TRAN_MSG": "true", "DELAY": "3"}) is TopicMessageType.TRANSACTION
    for key in ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "__STARTDELIVERTIME"):
        assert message_type_of({key: "1", "__SHARDINGKEY": "g"}) is TopicMessageType.DELAY
    assert message_type_of({"__SHARDINGKEY": "g"}) is TopicMessageType.FIFO
    assert topic_message_type({}) is TopicMessageType.NORMAL
    assert topic_message_type({"message.type": "FIFO"}) is TopicMessageType.FIFO
    assert type_conflict(TopicMessageType.MIXED, TopicMessageType.DELAY) is None
    assert type_conflict(TopicMessageType.FIFO, TopicMessageType.FIFO) is None
    assert type_conflict(TopicMessageType.FIFO, TopicMessageType.NORMAL) == (
        "TopicMessageType validate failed, the expected type is FIFO, but actual type is NORMAL")
