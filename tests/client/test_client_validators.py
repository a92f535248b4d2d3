"""Validators: names and messages are refused before any I/O, with RocketMQ's messages and codes."""

from __future__ import annotations

import pytest

from pocketmq.client import Message, MQClientException, Producer, PullConsumer
from pocketmq.client.client_config import ClientConfig
from pocketmq.client.exceptions import ClientErrorCode
from pocketmq.client.validators import check_group, check_message, check_topic
from pocketmq.remoting.codes import ResponseCode

MAX = 4 * 1024 * 1024


@pytest.mark.parametrize(
    ("topic", "fragment"),
    [
        ("", "is blank"),
        ("   ", "is blank"),
        (None, "is blank"),
        ("t" * 128, "longer than topic max length"),
        ("has space", "contains illegal characters"),
        ("topic#1", "contains illegal characters"),
        ("tópico", "contains illegal characters"),
    ],
)
def test_bad_topics_are_refused(topic: object, fragment: str) -> None:
    with pytest.raises(MQClientException, match=fragment):
        check_topic(topic)


@pytest.mark.parametrize("topic", ["TopicTest", "t" * 127, "%RETRY%group-1", "a|b", "A_b-9"])
def test_good_topics_pass(topic: str) -> None:
    check_topic(topic)


@pytest.mark.parametrize(
    ("group", "fragment"),
    [("", "group is blank"), ("g" * 256, "longer than group max length 255"), ("g/1", "illegal characters")],
)
def test_bad_groups_are_refused(group: str, fragment: str) -> None:
    with pytest.raises(MQClientException, match=fragment):
        check_group(group)
    check_group("g" * 255)


@pytest.mark.parametrize(
    ("msg", "fragment", "code"),
    [
        (None, "the message is null", ResponseCode.MESSAGE_ILLEGAL),
        (Message("T", None), "body is null", ResponseCode.MESSAGE_ILLEGAL),  # type: ignore[arg-type]
        (Message("T", b""), "body length is zero", ResponseCode.MESSAGE_ILLEGAL),
        (Message("T", b"x" * (MAX + 1)), "over max value, MAX: 4194304", ResponseCode.MESSAGE_ILLEGAL),
        (Message("T", "text"), "must be bytes", ResponseCode.MESSAGE_ILLEGAL),  # type: ignore[arg-type]
        (Message("SCHEDULE_TOPIC_XXXX", b"x"), "is forbidden", ResponseCode.NO_PERMISSION),
        (Message("bad topic", b"x"), "illegal characters", -1),
    ],
)
def test_bad_messages_are_refused(msg: Message | None, fragment: str, code: int) -> None:
    with pytest.raises(MQClientException, match=fragment) as info:
        check_message(msg, MAX)
    assert info.value.response_code == code


def test_body_at_the_limit_passes() -> None:
    check_message(Message("T", b"x" * MAX), MAX)


def test_a_topic_accepted_before_still_gets_its_body_checked() -> None:
    # Valid topic names are remembered (no regex next time); the body checks must still run.
    check_message(Message("Known", b"x"), MAX)
    for body, fragment in [(b"", "length is zero"), (b"x" * (MAX + 1), "over max value"), ("text", "must be bytes"),
                           (None, "body is null")]:
        with pytest.raises(MQClientException, match=fragment):
            check_message(Message("Known", body), MAX)  # type: ignore[arg-type]
    with pytest.raises(MQClientException, match="topic is blank"):  # not a str: refused, not a TypeError
        check_message(Message(["Known"], b"x"), MAX)  # type: ignore[arg-type]


def test_system_property_names_are_reserved() -> None:
    with pytest.raises(ValueError, match="Used by system"):
        Message("T", b"x", properties={"UNIQ_KEY": "forged"})
    msg = Message("T", b"x")
    with pytest.raises(ValueError, match="Used by system"):
        msg.put_user_property("TAGS", "x")
    with pytest.raises(ValueError, match="blank"):
        msg.put_user_property("k", "  ")
    with pytest.raises(ValueError, match="separator"):
        msg.put_user_property("k", "a\x02b")
    # Names outside MessageConst.STRING_HASH_SET are the user's, whatever the broker makes of them: RocketMQ's
    # transaction example sets CHECK_IMMUNITY_TIME_IN_SECONDS as a user property (pocketmq refused it).
    for name in ("CHECK_IMMUNITY_TIME_IN_SECONDS", "TRANSACTION_CHECK_TIMES", "INNER_MULTI_DISPATCH", "__SHARDINGKEY"):
        assert Message("T", b"x", properties={name: "60"}).properties[name] == "60"


def test_no_name_server_is_a_client_error() -> None:
    with pytest.raises(MQClientException, match="No name server") as info:
        ClientConfig(namesrv_addr=" ; ")
    assert info.value.response_code == ClientErrorCode.NO_NAME_SERVER_EXCEPTION


async def test_start_refuses_bad_and_default_groups() -> None:
    with pytest.raises(MQClientException, match="illegal characters"):
        await Producer("bad group", "127.0.0.1:1").start()
    with pytest.raises(MQClientException, match="can not equal DEFAULT_PRODUCER"):
        await Producer("DEFAULT_PRODUCER", "127.0.0.1:1").start()
    with pytest.raises(MQClientException, match="can not equal DEFAULT_CONSUMER"):
        await PullConsumer("DEFAULT_CONSUMER", "127.0.0.1:1").start()


async def test_calls_before_start_fail_clearly() -> None:
    with pytest.raises(MQClientException, match="not started"):
        await Producer("PG", "127.0.0.1:1").send(Message("T", b"x"))
