"""UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with a SubscriptionGroupConfig in Java's JSON, read as 4.9.7 reads it
(fastjson 1.2.69's casts, checked against 4.9.7's own classes): what is stored, what is refused, and bodies that
are no config at all. Found by tests/apache/test_differential_fuzz_config.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pocketmq.broker import BrokerController
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.wire_protocol import WireProtocol

GUARD = 30.0  # a bound for a hung test, not a timing assertion


async def create(broker: BrokerController, body: bytes | None) -> RemotingCommand:
    """The request in RocketMQ's native protocol (a body of Java's JSON), on a connection of its own."""
    client = RemotingClient(wire_protocol=WireProtocol.NATIVE)
    try:
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
        return await client.invoke(f"127.0.0.1:{broker.port}", request, GUARD)
    finally:
        await client.close()


def stored(broker: BrokerController, group: str) -> dict[str, Any] | None:
    config = broker.subscription_group_manager.subscription_group_table.get(group)
    return None if config is None else config.to_dict()


# What 4.9.7 stored for each value (Probe: RemotingSerializable.decode into its SubscriptionGroupConfig)
@pytest.mark.parametrize(("field", "value", "expected"), [
    ("retryMaxTimes", 1.5, 1), ("retryMaxTimes", -1.5, -1), ("retryMaxTimes", 2147483648.0, -2147483648),
    ("retryMaxTimes", True, 1), ("retryMaxTimes", False, 0), ("retryMaxTimes", "1,000", 1000),
    ("retryMaxTimes", "1.0", 1), ("retryMaxTimes", "", 16), ("retryMaxTimes", "null", 16),
    ("retryQueueNums", "+5", 5), ("brokerId", 2147483648, 2147483648), ("brokerId", 1.5, 1),
    ("brokerId", "1,000", 1000), ("consumeEnable", 1.5, True), ("consumeEnable", 2, False),
    ("consumeEnable", "N", False), ("consumeEnable", "f", False), ("consumeEnable", "y", True),
    ("consumeEnable", "", True), ("consumeEnable", "NULL", True), ("retryMaxTimes", 4.1776443156363204e+36, 1212153856),
    ("retryQueueNums", -9.336790535919648e+27, -304218112), ("brokerId", -5.400392869370965e+16, -54003928693709650),
    ("whichBrokerWhenConsumeSlowly", 3.759823298791761e+16, 37598232987917610), ("consumeEnable", 1.9, True),
    ("consumeEnable", 4294967297.0, True), ("consumeEnable", 1.521113373332546e+16, False),
])  # fmt: skip
async def test_a_field_is_cast_as_fastjson_casts_it(broker: BrokerController, field: str, value: object,
                                                    expected: object) -> None:
    group = f"Cast{field}"
    answer = await create(broker, json.dumps({"groupName": group, field: value}).encode())
    assert answer.code == ResponseCode.SUCCESS, answer
    config = stored(broker, group)
    assert config is not None and config[field] == expected


@pytest.mark.parametrize(("field", "value"), [
    ("retryMaxTimes", 2**31), ("retryMaxTimes", -(2**31) - 1), ("retryQueueNums", 3740642270771),
    ("retryMaxTimes", "1.5"), ("retryMaxTimes", " 1"), ("retryMaxTimes", "Null"), ("brokerId", True),
    ("brokerId", "1.0"), ("consumeEnable", "n"), ("consumeEnable", "t"), ("consumeEnable", 2**31),
    ("consumeEnable", "yes"), ("consumeBroadcastEnable", "2"), ("retryMaxTimes", 1.6948716448016612e+143),
    ("consumeEnable", 2.225073858507203e-309), ("brokerId", -3.920047090474904e-308),
])  # fmt: skip
async def test_a_value_fastjson_refuses_is_refused_and_nothing_stored(broker: BrokerController, field: str,
                                                                     value: object) -> None:
    answer = await create(broker, json.dumps({"groupName": "Refused", field: value}).encode())
    assert answer.code == ResponseCode.SYSTEM_ERROR and field in (answer.remark or ""), answer
    assert stored(broker, "Refused") is None


@pytest.mark.parametrize("body", [b"  ", b"null", b" null ", b"[]"])
async def test_a_body_fastjson_reads_as_no_config_changes_nothing(broker: BrokerController, body: bytes) -> None:
    before = dict(broker.subscription_group_manager.subscription_group_table)
    assert (await create(broker, body)).code == ResponseCode.SUCCESS
    assert broker.subscription_group_manager.subscription_group_table == before


# (an empty body arrives as none on both: 4.9.7 fails on it with a NullPointerException)
@pytest.mark.parametrize("body", [None, b"", b"{}", b"1", b'"x"', b'[{"groupName":"g"}]', b"{"])
async def test_a_body_that_is_no_config_is_refused(broker: BrokerController, body: bytes | None) -> None:
    before = dict(broker.subscription_group_manager.subscription_group_table)
    assert (await create(broker, body)).code == ResponseCode.SYSTEM_ERROR
    assert broker.subscription_group_manager.subscription_group_table == before
