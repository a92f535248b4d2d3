"""Headers of the requests a name server answers (RocketMQ's remoting.protocol.header.namesrv package, same
names and wire names): a broker's registration and heartbeat, a topic's route, a topic's deletion."""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader


@dataclass(slots=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103): a broker registers with a name server, its topic table in the body."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: int
    compressed: bool = False  # body is zlib-deflated msgpack
    body_crc32: int = 0  # 0 = not checked; else zlib.crc32(body) & 0x7FFFFFFF (RocketMQ's UtilAll.crc32)
    # pocketmq's delta registration: the body holds only the topics changed (and deleted) since this data
    # version, which the name server must hold for the broker; else it answers delta_accepted false and the
    # broker sends its whole table. A RocketMQ name server ignores both fields and merges the topics it gets.
    base_version_timestamp: int | None = None
    base_version_counter: int | None = None
    # RocketMQ 5.x: how long the name server keeps this broker without a registration (its scan drops it after);
    # absent: the name server's own expiry (120 s).
    heartbeat_timeout_millis: int | None = None


@dataclass(slots=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """REGISTER_BROKER (103)'s answer."""

    ha_server_addr: str | None = None
    master_addr: str | None = None
    delta_accepted: bool | None = None  # answers a delta registration (pocketmq's; absent from RocketMQ's)


@dataclass(slots=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104): a broker leaves a name server."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class BrokerHeartbeatRequestHeader(CommandHeader):
    """BROKER_HEARTBEAT (904, RocketMQ 5): a broker says it is alive, between its registrations."""

    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int | None = None
    epoch: int | None = None
    max_offset: int | None = None
    confirm_offset: int | None = None
    heartbeat_timeout_mills: int | None = None
    election_priority: int | None = None


@dataclass(slots=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322): a broker asks whether the name server holds its current topic config."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class QueryDataVersionResponseHeader(CommandHeader):
    """QUERY_DATA_VERSION (322)'s answer: whether the broker's topic config differs from the name server's."""

    changed: bool


@dataclass(slots=True)
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105): a topic's route, asked of a name server."""

    topic: str
    # 4.9.8: a client below V4_9_4 that reads standard JSON routes asks for them (body.topic_route_body_dialect).
    accept_standard_json_only: bool | None = None


@dataclass(slots=True)
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV (216)."""

    topic: str
    cluster_name: str | None = None  # 5.x: limit the deletion to one cluster
