"""Offset stores: where a consumer group's next offsets live.

RemoteBrokerOffsetStore (CLUSTERING): cached here and stored by the queue's master broker.
LocalFileOffsetStore (BROADCASTING, in local_file_offset_store.py): a file per client and group.
"""

from __future__ import annotations

import enum
import logging
from typing import Protocol

from pocketmq.common.java_text import is_blank
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.header import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader

from ...exceptions import MQBrokerException, MQClientException
from ...impl.mq_client_instance import MQClientInstance

log = logging.getLogger(__name__)


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = "READ_FROM_MEMORY"
    READ_FROM_STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class OffsetStore(Protocol):
    """What consumers need of an offset store (RocketMQ's OffsetStore interface)."""

    offset_table: dict[MessageQueue, int]

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None: ...

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int: ...

    def remove_offset(self, mq: MessageQueue) -> None: ...

    async def persist(self, mq: MessageQueue) -> None: ...

    async def persist_all(self) -> None: ...


def clone_offset_table(store: OffsetStore, topic: str) -> dict[MessageQueue, int]:
    """OffsetStore.cloneOffsetTable: a copy of the offsets ``store`` holds of ``topic``'s queues, of every topic's
    when ``topic`` is blank (what a broker's GET_CONSUMER_STATUS_FROM_CLIENT gets)."""
    every = is_blank(topic)
    return {mq: offset for mq, offset in list(store.offset_table.items()) if every or mq.topic == topic}


class RemoteBrokerOffsetStore:
    def __init__(self, instance: MQClientInstance, group: str) -> None:
        self._instance = instance
        self.group = group
        self.offset_table: dict[MessageQueue, int] = {}
        self._dirty: set[MessageQueue] = set()  # changed here since the broker last heard of them
        # brokerName -> the instance's master_connections count when this store last sent that broker its offsets
        self._sent_on_connection: dict[str, int] = {}

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
        old = self.offset_table.get(mq)
        if increase_only and old is not None and offset <= old:
            return
        self.offset_table[mq] = offset
        self._dirty.add(mq)

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        """The next offset to consume; -1 when neither this cache (as asked) nor the broker has one."""
        if kind is not ReadOffsetType.READ_FROM_STORE:
            offset = self.offset_table.get(mq)
            if offset is not None:
                return offset
            if kind is ReadOffsetType.READ_FROM_MEMORY:
                return -1
        try:
            offset = await self.fetch_consume_offset_from_broker(mq)
        except MQBrokerException as e:
            if e.code == ResponseCode.QUERY_NOT_FOUND:
                return -1
            raise
        self.offset_table[mq] = offset
        self._dirty.discard(mq)
        return offset

    def remove_offset(self, mq: MessageQueue) -> None:
        self.offset_table.pop(mq, None)
        self._dirty.discard(mq)

    def unsent_offset(self, mq: MessageQueue) -> int:
        """The offset of ``mq`` updated here since the broker last heard of it; -1 if there is none."""
        if mq in self._dirty:
            return self.offset_table.get(mq, -1)
        return -1

    async def persist(self, mq: MessageQueue) -> None:
        offset = self.offset_table.get(mq)
        if offset is not None:
            await self.update_consume_offset_to_broker(mq, offset, oneway=False)
            self._sent(mq, offset)

    async def persist_all(self) -> None:
        """Send every offset changed since the last persist (one-way, as RocketMQ's periodic persist does), and
        every offset of a broker connected to anew since: a broker killed before it flushed them has restarted
        with older ones, which an idle queue would otherwise never correct (RocketMQ sends every offset each
        time)."""
        connections, seen = self._instance.master_connections, self._sent_on_connection
        for mq in self.offset_table:
            name = mq.broker_name
            if name in seen and seen[name] != connections.get(name):
                self._dirty.add(mq)
        for mq in list(self._dirty):
            offset = self.offset_table.get(mq)
            if offset is None:
                continue
            try:
                await self.update_consume_offset_to_broker(mq, offset, oneway=True)
                self._sent(mq, offset)
            except (RemotingError, MQClientException) as e:
                log.warning("persist offset %d of %s for %s failed: %s", offset, mq, self.group, e)
        # (a broker first seen here is taken as it is: what this store sent went over its present connection)
        self._sent_on_connection = dict(connections)

    def _sent(self, mq: MessageQueue, offset: int) -> None:
        # An update made while the offset was on its way (another task's commit) keeps the queue's mark: the next
        # persist, shutdown's included, sends it.
        if self.offset_table.get(mq) == offset:
            self._dirty.discard(mq)

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool = True) -> None:
        addr = await self._master_addr(mq)
        header = UpdateConsumerOffsetRequestHeader(self.group, mq.topic, mq.queue_id, offset)
        api = self._instance.mq_client_api
        if oneway:
            await api.update_consumer_offset_oneway(addr, header)
        else:
            await api.update_consumer_offset(addr, header, self._instance.config.mq_client_api_timeout)

    async def fetch_consume_offset_from_broker(self, mq: MessageQueue) -> int:
        addr = await self._master_addr(mq)
        header = QueryConsumerOffsetRequestHeader(self.group, mq.topic, mq.queue_id)
        return await self._instance.mq_client_api.query_consumer_offset(
            addr, header, self._instance.config.mq_client_api_timeout
        )

    async def _master_addr(self, mq: MessageQueue) -> str:
        addr = await self._instance.find_master_address(mq.broker_name, mq.topic)
        if addr is None:
            raise MQClientException(f"The broker[{mq.broker_name}] not exist")
        return addr
