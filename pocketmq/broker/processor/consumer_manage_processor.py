"""ConsumerManageProcessor: QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15), GET_CONSUMER_LIST_BY_GROUP (38)."""

from __future__ import annotations

import os
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from pocketmq.remoting.client_body import GetConsumerListByGroupResponseBody
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from pocketmq.remoting.transport import Channel

from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController


def total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024**3


class ConsumerManageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.GET_CONSUMER_LIST_BY_GROUP] = self.get_consumer_list_by_group
        # Offsets live in memory: answered as they are read (a query that must look at the store still awaits
        # a pull thread, in a task).
        self.inline_handlers[RequestCode.QUERY_CONSUMER_OFFSET] = self.query_consumer_offset
        self.inline_handlers[RequestCode.UPDATE_CONSUMER_OFFSET] = self.update_consumer_offset
        self._memory = total_physical_memory()

    def query_consumer_offset(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand]:
        header = request.decode_header(QueryConsumerOffsetRequestHeader)
        offset = self.controller.consumer_offset_manager.query_offset(
            header.consumer_group, header.topic, header.queue_id
        )
        if offset >= 0:
            return response(request, ext_fields=QueryConsumerOffsetResponseHeader(offset))
        if header.set_zero_if_not_found is False:
            # RocketMQ 5's: the asker wants to know there is no offset, whatever the queue's data.
            return response(
                request, ResponseCode.QUERY_NOT_FOUND, "Not found, do not set to zero, maybe this group boot first"
            )
        return self._query_new_group_offset(request, header)

    async def _query_new_group_offset(
        self, request: RemotingCommand, header: QueryConsumerOffsetRequestHeader
    ) -> RemotingCommand:
        """The group has no offset for the queue: the answer depends on the queue's data (a store read)."""
        c = self.controller
        starts_at_zero = await c.run_in_pull_executor(self._new_group_starts_at_zero, header.topic, header.queue_id)
        if starts_at_zero:
            # A group new to a queue whose first message is still at offset 0 and in memory starts from the
            # beginning (ConsumerManageProcessor.queryConsumerOffset).
            return response(request, ext_fields=QueryConsumerOffsetResponseHeader(0))
        return response(
            request, ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )

    def _new_group_starts_at_zero(self, topic: str, queue_id: int) -> bool:
        """minOffset <= 0 and the message at offset 0 not "on disk" (runs on a pull thread: reads a queue)."""
        store = self.controller.store
        if store.get_min_offset_in_queue(topic, queue_id) > 0:
            return False
        if store.get_max_offset_in_queue(topic, queue_id) <= 0:
            return True  # an empty or missing queue has nothing on disk
        phy = store.get_commit_log_offset_in_queue(topic, queue_id, 0)
        ratio = self.controller.broker_config.access_message_in_memory_max_ratio / 100.0
        return store.get_max_phy_offset() - phy <= self._memory * ratio

    def update_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(UpdateConsumerOffsetRequestHeader)
        refusal = self._refuse_offset_update(request, header)
        if refusal is not None:
            return refusal
        com = self.controller.consumer_offset_manager
        if com.has_offset_reset(header.topic, header.consumer_group, header.queue_id):
            # RocketMQ 5's: until the group pulls the queue again, a commit comes from a consumer at the position
            # the reset undid (or from the admin that made it, before it did), and the reset's offset stays.
            return response(request, remark="Offset has been previously reset")
        com.commit_offset(
            channel.remote_address, header.consumer_group, header.topic, header.queue_id, header.commit_offset
        )
        return response(request)

    def _refuse_offset_update(
        self, request: RemotingCommand, header: UpdateConsumerOffsetRequestHeader
    ) -> RemotingCommand | None:
        """RocketMQ 5's checks (ConsumerManageProcessor.updateConsumerOffset), plus the queue's range: every offset
        kept is kept for good (memory and consumerOffset.json), so made-up groups, topics and queues are refused."""
        c = self.controller
        group, topic, queue_id = header.consumer_group, header.topic, header.queue_id
        # The group must exist already (containsSubscriptionGroup): a commit never creates one, unlike a heartbeat
        # or a pull, whatever autoCreateSubscriptionGroup says.
        if not c.subscription_group_manager.contains_subscription_group(group):
            return response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} not exist!")
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return response(request, ResponseCode.TOPIC_NOT_EXIST, f"Topic {topic} not exist!")
        # RocketMQ 5 takes any queue id; a queue the topic does not have could only ever hold a made-up offset.
        # The larger of the two counts: while a topic shrinks, its write queues go first and its read queues are
        # still consumed (and an admin's reset walks the write queues).
        queues = max(tc.read_queue_nums, tc.write_queue_nums)
        if queue_id < 0 or queue_id >= queues:
            return response(
                request,
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}] "
                f"writeQueueNums:[{tc.write_queue_nums}]",
            )
        return None

    async def get_consumer_list_by_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetConsumerListByGroupRequestHeader)
        group_info = self.controller.consumer_manager.get_consumer_group_info(header.consumer_group)
        client_ids = group_info.all_client_ids() if group_info is not None else []
        if client_ids:
            body = request.encode_body(GetConsumerListByGroupResponseBody(client_ids))
            return response(request, body=body)
        log.warning(
            "GET_CONSUMER_LIST_BY_GROUP: no consumer in group %s (asked by %s)",
            header.consumer_group,
            channel.remote_address,
        )
        return response(request, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}")
