"""EndTransactionProcessor: END_TRANSACTION (37), a producer's commit or rollback of a half message.

Commit writes the real message (its topic and queue back from REAL_TOPIC / REAL_QID, TRANSACTION_COMMIT_TYPE,
PREPAREDTRANSACTIONOFFSET = the half's commit-log offset), then the op record; rollback writes the op record
only. An "unknown" answer (TRANSACTION_NOT_TYPE) changes nothing: the check asks again later.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from pocketmq.common.constants import (
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from pocketmq.common.message import MessageExt
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError
from pocketmq.remoting.tasks import run_whole
from pocketmq.remoting.transaction_header import EndTransactionRequestHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.results import PutMessageStatus

from ..transaction.transactional_message_util import real_message
from .base import UNSET_REMARK, BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)
_JAVA_ZERO = re.compile(r"[+-]?0+")

# sendFinalMessage's answers to a refused put (the stored ones all answer SUCCESS).
_REFUSED = {
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (ResponseCode.SYSTEM_ERROR, "Create mapped file failed."),
    PutMessageStatus.MESSAGE_ILLEGAL: (
        ResponseCode.MESSAGE_ILLEGAL,
        "The message is illegal, maybe msg body or properties length not matched. msg body length limit 128k, "
        "msg properties length limit 32k.",
    ),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now."),
    PutMessageStatus.OS_PAGECACHE_BUSY: (ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine"),
}
_REFUSED[PutMessageStatus.PROPERTIES_SIZE_EXCEEDED] = _REFUSED[PutMessageStatus.MESSAGE_ILLEGAL]


def _is_unknown_state(text: object) -> bool:
    """Whether ``text`` is TRANSACTION_NOT_TYPE (0) as Java's Integer.parseInt reads it ("0", "+0", "-00"...)."""
    return isinstance(text, str) and _JAVA_ZERO.fullmatch(text) is not None


class EndTransactionProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.END_TRANSACTION] = self.end_transaction
        self.committed = 0  # observability (tests, stats)
        self.rolled_back = 0

    async def end_transaction(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        try:
            header = request.decode_header(EndTransactionRequestHeader)
        except HeaderError:
            # 4.9.7 reads each field it can (its header decoding logs the others and goes on) and answers an unknown
            # state with nothing before it uses any other field: so does pocketmq, whatever the rest of the header
            if _is_unknown_state((request.ext_fields or {}).get("commitOrRollback")):
                return None
            raise
        state = header.commit_or_rollback
        origin = "the check of" if header.from_transaction_check else "the send of"
        if state == TRANSACTION_NOT_TYPE:
            log.warning("producer %s answered %s transaction %s: still unknown (%s)", channel.remote_address,
                        origin, header.transaction_id, request.remark)
            return None
        if state not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            return response(request, ResponseCode.SYSTEM_ERROR, f"commitOrRollback {state} is neither commit (8) "
                            "nor rollback (12) nor unknown (0)")
        if state == TRANSACTION_ROLLBACK_TYPE or header.from_transaction_check:
            log.info("producer %s %s transaction %s in %s", channel.remote_address,
                     "rolled back" if state == TRANSACTION_ROLLBACK_TYPE else "committed", header.transaction_id,
                     origin)
        service = self.controller.transactional_message_service
        half = await service.lookup_half_message(header.commit_log_offset)
        error = self._check_prepare_message(request, half, header)
        if error is not None:
            log.warning("END_TRANSACTION refused: %s %s", error.remark, header)
            return error
        assert half is not None
        if state == TRANSACTION_COMMIT_TYPE:
            return await run_whole(self._commit(request, half, header))
        await service.delete_prepare_message(half)
        self.rolled_back += 1
        self.controller.broker_stats_manager.metrics.rolled_back(half.properties.get(PROPERTY_REAL_TOPIC, ""))
        # 4.9.7 answers a rollback with checkPrepareMessage's answer, whose remark it never sets
        return response(request, remark=UNSET_REMARK)

    async def _commit(self, request: RemotingCommand, half: MessageExt, header: EndTransactionRequestHeader
                      ) -> RemotingCommand:
        """The real message, then the op record that ends the half one; run whole (a handler cancelled between the
        two, as the server's stop does, would leave the half message to be checked and committed again)."""
        answer = await self._send_final_message(request, half, header)
        if answer.code == ResponseCode.SUCCESS:
            await self.controller.transactional_message_service.delete_prepare_message(half)
            self.committed += 1
            self.controller.broker_stats_manager.metrics.committed(half.properties.get(PROPERTY_REAL_TOPIC, ""))
        return answer

    @staticmethod
    def _check_prepare_message(
        request: RemotingCommand, half: MessageExt | None, header: EndTransactionRequestHeader
    ) -> RemotingCommand | None:
        """checkPrepareMessage: the record at the given offset is this group's half message at the given queue
        offset (pocketmq also checks that it is a half message at all)."""
        if half is None or half.topic != RMQ_SYS_TRANS_HALF_TOPIC:
            return response(request, ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(PROPERTY_PRODUCER_GROUP) != header.producer_group:
            return response(request, ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != header.tran_state_table_offset:
            return response(request, ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commit_log_offset != header.commit_log_offset:
            return response(request, ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        return None

    async def _send_final_message(
        self, request: RemotingCommand, half: MessageExt, header: EndTransactionRequestHeader
    ) -> RemotingCommand:
        try:
            msg = real_message(half, header.commit_log_offset)
        except (KeyError, ValueError) as e:
            return response(request, ResponseCode.SYSTEM_ERROR, f"the half message has no real topic or queue: {e}")
        result = await self.controller.transactional_message_service.bridge.put_message(msg)
        if result.is_ok:
            if result.append_result is not None:
                self.controller.broker_stats_manager.inc_put(msg.topic, 1, result.append_result.wrote_bytes)
            return response(request)
        code, remark = _REFUSED.get(result.status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"))
        return response(request, code, remark)
