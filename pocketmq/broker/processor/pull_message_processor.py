"""PullMessageProcessor: PULL_MESSAGE (11) and 5.x's LITE_PULL_MESSAGE (361), with tag and SQL92 filtering,
piggybacked offset commits and long polling."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any

from pocketmq.common import topic_validator as tv
from pocketmq.common.bounded_cache import BoundedCache
from pocketmq.common.message import MessageExtBrokerInner
from pocketmq.common.pull_sys_flag import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from pocketmq.remoting.client_body import SubscriptionData
from pocketmq.remoting.codes import MASTER_ID, PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError
from pocketmq.remoting.header import PullMessageRequestHeader, PullMessageResponseHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import MessageFilter
from pocketmq.storage.results import GetMessageResult, GetMessageStatus

from ..filter import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    SubscriptionParseError,
    build_subscription_data,
    message_filter_for,
)
from ..longpolling.pull_request import PullRequest
from .abstract_send_message_processor import FAQ as _FAQ
from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

# GetMessageStatus -> response code (PullMessageProcessor.processRequest, RocketMQ 4.9.8). The two "empty
# queue" statuses depend on the requested offset and are handled in code.
_STATUS_CODE = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_RESET: ResponseCode.PULL_OFFSET_MOVED,  # (RocketMQ 5's)
}
_EMPTY_QUEUE = (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE)


def _tag_filter(expression: str | None) -> MessageFilter:
    return message_filter_for(build_subscription_data("", expression, EXPRESSION_TYPE_TAG))


def pull_response_code(status: GetMessageStatus, requested_offset: int) -> ResponseCode:
    if status in _EMPTY_QUEUE:
        return ResponseCode.PULL_OFFSET_MOVED if requested_offset != 0 else ResponseCode.PULL_NOT_FOUND
    return _STATUS_CODE[status]


class PullMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        # Answered as it is read: a pull of what is in memory, or one that parks, needs no task.
        self.inline_handlers[RequestCode.PULL_MESSAGE] = self.pull_message
        # RocketMQ 5.x's lite pull consumer sends the same header under its own code (its broker only runs those
        # on a separate executor); a 4.9.8 broker answers REQUEST_CODE_NOT_SUPPORTED.
        self.inline_handlers[RequestCode.LITE_PULL_MESSAGE] = self.pull_message
        # The filter a TAG subscription posted with the pull gives (a pull consumer posts its own on every
        # pull) depends on the expression alone: parsed once.
        self._posted_tag_filters: BoundedCache[str | None, MessageFilter] = BoundedCache(
            _tag_filter, 1024, max_key_len=4096)

    def pull_message(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Awaitable[RemotingCommand | None] | None:
        return self._process(channel, request, broker_allow_suspend=True)

    def execute_request_when_wakeup(
        self, channel: Channel, request: RemotingCommand
    ) -> Coroutine[Any, Any, bool] | None:
        """Re-run a parked pull (no further suspension) and write its response to the channel, now: None. Only
        when the store read has to wait (a pull thread) is the answer left to the returned coroutine, which
        returns False, unanswered, if the channel's writes paused meanwhile (PullRequestHoldService defers it):
        the read is then dropped before its answer is made, so neither the get stats nor the pull offset count
        it (the pull reads again once the peer took what it was given)."""
        try:
            resp = self._process(channel, request, broker_allow_suspend=False)
        except Exception as e:
            resp = self._wakeup_failed(request, e)
        if resp is not None and not isinstance(resp, RemotingCommand):
            return self._answer_wakeup_when_read(channel, request, resp)
        self._send_wakeup_answer(channel, request, resp)
        return None

    async def _answer_wakeup_when_read(
        self, channel: Channel, request: RemotingCommand, reading: Awaitable[RemotingCommand | None]
    ) -> bool:
        try:
            resp = await reading
        except Exception as e:
            resp = self._wakeup_failed(request, e)
        if resp is None:  # (a wake-up never parks: _answer_when_read dropped the read, the writes paused)
            return False
        self._send_wakeup_answer(channel, request, resp)
        return True

    @staticmethod
    def _wakeup_failed(request: RemotingCommand, e: Exception) -> RemotingCommand:
        if isinstance(e, HeaderError):  # cannot happen for a request that was parked, but never leave it hanging
            return response(request, ResponseCode.SYSTEM_ERROR, f"bad request: {e}")
        log.exception("re-executing a parked pull failed")
        return response(request, ResponseCode.SYSTEM_ERROR, str(e) or type(e).__name__)

    @staticmethod
    def _send_wakeup_answer(channel: Channel, request: RemotingCommand, resp: RemotingCommand | None) -> None:
        if resp is not None and not request.is_oneway:
            resp.opaque = request.opaque
            if channel.send_response(resp):
                channel.flush()  # outside a read nothing else writes it before the loop's next turn

    def _process(
        self, channel: Channel, request: RemotingCommand, broker_allow_suspend: bool
    ) -> RemotingCommand | Awaitable[RemotingCommand | None] | None:
        """The checks, the filter and the store read: the response (None: parked), or an awaitable of it when
        the read runs on a pull thread."""
        c = self.controller
        bc = c.broker_config
        header = request.decode_header(PullMessageRequestHeader)
        group, topic, queue_id = header.consumer_group, header.topic, header.queue_id
        if not PermName.is_readable(bc.broker_permission):
            return response(
                request, ResponseCode.NO_PERMISSION, f"the broker[{bc.broker_ip1}] pulling message is forbidden"
            )
        sgc = c.subscription_group_manager.find_subscription_group_config(group)
        if sgc is None:
            return response(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist, {_FAQ}",
            )
        if not sgc.consume_enable:
            return response(request, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        has_subscription = bool(header.sys_flag & FLAG_SUBSCRIPTION)
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return response(
                request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {_FAQ}"
            )
        if not PermName.is_readable(tc.perm):
            return response(request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            return response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}] "
                f"consumer:[/{channel.remote_address}]",
            )
        message_filter: MessageFilter | RemotingCommand
        if has_subscription and (header.expression_type or EXPRESSION_TYPE_TAG) == EXPRESSION_TYPE_TAG:
            message_filter = self._posted_tag_filter(request, header.subscription)
            if isinstance(message_filter, RemotingCommand):
                return message_filter
        else:
            sub_or_error = self._subscription(request, header, has_subscription, sgc.consume_broadcast_enable)
            if isinstance(sub_or_error, RemotingCommand):
                return sub_or_error
            message_filter = self._message_filter(request, sub_or_error)
            if isinstance(message_filter, RemotingCommand):
                return message_filter
        reset = self._pending_reset(header)
        if header.max_msg_nums <= 0 and (refusal := self._few_messages(request, header, reset is None)):
            return refusal
        result = reset if reset is not None else c.get_message(
            group, topic, queue_id, header.queue_offset, header.max_msg_nums, message_filter
        )
        if isinstance(result, GetMessageResult):
            return self._answer(channel, request, header, broker_allow_suspend, message_filter, result)
        return self._answer_when_read(channel, request, header, broker_allow_suspend, message_filter, result)

    def _few_messages(self, request: RemotingCommand, header: PullMessageRequestHeader,
                      reads: bool) -> RemotingCommand | None:
        if reads and header.max_msg_nums < 0 and self._offset_inside(header):
            # 4.9.7's store sizes its result list by maxMsgNums once the offset is inside the queue, before it
            # reads: ArrayList's IllegalArgumentException, answered SYSTEM_ERROR, and no commit made
            return response(request, ResponseCode.SYSTEM_ERROR,
                            f"Illegal Capacity: {header.max_msg_nums}, maxMsgNums must not be negative")
        # RocketMQ's broker reads one message then (its batch is never full before the first): the Go client's
        # pull consumer sends 0 unless given a batch size, and gets its messages one by one.
        header.max_msg_nums = 1
        return None

    def _offset_inside(self, header: PullMessageRequestHeader) -> bool:
        """Whether 4.9.7's store would read the queue at the pull's offset (an empty queue it never reads)."""
        store = self.controller.store
        topic, queue_id = header.topic, header.queue_id
        max_offset = store.get_max_offset_in_queue(topic, queue_id)
        return max_offset != 0 and store.get_min_offset_in_queue(topic, queue_id) <= header.queue_offset < max_offset

    def _pending_reset(self, header: PullMessageRequestHeader) -> GetMessageResult | None:
        """The group's first pull of a queue an admin reset by itself (RocketMQ 5's OFFSET_RESET): the consumer is
        sent to the new offset (PULL_OFFSET_MOVED), unless it pulls from there already (it took the reset pushed to
        it), and the group's commits of the queue count again."""
        c = self.controller
        com = c.consumer_offset_manager
        if not com.reset_offset_table:
            return None  # (nearly always: no key built on the pull path)
        topic, queue_id = header.topic, header.queue_id
        offset = com.query_then_erase_reset_offset(topic, header.consumer_group, queue_id)
        if offset is None or offset == header.queue_offset:
            return None
        store = c.store
        return GetMessageResult(GetMessageStatus.OFFSET_RESET, offset, store.get_min_offset_in_queue(topic, queue_id),
                                store.get_max_offset_in_queue(topic, queue_id))

    async def _answer_when_read(
        self,
        channel: Channel,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        broker_allow_suspend: bool,
        message_filter: MessageFilter,
        reading: Awaitable[GetMessageResult],
    ) -> RemotingCommand | None:
        result = await reading
        if not broker_allow_suspend and (channel.write_paused or channel.closed):
            # A wake-up whose connection paused while the pull thread read: no answer is made (None), and so no
            # bookkeeping of one that is not sent; the hold service runs the pull again once the peer drained.
            return None
        return self._answer(channel, request, header, broker_allow_suspend, message_filter, result)

    def _answer(
        self,
        channel: Channel,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        broker_allow_suspend: bool,
        message_filter: MessageFilter,
        result: GetMessageResult,
    ) -> RemotingCommand | None:
        """The response to what the store read (None: the pull parks), and the offset commit it carried."""
        c = self.controller
        group, topic, queue_id = header.consumer_group, header.topic, header.queue_id
        code = pull_response_code(result.status, header.queue_offset)
        resp_header = PullMessageResponseHeader(
            # No slaves: always suggest the master.
            suggest_which_broker_id=MASTER_ID,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        )
        resp: RemotingCommand | None
        c.broker_stats_manager.inc_get_times(code == ResponseCode.SUCCESS)
        if code == ResponseCode.SUCCESS:
            resp = response(request, code, ext_fields=resp_header, body=result.body)
            c.broker_stats_manager.inc_get(group, topic, result.message_count, result.buffer_total_size)
            c.broker_stats_manager.metrics.pulled(group, topic, result.message_count, result.buffer_total_size)
        elif (code == ResponseCode.PULL_NOT_FOUND and broker_allow_suspend and header.sys_flag & FLAG_SUSPEND
              and self._suspend(channel, request, header, message_filter)):
            resp = None
        else:
            resp = response(request, code, ext_fields=resp_header)
            if code == ResponseCode.PULL_OFFSET_MOVED:
                log.info(
                    "pull offset moved: %s@%s queue %d requested %d, next %d (status %s)",
                    topic,
                    group,
                    queue_id,
                    header.queue_offset,
                    result.next_begin_offset,
                    result.status.value,
                )
                self._generate_offset_moved_event(group, topic, queue_id, header.queue_offset, result.next_begin_offset)
        # (every answer, a parked pull's and a wake-up replay's too, as RocketMQ's tryCommitOffset)
        c.consumer_offset_manager.commit_pull_offset(group, topic, queue_id, result.next_begin_offset)
        # A wake-up replay does not commit again: the offset came with the original request.
        if broker_allow_suspend and header.sys_flag & FLAG_COMMIT_OFFSET:
            c.consumer_offset_manager.commit_offset(
                channel.remote_address, group, topic, queue_id, header.commit_offset
            )
        return resp

    def _posted_tag_filter(self, request: RemotingCommand, expression: str | None) -> MessageFilter | RemotingCommand:
        """What _subscription and _message_filter make of a posted TAG subscription, found or computed (they
        check nothing else for one)."""
        try:
            return self._posted_tag_filters[expression]
        except SubscriptionParseError as e:  # "||": FilterAPI's "subString split error"
            return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                            f"parse the consumer's subscription failed: {e}")

    def _subscription(
        self,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        has_subscription: bool,
        consume_broadcast_enable: bool,
    ) -> SubscriptionData | RemotingCommand:
        """The subscription to filter by: the request's own (FLAG_SUBSCRIPTION) or the one the heartbeat
        registered for this group and topic."""
        if has_subscription:
            if (header.expression_type or EXPRESSION_TYPE_TAG) not in (EXPRESSION_TYPE_TAG, EXPRESSION_TYPE_SQL92):
                return response(
                    request,
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                    f"parse the consumer's subscription[{header.subscription}] failed, "
                    f"expression type {header.expression_type!r}",
                )
            if header.expression_type == EXPRESSION_TYPE_SQL92:
                if not header.subscription:
                    # FilterAPI.build's "Expression can't be null!", which 4.9.7 answers with its parse failure's
                    # remark, before it looks at enablePropertyFilter
                    return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                                    "parse the consumer's subscription failed: Expression can't be null! SQL92")
                # Compiled by _message_filter, after the enablePropertyFilter check.
                return SubscriptionData(
                    header.topic, header.subscription or "", [], [], header.sub_version, EXPRESSION_TYPE_SQL92
                )
            return build_subscription_data(header.topic, header.subscription, EXPRESSION_TYPE_TAG, header.sub_version)
        group_info = self.controller.consumer_manager.get_consumer_group_info(header.consumer_group)
        if group_info is None:
            return response(request, ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist" + _FAQ)
        if not consume_broadcast_enable and group_info.message_model == "BROADCASTING":
            return response(
                request,
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{header.consumer_group}] can not consume by broadcast way",
            )
        sub = group_info.find_subscription_data(header.topic)
        if sub is None:
            return response(request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                            "the consumer's subscription not exist" + _FAQ)
        if sub.sub_version < header.sub_version:
            return response(request, ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        return sub

    def _message_filter(self, request: RemotingCommand, sub: SubscriptionData) -> MessageFilter | RemotingCommand:
        """TAG: the hash-code filter. SQL92: refused unless enablePropertyFilter (RocketMQ's SYSTEM_ERROR), then
        compiled (cached per expression); a malformed expression answers SUBSCRIPTION_PARSE_FAILED."""
        if sub.expression_type not in (EXPRESSION_TYPE_TAG, EXPRESSION_TYPE_SQL92) or (
            sub.expression_type == EXPRESSION_TYPE_SQL92 and not self.controller.broker_config.enable_property_filter
        ):
            return response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )
        try:
            return message_filter_for(sub)
        except SubscriptionParseError as e:
            log.info("refused a SQL92 subscription to %s: %s", sub.topic, e)
            return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(e))

    def _suspend(
        self,
        channel: Channel,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        message_filter: MessageFilter,
    ) -> bool:
        bc = self.controller.broker_config
        timeout_millis = (
            header.suspend_timeout_millis if bc.long_polling_enable else round(bc.short_polling_time * 1000)
        )
        hold = self.controller.pull_request_hold_service
        pull_request = PullRequest(
            request=request,
            channel=channel,
            timeout_millis=max(0, timeout_millis),
            suspend_timestamp=asyncio.get_running_loop().time(),  # the clock of the timeout timers
            pull_from_offset=header.queue_offset,
            message_filter=message_filter,
        )
        return hold.suspend_pull_request(header.topic, header.queue_id, pull_request)

    def _generate_offset_moved_event(
        self, group: str, topic: str, queue_id: int, offset_request: int, offset_new: int
    ) -> None:
        """Record the correction in OFFSET_MOVED_EVENT, as a master does (body: OffsetMovedEvent JSON)."""
        c = self.controller
        event = {
            "consumerGroup": group,
            "messageQueue": {"topic": topic, "brokerName": c.broker_config.broker_name, "queueId": queue_id},
            "offsetRequest": offset_request,
            "offsetNew": offset_new,
        }
        msg = MessageExtBrokerInner(
            topic=tv.RMQ_SYS_OFFSET_MOVED_EVENT,
            body=json.dumps(event, separators=(",", ":")).encode(),
            properties={"TAGS": group, "KEYS": group},
            queue_id=0,
            born_timestamp=time.time_ns() // 1_000_000,
            born_host=c.store_host,
            store_host=c.store_host,
        )
        try:
            c.store.put_message_nowait(msg)  # best effort, not awaited: the pull response does not depend on it
        except Exception:
            log.exception("cannot write the offset-moved event")
