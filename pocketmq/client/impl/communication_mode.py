"""RocketMQ's CommunicationMode: how a send waits for its answer."""

from __future__ import annotations

import enum


class CommunicationMode(enum.Enum):
    SYNC = "SYNC"
    ASYNC = "ASYNC"
    ONEWAY = "ONEWAY"
