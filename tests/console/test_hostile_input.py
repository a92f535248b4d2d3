"""What peers hand the console that is not what it expects: message bodies that are JSON only to Python (NaN,
Infinity, 1e999) or nest past the parser's depth, a consumer whose running info nests past it, and a request
body whose Content-Type names a charset Python does not know. Each page still answers, in JSON a browser reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402

from pocketmq.client import ConsumeConcurrentlyStatus, PushConsumer  # noqa: E402
from pocketmq.client.impl.consumer import push_consumer_admin  # noqa: E402
from pocketmq.client.impl.consumer.rebalance_history import REBALANCE_HISTORY_PROPERTY  # noqa: E402
from pocketmq.client.message import Message  # noqa: E402
from pocketmq.client.producer.producer import Producer  # noqa: E402
from pocketmq.console.api import _parse_mq_key  # noqa: E402
from pocketmq.console.rebalances import parse_history  # noqa: E402
from pocketmq.remoting.admin_body import ConsumeStats, ConsumeStatsList, KVTable  # noqa: E402
from pocketmq.remoting.client_body import SubscriptionGroupConfig  # noqa: E402
from pocketmq.remoting.codes import RequestCode  # noqa: E402

TOO_DEEP = "[" * 100_000 + "]" * 100_000


def strict_json(text: str) -> Any:
    """JSON as a browser's JSON.parse reads it: NaN and Infinity are not JSON."""
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


async def get(console: Any, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as s, s.get(console.url + path) as r:
        return r.status, strict_json(await r.text())


@pytest.mark.parametrize("body, as_json", [
    (b'{"price": NaN}', None),
    (b'{"price": -Infinity}', None),
    (b'{"big": 1e999}', None),
    (TOO_DEEP.encode(), None),
    (b'{"price": 1.5, "n": [1, 2]}', {"price": 1.5, "n": [1, 2]}),
])
async def test_a_body_json_cannot_carry_is_shown_as_text(cluster, console, body, as_json):
    async with Producer("HostilePG", cluster.namesrv_addr) as p:
        sent = await p.send(Message("HostileT", body))
    assert await cluster.wait_dispatched()
    status, answer = await get(console, f"api/message?msgId={sent.msg_id}&topic=HostileT")
    assert status == 200, answer
    assert answer["body_json"] == as_json
    assert answer["body_text"] == body.decode()


def test_a_report_nested_past_the_parser_is_skipped():
    assert parse_history("c", {REBALANCE_HISTORY_PROPERTY: TOO_DEEP}) == []
    assert _parse_mq_key(TOO_DEEP) is None
    assert _parse_mq_key('{"topic": "T", "brokerName": "b", "queueId": NaN}') is None
    assert _parse_mq_key('{"topic": "T", "brokerName": "b", "queueId": 3}') == ("T", "b", 3)


async def test_a_consumer_reporting_a_hostile_running_info_leaves_its_group_page_readable(cluster, console, poll,
                                                                                          monkeypatch):
    honest = push_consumer_admin.PushConsumerAdmin.running_info

    def hostile(self: Any) -> dict[str, Any]:
        info = honest(self)
        info["properties"][REBALANCE_HISTORY_PROPERTY] = TOO_DEEP  # a client's own report: any text
        info["mqTable"] = {TOO_DEEP: {}}
        return info

    monkeypatch.setattr(push_consumer_admin.PushConsumerAdmin, "running_info", hostile)

    async def listener(_msgs: list[Any], _context: Any) -> Any:
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with Producer("HostilePG", cluster.namesrv_addr) as p:
        await p.send(Message("HostileGroupT", b"x"))
    assert await cluster.wait_routed("HostileGroupT")
    c = PushConsumer("HostileGroup", cluster.namesrv_addr, rebalance_interval=0.2, heartbeat_broker_interval=0.1)
    c.subscribe("HostileGroupT", "*")
    c.register_message_listener(listener)
    await c.start()
    try:
        await poll(lambda: c.assigned_queues(), timeout=20)
        status, answer = await get(console, "api/group?group=HostileGroup")
        assert status == 200, answer
        assert [x["client_id"] for x in answer["clients"]] == [c.client_id]
        assert answer["rebalances"] == []
    finally:
        await c.shutdown()


@pytest.mark.parametrize("content_type, body, status", [
    # RFC 8259 defines no charset for JSON (it is UTF-8): an unknown one changes nothing.
    ("application/json;charset=x", b'{"topic": "CharsetT"}', 200),
    ("application/json; charset=latin-1", b'{"topic": "CharsetT"}', 200),
    ("application/json", '{"topic": "Caf\u00e9T"}'.encode("latin-1"), 400),  # not UTF-8
])
async def test_a_json_body_is_read_as_utf8_whatever_charset_it_names(cluster, console, content_type, body, status):
    headers = {"Content-Type": content_type}
    async with aiohttp.ClientSession() as s, s.post(console.url + "api/topic", data=body, headers=headers) as r:
        answer = strict_json(await r.text())
        assert r.status == status, answer
    if status == 400:
        assert "UTF-8" in answer["error"]
    else:
        assert answer["created"] == "CharsetT"


def answering_instead(broker: Any, code: int, rewrite: Any) -> None:
    """The broker's answers to ``code`` passed through ``rewrite(request, answer)``: what a hostile or broken peer
    registered as a broker could send, which pocketmq's own broker never does (so its handler is wrapped)."""
    processor = broker.remoting_server._processors[int(code)].__self__
    honest = processor.handlers[code]

    async def hostile(channel: Any, request: Any) -> Any:
        answer = await honest(channel, request)
        rewrite(request, answer)
        return answer

    processor.handlers[code] = hostile


async def test_a_broker_s_nan_consume_tps_is_shown_as_none(cluster: Any, console: Any) -> None:
    # Apache's fastjson writes a Double NaN as "NaN" and ConsumeStats reads it; rounded into the page's JSON it
    # failed _dumps(allow_nan=False): a 500 for the group and for every group's list.
    async with Producer("NanPG", cluster.namesrv_addr) as producer:
        await producer.send(Message("NanT", b"x"))
    cluster.broker.subscription_group_manager.update_subscription_group_config(SubscriptionGroupConfig("NanGroup"))
    cluster.broker.consumer_offset_manager.commit_offset("127.0.0.1", "NanGroup", "NanT", 0, 0)

    def nan_tps(request: Any, answer: Any) -> None:
        stats = answer.decode_body(ConsumeStats)
        stats.consume_tps = float("nan")
        answer.body = request.encode_body(stats)

    def nan_tps_of_all(request: Any, answer: Any) -> None:  # (what the groups page asks)
        stats = answer.decode_body(ConsumeStatsList)
        for entry in stats.consume_stats_list:
            for listed in entry.values():
                for one in listed:
                    one.consume_tps = float("nan")
        answer.body = request.encode_body(stats)

    answering_instead(cluster.broker, RequestCode.GET_CONSUME_STATS, nan_tps)
    answering_instead(cluster.broker, RequestCode.GET_BROKER_CONSUME_STATS, nan_tps_of_all)
    status, group = await get(console, "api/group?group=NanGroup")
    assert status == 200 and group["tps"] is None
    status, groups = await get(console, "api/groups")
    assert status == 200 and [g["tps"] for g in groups["groups"] if g["group"] == "NanGroup"] == [None]


async def test_a_broker_s_boot_time_that_is_no_number_leaves_the_cluster_page_readable(cluster: Any,
                                                                                      console: Any) -> None:
    def odd_boot(request: Any, answer: Any) -> None:
        answer.body = request.encode_body(KVTable({"bootTimestamp": "soon"}))

    answering_instead(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, odd_boot)
    status, page = await get(console, "api/cluster")
    assert status == 200 and len(page["brokers"]) == 1
