"""pocketmq's name server: brokers register their topics here, clients look up routes."""

from __future__ import annotations

from .config import NamesrvConfig
from .namesrv_controller import NamesrvController
from .processor import DefaultRequestProcessor
from .route_info_manager import BrokerLiveInfo, RegisterBrokerResult, RouteInfoManager

__all__ = [
    "BrokerLiveInfo",
    "DefaultRequestProcessor",
    "NamesrvConfig",
    "NamesrvController",
    "RegisterBrokerResult",
    "RouteInfoManager",
]
