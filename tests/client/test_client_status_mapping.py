"""Response codes → SendStatus / PullStatus, or MQBrokerException for everything else (§7.1, §7.2)."""

from __future__ import annotations

import pytest

from pocketmq.client import MQBrokerException, PullStatus, SendStatus
from pocketmq.client.impl.mq_client_api import process_pull_response, process_send_response
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import PullMessageResponseHeader, SendMessageResponseHeader

OFFSET_ID = "7F00000100002A9F0000000000001234"


def send_answer(code: int) -> RemotingCommand:
    return RemotingCommand.response(code, ext_fields=SendMessageResponseHeader(OFFSET_ID, 2, 41))


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ResponseCode.SUCCESS, SendStatus.SEND_OK),
        (ResponseCode.FLUSH_DISK_TIMEOUT, SendStatus.FLUSH_DISK_TIMEOUT),
        (ResponseCode.FLUSH_SLAVE_TIMEOUT, SendStatus.FLUSH_SLAVE_TIMEOUT),
        (ResponseCode.SLAVE_NOT_AVAILABLE, SendStatus.SLAVE_NOT_AVAILABLE),
    ],
)
def test_stored_outcomes_become_send_results(code: int, status: SendStatus) -> None:
    result = process_send_response("broker-a", "T", send_answer(code), "UNIQ")
    assert result.send_status is status
    assert (result.msg_id, result.offset_msg_id, result.queue_offset) == ("UNIQ", OFFSET_ID, 41)
    assert result.message_queue == MessageQueue("T", "broker-a", 2)


def test_the_queue_sent_to_is_the_result_queue_only_if_the_broker_stored_there() -> None:
    sent_to = MessageQueue("T", "broker-a", 2)
    same = process_send_response("broker-a", "T", send_answer(ResponseCode.SUCCESS), "UNIQ", mq=sent_to)
    assert same.message_queue is sent_to
    other = MessageQueue("T", "broker-a", 3)  # the broker answered queue 2: that is where the message is
    moved = process_send_response("broker-a", "T", send_answer(ResponseCode.SUCCESS), "UNIQ", mq=other)
    assert moved.message_queue == MessageQueue("T", "broker-a", 2)


@pytest.mark.parametrize(
    "code",
    [ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY, ResponseCode.MESSAGE_ILLEGAL,
     ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST],
)
def test_other_send_codes_raise_with_code_and_remark(code: int) -> None:
    answer = RemotingCommand.response(code, "something is wrong")
    with pytest.raises(MQBrokerException) as info:
        process_send_response("broker-a", "T", answer, "UNIQ", "10.0.0.1:10911")
    e = info.value
    assert (e.code, e.remark, e.broker_addr) == (code, "something is wrong", "10.0.0.1:10911")
    assert f"CODE: {code}" in str(info.value)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ResponseCode.SUCCESS, PullStatus.FOUND),
        (ResponseCode.PULL_NOT_FOUND, PullStatus.NO_NEW_MSG),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, PullStatus.NO_MATCHED_MSG),
        (ResponseCode.PULL_OFFSET_MOVED, PullStatus.OFFSET_ILLEGAL),
    ],
)
def test_pull_codes(code: int, status: PullStatus) -> None:
    answer = RemotingCommand.response(code, ext_fields=PullMessageResponseHeader(1, 17, 3, 90), body=b"raw")
    result = process_pull_response(answer)
    assert result.pull_status is status
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (17, 3, 90)
    assert (result.suggest_which_broker_id, result.message_binary) == (1, b"raw")


@pytest.mark.parametrize(
    "code",
    [ResponseCode.SYSTEM_ERROR, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, ResponseCode.NO_PERMISSION,
     ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SUBSCRIPTION_PARSE_FAILED],
)
def test_other_pull_codes_raise(code: int) -> None:
    with pytest.raises(MQBrokerException) as info:
        process_pull_response(RemotingCommand.response(code, "no"))
    assert info.value.code == code and info.value.remark == "no"
