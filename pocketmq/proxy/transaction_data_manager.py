"""TransactionDataManager: what EndTransaction needs of a half message the proxy sent or was asked about."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class TransactionData:
    """RocketMQ's TransactionData: where a half message is, for its END_TRANSACTION, until ``expire_at``."""

    broker_addr: str
    topic: str
    tran_state_table_offset: int
    commit_log_offset: int
    transaction_id: str
    expire_at: float


class TransactionDataManager:
    """By (producer group, transaction id), each for ``expire_millis``; at most ``max_num`` (the oldest go)."""

    def __init__(self, expire_millis: int, max_num: int) -> None:
        self.expire_millis = expire_millis
        self.max_num = max_num
        self._data: OrderedDict[tuple[str, str], TransactionData] = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def add(self, producer_group: str, broker_addr: str, topic: str, tran_state_table_offset: int,
            commit_log_offset: int, transaction_id: str) -> TransactionData:
        data = TransactionData(broker_addr, topic, tran_state_table_offset, commit_log_offset, transaction_id,
                               time.monotonic() + self.expire_millis / 1000)
        key = (producer_group, transaction_id)
        self._data.pop(key, None)
        self._data[key] = data
        self._expire()
        while len(self._data) > self.max_num:
            self._data.popitem(last=False)
        return data

    def poll(self, producer_group: str, transaction_id: str) -> TransactionData | None:
        """pollNoExpireTransactionData: the data, removed, unless it expired."""
        self._expire()
        return self._data.pop((producer_group, transaction_id), None)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._data:
            key, first = next(iter(self._data.items()))
            if first.expire_at > now:
                break
            del self._data[key]
