"""NotificationProcessor: NOTIFICATION (200054), "is there something to pop?" answered without popping
(``hasMsg``), held like a pop for its poll time when there is not; and POLLING_INFO (200055), how many pops are
parked for a topic@group@queue."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from pocketmq.common.clock import now_ms
from pocketmq.common.pop_ack_constants import build_pop_retry_topic
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError
from pocketmq.remoting.pop_header import (
    NotificationRequestHeader,
    NotificationResponseHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
)
from pocketmq.remoting.transport import Channel

from ..longpolling.pop_long_polling_service import (
    PollingResult,
    PopLongPollingService,
    all_queues_below_zero,
    poll_deadline,
)
from .base import UNSET_REMARK, BrokerProcessor, log, response
from .pop_answers import with_blank_header
from .pop_request_checks import check_topic_and_group

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

_NO_POLLING = PollingInfoResponseHeader(0)


class NotificationProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.NOTIFICATION] = self.notification
        self.handlers[RequestCode.POLLING_INFO] = self.polling_info
        bc = controller.broker_config
        self.long_polling = PopLongPollingService(self.execute_request_when_wakeup, controller.tasks,
                                                  bc.pop_polling_size, max_polling_size=bc.max_pop_polling_size)

    async def notification(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return self._process(channel, request, None)

    async def execute_request_when_wakeup(self, channel: Channel, request: RemotingCommand, deadline: float) -> None:
        try:
            resp = self._process(channel, request, deadline)
        except (HeaderError, Exception) as e:
            log.exception("re-executing a parked notification failed")
            resp = response(request, ResponseCode.SYSTEM_ERROR, str(e) or type(e).__name__)
        if resp is not None and not request.is_oneway:
            resp.opaque = request.opaque
            channel.send_response(resp)

    def _process(self, channel: Channel, request: RemotingCommand, deadline: float | None) -> RemotingCommand | None:
        header = request.decode_header(NotificationRequestHeader)
        header.queue_id = all_queues_below_zero(header.queue_id)
        tc = check_topic_and_group(self.controller, channel, request, header.topic, header.queue_id,
                                   header.consumer_group)
        if isinstance(tc, RemotingCommand):
            return with_blank_header(tc, NotificationResponseHeader(False))
        has, unblock_at = self.has_msg(header, tc.read_queue_nums)
        if has:
            return response(request, remark=UNSET_REMARK, ext_fields=NotificationResponseHeader(True))
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = poll_deadline(loop, header.born_time, header.poll_time)
        # An orderly queue blocked by a popped batch may answer once the batch's invisible time runs out.
        wake_at = None if unblock_at is None else loop.time() + max(0, unblock_at - now_ms()) / 1000
        polled = self.long_polling.polling(channel, request, header.topic, header.consumer_group, header.queue_id,
                                           deadline, wake_at)
        if polled is PollingResult.POLLING_SUC:
            return None
        return response(request, remark=UNSET_REMARK, ext_fields=NotificationResponseHeader(
            False, polled is PollingResult.POLLING_FULL))

    def has_msg(self, header: NotificationRequestHeader, read_queue_nums: int) -> tuple[bool, int | None]:
        """Whether a pop would find a message now; else when the first blocked orderly queue frees up (ms)."""
        c = self.controller
        pop = c.pop_message_processor
        group = header.consumer_group
        queues = range(read_queue_nums) if header.queue_id < 0 else [header.queue_id]
        targets = [(header.topic, q) for q in queues]
        bc = c.broker_config
        retry_topics = [pop.retry_topic(header.topic, group)]
        if bc.enable_retry_topic_v2 and bc.retrieve_message_from_pop_retry_topic_v1:
            retry_topics.append(build_pop_retry_topic(header.topic, group, False))
        for retry in map(c.topic_config_manager.select_topic_config, retry_topics):
            if retry is not None and not header.order:
                targets += [(retry.topic_name, q) for q in range(retry.read_queue_nums)]
        unblock_at: int | None = None
        orders = c.consumer_order_info_manager
        for topic, queue_id in targets:
            if header.order and orders.check_block(header.attempt_id, topic, group, queue_id):
                free = orders.lock_free_timestamp(topic, group, queue_id)
                if free is not None and (unblock_at is None or free < unblock_at):
                    unblock_at = free
                continue
            newest = c.store.get_max_offset_in_queue(topic, queue_id)
            if newest > pop.offsets.pop_offset(group, topic, queue_id, 1, init=False):
                return True, None
        return False, unblock_at

    async def polling_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(PollingInfoRequestHeader)
        bc = self.controller.broker_config
        if not PermName.is_readable(bc.broker_permission):
            return with_blank_header(response(request, ResponseCode.NO_PERMISSION,
                                              f"the broker[{bc.broker_ip1}] peeking message is forbidden"), _NO_POLLING)
        # (RocketMQ's checks: the topic readable, the queue id, the group there and allowed to consume.)
        pop = self.controller.pop_message_processor
        tc = check_topic_and_group(self.controller, channel, request, header.topic, header.queue_id,
                                   header.consumer_group)
        if isinstance(tc, RemotingCommand):
            return with_blank_header(tc, _NO_POLLING)
        n = pop.long_polling.polling_num(header.topic, header.consumer_group, header.queue_id)
        return response(request, remark=UNSET_REMARK, ext_fields=PollingInfoResponseHeader(n))
