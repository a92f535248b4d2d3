"""PullRequest: the standing order to keep pulling one queue for one consumer group."""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.remoting.client_body import MessageQueue

from .process_queue import ProcessQueue


@dataclass(slots=True, eq=False)
class PullRequest:
    consumer_group: str
    message_queue: MessageQueue
    process_queue: ProcessQueue
    next_offset: int
    previously_locked: bool = False  # orderly: the first pull after taking the lock re-reads the offset
