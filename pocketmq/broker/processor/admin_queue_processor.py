"""Admin requests of RocketMQ 4.9.7's AdminBrokerProcessor that admin_ext_processor.py has no room for:
QUERY_CONSUME_QUEUE (mqadmin's queryCq), GET_ALL_PRODUCER_INFO (producer), GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
GET_BROKER_CONSUME_STATS (brokerConsumeStats), and the store's clean-ups: CLEAN_EXPIRED_CONSUMEQUEUE
(cleanExpiredCQ), CLEAN_UNUSED_TOPIC (cleanUnusedTopic) and DELETE_EXPIRED_COMMITLOG (deleteExpiredCommitLog)."""

from __future__ import annotations

import logging
import struct
import time
from typing import TYPE_CHECKING

from pocketmq.common.constants import CQ_STORE_UNIT_SIZE
from pocketmq.common.java_numbers import wrap_int
from pocketmq.remoting.admin_body import ConsumeStatsList, ProducerInfo, ProducerTableInfo, language_name
from pocketmq.remoting.admin_header import GetConsumeStatsInBrokerHeader, QueryConsumeQueueRequestHeader
from pocketmq.remoting.body import TopicList
from pocketmq.remoting.body_codec import encode_body_with_parts
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.consume_queue_body import ConsumeQueueData, QueryConsumeQueueResponseBody
from pocketmq.remoting.transport import Channel
from pocketmq.storage.queue_cleanup import clean_expired_consume_queues, clean_unused_topics

from .base import UNSET_REMARK, BrokerProcessor, response
from .consume_stats import broker_consume_stats, topics_by_group

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)

# RocketMQ reads as many entries as asked, up to the end of the index's consume-queue file (300,000 entries);
# pocketmq answers at most this many, so that one request cannot hold a pull thread and a large body for long.
MAX_CQ_ENTRIES = 10_000
_ENTRY = struct.Struct(">qiq")  # physic offset, size, tags code
# Groups a pull thread takes at a time for GET_BROKER_CONSUME_STATS, stats and encoding: a few ms of work, under
# the 5 ms the loop's thread waits for the GIL before asking for it.
CONSUME_STATS_SLICE = 50


class AdminQueueProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.QUERY_CONSUME_QUEUE] = self.query_consume_queue
        self.handlers[RequestCode.GET_ALL_PRODUCER_INFO] = self.get_all_producer_info
        self.handlers[RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER] = self.get_system_topic_list
        self.handlers[RequestCode.GET_BROKER_CONSUME_STATS] = self.get_broker_consume_stats
        self.handlers[RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE] = self.clean_expired_consume_queue
        self.handlers[RequestCode.CLEAN_UNUSED_TOPIC] = self.clean_unused_topic
        self.handlers[RequestCode.DELETE_EXPIRED_COMMITLOG] = self.delete_expired_commit_log

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
        if not cq.get_min_offset_in_queue() <= h.index < cq.get_max_offset_in_queue():
            # (ConsumeQueue.getIndexBuffer found nothing: RocketMQ answers without a body)
            return response(request, remark=f"Index {h.index} of {h.queue_id}@{h.topic} is not exist!")
        # 4.9.7 reads entries while their bytes are under count * 20, an int product: a count whose product
        # wraps reads as many as the wrapped bound allows (none when it is negative), a count of 0 or less none;
        # an index in the queue answers a body either way, its list empty
        bound = wrap_int(h.count * CQ_STORE_UNIT_SIZE)
        count = min(max(-(-bound // CQ_STORE_UNIT_SIZE), 0), MAX_CQ_ENTRIES)
        raw = await c.run_in_pull_executor(cq.get_entries, h.index, count) if count else b""
        body.queue_data = [ConsumeQueueData(*e) for e in _ENTRY.iter_unpack(raw[: len(raw) // CQ_STORE_UNIT_SIZE
                                                                                    * CQ_STORE_UNIT_SIZE])]
        # (4.9.7 sets the code and never the remark: createResponseCommand's stays)
        return response(request, remark=UNSET_REMARK, body=request.encode_body(body))

    async def get_all_producer_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """ProducerManager.getProducerTable: every group's producers (the last heartbeat in wall-clock ms)."""
        now_ms, now_mono = int(time.time() * 1000), time.monotonic()
        table = ProducerTableInfo()
        for group, channels in self.controller.producer_manager.group_channel_table.items():
            table.data[group] = [
                ProducerInfo(ci.client_id, "/" + ci.channel.remote_address.lstrip("/"), language_name(ci.language),
                             ci.version, now_ms - int((now_mono - ci.last_update_timestamp) * 1000))
                for ci in channels.values()
            ]
        return response(request, body=request.encode_body(table))

    async def get_system_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """TopicValidator's system topics with those the broker added (cluster, broker, trace, reply, revive)."""
        topics = sorted(self.controller.topic_config_manager.system_topics)
        return response(request, body=request.encode_body(TopicList(topics)))

    async def get_broker_consume_stats(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = request.decode_header(GetConsumeStatsInBrokerHeader)
        c = self.controller
        # The tables are copied here, on the loop, and walked on a pull thread (see get_consume_stats), a slice of
        # the groups at a time: a pull thread holding the GIL for all of them kept the loop's sends waiting behind
        # it (bench/README.md, "The console's scrape and thousands of groups"); between slices the loop runs.
        groups = list(c.subscription_group_manager.subscription_group_table)
        by_group = await c.run_in_pull_executor(topics_by_group, list(c.consumer_offset_manager.offset_table))
        parts: list[bytes] = []
        total_diff = 0
        for start in range(0, len(groups), CONSUME_STATS_SLICE):
            encoded, diff = await c.run_in_pull_executor(self._stats_slice, h,
                                                         groups[start:start + CONSUME_STATS_SLICE], by_group, request)
            parts += encoded
            total_diff += diff
        whole = ConsumeStatsList(c.address, total_diff=total_diff).to_dict()
        return response(request, body=encode_body_with_parts(whole, "consumeStatsList", parts, request.body_dialect))

    def _stats_slice(self, h: GetConsumeStatsInBrokerHeader, groups: list[str], by_group: dict[str, set[str]],
                     request: RemotingCommand) -> tuple[list[bytes], int]:
        """On a pull thread: ``groups``' entries of GET_BROKER_CONSUME_STATS, each encoded (the whole body's
        encoding held the loop in one go), and their total diff."""
        stats = ConsumeStatsList(self.controller.address)
        broker_consume_stats(self.controller, h.is_order, groups, by_group, stats, request.version, h.read_queues)
        entries = stats.to_dict()["consumeStatsList"]
        assert isinstance(entries, list)
        return [request.encode_body(entry) for entry in entries], stats.total_diff

    async def clean_expired_consume_queue(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        destroyed = await self.controller.run_in_pull_executor(clean_expired_consume_queues, self.controller.store)
        log.warning("cleanExpiredConsumeQueue: %d consume queues destroyed", destroyed)
        return response(request)

    async def clean_unused_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        c = self.controller
        table = c.topic_config_manager.topic_config_table
        destroyed = await c.run_in_pull_executor(clean_unused_topics, c.store, lambda: list(table))
        log.warning("cleanUnusedTopic: %d consume queues destroyed", destroyed)
        return response(request)

    async def delete_expired_commit_log(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """RocketMQ's executeDeleteFilesManually: the next cleaning rounds delete expired files at any hour."""
        self.controller.store.execute_delete_files_manually()
        log.warning("deleteExpiredCommitLog: expired commit-log files are deleted in the next cleaning rounds")
        return response(request)
