"""MQAdminImpl's lookups that span a topic's brokers: query by key, and the name server's topic list."""

from __future__ import annotations

import asyncio
import time

from pocketmq.common.message import MessageExt
from pocketmq.remoting.header import QueryMessageRequestHeader

from .exceptions import MQClientException
from .mq_client_instance import MQClientInstance


async def query_message(
    instance: MQClientInstance, topic: str, key: str, max_num: int, begin: int = 0, end: int | None = None
) -> list[MessageExt]:
    """Messages of ``topic`` whose KEYS hold ``key`` (or whose UNIQ_KEY is ``key``), stored in [begin, end] ms,
    from every broker serving the topic (up to ``max_num`` from each), through the brokers' key index.

    The index is built a few milliseconds after a message is stored, so a message just sent may be missing.
    """
    if end is None:
        end = int(time.time() * 1000) + 3_600_000
    route = await instance.fetch_and_apply_route(topic)
    addrs = [a for a in (bd.select_broker_addr() for bd in route.broker_datas) if a is not None]
    if not addrs:
        raise MQClientException(f"no broker serves {topic}")
    header = QueryMessageRequestHeader(topic, key, max_num, begin, end)
    timeout = instance.config.mq_client_api_timeout
    answers = await asyncio.gather(*(instance.mq_client_api.query_message(a, header, timeout) for a in addrs))
    # The broker matches index hash codes and re-checks; this check also covers brokers that do not.
    return [m for msgs in answers for m in msgs if m.topic == topic and (key in m.keys or m.uniq_key == key)]


async def fetch_all_topic_list(instance: MQClientInstance) -> list[str]:
    """Every topic the name servers know, system topics included (MQAdminExt.fetchAllTopicList)."""
    return await instance.mq_client_api.get_topic_list_from_name_server(instance.config.mq_client_api_timeout)
