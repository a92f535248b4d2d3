"""Recalls of delay messages asked of both servers, and a 4.x producer's messages received over gRPC."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from pocketmq.common.recall_message_handle import HandleV1

from ..conftest import D, S, metadata
from .calls import (
    CONSUMER_ID,
    CONV_TOPIC,
    DELAY_TOPIC,
    TOPIC,
    ask,
    assert_same_status,
    delay_message,
    produce_4x,
    recall,
    receive_both,
    telemetry_session,
)


def test_recall_of_a_handle_that_is_none(both_servers):
    answers = ask(both_servers, "RecallMessage", S.RecallMessageRequest(topic=D.Resource(name=DELAY_TOPIC),
                                                                        recall_handle="not a handle"))
    assert_same_status(answers)


def test_a_delay_message_is_recalled_by_its_handle(both_servers):
    """The handle a DELAY send answers with is Apache's, byte for byte (the same slot of the same precision), and
    recalling with it is answered alike."""
    message_id = "0102FC0000000171190B1C3CCC0000CCCC"
    deliver = (int(time.time()) + 60) * 1000 + 500
    sent = ask(both_servers, "SendMessage", S.SendMessageRequest(messages=[delay_message(message_id, deliver)]))
    assert_same_status(sent)
    handles = {name: a.entries[0].recall_handle for name, a in sent.items()}
    assert handles["pocketmq"] == handles["apache"] == HandleV1.build_handle(
        DELAY_TOPIC, "broker-a", str(deliver - 500 + 1), message_id)
    answers = recall(both_servers, handles)
    assert_same_status(answers)
    assert {name: a.message_id for name, a in answers.items()} == {"apache": message_id, "pocketmq": message_id}


@pytest.mark.parametrize("case", ["due already", "too far ahead", "another topic", "another broker",
                                  "not a number"])
def test_recall_refusals(both_servers, case):
    now = int(time.time() * 1000)
    topic, broker, timestamp = DELAY_TOPIC, "broker-a", str(now + 60_000)
    if case == "due already":
        timestamp = str(now - 1_000)
    elif case == "too far ahead":
        timestamp = str(now + 4 * 86_400_000)  # (timerMaxDelaySec: three days)
    elif case == "another topic":
        topic = TOPIC
    elif case == "another broker":
        broker = "no-such-broker"
    else:
        timestamp = "soon"
    handle = HandleV1.build_handle(topic, broker, timestamp, "0102FC0000000171190B1C3CCC0000DDDD")
    answers = recall(both_servers, {"apache": handle, "pocketmq": handle})
    assert_same_status(answers)
    assert answers["pocketmq"].status.code != D.Code.OK


def test_a_4x_producer_s_message_as_a_5x_consumer_reads_it(apache, pocketmq, both_servers):
    """Keys ending with the separator (Java's split drops the empty last one), TIMER_DELAY_SEC (a delivery time:
    its delay from when it is handed out) and a born host without __BORNHOST (the IP alone)."""
    run = str(time.time_ns())
    for _, namesrv in (apache, pocketmq):
        asyncio.run(produce_4x(namesrv, run))
    group = "ParityConvGroup"
    stop = threading.Event()
    calls = []
    try:
        for stub in both_servers.values():
            calls.append(telemetry_session(stub, CONSUMER_ID, group, CONV_TOPIC, D.ClientType.SIMPLE_CONSUMER, stop,
                                           120))
        brokers = {name: stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=CONV_TOPIC)), metadata=metadata(),
                                         timeout=30).message_queues[0].broker.name
                   for name, stub in both_servers.items()}
        asked_at = time.time_ns() // 1_000_000
        got: dict[str, dict[str, Any]] = {"apache": {}, "pocketmq": {}}
        deadline = time.monotonic() + 60
        while any(len(m) < 2 for m in got.values()):
            assert time.monotonic() < deadline, {name: list(m) for name, m in got.items()}
            for name, responses in receive_both(both_servers, brokers, topic=CONV_TOPIC, group=group).items():
                for r in responses:
                    if r.WhichOneof("content") == "message":
                        got[name][r.message.system_properties.tag] = r.message.system_properties
    finally:
        stop.set()
        for call in calls:
            call.cancel()
    keys = {name: (list(m["K" + run].keys), m["K" + run].born_host) for name, m in got.items()}
    assert keys["pocketmq"] == keys["apache"] == (["k1", "k2"], "127.0.0.1"), keys
    delayed = {name: (m["S" + run].message_type, m["S" + run].HasField("delivery_timestamp"))
               for name, m in got.items()}
    assert delayed["pocketmq"] == delayed["apache"] == (D.MessageType.DELAY, True), delayed
    assert all(m["S" + run].delivery_timestamp.ToMilliseconds() >= asked_at + 1000 for m in got.values())
