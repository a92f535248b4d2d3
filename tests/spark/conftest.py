"""Spark tests: one local[2] session and one cluster for the whole run, and admin requests as mqadmin sends them.

Only tests/spark/test_spark_session.py starts the JVM: under ``-n 2 --dist loadfile`` that file goes to one
worker, so a run holds one JVM while the other worker goes on with the rest. The other files here need
pyspark importable but no JVM.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from pocketmq.client import SyncPullConsumer
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
)

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError:  # without the spark extra there is nothing here to run
    collect_ignore_glob = ["test_*.py"]


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


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def spark():
    from pyspark_pocketmq import local_session

    session = local_session("pocketmq-tests")
    yield session
    session.stop()
