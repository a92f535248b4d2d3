"""The offset requests of RocketMQ 4.9.7's AdminBrokerProcessor that copy, compare or reset groups' offsets:
CLONE_GROUP_OFFSET (314), QUERY_CORRECTION_OFFSET (308) and INVOKE_BROKER_TO_RESET_OFFSET (222), the reset pushed
to running consumers as Broker2Client.resetOffset pushes it. The offsets themselves are ConsumerOffsetManager's."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pocketmq.common.java_numbers import LONG_MAX
from pocketmq.common.java_text import is_blank
from pocketmq.common.mq_version import V3_0_7_SNAPSHOT, version_desc
from pocketmq.remoting.admin_body import QueryCorrectionOffsetBody, ResetOffsetBody
from pocketmq.remoting.admin_header import (
    CloneGroupOffsetRequestHeader,
    QueryCorrectionOffsetHeader,
    ResetOffsetRequestHeader,
)
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import BodyDialect, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.transport import Channel
from pocketmq.remoting.wire_protocol import WireProtocol

from ..consumer_offset_manager import filter_groups_of, is_filtered
from .base import BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)


class AdminOffsetProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.CLONE_GROUP_OFFSET] = self.clone_group_offset
        self.handlers[RequestCode.QUERY_CORRECTION_OFFSET] = self.query_correction_offset
        self.handlers[RequestCode.INVOKE_BROKER_TO_RESET_OFFSET] = self.reset_offset

    def _broker_name(self) -> str:
        return self.controller.broker_config.broker_name

    async def clone_group_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = request.decode_header(CloneGroupOffsetRequestHeader)
        c = self.controller
        com = c.consumer_offset_manager
        blank = h.topic is None or is_blank(h.topic)  # (Java's blank: a no-break space is a topic's name)
        # RocketMQ (4.9.7 and 5.x) walks the source group's topics for a blank topic but then clones the header's
        # topic, null: it answers SUCCESS having copied nothing. pocketmq copies each topic it walks.
        topics = sorted(com.which_topic_by_consumer(h.src_group)) if blank else [h.topic or ""]
        for topic in topics:
            if c.topic_config_manager.select_topic_config(topic) is None:
                log.warning("cloneGroupOffset: no config of topic %s, its offsets not cloned", topic)
                continue
            if not h.offline and self._not_subscribed(h.src_group, topic):
                log.warning("cloneGroupOffset: the online consumers of %s do not subscribe to %s, its offsets not "
                            "cloned", h.src_group, topic)
                continue
            com.clone_offset(h.src_group, h.dest_group, topic)
        return response(request)

    def _not_subscribed(self, group: str, topic: str) -> bool:
        """The group has consumers online and none subscribes to ``topic`` (a group with none online passes)."""
        consumers = self.controller.consumer_manager
        return (consumers.find_subscription_data_count(group) > 0
                and consumers.find_subscription_data(group, topic) is None)

    async def query_correction_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        h = request.decode_header(QueryCorrectionOffsetHeader)
        c = self.controller
        com = c.consumer_offset_manager
        filtered = filter_groups_of(h.filter_groups)

        def min_offset_in_queue(queue_id: int) -> int:
            # (RocketMQ's store makes an empty consume queue for a queue it has not, whose first offset is 0)
            return max(c.store.get_min_offset_in_queue(h.topic, queue_id), 0)

        correction = com.query_min_offset_in_all_group(h.topic, filtered, min_offset_in_queue)
        # 4.9.7 looks the compare group up with queryOffset's arguments swapped, the key compareGroup@topic (5.x
        # fixed it, RocketMQ issue 5560): the group's own offsets never take part, as here, so that the answers
        # are 4.9.7's. Such a key of a filtered "group" (the topic) is gone by then in RocketMQ.
        compare_key = com.key(h.compare_group, h.topic)
        compare = {} if is_filtered(compare_key, filtered) else dict(com.offset_table.get(compare_key, {}))
        for queue_id, offset in compare.items():
            lowest = correction.get(queue_id)
            if lowest is None:  # RocketMQ unboxes the missing Long: a NullPointerException, SYSTEM_ERROR
                return response(request, ResponseCode.SYSTEM_ERROR,
                                f"no correction offset of queue {queue_id} of {h.topic} to compare {compare_key} with")
            correction[queue_id] = LONG_MAX if lowest > offset else lowest
        return response(request, body=request.encode_body(QueryCorrectionOffsetBody(correction)))

    # --- offset reset pushed to running consumers ---

    async def reset_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """Broker2Client.resetOffset: the offsets at ``timestamp`` (or the max, for -1) of each queue, never
        ahead of the group's own unless forced, sent to every consumer of the group, which takes them over. With a
        queue id (RocketMQ 5's per-queue reset), that queue only: see _reset_queue_offset."""
        header = request.decode_header(ResetOffsetRequestHeader)
        if header.queue_id >= 0:
            return await self._reset_queue_offset(request, header)
        c = self.controller
        topic, group = header.topic, header.group
        # A per-queue reset still held would undo this one for its queue: the group's commit of the new offset
        # ignored, its next pull sent back to the older reset (RocketMQ 5 resets a whole topic queue by queue, each
        # replacing what was held).
        c.consumer_offset_manager.drop_reset_offsets(topic, group)
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return response(
                request, ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
            )
        table: dict[MessageQueue, int] = {}
        # RocketMQ refuses when any queue lacks an offset; pocketmq only when the group has none of the topic
        # here (a group that consumed some queues only). A queue it never committed takes the time's offset, forced
        # or not: there is no position of the group's to keep (counted as 0, "only back" sent it to the start).
        if not c.consumer_offset_manager.query_offset_table(group, topic):
            return response(request, ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
        for i in range(tc.write_queue_nums):
            consumer_offset = c.consumer_offset_manager.query_offset(group, topic, i)
            if header.timestamp == -1:
                target = c.store.get_max_offset_in_queue(topic, i)
            else:
                target = await c.run_in_pull_executor(c.store.get_offset_in_queue_by_time, topic, i, header.timestamp)
            target = max(target, 0)
            mq = MessageQueue(topic, self._broker_name(), i)
            keep = not header.is_force and 0 <= consumer_offset <= target
            table[mq] = consumer_offset if keep else target
        info = c.consumer_manager.get_consumer_group_info(group)
        if info is None or not info.channel_info_table:
            return response(
                request,
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                f"Timestamp: {header.timestamp}",
            )
        body = ResetOffsetBody(table)
        refused = await self._push_reset(request, header, body)
        return refused or response(request, body=request.encode_body(body))

    async def _reset_queue_offset(self, request: RemotingCommand, header: ResetOffsetRequestHeader) -> RemotingCommand:
        """RocketMQ 5's AdminBrokerProcessor.resetOffsetInner for one queue: the broker sets the group's offset of
        it (to ``offset``, or else to ``timestamp``'s), whether or not a consumer of the group runs, and holds it
        until the group's next pull of the queue (ConsumerOffsetManager.assignResetOffset). RocketMQ 5's consumers
        learn of it at that pull; pocketmq also sends the running ones the one queue, as it does a whole topic."""
        c = self.controller
        topic, group, queue_id, offset = header.topic, header.group, header.queue_id, header.offset
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return response(request, ResponseCode.TOPIC_NOT_EXIST, f"Topic {topic} does not exist")
        if not c.subscription_group_manager.contains_subscription_group(group):
            return response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} does not exist")
        # RocketMQ 5 takes any queue id (its store makes the queue): an offset kept for a queue the topic does not
        # have is kept for good, refused as UPDATE_CONSUMER_OFFSET refuses it.
        if queue_id >= max(tc.read_queue_nums, tc.write_queue_nums):
            return response(
                request, ResponseCode.INVALID_PARAMETER,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}] "
                f"writeQueueNums:[{tc.write_queue_nums}]",
            )
        if offset is not None and offset != -1:
            store = c.store
            # (RocketMQ's bounds, one past the max included; a queue never written is 0 to 0, as RocketMQ's store
            # makes the queue to answer)
            low = max(store.get_min_offset_in_queue(topic, queue_id), 0)
            high = store.get_max_offset_in_queue(topic, queue_id)
            if offset < low or offset > high + 1:
                remark = f"Target offset {offset} not in consume queue range [{low}-{high}]"
                return response(request, ResponseCode.SYSTEM_ERROR, remark)
        elif header.timestamp < 0:
            offset = c.store.get_max_offset_in_queue(topic, queue_id)
        else:
            by_time = c.store.get_offset_in_queue_by_time
            offset = await c.run_in_pull_executor(by_time, topic, queue_id, header.timestamp)
        c.consumer_offset_manager.assign_reset_offset(topic, group, queue_id, offset)
        body = ResetOffsetBody({MessageQueue(topic, self._broker_name(), queue_id): offset})
        # The offset is set already: a consumer too old to take it over learns of it at its next pull.
        await self._push_reset(request, header, body, old_clients_skipped=True)
        return response(request, body=request.encode_body(body))

    async def _push_reset(
        self, request: RemotingCommand, header: ResetOffsetRequestHeader, body: ResetOffsetBody,
        old_clients_skipped: bool = False,
    ) -> RemotingCommand | None:
        """RESET_CONSUMER_CLIENT_OFFSET with ``body`` to each running consumer of the group; the refusal when one
        is too old to take it (Broker2Client.resetOffset: those before it were sent it)."""
        info = self.controller.consumer_manager.get_consumer_group_info(header.group)
        if info is None:
            return None
        for ch, ci in list(info.channel_info_table.items()):
            if ci.version < V3_0_7_SNAPSHOT:
                if old_clients_skipped:
                    continue
                return response(
                    request, ResponseCode.SYSTEM_ERROR,
                    f"the client does not support this feature. version={version_desc(ci.version)}",
                )
            # The body goes in the dialect of the consumer's connection, not the asker's.
            dialect = BodyDialect.MSGPACK if ch.protocol == WireProtocol.MSGPACK else BodyDialect.FASTJSON
            push = RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header, encode_body(body, dialect), oneway=True
            )
            try:
                await ch.invoke_oneway(push)
                log.info("[reset-offset] sent to %s: %s@%s at %d", ci.client_id, header.topic, header.group,
                         header.timestamp)
            except RemotingError as e:
                log.warning("[reset-offset] cannot reach %s: %s", ci.client_id, e)
        return None
