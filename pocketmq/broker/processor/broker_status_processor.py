"""Operator requests of RocketMQ 5's mqadmin about the broker itself, as 5.x's AdminBrokerProcessor answers them:
its HA status (GET_BROKER_HA_STATUS, haStatus).

(Kept apart from admin_ext_processor.py, RocketMQ 4.9.8's statistics and connections.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel

from .base import BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController


class BrokerStatusProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.GET_BROKER_HA_STATUS] = self.get_broker_ha_status

    async def get_broker_ha_status(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """DefaultHAService.getRuntimeInfo of a master (pocketmq has no slaves): the commit log's max offset, no
        connection, the client part at its defaults."""
        body: dict[str, Any] = {
            "haClientRuntimeInfo": {"activated": False, "lastReadTimestamp": 0, "lastWriteTimestamp": 0,
                                    "masterFlushOffset": 0, "maxOffset": 0, "transferredByteInSecond": 0},
            "haConnectionInfo": [],
            "inSyncSlaveNums": 0,
            "master": True,
            "masterCommitLogMaxOffset": self.controller.store.get_max_phy_offset(),
        }
        return response(request, body=request.encode_body(body))
