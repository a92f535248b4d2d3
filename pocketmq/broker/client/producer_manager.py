"""ProducerManager: producer groups and the channels of their clients."""

from __future__ import annotations

import logging
import time

from pocketmq.remoting.transport import Channel

from .client_channel_info import ClientChannelInfo

log = logging.getLogger(__name__)

_CLIENT_ID = "producer_client_id"  # Channel.attrs key: the client id the connection last registered


class ProducerManager:
    def __init__(self, channel_expired_timeout: float = 120.0) -> None:
        self.channel_expired_timeout = channel_expired_timeout
        self._position = 0  # where get_available_channel starts next
        self.group_channel_table: dict[str, dict[Channel, ClientChannelInfo]] = {}
        # client id -> its connection, for the replies pushed to a requesting client (PUSH_REPLY_MESSAGE_TO_CLIENT)
        self.client_channel_table: dict[str, Channel] = {}

    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        channels = self.group_channel_table.setdefault(group, {})
        # One client id per connection: a connection that names a new one drops its old one, or heartbeats with a
        # new id each time would grow this table for as long as the connection lives.
        previous = info.channel.attrs.get(_CLIENT_ID)
        if isinstance(previous, str) and previous != info.client_id and (
                self.client_channel_table.get(previous) is info.channel):
            del self.client_channel_table[previous]
        info.channel.attrs[_CLIENT_ID] = info.client_id
        self.client_channel_table[info.client_id] = info.channel
        old = channels.get(info.channel)
        if old is None:
            channels[info.channel] = info
            log.info("new producer %s in group %s", info.client_id, group)
        else:
            old.last_update_timestamp = info.last_update_timestamp

    def unregister_producer(self, group: str, info: ClientChannelInfo) -> None:
        channels = self.group_channel_table.get(group)
        if channels is None:
            return
        if channels.pop(info.channel, None) is not None:
            log.info("unregistered producer %s of group %s", info.client_id, group)
        if not channels:
            del self.group_channel_table[group]
        if not any(info.channel in chs for chs in self.group_channel_table.values()):
            self._forget_channel(info.channel)

    def _forget_channel(self, channel: Channel) -> None:
        for client_id, ch in list(self.client_channel_table.items()):
            if ch is channel:
                del self.client_channel_table[client_id]

    def do_channel_close_event(self, channel: Channel) -> None:
        for group, channels in list(self.group_channel_table.items()):
            if channels.pop(channel, None) is not None and not channels:
                del self.group_channel_table[group]
        self._forget_channel(channel)

    def scan_not_active_channel(self, now: float | None = None) -> list[Channel]:
        now = time.monotonic() if now is None else now
        expired: list[Channel] = []
        for group, channels in list(self.group_channel_table.items()):
            for channel, info in list(channels.items()):
                if now - info.last_update_timestamp > self.channel_expired_timeout:
                    log.warning("producer %s of group %s expired", info.client_id, group)
                    del channels[channel]
                    expired.append(channel)
            if not channels:
                del self.group_channel_table[group]
        for channel in expired:
            self._forget_channel(channel)
        return expired

    def get_available_channel(self, group: str) -> Channel | None:
        """The group's next live channel that reads what it is sent (CHECK_TRANSACTION_STATE's), taking the
        group's producers in turn as RocketMQ does, so one that cannot answer does not keep the others from
        being asked; None when none is both open and reading."""
        channels = list(self.group_channel_table.get(group, {}))
        if not channels:
            return None
        self._position += 1
        for i in range(len(channels)):
            channel = channels[(self._position + i) % len(channels)]
            if not channel.closed and not channel.write_paused:
                return channel
        return None

    def find_channel(self, client_id: str) -> Channel | None:
        """The live connection of the producer client ``client_id`` (ProducerManager.findChannel)."""
        channel = self.client_channel_table.get(client_id)
        return channel if channel is not None and not channel.closed else None
