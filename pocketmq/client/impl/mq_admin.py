"""MQAdminImpl's lookups that span a topic's brokers: query by key or message id, and the name server's topic
list."""

from __future__ import annotations

import asyncio

from pocketmq.common.codec import decode_message_id
from pocketmq.common.java_numbers import LONG_MAX
from pocketmq.common.message import MessageExt
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.header import QueryMessageRequestHeader

from ..exceptions import MQClientException, NameServerAddressError, NameServerProtocolError
from .mq_client_instance import MQClientInstance
from .producer.topic_publish_info import topic_route_data_to_subscribe_info


async def query_message(
    instance: MQClientInstance,
    topic: str,
    key: str,
    max_num: int,
    begin: int = 0,
    end: int | None = None,
    unique_key: bool = False,
) -> list[MessageExt]:
    """Messages of ``topic`` whose KEYS hold ``key`` (or whose UNIQ_KEY is ``key``), stored in [begin, end] ms,
    from every broker serving the topic (up to ``max_num`` from each), through the brokers' key index.

    The index is built a few milliseconds after a message is stored, so a message just sent may be missing.
    """
    if end is None:
        end = LONG_MAX  # (RocketMQ's queryMessageByUniqKey asks to Long.MAX_VALUE)
    route = await instance.fetch_and_apply_route(topic)
    addrs = [a for a in (bd.select_broker_addr() for bd in route.broker_datas) if a is not None]
    if not addrs:
        raise MQClientException(f"no broker serves {topic}")
    header = QueryMessageRequestHeader(topic, key, max_num, begin, end)
    timeout = instance.config.mq_client_api_timeout
    api = instance.mq_client_api
    answers = await asyncio.gather(*(api.query_message(a, header, timeout, unique_key) for a in addrs))
    return [m for msgs in answers for m in msgs if key_matches(m, topic, key, unique_key)]


def key_matches(msg: MessageExt, topic: str, key: str, unique_key: bool) -> bool:
    """Whether a message a key query found is one it asked for (MQAdminImpl.queryMessage's check): the broker
    matches index hash codes, which collide, and re-checks; this also covers brokers that do not. A query by key
    takes a message whose UNIQ_KEY is the key too (MQAdminImpl drops it unless a KEYS holds it)."""
    if msg.topic != topic:
        return False
    return msg.uniq_key == key or (not unique_key and key in msg.keys)


def broker_of_offset_msg_id(msg_id: str) -> tuple[str, int] | None:
    """(broker address, commit-log offset) that an offsetMsgId names; None for a string that is not one.

    A UNIQ_KEY has the offsetMsgId's length and alphabet, so it decodes too (to the producer's address): the
    caller checks the address against the brokers it knows."""
    try:
        return decode_message_id(msg_id)
    except ValueError:
        return None


async def view_message(instance: MQClientInstance, offset_msg_id: str) -> MessageExt | None:
    """The message an offsetMsgId names, read from the broker the id names (MQAdminImpl.viewMessage)."""
    where = broker_of_offset_msg_id(offset_msg_id)
    if where is None:
        raise MQClientException(f"{offset_msg_id!r} is not an offset message id")
    addr, phy_offset = where
    return await instance.mq_client_api.view_message(addr, phy_offset, instance.config.mq_client_api_timeout)


async def query_message_by_id(
    instance: MQClientInstance, topic: str, msg_id: str, known_brokers: set[str] | None = None
) -> MessageExt | None:
    """A message of ``topic`` by either of its ids, as mqadmin's queryMsgById takes them: the offsetMsgId when
    it names a broker of the topic (or one of ``known_brokers``), else the UNIQ_KEY the send returned, looked
    up in the index of the topic's brokers. None when neither finds it."""
    where = broker_of_offset_msg_id(msg_id)
    if where is not None:
        brokers = set(known_brokers or ())
        route = await instance.fetch_and_apply_route(topic)
        brokers.update(a for bd in route.broker_datas for a in bd.broker_addrs.values())
        if where[0] in brokers:
            msg = await instance.mq_client_api.view_message(*where, instance.config.mq_client_api_timeout)
            if msg is not None and msg.topic == topic:
                return msg
    found = await query_message(instance, topic, msg_id, 32, unique_key=True)
    # A retried message keeps its UNIQ_KEY: the first stored is the one the send returned.
    return min(found, key=lambda m: m.store_timestamp) if found else None


async def fetch_subscribe_message_queues(instance: MQClientInstance, topic: str) -> list[MessageQueue]:
    """The topic's readable queues, straight from a name server, sorted by broker name and queue id
    (MQAdminImpl.fetchSubscribeMessageQueues); shared by the pull and lite pull consumers."""
    try:
        route = await instance.fetch_and_apply_route(topic)
    except (NameServerAddressError, NameServerProtocolError):
        raise  # the address or the protocol is the problem, not the topic
    except MQClientException as e:
        raise MQClientException(
            f"Can not find Message Queue for this topic, {topic}: {e}", response_code=e.response_code
        ) from e
    mqs = topic_route_data_to_subscribe_info(topic, route)
    if not mqs:
        raise MQClientException(f"Can not find Message Queue for this topic, {topic} Namesrv return empty")
    return mqs


async def fetch_all_topic_list(instance: MQClientInstance) -> list[str]:
    """Every topic the name servers know, system topics included (MQAdminExt.fetchAllTopicList)."""
    return await instance.mq_client_api.get_topic_list_from_name_server(instance.config.mq_client_api_timeout)


# --- a queue's offsets (MQAdminImpl.searchOffset / minOffset / maxOffset / earliestMsgStoreTime), shared by the
# pull and lite pull consumers ----------------------------------------------------------------------------------


async def master_address(instance: MQClientInstance, mq: MessageQueue) -> str:
    """The master of ``mq``'s broker, refreshing the topic's route once when it is not known yet."""
    addr = instance.find_broker_address_in_publish(mq.broker_name)
    if addr is None:
        await instance.update_topic_route_info_from_name_server(mq.topic, unreachable_raises=True)
        addr = instance.find_broker_address_in_publish(mq.broker_name)
    if addr is None:
        raise MQClientException(f"The broker[{mq.broker_name}] not exist")
    return addr


async def search_offset(instance: MQClientInstance, mq: MessageQueue, timestamp_ms: int,
                        timeout: float | None = None) -> int:
    """The offset of the first message of ``mq`` stored at or after ``timestamp_ms`` (SEARCH_OFFSET_BY_TIMESTAMP)."""
    addr = await master_address(instance, mq)
    return await instance.mq_client_api.search_offset(
        addr, mq.topic, mq.queue_id, timestamp_ms, timeout or instance.config.mq_client_api_timeout
    )


async def min_offset(instance: MQClientInstance, mq: MessageQueue, timeout: float | None = None) -> int:
    addr = await master_address(instance, mq)
    return await instance.mq_client_api.get_min_offset(addr, mq.topic, mq.queue_id,
                                                       timeout or instance.config.mq_client_api_timeout)


async def max_offset(instance: MQClientInstance, mq: MessageQueue, timeout: float | None = None) -> int:
    """The offset the next message of ``mq`` will get: one past the last stored."""
    addr = await master_address(instance, mq)
    return await instance.mq_client_api.get_max_offset(addr, mq.topic, mq.queue_id,
                                                       timeout or instance.config.mq_client_api_timeout)


async def earliest_msg_store_time(instance: MQClientInstance, mq: MessageQueue, timeout: float | None = None) -> int:
    addr = await master_address(instance, mq)
    return await instance.mq_client_api.get_earliest_msg_storetime(addr, mq.topic, mq.queue_id,
                                                                   timeout or instance.config.mq_client_api_timeout)
