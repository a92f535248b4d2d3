"""AssignedMessageQueue: the queues a lite pull consumer reads, and where it stands in each.

Per queue (MessageQueueState): its ProcessQueue (the messages pulled and not yet polled), whether it is paused,
and three offsets: ``pull_offset``, the next offset to pull; ``consume_offset``, the next offset not yet handed
to the application by ``poll`` (what a commit stores); ``seek_offset``, a ``seek`` the queue's pull task has
not taken up yet (-1: none). -1 means "not known yet" for all three.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pocketmq.remoting.client_body import MessageQueue

from .process_queue import ProcessQueue


@dataclass(slots=True)
class MessageQueueState:
    """RocketMQ's MessageQueueState: where the consumer stands in one assigned queue."""

    message_queue: MessageQueue
    process_queue: ProcessQueue = field(default_factory=ProcessQueue)
    paused: bool = False
    pull_offset: int = -1
    consume_offset: int = -1
    seek_offset: int = -1


class AssignedMessageQueue:
    def __init__(self) -> None:
        self._states: dict[MessageQueue, MessageQueueState] = {}

    def message_queues(self) -> list[MessageQueue]:
        return list(self._states)

    def get(self, mq: MessageQueue) -> MessageQueueState | None:
        return self._states.get(mq)

    def __contains__(self, mq: object) -> bool:
        return mq in self._states

    def is_paused(self, mq: MessageQueue) -> bool:
        state = self._states.get(mq)
        return state is not None and state.paused

    def pause(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in mqs:
            state = self._states.get(mq)
            if state is not None:
                state.paused = True

    def resume(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in mqs:
            state = self._states.get(mq)
            if state is not None:
                state.paused = False

    def update_assigned_message_queue(
        self,
        mqs: Iterable[MessageQueue],
        topic: str | None = None,
        process_queues: dict[MessageQueue, ProcessQueue] | None = None,
        pull_offsets: dict[MessageQueue, int] | None = None,
    ) -> list[MessageQueue]:
        """Make ``mqs`` the assignment (of ``topic`` only, when given); returns the queues dropped. A new queue
        takes its ProcessQueue from ``process_queues`` (the rebalance's table, so both see it dropped) and its
        first pull offset from ``pull_offsets``."""
        wanted = set(mqs)
        dropped = []
        for mq, state in list(self._states.items()):
            if (topic is None or mq.topic == topic) and mq not in wanted:
                state.process_queue.dropped = True
                del self._states[mq]
                dropped.append(mq)
        for mq in wanted:
            if mq not in self._states:
                pq = (process_queues or {}).get(mq) or ProcessQueue()
                self._states[mq] = MessageQueueState(mq, pq, pull_offset=(pull_offsets or {}).get(mq, -1))
        return dropped

    def remove_assigned_message_queue(self, topic: str) -> list[MessageQueue]:
        return self.update_assigned_message_queue([], topic)

    def clear(self) -> None:
        self.update_assigned_message_queue([])
