"""PullAPIWrapper: one pull request to the right broker node, and the decoding and tag filtering of its answer."""

from __future__ import annotations

from pocketmq.common.codec import CorruptRecordError, decode_all
from pocketmq.common.message import properties_to_string
from pocketmq.common.pull_sys_flag import build_sys_flag as build_sys_flag
from pocketmq.common.pull_sys_flag import clear_commit_offset_flag
from pocketmq.remoting.client_body import MessageQueue, SubscriptionData
from pocketmq.remoting.codes import MASTER_ID
from pocketmq.remoting.header import PullMessageRequestHeader

from ...exceptions import MQClientException
from ...message import PullResult, PullStatus
from ...message_const import PROPERTY_MAX_OFFSET, PROPERTY_MIN_OFFSET
from ..mq_client_api import PullResultExt
from ..mq_client_instance import MQClientInstance


class PullAPIWrapper:
    def __init__(self, instance: MQClientInstance, consumer_group: str) -> None:
        self._instance = instance
        self.consumer_group = consumer_group
        # The broker suggests which node (master or a slave) to read each queue from next.
        self._pull_from_which_node: dict[MessageQueue, int] = {}

    def recalculate_pull_from_which_node(self, mq: MessageQueue) -> int:
        return self._pull_from_which_node.get(mq, MASTER_ID)

    async def pull_kernel_impl(
        self,
        mq: MessageQueue,
        subscription: SubscriptionData,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_time: float,
        timeout: float,
        sub_version: int = 0,
    ) -> PullResultExt:
        instance = self._instance
        broker_id = self.recalculate_pull_from_which_node(mq)
        found = instance.find_broker_address_in_subscribe(mq.broker_name, broker_id, False)
        if found is None:
            await instance.update_topic_route_info_from_name_server(mq.topic)
            found = instance.find_broker_address_in_subscribe(mq.broker_name, broker_id, False)
        if found is None:
            raise MQClientException(f"The broker[{mq.broker_name}] not exist")
        if found.slave:
            sys_flag = clear_commit_offset_flag(sys_flag)  # only a master stores offsets
        header = PullMessageRequestHeader(
            consumer_group=self.consumer_group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=int(broker_suspend_max_time * 1000),
            sub_version=sub_version,
            subscription=subscription.sub_string,
            expression_type=subscription.expression_type,
        )
        return await instance.mq_client_api.pull_message(found.broker_addr, header, timeout)

    def process_pull_result(
        self, mq: MessageQueue, result: PullResultExt, subscription: SubscriptionData
    ) -> PullResult:
        """Decode (decompressing bodies), keep only subscribed tags, note the queue's offset range on each message.

        The broker filters by tag hash code only; two tags with equal hashes both pass it, so the tag strings
        are compared here. A FOUND result stays FOUND even when nothing survives this filter.
        """
        self._pull_from_which_node[mq] = result.suggest_which_broker_id
        msgs = []
        if result.pull_status is PullStatus.FOUND and result.message_binary:
            marks = properties_to_string(
                {PROPERTY_MIN_OFFSET: str(result.min_offset), PROPERTY_MAX_OFFSET: str(result.max_offset)}
            )
            try:
                msgs = decode_all(result.message_binary, decompress=True, extra_properties=marks)
            except (CorruptRecordError, ValueError) as e:
                raise MQClientException(f"undecodable pull result from {mq}: {e}") from e
            if subscription.tags_set and not subscription.class_filter_mode:
                wanted = set(subscription.tags_set)
                msgs = [m for m in msgs if m.tags in wanted]
        return PullResult(
            pull_status=result.pull_status,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
            msg_found_list=msgs,
        )
