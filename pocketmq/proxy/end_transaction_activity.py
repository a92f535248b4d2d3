"""EndTransactionActivity and the transaction check-back: END_TRANSACTION to the broker that holds the half
message, and a broker's CHECK_TRANSACTION_STATE relayed to a live producer of the topic as a
RecoverOrphanedTransactionCommand on its Telemetry stream."""

from __future__ import annotations

import logging
from typing import Any

from pocketmq.common.constants import (
    PROPERTY_PRODUCER_GROUP,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from pocketmq.common.java_text import is_blank
from pocketmq.common.message import MessageExt
from pocketmq.remoting.transaction_header import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

from .cluster_service import ClusterService
from .grpc_channel_manager import GrpcChannelManager
from .grpc_validator import validate_topic
from .message_converter import to_grpc_message
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import GrpcProxyException, ok
from .transaction_data_manager import TransactionDataManager

pb = load()
log = logging.getLogger(__name__)

_COMMIT_OR_ROLLBACK = {
    pb.TransactionResolution.COMMIT: TRANSACTION_COMMIT_TYPE,
    pb.TransactionResolution.ROLLBACK: TRANSACTION_ROLLBACK_TYPE,
}


class EndTransactionActivity:
    def __init__(self, cluster: ClusterService, transactions: TransactionDataManager,
                 channels: GrpcChannelManager) -> None:
        self.cluster = cluster
        self.transactions = transactions
        self.channels = channels
        cluster.check_listener = self.check_transaction_state

    async def end_transaction(self, ctx: ProxyContext, request: Any) -> Any:
        validate_topic(request.topic.name)
        if is_blank(request.transaction_id):
            raise GrpcProxyException(pb.Code.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        group = request.topic.name  # the topic is the producer group
        data = self.transactions.poll(group, request.transaction_id)
        if data is None:
            # RocketMQ's TRANSACTION_DATA_NOT_FOUND has no gRPC code of its own: its proxy answers with the Java
            # exception's text as an internal error, and so does this one.
            raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR,
                                     "org.apache.rocketmq.proxy.common.ProxyException: cannot found transaction data")
        header = EndTransactionRequestHeader(
            producer_group=group,
            tran_state_table_offset=data.tran_state_table_offset,
            commit_log_offset=data.commit_log_offset,
            commit_or_rollback=_COMMIT_OR_ROLLBACK.get(request.resolution, TRANSACTION_NOT_TYPE),
            from_transaction_check=request.source == pb.TransactionSource.SOURCE_SERVER_CHECK,
            msg_id=request.message_id,
            transaction_id=request.transaction_id,
        )
        await self.cluster.end_transaction_oneway(data.broker_addr, header)
        return pb.EndTransactionResponse(status=ok())

    def check_transaction_state(self, broker_addr: str, header: CheckTransactionStateRequestHeader,
                                msg: MessageExt) -> None:
        group = msg.properties.get(PROPERTY_PRODUCER_GROUP) or msg.topic
        channel = self.channels.producer_of(group)
        if channel is None:
            log.debug("no live producer of %s for the check of %s", group, header.transaction_id)
            return
        transaction_id = header.transaction_id or msg.uniq_key or msg.offset_msg_id
        self.transactions.add(group, broker_addr, msg.topic, header.tran_state_table_offset,
                              header.commit_log_offset, transaction_id)
        command = pb.TelemetryCommand(recover_orphaned_transaction_command=pb.RecoverOrphanedTransactionCommand(
            message=to_grpc_message(msg), transaction_id=transaction_id))
        channel.write_telemetry_command(command)
