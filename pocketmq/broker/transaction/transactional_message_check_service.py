"""TransactionalMessageCheckService and DefaultTransactionalMessageCheckListener: every
``transactionCheckInterval`` one check pass; a half message found undecided is asked about with a one-way
CHECK_TRANSACTION_STATE to a producer of its group, one checked too often goes to TRANS_CHECK_MAX_TIME_TOPIC."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from pocketmq.common.codec import encode
from pocketmq.common.constants import PROPERTY_PRODUCER_GROUP, PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC
from pocketmq.common.message import MessageExt, properties_to_string
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.transaction_header import CheckTransactionStateRequestHeader
from pocketmq.remoting.transport import Channel

from .transactional_message_service import TransactionalMessageService
from .transactional_message_util import check_max_time_message, host_bytes

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

log = logging.getLogger(__name__)


# Check requests on their way at once (RocketMQ: a pool of 5 threads and a queue of 2,000, the caller running
# what does not fit): beyond this the check waits, so a slow producer cannot make it pile up requests.
MAX_PENDING_CHECKS = 2000
CHECK_SEND_TIMEOUT = 3.0  # seconds a check may wait to be written to its producer's connection


class DefaultTransactionalMessageCheckListener:
    def __init__(self, controller: BrokerController) -> None:
        self.controller = controller
        self._pending = asyncio.Semaphore(MAX_PENDING_CHECKS)

    async def resolve_half_msg(self, msg: MessageExt) -> None:
        """sendCheckMessage, in a task of its own: a producer slow to read must not hold up the check."""
        await self._pending.acquire()
        task = self.controller.tasks.spawn(self._send_and_release(msg), name="check-transaction-state")
        if task is None:  # (the broker is shutting down)
            self._pending.release()

    async def _send_and_release(self, msg: MessageExt) -> None:
        try:
            await self.send_check_message(msg)
        finally:
            self._pending.release()

    async def send_check_message(self, msg: MessageExt) -> None:
        props = msg.properties
        uniq = msg.uniq_key
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=msg.queue_offset,
            commit_log_offset=msg.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=msg.offset_msg_id,
        )
        group = props.get(PROPERTY_PRODUCER_GROUP, "")
        channel = self.controller.producer_manager.get_available_channel(group)
        if channel is None:
            log.warning("cannot check the transaction of %s: no producer of group %r is connected", uniq, group)
            return
        await check_producer_transaction_state(channel, header, msg)

    async def resolve_discard_msg(self, msg: MessageExt) -> None:
        log.error("half message %s was checked too many times: moved to %s", msg.msg_id,
                  RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        c = self.controller
        c.transactional_message_service.bridge.ensure_topic(RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        result = await c.transactional_message_service.bridge.put_message(
            check_max_time_message(msg, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC))
        if not result.is_ok:
            log.error("moving half message %s to %s failed: %s", msg.msg_id, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
                      result.status.value)


async def check_producer_transaction_state(
    channel: Channel, header: CheckTransactionStateRequestHeader, msg: MessageExt
) -> None:
    """Broker2Client.checkProducerTransactionState: the half message, in its real topic and queue, as the body
    (MessageDecoder.encode), over the producer's connection in that connection's codec."""
    props = msg.properties
    body = encode(
        topic=props.get(PROPERTY_REAL_TOPIC, msg.topic),
        body=msg.body,
        properties=properties_to_string(props),
        queue_id=int(props.get(PROPERTY_REAL_QUEUE_ID, msg.queue_id)),
        flag=msg.flag,
        queue_offset=msg.queue_offset,
        physical_offset=msg.commit_log_offset,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=host_bytes(msg.born_host),
        store_timestamp=msg.store_timestamp,
        store_host=host_bytes(msg.store_host),
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
    )
    request = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header, body, oneway=True)
    try:
        # (A producer that stops reading while the question waits to be written is given up on, as RocketMQ's
        # one-way send gives up: the next round asks again, and the pending-check permit is not held for good.)
        await asyncio.wait_for(channel.invoke_oneway(request), CHECK_SEND_TIMEOUT)
    except (RemotingError, TimeoutError) as e:
        log.info("cannot ask %s about transaction %s: %s", channel.remote_address, header.transaction_id,
                 e or "it does not read")


class TransactionalMessageCheckService:
    """The periodic pass (a task of the broker's TaskTracker)."""

    def __init__(self, controller: BrokerController, service: TransactionalMessageService) -> None:
        self.controller = controller
        self.service = service
        self.listener = DefaultTransactionalMessageCheckListener(controller)
        self.rounds = 0
        self._interval_changed = asyncio.Event()

    def start(self) -> None:
        self.controller.tasks.spawn(self._run(), name="transaction-check")

    def interval_changed(self) -> None:
        """UPDATE_BROKER_CONFIG's transactionCheckInterval: the next pass comes the new interval after the last one
        ended (RocketMQ 5 reads the interval before each wait; 4.9.7 only at start)."""
        self._interval_changed.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            self._interval_changed.clear()
            delay = last + self.controller.broker_config.transaction_check_interval - loop.time()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._interval_changed.wait(), delay)
                continue  # (the interval read again: a new one, or the time left of this one)
            try:
                await self.check_once()
            except Exception:
                log.exception("transaction check failed")
            last = loop.time()
            # A pass over no half queue awaits nothing: an interval of 0 (refused by the config checks, but set in
            # process it is not) would run pass after pass and never give the event loop back (nor take SIGTERM).
            await asyncio.sleep(0)

    async def check_once(self) -> None:
        bc = self.controller.broker_config
        log.debug("transaction check, timeout %.3fs, max %d", bc.transaction_timeout, bc.transaction_check_max)
        await self.service.check(round(bc.transaction_timeout * 1000), bc.transaction_check_max, self.listener)
        self.rounds += 1

