"""RebalanceImpl: which queues of its topics this consumer takes, and the process-queue table that follows.

For each subscribed topic (and, clustering, the group's %RETRY% topic) a rebalance reads the topic's queues
and the group's client ids (GET_CONSUMER_LIST_BY_GROUP), sorts both, lets the allocation strategy pick this
client's share, then updates the table: queues no longer ours are marked dropped, their offsets persisted and
removed; new queues get a start offset (ConsumeFromWhere, only when the group has none stored) and a
PullRequest. Every client computes the same split from the same sorted inputs, so no coordinator is needed;
while membership changes, two clients may briefly both hold a queue (the "rebalance window"), which is why
delivery is at least once. Orderly consumers additionally lock queues at the broker (LOCK_BATCH_MQ) and take
a queue only once its lock is theirs.

What a push consumer does on those events (start offsets, removal, dispatch) lives in RebalancePushImpl
(rebalance_push_impl.py), as in RocketMQ.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable

from pocketmq.common.java_hash import java_string_order
from pocketmq.common.mix_all import is_retry_topic
from pocketmq.remoting.client_body import LockBatchRequestBody, MessageQueue, SubscriptionData
from pocketmq.remoting.errors import RemotingError

from ...consumer.allocate import AllocateMessageQueueStrategy
from ...consumer.consumer_enums import ConsumeFromWhere, MessageModel
from ...consumer.store.offset_store import OffsetStore, ReadOffsetType
from ...exceptions import MQBrokerException, MQClientException
from ...message_const import RETRY_GROUP_TOPIC_PREFIX
from ..mq_client_instance import MQClientInstance
from .process_queue import ProcessQueue
from .pull_request import PullRequest
from .rebalance_history import RebalanceHistory

log = logging.getLogger(__name__)


def mq_sort_key(mq: MessageQueue) -> tuple[bytes, bytes, int]:
    return (java_string_order(mq.topic), java_string_order(mq.broker_name), mq.queue_id)


async def compute_pull_from_where(
    instance: MQClientInstance,
    offset_store: OffsetStore,
    group: str,
    mq: MessageQueue,
    where: ConsumeFromWhere,
    timestamp_ms: Callable[[], int],
    read_type: ReadOffsetType = ReadOffsetType.READ_FROM_STORE,
) -> int:
    """Where a consumer taking ``mq`` starts: the group's stored offset, else where ``where`` says; -1 when it
    cannot be known this round (RebalancePushImpl / RebalanceLitePullImpl.computePullFromWhere). ``read_type``:
    a push consumer reads the broker's offset; a lite pull consumer its own first (one committed in memory and not
    yet persisted, for a queue assigned away and back)."""
    try:
        last = await offset_store.read_offset(mq, read_type)
    except (RemotingError, MQClientException, MQBrokerException) as e:
        log.warning("%s: reading the offset of %s failed: %s", group, mq, e)
        return -1
    if last >= 0:
        return last
    retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    timeout = instance.config.mq_client_api_timeout
    try:
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if retry and where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
            return 0  # a group's retries are all for it: never skip them
        addr = await instance.find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            raise MQClientException(f"The broker[{mq.broker_name}] not exist")
        if where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP and not retry:
            return await instance.mq_client_api.search_offset(addr, mq.topic, mq.queue_id, timestamp_ms(), timeout)
        return await instance.mq_client_api.get_max_offset(addr, mq.topic, mq.queue_id, timeout)
    except (RemotingError, MQClientException, MQBrokerException) as e:
        log.warning("%s: computing the start offset of %s failed: %s", group, mq, e)
        return -1


class RebalanceImpl:
    def __init__(
        self,
        consumer_group: str,
        message_model: MessageModel,
        allocate_strategy: AllocateMessageQueueStrategy,
        instance: MQClientInstance,
    ) -> None:
        self.consumer_group = consumer_group
        self.message_model = message_model
        self.allocate_message_queue_strategy = allocate_strategy
        self.instance = instance
        self.subscription_inner: dict[str, SubscriptionData] = {}
        self.topic_subscribe_info_table: dict[str, list[MessageQueue]] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}
        # The table's queues as the last finished rebalance left them. A round takes and drops queues one at a
        # time with a broker call between them (the start offset), so the table itself can show half a round.
        self.settled_queues: list[MessageQueue] = []
        self.history = RebalanceHistory()  # the rounds that changed something, for ConsumerRunningInfo
        self._lock = asyncio.Lock()  # one rebalance at a time per consumer
        self.stopped = False  # set by stop(): no round starts or takes a queue after it

    # --- hooks (RebalancePushImpl) -------------------------------------------------------------------------

    def message_queue_changed(self, topic: str, mq_all: list[MessageQueue], mq_divided: set[MessageQueue]) -> None:
        pass

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        return True

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        pass

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return -1

    def dispatch_pull_request(self, requests: list[PullRequest]) -> None:
        pass

    def is_pull_expired(self, pq: ProcessQueue) -> bool:
        return False

    # --- rebalance -----------------------------------------------------------------------------------------

    async def stop(self) -> None:
        """No rebalance from now on; returns once the round in flight (if any) has finished, so a consumer
        shutting down walks a table nothing changes any more."""
        self.stopped = True
        async with self._lock:
            pass

    async def do_rebalance(self, is_order: bool) -> None:
        async with self._lock:
            if self.stopped:
                return
            for topic in list(self.subscription_inner):
                try:
                    await self.rebalance_by_topic(topic, is_order)
                except (RemotingError, MQClientException, MQBrokerException) as e:
                    if not is_retry_topic(topic):
                        log.warning("rebalance of %s for group %s failed: %s", topic, self.consumer_group, e)
            self.truncate_message_queue_not_my_topic()
            self.settled_queues = sorted(self.process_queue_table, key=mq_sort_key)

    async def rebalance_by_topic(self, topic: str, is_order: bool) -> None:
        mq_set = self.topic_subscribe_info_table.get(topic)
        if not mq_set:
            if not is_retry_topic(topic):
                log.warning("doRebalance, %s, but the topic[%s] not exist.", self.consumer_group, topic)
            return
        strategy = str(getattr(self.allocate_message_queue_strategy, "name", "?"))
        cid_all: list[str] = []
        if self.message_model is MessageModel.BROADCASTING:
            allocated = set(mq_set)
            strategy = "BROADCASTING"  # no strategy: every consumer takes every queue
            is_order = False  # every consumer reads every queue: there is nothing to lock against
        else:
            cid_all = await self.instance.find_consumer_id_list(topic, self.consumer_group)
            if not cid_all:
                log.warning("doRebalance, %s %s, get consumer id list failed", self.consumer_group, topic)
                return
            mq_all = sorted(mq_set, key=mq_sort_key)
            cid_all = sorted(cid_all, key=java_string_order)
            try:
                allocated = set(
                    self.allocate_message_queue_strategy.allocate(
                        self.consumer_group, self.instance.client_id, mq_all, cid_all
                    )
                )
            except Exception:
                log.exception("AllocateMessageQueueStrategy.allocate (%s) failed", strategy)
                return
        before = [mq for mq in self.process_queue_table if mq.topic == topic]
        changed = await self.update_process_queue_table_in_rebalance(topic, allocated, is_order)
        after = [mq for mq in self.process_queue_table if mq.topic == topic]
        self.history.record(self.instance.client_id, topic, strategy, cid_all, before, after)
        if changed:
            log.info(
                "rebalanced %s of group %s, client %s: %s",
                topic,
                self.consumer_group,
                self.instance.client_id,
                sorted((mq.broker_name, mq.queue_id) for mq in allocated),
            )
            self.message_queue_changed(topic, list(mq_set), allocated)

    async def update_process_queue_table_in_rebalance(
        self, topic: str, mq_set: set[MessageQueue], is_order: bool
    ) -> bool:
        changed = False
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic != topic:
                continue
            if mq not in mq_set:
                pq.dropped = True  # stops pulls and consumption of this queue at once
                if await self.remove_unnecessary_message_queue(mq, pq):
                    self._pop_if(mq, pq)
                    changed = True
                    log.info("%s: dropped %s, no longer ours", self.consumer_group, mq)
            elif self.is_pull_expired(pq):
                pq.dropped = True
                if await self.remove_unnecessary_message_queue(mq, pq):
                    self._pop_if(mq, pq)
                    changed = True
                    log.warning("%s: dropped %s, not pulled for too long", self.consumer_group, mq)
        requests: list[PullRequest] = []
        for mq in sorted(mq_set, key=mq_sort_key):
            if mq in self.process_queue_table or self.stopped:
                continue
            if is_order and not await self.lock(mq):
                log.warning("%s: cannot take %s yet, its broker lock is held elsewhere", self.consumer_group, mq)
                continue
            self.remove_dirty_offset(mq)
            pq = ProcessQueue()
            if is_order:
                pq.locked, pq.last_lock_timestamp = True, time.monotonic()
            next_offset = await self.compute_pull_from_where(mq)
            if next_offset < 0:
                log.warning("%s: no start offset for %s this round", self.consumer_group, mq)
                continue
            if mq in self.process_queue_table:  # taken meanwhile (cannot happen under _lock, kept as a guard)
                continue
            self.process_queue_table[mq] = pq
            requests.append(PullRequest(self.consumer_group, mq, pq, next_offset))
            changed = True
            log.info("%s: took %s, pulling from offset %d", self.consumer_group, mq, next_offset)
        self.dispatch_pull_request(requests)
        return changed

    def _pop_if(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        if self.process_queue_table.get(mq) is pq:
            del self.process_queue_table[mq]

    def truncate_message_queue_not_my_topic(self) -> None:
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic not in self.subscription_inner:
                pq.dropped = True
                del self.process_queue_table[mq]
                log.info("%s: dropped %s, topic no longer subscribed", self.consumer_group, mq)

    async def remove_process_queue(self, mq: MessageQueue) -> None:
        """Give up a queue now (after OFFSET_ILLEGAL); the next rebalance takes it again from the stored offset."""
        pq = self.process_queue_table.pop(mq, None)
        self.settled_queues = [q for q in self.settled_queues if q != mq]
        if pq is not None:
            pq.dropped = True
            await self.remove_unnecessary_message_queue(mq, pq)
            log.info("%s: removed %s", self.consumer_group, mq)

    # --- broker queue locks (orderly, CLUSTERING) ----------------------------------------------------------

    def _lock_body(self, mqs: set[MessageQueue]) -> LockBatchRequestBody:
        return LockBatchRequestBody(self.consumer_group, self.instance.client_id, set(mqs))

    async def lock(self, mq: MessageQueue) -> bool:
        addr = await self.instance.find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            return False
        try:
            locked = await self.instance.mq_client_api.lock_batch_mq(
                addr, self._lock_body({mq}), self.instance.config.mq_client_api_timeout
            )
        except (RemotingError, MQBrokerException) as e:
            log.warning("lockBatchMQ of %s failed: %s", mq, e)
            return False
        for locked_mq in locked:
            pq = self.process_queue_table.get(locked_mq)
            if pq is not None:
                pq.locked, pq.last_lock_timestamp = True, time.monotonic()
        return mq in locked

    def _by_broker(self) -> dict[str, set[MessageQueue]]:
        out: dict[str, set[MessageQueue]] = defaultdict(set)
        for mq in self.process_queue_table:
            out[mq.broker_name].add(mq)
        return out

    async def lock_all(self) -> None:
        """Renew the locks of every queue held (LOCK_BATCH_MQ per broker); queues refused stop consuming."""

        async def one(broker_name: str, mqs: set[MessageQueue]) -> None:
            addr = await self.instance.find_master_address(broker_name, next(iter(mqs)).topic)
            if addr is None:
                return
            try:
                locked = await self.instance.mq_client_api.lock_batch_mq(
                    addr, self._lock_body(mqs), self.instance.config.mq_client_api_timeout
                )
            except (RemotingError, MQBrokerException) as e:
                log.warning("lockBatchMQ at %s failed: %s", addr, e)
                return
            now = time.monotonic()
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is None:
                    continue
                if mq in locked:
                    pq.locked, pq.last_lock_timestamp = True, now
                elif pq.locked:
                    pq.locked = False
                    log.warning("%s: lost the broker lock of %s", self.consumer_group, mq)

        async with asyncio.TaskGroup() as tg:
            for broker_name, mqs in self._by_broker().items():
                tg.create_task(one(broker_name, mqs))

    async def unlock(self, mq: MessageQueue, oneway: bool) -> None:
        addr = await self.instance.find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            return
        try:
            await self.instance.mq_client_api.unlock_batch_mq(
                addr, self._lock_body({mq}), self.instance.config.mq_client_api_timeout, oneway
            )
        except (RemotingError, MQBrokerException) as e:
            log.warning("unlockBatchMQ of %s failed: %s", mq, e)

    async def unlock_all(self, oneway: bool) -> None:
        async def one(broker_name: str, mqs: set[MessageQueue]) -> None:
            addr = await self.instance.find_master_address(broker_name, next(iter(mqs)).topic)
            if addr is None:
                return
            try:
                await self.instance.mq_client_api.unlock_batch_mq(
                    addr, self._lock_body(mqs), self.instance.config.mq_client_api_timeout, oneway
                )
            except (RemotingError, MQBrokerException) as e:
                log.warning("unlockBatchMQ at %s failed: %s", addr, e)
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is not None:
                    pq.locked = False

        async with asyncio.TaskGroup() as tg:
            for broker_name, mqs in self._by_broker().items():
                tg.create_task(one(broker_name, mqs))
