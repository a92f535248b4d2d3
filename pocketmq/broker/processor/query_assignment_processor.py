"""QueryAssignmentProcessor: QUERY_ASSIGNMENT (400), RocketMQ 5's server-side rebalance, and SET_MESSAGE_REQUEST_MODE
(401), a topic and group's choice between pull and pop.

A 5.x Java push consumer with ``clientRebalance=false`` asks a broker for its queues instead of splitting them
itself. In PULL mode it gets its share by the named strategy. In POP mode it gets queue id -1 ("pop every queue
of that broker") per broker when ``popShareQueueNum`` <= 0 or reaches every other client, else its share plus the
shares of the next ``popShareQueueNum`` clients, so several clients pop each queue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from pocketmq.common.mix_all import LMQ_PREFIX, LMQ_QUEUE_ID, RETRY_GROUP_TOPIC_PREFIX
from pocketmq.common.queue_allocation import allocate_averagely, allocate_averagely_by_circle
from pocketmq.remoting.assignment_body import (
    MESSAGE_REQUEST_MODES,
    MessageQueueAssignment,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from pocketmq.remoting.body import Reader
from pocketmq.remoting.client_body import MESSAGE_MODELS, MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import BodyError
from pocketmq.remoting.transport import Channel

from ..load_balance.assignment_manager import AssignmentManager
from ..load_balance.message_request_mode_manager import MessageRequestModeManager
from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

Strategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]
STRATEGIES: dict[str, Strategy] = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": allocate_averagely_by_circle}


def _sort_key(mq: MessageQueue) -> tuple[str, str, int]:
    return mq.topic, mq.broker_name, mq.queue_id


class QueryAssignmentProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        bc = controller.broker_config
        self.message_request_mode_manager = MessageRequestModeManager(bc.config_dir)
        self.assignment_manager = AssignmentManager(
            controller.broker_outer_api,
            lambda: bc.namesrv_addr_list,
            bc.broker_name,
            controller.topic_config_manager.select_topic_config,
            bc.load_balance_poll_name_server_interval,
        )
        self.handlers[RequestCode.QUERY_ASSIGNMENT] = self.query_assignment
        self.handlers[RequestCode.SET_MESSAGE_REQUEST_MODE] = self.set_message_request_mode

    def mode_of(self, topic: str, group: str) -> SetMessageRequestModeRequestBody:
        mode = self.message_request_mode_manager.get_message_request_mode(topic, group)
        if mode is not None:
            return mode
        bc = self.controller.broker_config
        # A retry topic is always pulled.
        default = "PULL" if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else bc.default_message_request_mode
        share = bc.default_pop_share_queue_num if default == "POP" else 0
        return SetMessageRequestModeRequestBody(topic, group, default, share)

    async def query_assignment(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        r = Reader(request.decode_body())
        body = QueryAssignmentRequestBody(r.str("topic", None), r.str("consumerGroup", None), r.str("clientId", ""),
                                          r.str("strategyName", ""), r.enum("messageModel", MESSAGE_MODELS, None))
        # What 5.5.0 fails on (a NullPointerException): no topic; no message model, or one it does not know
        # (fastjson2 reads an unknown name as null); no group where it looks the group's consumers up
        if body.topic is None or body.message_model not in MESSAGE_MODELS:
            return response(request, ResponseCode.SYSTEM_ERROR, "topic and messageModel are required")
        if body.consumer_group is None and body.topic in self.message_request_mode_manager.message_request_mode_map:
            return response(request, ResponseCode.SYSTEM_ERROR, "consumerGroup is required")
        mode = self.mode_of(body.topic, body.consumer_group or "")
        queues = await self._load_balance(body, mode)
        assignments = None if queues is None else [MessageQueueAssignment(mq, mode.mode) for mq in queues]
        return response(request, body=request.encode_body(QueryAssignmentResponseBody(assignments)))

    async def _load_balance(
        self, body: QueryAssignmentRequestBody, mode: SetMessageRequestModeRequestBody
    ) -> list[MessageQueue] | None:
        """None: no answer this time (the client keeps what it has); [] : drop every queue."""
        if body.topic.startswith(LMQ_PREFIX) and body.message_model == "CLUSTERING":
            # (a light message queue: one queue of this broker, as RocketMQ 5 answers, no route asked)
            mq_set: set[MessageQueue] | None = {MessageQueue(body.topic, self.controller.broker_config.broker_name,
                                                             LMQ_QUEUE_ID)}
        else:
            mq_set = await self.assignment_manager.get_topic_subscribe_info(body.topic)
        if mq_set is None:
            if not body.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                log.warning(
                    "QueryLoad: no assignment for group[%s], the topic[%s] does not exist.",
                    body.consumer_group,
                    body.topic,
                )
            return None
        if body.message_model == "BROADCASTING" or not self.controller.broker_config.server_load_balancer_enable:
            return sorted(mq_set, key=_sort_key)
        if body.consumer_group is None:
            raise BodyError("consumerGroup", "is missing")
        group_info = self.controller.consumer_manager.get_consumer_group_info(body.consumer_group)
        if group_info is None:
            log.warning(
                "QueryLoad: no assignment for group[%s] topic[%s], get consumer id list failed",
                body.consumer_group,
                body.topic,
            )
            return None
        cid_all = sorted(group_info.all_client_ids())
        mq_all = sorted(mq_set, key=_sort_key)
        strategy = STRATEGIES.get(body.strategy_name)
        if strategy is None:
            log.warning("QueryLoad: unsupported strategy [%s], %s", body.consumer_group, body.strategy_name)
            return None
        try:
            if mode.mode == "POP":
                return self._allocate_for_pop(strategy, body, mq_all, cid_all, mode.pop_share_queue_num)
            return strategy(body.consumer_group, body.client_id, mq_all, cid_all)
        except ValueError as e:  # empty queue or client lists
            log.warning("QueryLoad: no assignment for group[%s] topic[%s]: %s", body.consumer_group, body.topic, e)
            return None

    @staticmethod
    def _allocate_for_pop(
        strategy: Strategy, body: QueryAssignmentRequestBody, mq_all: list[MessageQueue], cid_all: list[str], share: int
    ) -> list[MessageQueue]:
        group, cid = body.consumer_group, body.client_id
        if share <= 0 or share >= len(cid_all) - 1:
            # Every client pops every queue (sharing with all the others comes to that): one "queue -1" per broker.
            return sorted({MessageQueue(mq.topic, mq.broker_name, -1) for mq in mq_all}, key=_sort_key)
        if len(cid_all) > len(mq_all):
            # More clients than queues: each client one queue, round the list, so none is left idle.
            return [mq_all[cid_all.index(cid) % len(mq_all)]] if cid in cid_all else []
        result = strategy(group, cid, mq_all, cid_all)
        if cid in cid_all:
            index = cid_all.index(cid)
            for step in range(1, share + 1):
                result.extend(strategy(group, cid_all[(index + step) % len(cid_all)], mq_all, cid_all))
        return sorted(set(result), key=_sort_key)

    async def set_message_request_mode(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        r = Reader(request.decode_body())
        body = SetMessageRequestModeRequestBody(r.str("topic", None), r.str("consumerGroup", None),
                                                r.enum("mode", MESSAGE_REQUEST_MODES, "PULL"),
                                                r.int32("popShareQueueNum", 0))
        if body.topic is None:  # (5.5.0: a NullPointerException)
            return response(request, ResponseCode.SYSTEM_ERROR, "topic is required")
        if body.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return response(request, ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
        c = self.controller
        if c.topic_config_manager.select_topic_config(body.topic) is None:
            return response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{body.topic}] not exist")
        if body.consumer_group is None:  # (5.5.0: a NullPointerException)
            return response(request, ResponseCode.SYSTEM_ERROR, "consumerGroup is required")
        # (a group not there yet is created first when autoCreateSubscriptionGroup, as 5.5.0's lookup does)
        if c.subscription_group_manager.find_subscription_group_config(body.consumer_group) is None:
            return response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group does not exist")
        self.message_request_mode_manager.set_message_request_mode(body)
        await self.message_request_mode_manager.persist()
        log.info(
            "message request mode of %s@%s set to %s (popShareQueueNum %d) by %s",
            body.consumer_group,
            body.topic,
            body.mode,
            body.pop_share_queue_num,
            channel.remote_address,
        )
        return response(request)
