"""ReplyMessageProcessor over real sockets: SEND_REPLY_MESSAGE(_V2) pushed to the requesting client's own
connection (PUSH_REPLY_MESSAGE_TO_CLIENT) and stored with storeReplyMessageEnable; the refusals; CLUSTER added
to request messages only."""

from __future__ import annotations

import time
from typing import Any

import pytest
from broker_harness import MQ, Cluster

from pocketmq.common.codec import decode_all
from pocketmq.common.message import string_to_properties
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import SendMessageRequestHeader, SendMessageResponseHeader
from pocketmq.remoting.reply_header import ReplyMessageRequestHeader
from pocketmq.remoting.transport import Channel

REQUESTER = "10.1.1.1@requester"


async def requester(cluster: Cluster, broker: Any, answer: int = ResponseCode.SUCCESS) -> tuple[MQ, list[Any]]:
    """A client that heartbeats as a producer with id REQUESTER and records the replies pushed to it."""
    mq = cluster.mq(broker)
    pushed: list[RemotingCommand] = []

    async def on_push(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        pushed.append(request)
        return RemotingCommand.response_to(request, answer, None if answer == ResponseCode.SUCCESS else "no")

    mq.client.register_processor(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, on_push)
    assert (await mq.heartbeat(REQUESTER, producer_groups=("ReqPG",))).code == ResponseCode.SUCCESS
    return mq, pushed


def reply_props(**extra: str) -> str:
    return MQ.props(MSG_TYPE="reply", CORRELATION_ID="corr-1", **extra)


async def send_reply(mq: MQ, broker: Any, props: str, code: int = RequestCode.SEND_REPLY_MESSAGE_V2,
                     body: bytes = b"the answer") -> RemotingCommand:
    topic = f"{broker.broker_config.broker_cluster_name}_REPLY_TOPIC"
    if code == RequestCode.SEND_REPLY_MESSAGE:  # the V1 header (the harness writes V2 for other codes)
        v1 = SendMessageRequestHeader("PG", topic, "TBW102", 4, 0, 0, int(time.time() * 1000), 0, props)
        return await mq.invoke(code, v1, body)
    return await mq.send(topic, body, properties=props, code=code)


@pytest.mark.parametrize("code", [RequestCode.SEND_REPLY_MESSAGE_V2, RequestCode.SEND_REPLY_MESSAGE])
async def test_a_reply_is_pushed_to_the_requester_and_stored(cluster, broker, dispatched, code: int) -> None:
    req, pushed = await requester(cluster, broker)
    replier = cluster.mq(broker)
    answer = await send_reply(replier, broker, reply_props(REPLY_TO_CLIENT=REQUESTER), code)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    (push,) = pushed
    h = push.decode_header(ReplyMessageRequestHeader)
    assert push.body == b"the answer"
    assert h.topic == f"{broker.broker_config.broker_cluster_name}_REPLY_TOPIC"
    assert h.store_host == broker.address and h.born_host == await replier.local_address()
    assert h.producer_group == "PG" and abs(h.store_timestamp - time.time() * 1000) < 60_000
    props = string_to_properties(h.properties or "")
    assert props["CORRELATION_ID"] == "corr-1" and props["REPLY_TO_CLIENT"] == REQUESTER
    assert int(props["PUSH_REPLY_TIME"]) > 0
    # storeReplyMessageEnable (default true): stored in the reply topic, and the answer names the record
    rh = answer.decode_header(SendMessageResponseHeader)
    assert rh.msg_id != "0"
    await dispatched(broker)
    assert broker.store.get_max_offset_in_queue(h.topic, 0) == 1


async def test_without_store_reply_the_reply_is_only_pushed(cluster) -> None:
    broker = await cluster.broker(store_reply_message_enable=False)
    req, pushed = await requester(cluster, broker)
    answer = await send_reply(cluster.mq(broker), broker, reply_props(REPLY_TO_CLIENT=REQUESTER))
    assert answer.code == ResponseCode.SUCCESS
    rh = answer.decode_header(SendMessageResponseHeader)
    assert (rh.msg_id, rh.queue_offset) == ("0", 0)
    assert len(pushed) == 1
    topic = f"{broker.broker_config.broker_cluster_name}_REPLY_TOPIC"
    assert broker.store.get_max_offset_in_queue(topic, 0) == 0


async def test_refusals_name_the_reason(cluster, broker) -> None:
    replier = cluster.mq(broker)
    no_target = await send_reply(replier, broker, reply_props())
    assert no_target.code == ResponseCode.SYSTEM_ERROR
    assert no_target.remark == "reply message properties[REPLY_TO_CLIENT] is null"
    unknown = await send_reply(replier, broker, reply_props(REPLY_TO_CLIENT="10.9.9.9@nobody"))
    assert unknown.code == ResponseCode.SYSTEM_ERROR
    assert unknown.remark == "push reply message fail, channel of <10.9.9.9@nobody> not found."
    req, pushed = await requester(cluster, broker, answer=ResponseCode.SYSTEM_ERROR)
    refused = await send_reply(replier, broker, reply_props(REPLY_TO_CLIENT=REQUESTER))
    assert refused.code == ResponseCode.SYSTEM_ERROR and refused.remark == f"push reply message to {REQUESTER} fail."
    assert len(pushed) == 1
    bad_topic = await replier.send("bad topic!", b"x", properties=reply_props(REPLY_TO_CLIENT=REQUESTER),
                                   code=RequestCode.SEND_REPLY_MESSAGE_V2)
    assert bad_topic.code == ResponseCode.SYSTEM_ERROR and len(pushed) == 1  # the send's checks come first


async def test_a_requester_that_left_is_not_found(cluster, broker) -> None:
    req, pushed = await requester(cluster, broker)
    assert broker.producer_manager.find_channel(REQUESTER) is not None
    await req.client.close()
    replier = cluster.mq(broker)
    for _ in range(200):
        answer = await send_reply(replier, broker, reply_props(REPLY_TO_CLIENT=REQUESTER))
        if "not found" in (answer.remark or ""):
            break
    assert answer.code == ResponseCode.SYSTEM_ERROR and "not found" in (answer.remark or "")
    assert broker.producer_manager.find_channel(REQUESTER) is None


async def test_cluster_is_added_to_requests_only(cluster, broker, dispatched) -> None:
    mq = cluster.mq(broker)
    assert (await mq.create_topic("ReqTopic", 1)).code == ResponseCode.SUCCESS
    request = MQ.props(CORRELATION_ID="c", REPLY_TO_CLIENT=REQUESTER, TTL="3000")
    plain = MQ.props(tags="A")
    assert (await mq.send("ReqTopic", b"request", properties=request)).code == ResponseCode.SUCCESS
    assert (await mq.send("ReqTopic", b"plain", properties=plain)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    pulled = await mq.pull("G", "ReqTopic", 0, 0)
    first, second = decode_all(pulled.body or b"")
    assert first.properties["CLUSTER"] == broker.broker_config.broker_cluster_name
    assert first.properties["REPLY_TO_CLIENT"] == REQUESTER
    # An ordinary send is stored as it came, with the region stamp (Apache 5's) appended.
    assert second.properties_string == plain + "MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02"


def test_reply_header_round_trips() -> None:
    h = ReplyMessageRequestHeader("PG", "T", "TBW102", 4, 0, 0, 1, 0, "1.2.3.4:5", "6.7.8.9:10911", 2, "a\x01b\x02")
    assert ReplyMessageRequestHeader.from_ext(h.to_ext()) == h
