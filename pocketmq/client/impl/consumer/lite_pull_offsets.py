"""The lite pull consumer's offsets, as DefaultLitePullConsumerImpl keeps them: seek (and to a queue's ends),
the commits of what poll returned (auto, per queue, all, sync), committed, and the queue offsets a seek is checked
against (minOffset, maxOffset, offsetForTimestamp: searchOffset)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pocketmq.remoting.client_body import MessageQueue

from ...client_config import ClientConfig
from ...consumer.lite_pull_consumer_config import LitePullConsumerConfig
from ...consumer.store.offset_store import OffsetStore, ReadOffsetType
from ...exceptions import MQClientException
from .. import mq_admin
from .assigned_message_queue import AssignedMessageQueue

if TYPE_CHECKING:
    from ..mq_client_instance import MQClientInstance


class LitePullOffsets:
    """Mixed into LitePullConsumer (its state declared here for the type checker)."""

    config: LitePullConsumerConfig
    client_config: ClientConfig
    subscription_type: str | None
    assigned_message_queue: AssignedMessageQueue
    _next_auto_commit_deadline: float

    if TYPE_CHECKING:
        @property
        def instance(self) -> MQClientInstance: ...

        @property
        def offset_store(self) -> OffsetStore: ...

        def _check_running(self) -> None: ...

        def _clear_message_queue_in_cache(self, mq: MessageQueue) -> None: ...

        def _restart_pull_task(self, mq: MessageQueue) -> None: ...

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Poll ``mq`` from ``offset`` next (between its min and max offset): what was pulled beyond is
        dropped, and the consume offset (what the next commit stores; a seek stores nothing) moves there too."""
        self._check_running()
        if mq not in self.assigned_message_queue:
            rebalancing = ", may be rebalancing" if self.subscription_type == "SUBSCRIBE" else ""
            raise MQClientException(f"The message queue is not in assigned list{rebalancing}, message queue: {mq}")
        min_offset, max_offset = await self.min_offset(mq), await self.max_offset(mq)
        if not min_offset <= offset <= max_offset:
            raise MQClientException(
                f"Seek offset illegal, seek offset = {offset}, min offset = {min_offset}, max offset = {max_offset}"
            )
        state = self.assigned_message_queue.get(mq)
        if state is None or state.process_queue.dropped:
            return  # taken away by a rebalance meanwhile
        state.seek_offset = offset
        state.consume_offset = offset  # (stored by the next commit, never by the seek: setSeekOffset alone)
        self._clear_message_queue_in_cache(mq)
        self._restart_pull_task(mq)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.max_offset(mq))

    # --- commits ---

    def _maybe_auto_commit(self) -> None:
        now = asyncio.get_running_loop().time()
        if now >= self._next_auto_commit_deadline:
            self.commit_all()
            self._next_auto_commit_deadline = now + self.config.auto_commit_interval

    def commit_queue(self, mq: MessageQueue) -> None:
        """Record ``mq``'s consume offset in the offset store (in memory; persisted periodically). A queue
        already dropped is skipped."""
        state = self.assigned_message_queue.get(mq)
        if state is None or state.consume_offset < 0 or state.process_queue.dropped:
            return
        self.offset_store.update_offset(mq, state.consume_offset, increase_only=False)

    def commit_all(self) -> None:
        """commitAll: every queue's consume offset into the offset store; the instance persists them every
        ``persist_consumer_offset_interval`` and at shutdown."""
        for mq in self.assigned_message_queue.message_queues():
            self.commit_queue(mq)

    async def commit_sync(self) -> None:
        """Commit what ``poll`` has returned so far and store it (at the brokers, or the local file when
        broadcasting) before returning."""
        self._check_running()
        self.commit_all()
        for mq in self.assigned_message_queue.message_queues():
            await self.offset_store.persist(mq)

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` (this client's first, else the broker's); -1 if none."""
        self._check_running()
        return await self.offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)

    # --- the queues' offsets ---

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of the first message of ``mq`` stored at or after ``timestamp_ms`` (searchOffset)."""
        self._check_running()
        return await mq_admin.search_offset(self.instance, mq, timestamp_ms, self.client_config.mq_client_api_timeout)

    async def min_offset(self, mq: MessageQueue) -> int:
        self._check_running()
        return await mq_admin.min_offset(self.instance, mq, self.client_config.mq_client_api_timeout)

    async def max_offset(self, mq: MessageQueue) -> int:
        self._check_running()
        return await mq_admin.max_offset(self.instance, mq, self.client_config.mq_client_api_timeout)
