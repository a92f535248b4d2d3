"""Admin requests as mqadmin sends them, and a check of what a topic holds, for the Spark tests. A module of its
own (not conftest) so that test files can import it: every test folder has a conftest."""

from __future__ import annotations

import asyncio

from pocketmq.client import SyncPullConsumer
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
)


def _invoke(addr: str, request: RemotingCommand) -> RemotingCommand:
    async def go() -> RemotingCommand:
        client = RemotingClient()
        try:
            return await client.invoke(addr, request, 10)
        finally:
            await client.close()

    response = asyncio.run(go())
    assert response.code == ResponseCode.SUCCESS, response
    return response


def create_topic(cluster, topic: str, queues: int) -> None:
    """UPDATE_AND_CREATE_TOPIC (creates, or changes the queue count of, a topic)."""
    header = CreateTopicRequestHeader(topic, "TBW102", queues, queues, 6)
    _invoke(cluster.broker_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header))


def delete_topic(cluster, topic: str) -> None:
    """As `mqadmin deleteTopic`: the broker drops the topic and its data, then the name server its route."""
    _invoke(cluster.broker_addr, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER,
                                                         DeleteTopicRequestHeader(topic)))
    _invoke(cluster.namesrv_addr, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV,
                                                          DeleteTopicFromNamesrvRequestHeader(topic)))


def stored_messages(cluster, topic: str) -> list:
    """Every message of ``topic``, queue by queue, pulled as any consumer would."""
    with SyncPullConsumer("spark-tests-check", cluster.namesrv_addr) as consumer:
        out = []
        for mq in consumer.fetch_subscribe_message_queues(topic):
            offset, end = 0, consumer.max_offset(mq)
            while offset < end:
                result = consumer.pull(mq, "*", offset, 32)
                out += result.msg_found_list
                offset = result.next_begin_offset
        return out
