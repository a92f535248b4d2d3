"""AdminBrokerProcessor: queue offsets, topic and subscription-group administration, queue locks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common import topic_validator as tv
from pocketmq.common.attribute import ATTR_ADD_PLUS_SIGN, AttributeError_, alter_current_attributes, parse_to_map
from pocketmq.common.topic_attributes import (
    ALL,
    TOPIC_MESSAGE_TYPE_ATTRIBUTE,
    TopicMessageType,
)
from pocketmq.remoting.admin_header import GetSubscriptionGroupConfigRequestHeader, GetTopicConfigRequestHeader
from pocketmq.remoting.body import TOPIC_FILTER_TYPES, TopicConfig
from pocketmq.remoting.body_codec import Reader
from pocketmq.remoting.client_body import (
    LockBatchRequestBody,
    LockBatchResponseBody,
    SubscriptionGroupConfig,
    UnlockBatchRequestBody,
)
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
)
from pocketmq.remoting.transport import Channel

from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

_MAX_QUEUE_NUMS = 1024 * 64  # sanity bound on admin input; RocketMQ 4.9.8 does not check


class AdminBrokerProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        h = self.handlers
        h[RequestCode.GET_MAX_OFFSET] = self.get_max_offset
        h[RequestCode.GET_MIN_OFFSET] = self.get_min_offset
        h[RequestCode.SEARCH_OFFSET_BY_TIMESTAMP] = self.search_offset_by_timestamp
        h[RequestCode.GET_EARLIEST_MSG_STORETIME] = self.get_earliest_msg_storetime
        h[RequestCode.UPDATE_AND_CREATE_TOPIC] = self.update_and_create_topic
        h[RequestCode.UPDATE_AND_CREATE_TOPIC_LIST] = self.update_and_create_topic_list
        h[RequestCode.DELETE_TOPIC_IN_BROKER] = self.delete_topic
        h[RequestCode.GET_ALL_TOPIC_CONFIG] = self.get_all_topic_config
        h[RequestCode.GET_TOPIC_CONFIG] = self.get_topic_config
        h[RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP] = self.update_and_create_subscription_group
        h[RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST] = self.update_and_create_subscription_group_list
        h[RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG] = self.get_all_subscription_group_config
        h[RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG] = self.get_subscription_group_config
        h[RequestCode.GET_ALL_CONSUMER_OFFSET] = self.get_all_consumer_offset
        h[RequestCode.GET_ALL_DELAY_OFFSET] = self.get_all_delay_offset
        h[RequestCode.LOCK_BATCH_MQ] = self.lock_batch_mq
        h[RequestCode.UNLOCK_BATCH_MQ] = self.unlock_batch_mq

    # --- queue offsets ---

    async def get_max_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetMaxOffsetRequestHeader)
        offset = self.controller.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return response(request, ext_fields=GetMaxOffsetResponseHeader(offset))

    async def get_min_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetMinOffsetRequestHeader)
        offset = self.controller.store.get_min_offset_in_queue(header.topic, header.queue_id)
        # RocketMQ's store creates a missing queue on lookup and answers 0; ours answers -1 without creating.
        return response(request, ext_fields=GetMinOffsetResponseHeader(max(offset, 0)))

    async def search_offset_by_timestamp(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(SearchOffsetRequestHeader)
        c = self.controller
        offset = await c.run_in_pull_executor(
            c.store.get_offset_in_queue_by_time, header.topic, header.queue_id, header.timestamp
        )
        return response(request, ext_fields=SearchOffsetResponseHeader(offset))

    async def get_earliest_msg_storetime(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetEarliestMsgStoretimeRequestHeader)
        c = self.controller
        ts = await c.run_in_pull_executor(c.store.get_earliest_message_time, header.topic, header.queue_id)
        return response(request, ext_fields=GetEarliestMsgStoretimeResponseHeader(ts))

    # --- topics ---

    async def update_and_create_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(CreateTopicRequestHeader)
        tc = TopicConfig(
            header.topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=header.topic_filter_type,
            topic_sys_flag=header.topic_sys_flag or 0,
            order=header.order,
        )
        refusal = self._topic_refusal(request, tc) or self._apply_attributes(request, tc, header.attributes)
        if refusal is not None:
            return refusal
        log.info("UPDATE_AND_CREATE_TOPIC %s from %s", tc, channel.remote_address)
        await self._create_topics([tc])
        return response(request)

    async def update_and_create_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """UPDATE_AND_CREATE_TOPIC_LIST (RocketMQ 5's updateTopicList): each topic checked as
        UPDATE_AND_CREATE_TOPIC checks one, none created when one is refused; a topic's attributes are the
        modifications (``+key``, ``-key``) 5.x's updateTopicConfigList applies."""
        items = Reader(request.decode_body()).list("topicConfigList", None)
        if items is None:  # (5.5.0 iterates it: a NullPointerException)
            return response(request, ResponseCode.SYSTEM_ERROR, "topicConfigList is null")
        tcs = [TopicConfig.from_dict(item, f"topicConfigList[{i}]") for i, item in enumerate(items)]
        names = [tc.topic_name for tc in tcs]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            # (5.5.0 fails on it too, a "Duplicate key" of its registration, once it has stored the list)
            return response(request, ResponseCode.SYSTEM_ERROR, f"Duplicate key {twice[0]}")
        for tc in tcs:
            modifications, tc.attributes = tc.attributes, {}
            refusal = self._topic_refusal(request, tc) or self._apply_attributes(request, tc, modifications)
            if refusal is not None:
                return refusal
        log.info("UPDATE_AND_CREATE_TOPIC_LIST %s from %s", [tc.topic_name for tc in tcs], channel.remote_address)
        await self._create_topics(tcs)
        return response(request)

    async def _create_topics(self, tcs: list[TopicConfig]) -> None:
        c = self.controller
        for tc in tcs:
            c.topic_config_manager.update_topic_config(tc)
        # Like registerIncrementBrokerData: answer once the name servers know (routes are usable at once); one
        # write and one registration for a list.
        await c.topic_config_manager.wait_persisted()
        await c.register_broker_all()

    def _topic_refusal(self, request: RemotingCommand, tc: TopicConfig) -> RemotingCommand | None:
        topic = tc.topic_name
        reason = tv.validate_topic(topic)
        if reason is not None:
            return response(request, ResponseCode.SYSTEM_ERROR, reason)
        if self.controller.topic_config_manager.is_system_topic(topic):
            return response(request, ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        for name, value in (("readQueueNums", tc.read_queue_nums), ("writeQueueNums", tc.write_queue_nums)):
            if not 0 <= value <= _MAX_QUEUE_NUMS:
                return response(request, ResponseCode.SYSTEM_ERROR, f"{name} {value} is out of [0, {_MAX_QUEUE_NUMS}]")
        if not 0 <= tc.perm <= 0xF:
            return response(request, ResponseCode.SYSTEM_ERROR, f"perm {tc.perm} is not a PermName bit set")
        if tc.topic_filter_type not in TOPIC_FILTER_TYPES:
            # 4.9.7 reads the header's text with TopicFilterType.valueOf, which refuses any other (SYSTEM_ERROR); a
            # config kept with another would also stop topics.json loading at the next start
            return response(request, ResponseCode.SYSTEM_ERROR,
                            f"topicFilterType {tc.topic_filter_type!r} is neither SINGLE_TAG nor MULTI_TAG")
        return None

    def _apply_attributes(self, request: RemotingCommand, tc: TopicConfig,
                          modification: str | dict[str, str] | None) -> RemotingCommand | None:
        """RocketMQ 5's attribute modifications (a header's text, or a map) applied to ``tc``
        (updateSingleTopicConfigWithoutPersist), or the refusal: INVALID_PARAMETER for MIXED when it is off and
        for LITE, SYSTEM_ERROR with RocketMQ's text otherwise."""
        try:
            modifications = modification if isinstance(modification, dict) else parse_to_map(modification)
        except AttributeError_ as e:
            return response(request, ResponseCode.SYSTEM_ERROR, str(e))
        message_type = modifications.get(ATTR_ADD_PLUS_SIGN + TOPIC_MESSAGE_TYPE_ATTRIBUTE.name)
        if message_type == TopicMessageType.MIXED and not self.controller.broker_config.enable_mixed_message_type:
            return response(request, ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
        if message_type == TopicMessageType.LITE:
            # 5.5.0 takes it; a lite topic's messages go to a queue per lite topic, which only lite consumers (their
            # own subscription RPC and pop) read: pocketmq has neither, so it refuses the topic rather than keep
            # messages no consumer of it could get
            return response(request, ResponseCode.INVALID_PARAMETER, "LITE message type is not supported.")
        current = self.controller.topic_config_manager.select_topic_config(tc.topic_name)
        try:
            tc.attributes = alter_current_attributes(
                current is None, ALL, current.attributes if current is not None else {}, modifications)
        except AttributeError_ as e:
            return response(request, ResponseCode.SYSTEM_ERROR, str(e))
        return None

    async def get_topic_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """GET_TOPIC_CONFIG (RocketMQ 5): the topic's TopicConfigAndQueueMapping (no logic-queue mapping here)."""
        header = request.decode_header(GetTopicConfigRequestHeader)
        tc = self.controller.topic_config_manager.select_topic_config(header.topic)
        if tc is None:
            return response(request, ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {header.topic}")
        body = {**tc.to_dict(), "attributes": dict(tc.attributes)}
        return response(request, body=request.encode_body(body))

    async def delete_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(DeleteTopicRequestHeader)
        c = self.controller
        topic = header.topic
        if not topic or not topic.strip():
            return response(request, ResponseCode.SYSTEM_ERROR, "The specified topic is blank.")
        reason = tv.validate_topic(topic)
        if reason is not None and c.topic_config_manager.select_topic_config(topic) is None:
            # 4.9.7 validates the name as a creation does (characters, length). A topic the broker holds under
            # such a name (a POP retry topic of enableRetryTopicV2, "%RETRY%group+topic") is deleted, as 5.x
            # deletes any name
            return response(request, ResponseCode.SYSTEM_ERROR, reason)
        if c.topic_config_manager.is_system_topic(topic):
            # (The schedule, transaction and timer queues live on: deleting one loses what waits in it.)
            return response(request, ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        log.info("DELETE_TOPIC_IN_BROKER %s from %s", topic, channel.remote_address)
        existed = c.topic_config_manager.delete_topic_config(topic)
        # 5.x also drops the topic's consumer offsets; 4.9.8 keeps them until the group is cleaned.
        c.consumer_offset_manager.remove_topic(topic)
        c.consumer_order_info_manager.remove_topic(topic)
        c.broker_stats_manager.on_topic_deleted(topic)  # (as 5.x's autoDeleteUnusedStats, its default)
        failed = None
        if reason is None:
            had_queues = any(t == topic for t, _ in list(c.store.consume_queue_table))
            # The log's end where the store reset the topic's queue offsets (under its put lock): a send meanwhile
            # is either below it, numbered in the old queues and deleted with them, or above, in the new ones.
            _, end = await c.run_in_pull_executor(c.store.delete_topics, {topic})
            if existed or had_queues:  # (a name deleted twice, or made up, takes no entry)
                failed = await self._record_deletion(topic, end)
        await c.register_broker_all()
        return response(request) if failed is None else response(request, ResponseCode.SYSTEM_ERROR, failed)

    async def _record_deletion(self, topic: str, end: int) -> str | None:
        """The deletion of ``topic``'s records below ``end`` in deletedTopics.json, on disk before the answer, so
        that a crash restart, which dispatches the log again, does not bring the topic back
        (deleted_topic_manager.py). None, or the error to answer."""
        try:
            await self.controller.deleted_topic_manager.record_deletion(
                topic, end, self.controller.store.commit_log.get_min_offset())
        except OSError as e:
            log.exception("cannot record the deletion of topic %s", topic)
            return f"the topic[{topic}] is deleted, but the deletion could not be written ({e}): a crash may undo it"
        return None

    async def get_all_topic_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        wrapper = self.controller.topic_config_manager.build_topic_config_serialize_wrapper()
        return response(request, body=request.encode_body(wrapper))

    # --- subscription groups ---

    async def update_and_create_subscription_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = request.body
        config = None if body is not None and not body.strip() else request.decode_body()
        if body is not None and config in (None, []):
            # fastjson reads blank text, "null" and "[]" as no config: 4.9.7 answers SUCCESS and changes nothing
            return response(request)
        cfg = SubscriptionGroupConfig.from_dict(config)
        if tv.is_group_illegal(cfg.group_name):
            return response(request, ResponseCode.SYSTEM_ERROR, f"the group name {cfg.group_name!r} is illegal")
        log.info("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP %s from %s", cfg, channel.remote_address)
        self.controller.subscription_group_manager.update_subscription_group_config(cfg)
        await self.controller.subscription_group_manager.wait_persisted()
        return response(request)

    async def update_and_create_subscription_group_list(self, channel: Channel,
                                                        request: RemotingCommand) -> RemotingCommand:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (RocketMQ 5's updateSubGroupList): each group checked as
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP checks one, none created when one is refused, then one write."""
        items = Reader(request.decode_body()).list("groupConfigList", None)
        if items is None:  # (5.5.0 iterates it: a NullPointerException)
            return response(request, ResponseCode.SYSTEM_ERROR, "groupConfigList is null")
        cfgs = [SubscriptionGroupConfig.from_dict(item, f"groupConfigList[{i}]") for i, item in enumerate(items)]
        for cfg in cfgs:
            if tv.is_group_illegal(cfg.group_name):
                return response(request, ResponseCode.SYSTEM_ERROR, f"the group name {cfg.group_name!r} is illegal")
        log.info("UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST %s from %s", [cfg.group_name for cfg in cfgs],
                 channel.remote_address)
        manager = self.controller.subscription_group_manager
        for cfg in cfgs:
            manager.update_subscription_group_config(cfg)
        await manager.wait_persisted()
        return response(request)

    async def get_all_subscription_group_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return response(request, body=request.encode_body(self.controller.subscription_group_manager.encode()))

    async def get_subscription_group_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """GET_SUBSCRIPTIONGROUP_CONFIG (RocketMQ 5): one group's config, as a 5.x proxy asks it (created first when
        autoCreateSubscriptionGroup, as RocketMQ's findSubscriptionGroupConfig does)."""
        header = request.decode_header(GetSubscriptionGroupConfigRequestHeader)
        cfg = self.controller.subscription_group_manager.find_subscription_group_config(header.group)
        if cfg is None:
            return response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
        return response(request, body=request.encode_body(cfg.to_dict_5()))

    async def get_all_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        table = self.controller.consumer_offset_manager.offset_table
        # (empty or not: RocketMQ refuses only an encoding that is empty text, which its JSON never is)
        # msgpack keeps the queue ids as ints ({"offsetTable": {"topic@group": {queueId: offset}}}).
        body = request.encode_body({"offsetTable": {k: dict(v) for k, v in table.items()}})
        return response(request, body=body)

    async def get_all_delay_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        table = self.controller.schedule_message_service.offset_table
        return response(request, body=request.encode_body({"offsetTable": dict(table)}))

    # --- queue locks for orderly consumption ---

    async def lock_batch_mq(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = request.decode_body(LockBatchRequestBody)
        if body.consumer_group is None or body.client_id is None:
            # 4.9.7 locks nothing of an empty set, and fails on a queue to lock for no group or client (a
            # NullPointerException, after it kept a lock of no client that fails each later lock of the queue)
            if body.mq_set:
                return response(request, ResponseCode.SYSTEM_ERROR, "consumerGroup and clientId are required")
            return response(request, body=request.encode_body(LockBatchResponseBody(set())))
        locked = self.controller.rebalance_lock_manager.try_lock_batch(body.consumer_group, body.mq_set, body.client_id)
        return response(request, body=request.encode_body(LockBatchResponseBody(locked)))

    async def unlock_batch_mq(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = request.decode_body(UnlockBatchRequestBody)
        if body.consumer_group is None:  # (4.9.7: its NullPointerException, whatever the queues)
            return response(request, ResponseCode.SYSTEM_ERROR, "consumerGroup is required")
        if body.client_id is not None:  # (no client holds no lock: nothing to unlock)
            self.controller.rebalance_lock_manager.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return response(request)
