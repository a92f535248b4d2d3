"""PopPushConsumerImpl: a push consumer that consumes by POP instead of client rebalance (RocketMQ 5's remoting
client with ``setClientRebalance(false)``: ConsumeMessagePopConcurrentlyService, ConsumeMessagePopOrderlyService).

Every consumer of the group pops every queue of each broker serving a subscribed topic (queue id -1, one long
polling loop per topic and broker); the broker hands each message to one of them. A batch the listener accepts is
acked (one BATCH_ACK_MESSAGE); a failed message is made visible again after ``pop_retry_delays`` for its attempt
(CHANGE_MESSAGE_INVISIBLETIME), and one that failed ``max_reconsume_times`` times goes to %DLQ%group
(CONSUMER_SEND_MSG_BACK, delay level -1) and is acked. An orderly listener gets orderly pops: each queue's batch
in order, SUSPEND_CURRENT_QUEUE_A_MOMENT makes the rest of the queue's batch visible again after the suspend
time, counted in place by the broker (the next delivery's ``reconsume_times``). No offsets are kept here: the
broker commits them as it pops.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from pocketmq.common.java_numbers import INT_MAX
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DEFAULT_CONSUMER_GROUP
from pocketmq.common.pop_ack_constants import CONSUME_INIT_MODE_MAX, CONSUME_INIT_MODE_MIN
from pocketmq.remoting.admin_body import ConsumerRunningInfo
from pocketmq.remoting.client_body import MessageQueue, SubscriptionData
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.header import ConsumerSendMsgBackRequestHeader
from pocketmq.remoting.tasks import TaskTracker

from ...client_config import ClientConfig
from ...consumer.consumer_enums import ConsumeFromWhere, ConsumeType
from ...consumer.message_listener import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    call_listener,
    is_async_listener,
)
from ...consumer.pop_result import PopStatus
from ...consumer.push_consumer_config import PushConsumerConfig
from ...exceptions import MQBrokerException, MQClientException
from ...filter_api import build_subscription_data
from ...validators import check_group, check_topic
from ..mq_client_instance import MQClientInstance
from ..mq_client_manager import MQClientManager
from ..teardown import Teardown, undo_start
from .consume_message_service import ConsumeExecutor, cancelled_here
from .mq_consumer_inner import SubscribedConsumerInner
from .pop_api import ack_target
from .pop_api_wrapper import PopAPIWrapper

log = logging.getLogger(__name__)

MAX_RECONSUME_TIMES_CONCURRENTLY = 16
MAX_RECONSUME_TIMES_ORDERLY = INT_MAX
_ERRORS = (RemotingError, MQClientException, MQBrokerException)
_ACKED = (ConsumeOrderlyStatus.SUCCESS, ConsumeOrderlyStatus.COMMIT)


class PopPushConsumerImpl(SubscribedConsumerInner):
    consume_type = ConsumeType.CONSUME_PASSIVELY.value  # the client instance hands it messages

    def __init__(self, group: str, client_config: ClientConfig, config: PushConsumerConfig) -> None:
        self.group = group
        self.client_config = client_config
        self.config = config
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.topic_subscribe_info_table: dict[str, list[MessageQueue]] = {}
        self.listener: Any = None
        self.consume_orderly = False
        self.pause = False
        self.running = False
        self.consumed_ok = 0
        self.consumed_failed = 0
        self.start_timestamp = 0
        self._inflight: dict[tuple[str, str], int] = {}  # (topic, broker) -> messages popped, not yet done
        self._loops: set[tuple[str, str]] = set()
        self._instance: MQClientInstance | None = None
        self._pop_api: PopAPIWrapper | None = None
        self._executor: ConsumeExecutor | None = None
        self._tasks = TaskTracker(log)
        self._teardown = Teardown(f"push consumer {group}")

    # --- state and configuration ---------------------------------------------------------------------------

    @property
    def instance(self) -> MQClientInstance:
        if self._instance is None:
            raise MQClientException("The consumer service state not OK, maybe started once or not started yet")
        return self._instance

    @property
    def pop_api(self) -> PopAPIWrapper:
        if self._pop_api is None:
            raise MQClientException("The consumer service state not OK, maybe started once or not started yet")
        return self._pop_api

    def popped_queues(self) -> list[MessageQueue]:
        """What this consumer pops: each (topic, broker) as a queue with id -1."""
        return sorted((MessageQueue(t, b, -1) for t, b in self._loops), key=lambda q: (q.topic, q.broker_name))

    def max_reconsume_times(self) -> int:
        if self.config.max_reconsume_times != -1:
            return self.config.max_reconsume_times
        return MAX_RECONSUME_TIMES_ORDERLY if self.consume_orderly else MAX_RECONSUME_TIMES_CONCURRENTLY

    def subscribe(self, topic: str, expression: str | None, expression_type: str) -> None:
        check_topic(topic)
        self.subscriptions[topic] = build_subscription_data(topic, expression, expression_type)
        if self.running:
            self._tasks.spawn(self.instance.update_topic_route_info_from_name_server(topic))

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)

    def register_message_listener(self, listener: Any, orderly: bool) -> None:
        if not callable(listener):
            raise MQClientException("messageListener must be callable")
        if self.running:
            raise MQClientException("register the message listener before start()")
        self.listener = listener
        self.consume_orderly = orderly

    # --- lifecycle -----------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self._teardown.wait()  # (a shutdown whose caller was cancelled may still be under way)
        if self.running:
            raise MQClientException("The PushConsumer service state not OK, maybe started once")
        check_group(self.group)
        if self.group == DEFAULT_CONSUMER_GROUP:
            raise MQClientException(f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}")
        if self.listener is None or not self.subscriptions:
            raise MQClientException("register_message_listener() and subscribe() before start()")
        self.client_config.change_instance_name_to_pid()
        instance = MQClientManager.get_instance().get_or_create_mq_client_instance(self.client_config)
        instance.register_consumer(self.group, self)
        self._instance = instance
        self._pop_api = PopAPIWrapper(instance, self.group)
        self._executor = ConsumeExecutor(self.config.consume_thread_max, f"ConsumeMessagePopThread_{self.group}")
        self._tasks = TaskTracker(log)
        self.running = True
        self.start_timestamp = int(time.time() * 1000)
        self._executor.start()
        try:
            await instance.start()
            for topic in list(self.subscriptions):
                await instance.update_topic_route_info_from_name_server(topic, unreachable_raises=True)
            await instance.send_heartbeat_to_all_brokers()
        except BaseException as e:
            # (a failed or cancelled start leaves nothing running, and the consumer may be started again)
            await undo_start(e, self._begin_shutdown, self._teardown)
            raise
        self._start_loops()
        log.info("push consumer %s (POP) started as %s", self.group, instance.client_id)

    async def shutdown(self) -> None:
        """Stop popping and consuming, leave the group: in a task of its own, as DefaultMQPushConsumerImpl's
        (a cancelled caller does not stop it, a second call waits for it, a listener may call it)."""
        self._begin_shutdown()
        await self._teardown.wait()

    def _begin_shutdown(self) -> None:
        if self._teardown.active:
            return
        instance = self._instance
        if instance is None or not self.running:
            return
        self.running = False
        self._teardown.begin(self._do_shutdown(instance))

    async def _do_shutdown(self, instance: MQClientInstance) -> None:
        await self._tasks.close(timeout=5.0)
        if self._executor is not None:
            await self._executor.shutdown(self.config.await_termination_when_shutdown, self._teardown.waiters)
        self._loops.clear()
        await instance.unregister_consumer(self.group)
        await instance.shutdown()
        self._instance = self._pop_api = self._executor = None

    # --- the pop loops -------------------------------------------------------------------------------------

    def _start_loops(self) -> None:
        for topic in list(self.subscriptions):
            for broker in sorted({mq.broker_name for mq in self.topic_subscribe_info_table.get(topic, [])}):
                if self.running and (topic, broker) not in self._loops:
                    self._loops.add((topic, broker))
                    self._tasks.spawn(self._pop_loop(topic, broker))

    async def _pop_loop(self, topic: str, broker: str) -> None:
        cfg = self.config
        key = (topic, broker)
        while self.running and topic in self.subscriptions:
            if self.pause or self._inflight.get(key, 0) >= cfg.pull_threshold_for_queue:
                await asyncio.sleep(cfg.pull_time_delay_when_flow_control)
                continue
            try:
                result = await self._pop(topic, broker)
            except _ERRORS as e:
                log.warning("%s: pop of %s from %s failed: %s", self.group, topic, broker, e)
                await asyncio.sleep(cfg.pull_time_delay_when_exception)
                continue
            if result.pop_status is PopStatus.POLLING_FULL:
                await asyncio.sleep(cfg.pull_time_delay_when_broker_flow_control)
            if result.msg_found_list:
                self._inflight[key] = self._inflight.get(key, 0) + len(result.msg_found_list)
                self._submit(key, result.msg_found_list, result.pop_time + result.invisible_time)
        self._loops.discard(key)

    async def _pop(self, topic: str, broker: str) -> Any:
        cfg = self.config
        sub = self.subscriptions[topic]
        init = CONSUME_INIT_MODE_MIN if cfg.consume_from_where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET \
            else CONSUME_INIT_MODE_MAX
        return await self.pop_api.pop(
            topic, broker, min(cfg.pop_batch_nums, cfg.pull_batch_size), round(cfg.pop_invisible_time * 1000),
            round(cfg.broker_suspend_max_time * 1000), sub.sub_string, sub.expression_type, self.consume_orderly,
            init, cfg.consumer_timeout_when_suspend,
        )

    def _submit(self, key: tuple[str, str], msgs: list[MessageExt], visible_at: int) -> None:
        """``visible_at`` (ms): when the broker gives the pop's messages out again."""
        assert self._executor is not None
        if self.consume_orderly:
            by_queue: dict[int, list[MessageExt]] = {}
            for m in msgs:
                by_queue.setdefault(m.queue_id, []).append(m)
            for queue_msgs in by_queue.values():
                self._executor.submit(self._consume_orderly, key, queue_msgs, visible_at)
            return
        size = self.config.consume_message_batch_max_size
        for i in range(0, len(msgs), size):
            self._executor.submit(self._consume_concurrently, key, msgs[i:i + size], visible_at)

    def _pop_timed_out(self, msgs: list[MessageExt], visible_at: int) -> bool:
        # RocketMQ's ConsumeRequest.isPopTimeout: a message that waited here past its invisible time is already
        # given out again; consuming (and acking) this copy would only add a delivery.
        if time.time_ns() // 1_000_000 < visible_at:
            return False
        log.info("%s: %d popped messages waited past their invisible time; not consumed here", self.group, len(msgs))
        return True

    def _done(self, key: tuple[str, str], n: int) -> None:
        self._inflight[key] = max(0, self._inflight.get(key, 0) - n)

    # --- consuming -----------------------------------------------------------------------------------------

    async def _call(self, msgs: list[MessageExt], context: Any) -> Any:
        assert self._executor is not None
        try:
            if is_async_listener(self.listener):
                return await self.listener(msgs, context)
            return await call_listener(self.listener, False, self._executor.run_sync, msgs, context)
        except Exception:
            log.warning("consumeMessage exception, group %s; reconsume later", self.group, exc_info=True)
            return None
        except asyncio.CancelledError:
            if cancelled_here():
                raise
            # (Something the listener awaited was cancelled, not this worker: a failed call, to retry.)
            log.warning("consumeMessage cancelled, group %s; reconsume later", self.group, exc_info=True)
            return None

    async def _consume_concurrently(self, key: tuple[str, str], msgs: list[MessageExt], visible_at: int) -> None:
        try:
            if self._pop_timed_out(msgs, visible_at):
                return
            mq = MessageQueue(msgs[0].topic, key[1], msgs[0].queue_id)
            status = await self._call(msgs, ConsumeConcurrentlyContext(mq))
            if status is ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
                self.consumed_ok += 1
                await self._ack(msgs)
            else:
                self.consumed_failed += 1
                for m in msgs:
                    await self._retry_later(m, key[1])
        finally:
            self._done(key, len(msgs))

    async def _consume_orderly(self, key: tuple[str, str], msgs: list[MessageExt], visible_at: int) -> None:
        """One queue's batch, in order: each run of consume_message_batch_max_size acked as it succeeds; a
        suspended run and everything after it come back after the suspend time (the broker counts it)."""
        size = self.config.consume_message_batch_max_size
        try:
            for i in range(0, len(msgs), size):
                run = msgs[i:i + size]
                if self._pop_timed_out(msgs[i:], visible_at):
                    return
                context = ConsumeOrderlyContext(MessageQueue(run[0].topic, key[1], run[0].queue_id))
                status = await self._call(run, context)
                # (A pop has no offset to hold back: SUCCESS acks even without auto_commit; ROLLBACK suspends.)
                if status in _ACKED or (status is ConsumeOrderlyStatus.ROLLBACK and context.auto_commit):
                    self.consumed_ok += 1
                    await self._ack(run)
                    continue
                self.consumed_failed += 1
                suspend = context.suspend_current_queue_time or self.config.suspend_current_queue_time
                # Only the run the listener saw failed (ConsumeMessageOrderlyService.checkReconsumeTimes(msgs)):
                # the messages behind it were counted by each pop too, but never consumed, so never to the DLQ.
                for n, m in enumerate(msgs[i:]):
                    await self._suspend(m, key[1], suspend, may_dead_letter=n < len(run))
                return
        finally:
            self._done(key, len(msgs))

    async def _ack(self, msgs: list[MessageExt]) -> None:
        try:
            await self.pop_api.ack_batch(msgs, self.client_config.mq_client_api_timeout)
        except _ERRORS as e:  # the messages come back after their invisible time
            log.warning("%s: ack of %d messages failed: %s", self.group, len(msgs), e)

    async def _retry_later(self, msg: MessageExt, broker: str) -> None:
        if msg.reconsume_times >= self.max_reconsume_times():
            await self._to_dlq(msg, broker)
            return
        delays = self.config.pop_retry_delays
        delay = delays[min(2 + msg.reconsume_times, len(delays) - 1)]
        try:
            await self.pop_api.change_invisible_time(msg, round(delay * 1000),
                                                     self.client_config.mq_client_api_timeout)
        except _ERRORS as e:
            log.warning("%s: retry of %s not scheduled (%s): back after its invisible time", self.group, msg.msg_id, e)

    async def _suspend(self, msg: MessageExt, broker: str, seconds: float, may_dead_letter: bool = True) -> None:
        if may_dead_letter and msg.reconsume_times >= self.max_reconsume_times():
            await self._to_dlq(msg, broker)
            return
        try:
            await self.pop_api.change_invisible_time(msg, round(seconds * 1000),
                                                     self.client_config.mq_client_api_timeout)
        except _ERRORS as e:
            log.warning("%s: suspend of %s failed (%s): back after its invisible time", self.group, msg.msg_id, e)

    async def _to_dlq(self, msg: MessageExt, broker: str) -> None:
        """CONSUMER_SEND_MSG_BACK with delay level -1 (RocketMQ 5's ForwardMessageToDeadLetterQueue), then ack."""
        target = ack_target(msg, self.group)
        try:
            addr = await self.pop_api.broker_address(broker, msg.topic)
            header = ConsumerSendMsgBackRequestHeader(
                offset=msg.commit_log_offset, group=self.group, delay_level=-1, origin_msg_id=msg.msg_id,
                origin_topic=target.topic, max_reconsume_times=self.max_reconsume_times())
            await self.instance.mq_client_api.consumer_send_message_back(addr, header,
                                                                         self.config.send_message_back_timeout)
            await self.pop_api.ack(msg, self.client_config.mq_client_api_timeout)
        except _ERRORS as e:
            log.warning("%s: %s not sent to the DLQ (%s): back after its invisible time", self.group, msg.msg_id, e)

    # --- ConsumerInner (called by MQClientInstance; the rest in SubscribedConsumerInner) ---------------------

    def consume_from_where(self) -> str:
        return self.config.consume_from_where.value

    async def persist_consumer_offset(self) -> None:
        """The broker keeps a popping group's offsets: nothing to persist."""

    async def do_rebalance(self) -> None:
        """No queues to split: start a pop loop for each (topic, broker) not popped yet."""
        self._start_loops()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        if self.running:
            self._tasks.spawn(coro)

    def running_info(self) -> dict[str, object]:
        """ConsumerRunningInfo's content: settings and subscriptions (no queue table: nothing is held)."""
        props = {
            "consumerGroup": self.group, "messageModel": "CLUSTERING", "consumeType": "CONSUME_POP",
            "PROP_CONSUME_TYPE": "CONSUME_POP", "consumeOrderly": str(self.consume_orderly).lower(),
            "PROP_CONSUMEORDERLY": str(self.consume_orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(self.config.consume_thread_max),
            "PROP_CONSUMER_START_TIMESTAMP": str(self.start_timestamp),
            "popInvisibleTime": str(round(self.config.pop_invisible_time * 1000)),
        }
        return ConsumerRunningInfo(props, list(self.subscriptions.values()), {}).to_dict()
