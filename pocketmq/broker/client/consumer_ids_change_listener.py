"""DefaultConsumerIdsChangeListener: tell a group's consumers to rebalance when its membership changes."""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable

from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.header import NotifyConsumerIdsChangedRequestHeader
from pocketmq.remoting.tasks import TaskTracker
from pocketmq.remoting.transport import Channel

log = logging.getLogger(__name__)


class ConsumerGroupEvent(enum.Enum):
    CHANGE = "CHANGE"  # the group's channels or subscriptions changed
    UNREGISTER = "UNREGISTER"  # the group has no consumer left
    REGISTER = "REGISTER"  # a consumer (re)registered its subscriptions


class DefaultConsumerIdsChangeListener:
    def __init__(self, notify_enable: bool, tasks: TaskTracker) -> None:
        self.notify_enable = notify_enable
        self._tasks = tasks
        self.notifications_sent = 0  # observability for tests and stats

    def handle(self, event: ConsumerGroupEvent, group: str, channels: Iterable[Channel] = ()) -> None:
        # REGISTER / UNREGISTER feed RocketMQ's ConsumerFilterManager (SQL92 filters), which we do not have.
        if event is not ConsumerGroupEvent.CHANGE or not self.notify_enable:
            return
        for channel in channels:
            # A consumer that does not take what is written to it is not told (RocketMQ's one-way sends give up
            # when its semaphore is taken): otherwise every change would leave one more task waiting on its
            # connection. It rebalances on its own timer all the same.
            if not channel.closed and not channel.write_paused:
                self._tasks.spawn(self._notify(channel, group), name=f"notify-{group}")

    async def _notify(self, channel: Channel, group: str) -> None:
        """Broker2Client.notifyConsumerIdsChanged: a one-way NOTIFY_CONSUMER_IDS_CHANGED (40)."""
        request = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, NotifyConsumerIdsChangedRequestHeader(group), oneway=True
        )
        try:
            await channel.invoke_oneway(request)
            self.notifications_sent += 1
        except RemotingError as e:
            log.info("cannot notify %s of a change in group %s: %s", channel.remote_address, group, e)
