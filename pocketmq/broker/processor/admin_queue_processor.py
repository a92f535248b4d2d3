"""Three admin requests of RocketMQ 4.9.7's AdminBrokerProcessor that admin_ext_processor.py has no room for:
QUERY_CONSUME_QUEUE (mqadmin's queryCq), GET_ALL_PRODUCER_INFO (mqadmin's producer) and
GET_SYSTEM_TOPIC_LIST_FROM_BROKER."""

from __future__ import annotations

import struct
import time
from typing import TYPE_CHECKING

from pocketmq.common.constants import CQ_STORE_UNIT_SIZE
from pocketmq.remoting.admin_body import (
    ConsumeQueueData,
    ProducerInfo,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
)
from pocketmq.remoting.admin_header import QueryConsumeQueueRequestHeader
from pocketmq.remoting.body import TopicList
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel

from .admin_ext_processor import _language_name
from .base import BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

# RocketMQ reads as many entries as asked, up to the end of the index's consume-queue file (300,000 entries);
# pocketmq answers at most this many, so that one request cannot hold a pull thread and a large body for long.
MAX_CQ_ENTRIES = 10_000
_ENTRY = struct.Struct(">qiq")  # physic offset, size, tags code


class AdminQueueProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.QUERY_CONSUME_QUEUE] = self.query_consume_queue
        self.handlers[RequestCode.GET_ALL_PRODUCER_INFO] = self.get_all_producer_info
        self.handlers[RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER] = self.get_system_topic_list

    async def query_consume_queue(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = request.decode_header(QueryConsumeQueueRequestHeader)
        c = self.controller
        cq = c.store.get_consume_queue(h.topic, h.queue_id)
        if cq is None:
            return response(request, ResponseCode.SYSTEM_ERROR, f"{h.queue_id}@{h.topic} is not exist!")
        body = QueryConsumeQueueResponseBody(cq.get_max_offset_in_queue(), cq.get_min_offset_in_queue())
        if h.consumer_group is not None:
            sub = c.consumer_manager.find_subscription_data(h.consumer_group, h.topic)
            body.subscription_data = sub
            # RocketMQ writes the group's ConsumerFilterData as JSON: null for a TAG subscription. pocketmq keeps
            # none (it evaluates SQL92 expressions without one), so it answers "null" for every subscription.
            body.filter_data = (f"{h.consumer_group}@{h.topic} is not online!" if sub is None else "null")
        count = min(max(h.count, 0), MAX_CQ_ENTRIES)
        raw = b""
        if h.index >= cq.get_min_offset_in_queue():
            raw = await c.run_in_pull_executor(cq.get_entries, h.index, count)
        if not raw:  # (ConsumeQueue.getIndexBuffer found nothing: RocketMQ answers without a body)
            return response(request, remark=f"Index {h.index} of {h.queue_id}@{h.topic} is not exist!")
        body.queue_data = [ConsumeQueueData(*e) for e in _ENTRY.iter_unpack(raw[: len(raw) // CQ_STORE_UNIT_SIZE
                                                                                    * CQ_STORE_UNIT_SIZE])]
        return response(request, body=request.encode_body(body))

    async def get_all_producer_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """ProducerManager.getProducerTable: every group's producers (the last heartbeat in wall-clock ms)."""
        now_ms, now_mono = int(time.time() * 1000), time.monotonic()
        table = ProducerTableInfo()
        for group, channels in self.controller.producer_manager.group_channel_table.items():
            table.data[group] = [
                ProducerInfo(ci.client_id, "/" + ci.channel.remote_address.lstrip("/"), _language_name(ci.language),
                             ci.version, now_ms - int((now_mono - ci.last_update_timestamp) * 1000))
                for ci in channels.values()
            ]
        return response(request, body=request.encode_body(table))

    async def get_system_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """TopicValidator's system topics with those the broker added (cluster, broker, trace, reply, revive)."""
        topics = sorted(self.controller.topic_config_manager.system_topics)
        return response(request, body=request.encode_body(TopicList(topics)))
