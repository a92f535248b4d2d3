"""ClientHousekeepingService: drop silent client channels on a timer, closed ones at once."""

from __future__ import annotations

import logging

from pocketmq.remoting.transport import Channel

from .consumer_manager import ConsumerManager
from .producer_manager import ProducerManager
from .rebalance_lock_manager import RebalanceLockManager

log = logging.getLogger(__name__)


class ClientHousekeepingService:
    def __init__(self, producer_manager: ProducerManager, consumer_manager: ConsumerManager,
                 lock_manager: RebalanceLockManager | None = None) -> None:
        self.producer_manager = producer_manager
        self.consumer_manager = consumer_manager
        self.lock_manager = lock_manager

    def scan_exception_channel(self, now: float | None = None) -> list[Channel]:
        """One pass (every clientHousekeepingInterval): expire and close silent channels, and forget the queue
        locks that expired (RocketMQ keeps them until taken again: a table any client can grow with LOCK_BATCH_MQ
        for made-up groups and queues)."""
        expired = self.producer_manager.scan_not_active_channel(now)
        expired += self.consumer_manager.scan_not_active_channel(now)
        for channel in set(expired):
            channel.close()  # its close event then finds nothing left to remove
        if self.lock_manager is not None:
            self.lock_manager.drop_expired()
        return expired

    def on_channel_close(self, channel: Channel) -> None:
        """The remoting server's close listener: a closed connection's clients are gone at once."""
        self.producer_manager.do_channel_close_event(channel)
        self.consumer_manager.do_channel_close_event(channel)
