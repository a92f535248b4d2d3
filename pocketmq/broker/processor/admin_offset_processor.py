"""The offset requests of RocketMQ 4.9.7's AdminBrokerProcessor that copy or compare groups' offsets:
CLONE_GROUP_OFFSET (314) and QUERY_CORRECTION_OFFSET (308). The offsets themselves are ConsumerOffsetManager's."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pocketmq.common.java_text import LONG_MAX, is_blank
from pocketmq.remoting.admin_body import QueryCorrectionOffsetBody
from pocketmq.remoting.admin_header import CloneGroupOffsetRequestHeader, QueryCorrectionOffsetHeader
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel

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
