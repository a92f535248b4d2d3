"""Operator requests about the broker itself, as AdminBrokerProcessor answers them: one of its statistics items over
the last minute, hour and day (VIEW_BROKER_STATS_DATA, mqadmin's statsAll), and 5.x's HA status
(GET_BROKER_HA_STATUS, haStatus).

(Kept apart from admin_ext_processor.py, RocketMQ 4.9.8's runtime info, topic and consume stats and connections.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pocketmq.remoting.admin_header import ViewBrokerStatsDataRequestHeader
from pocketmq.remoting.broker_stats_data import BrokerStatsData, BrokerStatsItem
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel

from .base import BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController
    from ..stats import StatsSnapshot


def _item(snapshot: StatsSnapshot) -> BrokerStatsItem:
    return BrokerStatsItem(snapshot.sum, snapshot.tps, snapshot.avgpt)


class BrokerStatusProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.GET_BROKER_HA_STATUS] = self.get_broker_ha_status
        self.handlers[RequestCode.VIEW_BROKER_STATS_DATA] = self.view_broker_stats_data

    async def view_broker_stats_data(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """An item pocketmq does not count (RocketMQ's commercial and disk-read ones, its latencies), or a key not
        counted yet (a topic never sent to), is refused with SYSTEM_ERROR, as RocketMQ refuses both; statsAll
        prints a 0 for it."""
        header = request.decode_header(ViewBrokerStatsDataRequestHeader)
        item = self.controller.broker_stats_manager.get_stats_item(header.stats_name, header.stats_key)
        if item is None:
            return response(request, ResponseCode.SYSTEM_ERROR,
                            f"The stats <{header.stats_name}> <{header.stats_key}> not exist")
        data = BrokerStatsData(_item(item.stats_in_minute()), _item(item.stats_in_hour()), _item(item.stats_in_day()))
        return response(request, body=request.encode_body(data))

    async def get_broker_ha_status(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """DefaultHAService.getRuntimeInfo of a master (pocketmq has no slaves): the commit log's max offset, no
        connection, the client part at its defaults."""
        body: dict[str, Any] = {
            # (5.5.0's fastjson2 writes no "activated" of HAClientRuntimeInfo.isActivated, and no null masterAddr)
            "haClientRuntimeInfo": {"lastReadTimestamp": 0, "lastWriteTimestamp": 0, "masterFlushOffset": 0,
                                    "maxOffset": 0, "transferredByteInSecond": 0},
            "haConnectionInfo": [],
            "inSyncSlaveNums": 0,
            "master": True,
            "masterCommitLogMaxOffset": self.controller.store.get_max_phy_offset(),
        }
        return response(request, body=request.encode_body(body))
