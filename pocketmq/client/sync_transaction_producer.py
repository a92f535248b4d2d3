"""SyncTransactionProducer: TransactionProducer behind blocking calls, for code without asyncio.

    with SyncTransactionProducer("PG", "127.0.0.1:9876", listener) as producer:
        result = producer.send_message_in_transaction(Message("TopicTest", b"order 1"), arg=None)

The listener's methods run on the client's own thread (its private event loop), one at a time: a check that
blocks holds up the client's other work, as a slow callback does in RocketMQ's single check thread.
"""

from __future__ import annotations

from typing import Any

from .message import Message
from .producer.transaction_producer import TransactionListener, TransactionProducer, TransactionSendResult
from .sync import SyncProducer


class SyncTransactionProducer(SyncProducer):
    """A started TransactionProducer; arguments are TransactionProducer's. Plain sends work as SyncProducer's."""

    def __init__(
        self, group: str, namesrv_addr: str, transaction_listener: TransactionListener | None = None, **kwargs: Any
    ) -> None:
        self.producer: TransactionProducer = self._start(
            f"SyncTransactionProducer-{group}",
            lambda: TransactionProducer(group, namesrv_addr, transaction_listener, **kwargs),
        )

    def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        return self._runner.run(self.producer.send_message_in_transaction(msg, arg))

