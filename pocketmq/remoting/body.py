"""Command bodies: maps/lists keyed by RocketMQ's JSON field names, and the route-side body classes.

Where RocketMQ sends a JSON object (fastjson of a Java class) pocketmq's frames carry the msgpack map with the same
keys, e.g. ``{"queueDatas": [...], "brokerDatas": [...]}``. Two deliberate differences from JSON: ``brokerAddrs``
keys are msgpack ints (brokerId), not decimal strings (still accepted on decode), and sets are lists. On a native
connection the same dicts travel as Java's JSON (``BodyDialect.FASTJSON``: ``fastjson.dumps`` of ``to_dict()``,
which writes ``brokerAddrs`` as ``{0:"addr"}``), and JSON read from there is cast the way fastjson casts it.

Every body class has ``to_dict()`` and ``from_dict(obj)``; ``from_dict`` validates types and raises BodyError
with the path of the offending value.

This module is their one import path; each job has its own file: ``body_codec.py`` (encode/decode and the
``Reader``), ``topic_config.py`` (TopicConfig, DataVersion, TopicConfigSerializeWrapper),
``register_broker_body.py`` (RegisterBrokerBody) and ``route_data.py`` (TopicRouteData, QueueData, BrokerData,
ClusterInfo, TopicList).
"""

from __future__ import annotations

from .body_codec import (
    B,
    Reader,
    decode_body,
    encode_body,
    now_millis,
    topic_route_body_dialect,
)
from .register_broker_body import RegisterBrokerBody, body_crc32
from .route_data import BrokerData, ClusterInfo, QueueData, TopicList, TopicRouteData
from .topic_config import TOPIC_FILTER_TYPES, DataVersion, TopicConfig, TopicConfigSerializeWrapper

__all__ = [
    "B", "BrokerData", "ClusterInfo", "DataVersion", "QueueData", "Reader", "RegisterBrokerBody",
    "TOPIC_FILTER_TYPES", "TopicConfig", "TopicConfigSerializeWrapper", "TopicList", "TopicRouteData", "body_crc32",
    "decode_body", "encode_body", "now_millis", "topic_route_body_dialect",
]
