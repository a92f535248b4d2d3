"""Transactional messages (RocketMQ's broker.transaction): half messages, op records, END_TRANSACTION's writes and
the check of undecided half messages. See docs/broker.md "Transactional messages" and docs/storage.md."""

from __future__ import annotations

from .transactional_message_check_service import (
    DefaultTransactionalMessageCheckListener,
    TransactionalMessageCheckService,
)
from .transactional_message_service import TransactionalMessageService

__all__ = [
    "DefaultTransactionalMessageCheckListener",
    "TransactionalMessageCheckService",
    "TransactionalMessageService",
]
