"""Heartbeats, consumer lists, NOTIFY_CONSUMER_IDS_CHANGED and the removal of closed or silent clients."""

from __future__ import annotations

import asyncio
import socket

import pytest
from broker_harness import FLAG_SUBSCRIPTION

from pocketmq.remoting.body import decode_body, encode_body
from pocketmq.remoting.client_body import ConsumerData, GetConsumerListByGroupResponseBody, HeartbeatData
from pocketmq.remoting.codec import encode
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from pocketmq.remoting.transport import parse_address


class Notifications:
    """Collects the NOTIFY_CONSUMER_IDS_CHANGED requests a client receives."""

    def __init__(self, mq) -> None:
        self.groups: list[str] = []
        self.oneway_flags: list[bool] = []
        mq.client.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify)

    async def _on_notify(self, channel, request):
        self.groups.append(request.ext_fields["consumerGroup"])
        self.oneway_flags.append(request.is_oneway)
        return None


async def consumer_ids(mq, group: str) -> list[str] | None:
    resp = await mq.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(group))
    if resp.code != ResponseCode.SUCCESS:
        return None
    return decode_body(resp.body, GetConsumerListByGroupResponseBody).consumer_id_list


@pytest.mark.both_loops
async def test_second_consumer_joining_notifies_the_first(cluster, broker, poll) -> None:
    first, second = cluster.mq(broker), cluster.mq(broker)
    seen = Notifications(first)
    assert (await first.heartbeat("client-1", {"GroupN": {"TopicN": "*"}})).code == ResponseCode.SUCCESS
    assert await consumer_ids(first, "GroupN") == ["client-1"]
    # The retry topic of the group is created at its first heartbeat, with retryQueueNums (1) queues.
    retry = broker.topic_config_manager.select_topic_config("%RETRY%GroupN")
    assert (retry.read_queue_nums, retry.write_queue_nums, retry.perm) == (1, 1, 6)

    await poll(lambda: seen.groups == ["GroupN"])  # its own registration is a change too
    await second.heartbeat("client-2", {"GroupN": {"TopicN": "*"}})
    await poll(lambda: seen.groups == ["GroupN", "GroupN"])
    assert all(seen.oneway_flags)
    assert sorted(await consumer_ids(first, "GroupN")) == ["client-1", "client-2"]

    # A repeated heartbeat changes nothing and notifies no one.
    await second.heartbeat("client-2", {"GroupN": {"TopicN": "*"}})
    await first.heartbeat("client-1", {"GroupN": {"TopicN": "*"}})
    await asyncio.sleep(0.05)
    assert len(seen.groups) == 2


async def test_channel_close_removes_the_client_and_notifies_the_rest(cluster, broker, poll) -> None:
    first, second = cluster.mq(broker), cluster.mq(broker)
    seen = Notifications(first)
    await first.heartbeat("client-1", {"GroupC": {"TopicC": "*"}}, producer_groups=("PG1",))
    await second.heartbeat("client-2", {"GroupC": {"TopicC": "*"}}, producer_groups=("PG1",))
    await poll(lambda: len(seen.groups) == 2)
    assert len(broker.producer_manager.group_channel_table["PG1"]) == 2
    await second.client.close()
    await poll(lambda: len(seen.groups) == 3)
    assert await consumer_ids(first, "GroupC") == ["client-1"]
    assert len(broker.producer_manager.group_channel_table["PG1"]) == 1
    await first.client.close()
    await poll(lambda: broker.consumer_manager.get_consumer_group_info("GroupC") is None)
    assert "PG1" not in broker.producer_manager.group_channel_table


async def test_unregister_client(cluster, broker, poll) -> None:
    first, second = cluster.mq(broker), cluster.mq(broker)
    seen = Notifications(first)
    await first.heartbeat("client-1", {"GroupU": {"TopicU": "*"}})
    await second.heartbeat("client-2", {"GroupU": {"TopicU": "*"}})
    await poll(lambda: len(seen.groups) == 2)
    header = UnregisterClientRequestHeader(client_id="client-2", consumer_group="GroupU")
    assert (await second.invoke(RequestCode.UNREGISTER_CLIENT, header)).code == ResponseCode.SUCCESS
    await poll(lambda: len(seen.groups) == 3)
    assert await consumer_ids(first, "GroupU") == ["client-1"]


async def test_silent_clients_expire(cluster, poll) -> None:
    broker = await cluster.broker(channel_expired_timeout=0.6, client_housekeeping_interval=0.05)
    alive, silent = cluster.mq(broker), cluster.mq(broker)
    seen = Notifications(alive)
    await silent.heartbeat("silent", {"GroupE": {"TopicE": "*"}})
    await alive.heartbeat("alive", {"GroupE": {"TopicE": "*"}})
    silent_channel = await silent.client.get_channel(silent.addr)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    # Keep one client heartbeating; the other goes quiet and is dropped (its connection closed).
    while not silent_channel.closed:
        assert loop.time() < deadline, "the silent client was never expired"
        await alive.heartbeat("alive", {"GroupE": {"TopicE": "*"}})
        await asyncio.sleep(0.03)
    assert await consumer_ids(alive, "GroupE") == ["alive"]
    await poll(lambda: len(seen.groups) >= 2)  # told about the departure


async def test_consumer_list_of_unknown_group_and_bad_heartbeat(broker, mq) -> None:
    resp = await mq.invoke(RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader("Nobody"))
    assert resp.code == ResponseCode.SYSTEM_ERROR and "no consumer for this group" in resp.remark
    resp = await mq.invoke(RequestCode.HEART_BEAT, body=b"\x93\x01\x02\x03")
    assert resp.code == ResponseCode.SYSTEM_ERROR and "bad request" in resp.remark
    resp = await mq.invoke(RequestCode.HEART_BEAT)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert (await mq.heartbeat("c", {"GroupOk": {"T": "*"}})).code == ResponseCode.SUCCESS


async def test_a_heartbeat_of_an_empty_object_is_taken_and_registers_no_one(broker, mq) -> None:
    # (as RocketMQ 5.5.0's broker: the body's fields all missing, its client id null and its sets empty)
    heartbeat = HeartbeatData.from_dict({})
    assert heartbeat == HeartbeatData("")
    resp = await mq.invoke(RequestCode.HEART_BEAT, body=encode_body(heartbeat))
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, None)
    assert broker.consumer_manager.consumer_table == {} and broker.producer_manager.group_channel_table == {}


async def test_notifications_can_be_disabled(cluster, poll) -> None:
    broker = await cluster.broker(notify_consumer_ids_changed_enable=False)
    first, second = cluster.mq(broker), cluster.mq(broker)
    seen = Notifications(first)
    await first.heartbeat("client-1", {"GroupQ": {"TopicQ": "*"}})
    await second.heartbeat("client-2", {"GroupQ": {"TopicQ": "*"}})
    assert sorted(await consumer_ids(first, "GroupQ")) == ["client-1", "client-2"]
    await asyncio.sleep(0.05)
    assert seen.groups == [] and broker.consumer_ids_change_listener.notifications_sent == 0


async def test_a_consumer_that_does_not_read_is_not_notified_at_every_change(cluster, broker, poll) -> None:
    # RocketMQ's one-way sends give up when its semaphore is taken; here each change made a task that waited on the
    # stuck consumer's full connection, and a group changing all the time piled them up without bound.
    mq = cluster.mq(broker)
    assert (await mq.create_topic("StuckT", queues=1)).code == ResponseCode.SUCCESS
    for _ in range(20):
        assert (await mq.send("StuckT", b"x" * 100_000, queue_id=0)).code == ResponseCode.SUCCESS
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    stuck = socket.socket()
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.setblocking(False)
    await asyncio.get_running_loop().sock_connect(stuck, parse_address(broker.address))
    heartbeat = HeartbeatData("stuck", [], [ConsumerData("GroupS", subscription_data_set=[])])
    pull = encode(RemotingCommand.request(RequestCode.PULL_MESSAGE,
                                          mq.pull_request("GroupS", "StuckT", 0, 0, sys_flag=FLAG_SUBSCRIPTION)))
    stuck.sendall(encode(RemotingCommand.request(RequestCode.HEART_BEAT, None, encode_body(heartbeat))) + pull * 60)
    try:
        await poll(lambda: any(ch.write_paused for ch in broker.remoting_server.channels))
        for i in range(300):  # another member of the group changes its mind, again and again
            await mq.heartbeat("flipper", {"GroupS": {f"StuckT{i % 2}": "*"}})
        waiting = [t for t in asyncio.all_tasks() if t.get_name() == "notify-GroupS" and not t.done()]
        assert len(waiting) <= 2, len(waiting)
        assert broker.consumer_ids_change_listener.notifications_sent >= 300  # the reading member was told
    finally:
        stuck.close()


async def test_a_connection_is_one_producer_client_whatever_ids_its_heartbeats_name(cluster, broker) -> None:
    # Each heartbeat with a new client id on one live connection added an entry that stayed as long as it did.
    mq = cluster.mq(broker)
    for i in range(100):
        assert (await mq.heartbeat(f"client-{i}", producer_groups=("PGroupIds",))).code == ResponseCode.SUCCESS
    table = broker.producer_manager.client_channel_table
    assert list(table) == ["client-99"]
    assert broker.producer_manager.find_channel("client-99") is not None
    assert broker.producer_manager.find_channel("client-0") is None
