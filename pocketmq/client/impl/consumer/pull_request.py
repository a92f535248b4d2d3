"""PullRequest: the standing order to keep pulling one queue for one consumer group."""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.remoting.client_body import MessageQueue

from .process_queue import ProcessQueue


@dataclass(slots=True, eq=False)
class PullRequest:
    """RocketMQ's PullRequest: keep pulling this queue for this group, from ``next_offset``."""

    consumer_group: str
    message_queue: MessageQueue
    process_queue: ProcessQueue
    next_offset: int
    previously_locked: bool = False  # orderly: the first pull after taking the lock re-reads the offset
