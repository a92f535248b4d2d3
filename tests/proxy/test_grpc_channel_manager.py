"""GrpcChannelManager on its own: which clients stay registered, and which go when there are too many or they
fall silent."""

from __future__ import annotations

from pocketmq.proxy.grpc_channel_manager import GrpcChannelManager


def manager(max_streams: int = 2, expiry: float = 60.0) -> tuple[GrpcChannelManager, list[str]]:
    channels = GrpcChannelManager(max_streams, 4, expiry)
    gone: list[str] = []
    channels.on_remove = gone.append
    return channels, gone


async def test_a_client_whose_stream_ended_stays_until_it_is_silent_past_the_expiry_time() -> None:
    channels, gone = manager(expiry=60)
    stream = channels.create_channel("a@1", "JAVA", "5.0.7", "127.0.0.1:1", channels.new_outbox())
    channels.detach("a@1", stream)
    channel = channels.get_channel("a@1")
    assert channel is stream and channel.closed and not channel.write_telemetry_command("check")
    assert channels.scan_expired() == [] and gone == []
    channel.last_seen -= 61  # (as if a minute had gone by)
    channels.touch("a@1", "JAVA", "5.0.7", "127.0.0.1:1")  # a Heartbeat
    assert channels.scan_expired() == []
    channel.last_seen -= 61
    assert channels.scan_expired() == ["a@1"] and gone == ["a@1"] and channels.get_channel("a@1") is None


async def test_past_twice_the_streams_the_client_without_a_stream_seen_longest_ago_goes() -> None:
    channels, gone = manager(max_streams=2)
    live = channels.create_channel("live@1", "JAVA", "5.0.7", "127.0.0.1:1", channels.new_outbox())
    for name in ("old@1", "mid@1", "new@1"):
        channels.touch(name, "JAVA", "5.0.7", "127.0.0.1:1")
    channels.touch("old@1", "JAVA", "5.0.7", "127.0.0.1:1")  # seen again: now the latest
    channels.touch("extra@1", "JAVA", "5.0.7", "127.0.0.1:1")
    assert gone == ["mid@1"] and len(channels) == 4
    assert channels.get_channel("live@1") is live and channels.get_channel("old@1") is not None
