"""NotifyMessageArrivingListener: the store's new messages reach whoever waits for them.

RocketMQ's broker hands every dispatched message to one listener that wakes the parked pulls, the parked pops and
notifications, and the schedule service of a delay level. Here it also answers whether anyone waits at all: the
dispatcher polls faster while someone does, and a put then dispatches in the event loop's next turn.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pocketmq.common.topic_validator import RMQ_SYS_SCHEDULE_TOPIC

if TYPE_CHECKING:
    from pocketmq.remoting.transport import Channel
    from pocketmq.storage.reput_service import ReputMessageService

    from ..schedule import ScheduleMessageService
    from .pop_long_polling_service import PopLongPollingService
    from .pull_request_hold_service import PullRequestHoldService


class NotifyMessageArrivingListener:
    """The parked pulls, pops and notifications of one broker, woken by the messages its store dispatches."""

    def __init__(
        self,
        pull_hold: PullRequestHoldService,
        pop_polling: PopLongPollingService,
        notification_polling: PopLongPollingService,
        schedule: ScheduleMessageService,
        reput_service: ReputMessageService,
    ) -> None:
        self._pull_hold = pull_hold
        self._pop_polling = pop_polling
        self._notification_polling = notification_polling
        self._schedule = schedule
        self._reput_service = reput_service
        self._dispatch_pending = False  # (dispatch_soon_if_awaited)

    def start(self) -> None:
        self._pull_hold.start()
        self._pop_polling.start()
        self._notification_polling.start()

    def shutdown(self) -> None:
        self._pull_hold.shutdown()
        self._pop_polling.shutdown()
        self._notification_polling.shutdown()

    def arriving(
        self, topic: str, queue_id: int, next_offset: int, tags_code: int, store_timestamp: int, properties: bytes
    ) -> None:
        """The store calls this on its dispatcher thread for every message: each callee returns at once unless
        someone waits on this queue."""
        self._pull_hold.on_message_arriving(topic, queue_id, next_offset, tags_code, store_timestamp, properties)
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            self._schedule.on_message_arriving(queue_id)
        self._pop_polling.on_message_arriving(topic, queue_id)
        self._notification_polling.on_message_arriving(topic, queue_id)

    def someone_waits(self) -> bool:
        return self._pull_hold.waiting() or self._pop_polling.waiting() or self._notification_polling.waiting()

    def dispatch_soon_if_awaited(self) -> None:
        """After a put, when a pull or a pop waits: dispatch in this loop's next turn (the put's answer is out by
        then) rather than wait for the dispatcher thread to get the GIL (ReputMessageService.dispatch_in_caller
        says why). One such turn is pending at a time, whatever the number of puts before it."""
        if not self._dispatch_pending and self.someone_waits():
            self._dispatch_pending = True
            asyncio.get_running_loop().call_soon(self._dispatch_now)

    def _dispatch_now(self) -> None:
        self._dispatch_pending = False
        self._reput_service.dispatch_in_caller()

    def on_channel_close(self, channel: Channel) -> None:
        """A closed connection's parked requests go: nobody will read their answers."""
        self._pull_hold.on_channel_close(channel)
        self._pop_polling.on_channel_close(channel)
        self._notification_polling.on_channel_close(channel)
