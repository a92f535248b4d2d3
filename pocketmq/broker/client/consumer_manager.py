"""ConsumerManager: consumer groups, the channels of their clients and their subscriptions."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from pocketmq.remoting.client_body import SubscriptionData
from pocketmq.remoting.transport import Channel

from .client_channel_info import ClientChannelInfo
from .consumer_ids_change_listener import ConsumerGroupEvent, DefaultConsumerIdsChangeListener

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ConsumerGroupInfo:
    """RocketMQ's ConsumerGroupInfo: a consumer group as its clients' heartbeats describe it."""

    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    channel_info_table: dict[Channel, ClientChannelInfo] = field(default_factory=dict)
    last_update_timestamp: float = field(default_factory=time.monotonic)

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channel_info_table.values():
            if info.client_id == client_id:
                return info
        return None

    def all_channels(self) -> list[Channel]:
        return list(self.channel_info_table)

    def all_client_ids(self) -> list[str]:
        return [info.client_id for info in self.channel_info_table.values()]

    def find_subscription_data(self, topic: str) -> SubscriptionData | None:
        return self.subscription_table.get(topic)

    def unregister_channel(self, info: ClientChannelInfo) -> bool:
        removed = self.channel_info_table.pop(info.channel, None)
        if removed is not None:
            log.info("unregistered consumer %s of group %s", removed.client_id, self.group_name)
        return removed is not None

    def do_channel_close_event(self, channel: Channel) -> bool:
        removed = self.channel_info_table.pop(channel, None)
        if removed is not None:
            log.info(
                "consumer %s of group %s left: channel %s closed",
                removed.client_id,
                self.group_name,
                channel.remote_address,
            )
        return removed is not None

    def update_channel(
        self, info: ClientChannelInfo, consume_type: str, message_model: str, consume_from_where: str
    ) -> bool:
        """True only when the channel is new to the group (what makes its consumers rebalance)."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        old = self.channel_info_table.get(info.channel)
        updated = False
        if old is None:
            self.channel_info_table[info.channel] = info
            log.info("new consumer %s in group %s", info.client_id, self.group_name)
            updated = True
        elif old.client_id != info.client_id:
            log.error(
                "consumer channel %s of group %s changed client id %s -> %s",
                info.channel.remote_address,
                self.group_name,
                old.client_id,
                info.client_id,
            )
            self.channel_info_table[info.channel] = info
        else:
            old.last_update_timestamp = info.last_update_timestamp
        self.last_update_timestamp = time.monotonic()
        return updated

    def update_subscription(self, sub_list: list[SubscriptionData]) -> bool:
        """RocketMQ 4.9.8: a new or dropped topic counts as a change; a newer subVersion is stored silently."""
        updated = False
        wanted = set()
        for sub in sub_list:
            wanted.add(sub.topic)
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        for topic in [t for t in self.subscription_table if t not in wanted]:
            del self.subscription_table[topic]
            log.info("group %s no longer subscribes to %s", self.group_name, topic)
            updated = True
        self.last_update_timestamp = time.monotonic()
        return updated


class ConsumerManager:
    def __init__(self, listener: DefaultConsumerIdsChangeListener, channel_expired_timeout: float = 120.0) -> None:
        self.listener = listener
        self.channel_expired_timeout = channel_expired_timeout
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}

    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumer_table.get(group)

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.consumer_table.get(group)
        return info.find_channel(client_id) if info is not None else None

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_table.get(group)
        return info.find_subscription_data(topic) if info is not None else None

    def find_subscription_data_count(self, group: str) -> int:
        """How many topics the group's online consumers subscribe to (0 when none is online)."""
        info = self.consumer_table.get(group)
        return len(info.subscription_table) if info is not None else 0

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        sub_list: list[SubscriptionData],
        is_notify_consumer_ids_changed_enable: bool,
    ) -> bool:
        group_info = self.consumer_table.get(group)
        if group_info is None:
            group_info = self.consumer_table[group] = ConsumerGroupInfo(
                group, consume_type, message_model, consume_from_where
            )
        r1 = group_info.update_channel(info, consume_type, message_model, consume_from_where)
        r2 = group_info.update_subscription(sub_list)
        if (r1 or r2) and is_notify_consumer_ids_changed_enable:
            self.listener.handle(ConsumerGroupEvent.CHANGE, group, group_info.all_channels())
        self.listener.handle(ConsumerGroupEvent.REGISTER, group)
        return r1 or r2

    def unregister_consumer(
        self, group: str, info: ClientChannelInfo, is_notify_consumer_ids_changed_enable: bool
    ) -> None:
        group_info = self.consumer_table.get(group)
        if group_info is None:
            return
        group_info.unregister_channel(info)
        if not group_info.channel_info_table:
            del self.consumer_table[group]
            self.listener.handle(ConsumerGroupEvent.UNREGISTER, group)
        if is_notify_consumer_ids_changed_enable:
            self.listener.handle(ConsumerGroupEvent.CHANGE, group, group_info.all_channels())

    def do_channel_close_event(self, channel: Channel) -> None:
        for group, group_info in list(self.consumer_table.items()):
            if group_info.do_channel_close_event(channel):
                self._after_removal(group, group_info)

    def scan_not_active_channel(self, now: float | None = None) -> list[Channel]:
        """Drop channels without a heartbeat for channelExpiredTimeout; returns them for closing.

        RocketMQ 4.9.8 drops them without telling the rest of the group; we notify (as 5.x does) so the
        survivors rebalance at once instead of at their next 20 s rebalance tick.
        """
        now = time.monotonic() if now is None else now
        expired: list[Channel] = []
        for group, group_info in list(self.consumer_table.items()):
            dropped = False
            for channel, info in list(group_info.channel_info_table.items()):
                if now - info.last_update_timestamp > self.channel_expired_timeout:
                    log.warning(
                        "consumer %s of group %s expired: no heartbeat for %.1f s",
                        info.client_id,
                        group,
                        now - info.last_update_timestamp,
                    )
                    del group_info.channel_info_table[channel]
                    expired.append(channel)
                    dropped = True
            if dropped:
                self._after_removal(group, group_info)
        return expired

    def _after_removal(self, group: str, group_info: ConsumerGroupInfo) -> None:
        if not group_info.channel_info_table:
            self.consumer_table.pop(group, None)
            self.listener.handle(ConsumerGroupEvent.UNREGISTER, group)
        self.listener.handle(ConsumerGroupEvent.CHANGE, group, group_info.all_channels())
