"""The producer's send path, as DefaultMQProducerImpl has it: sendDefaultImpl (a queue per attempt, the retries
within one timeout), sendKernelImpl (the request to the queue's broker) and tryToFindTopicPublishInfo."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from pocketmq.common.util_all import seconds_text
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError

from ..exceptions import ClientErrorCode, MQBrokerException, MQClientException
from ..impl.communication_mode import CommunicationMode
from ..impl.producer.send_request import SendRequestOptions, build_send_request
from ..impl.producer.topic_publish_info import TopicPublishInfo
from ..message import Message, SendResult, SendStatus
from ..message_util import PROPERTY_MESSAGE_TYPE, REPLY_MESSAGE_FLAG
from ..trace.trace_hooks import SendMessageTraceHook
from .fault_strategy import MQFaultStrategy

if TYPE_CHECKING:
    from ..impl.mq_client_instance import MQClientInstance

# (the producer's logger, as before the send path had a module of its own: log settings name it)
log = logging.getLogger("pocketmq.client.producer.producer")

# Reading an Enum member off its class runs Python code in 3.11 (a descriptor call); a send reads these several times.
_SYNC, _ASYNC, _ONEWAY = CommunicationMode.SYNC, CommunicationMode.ASYNC, CommunicationMode.ONEWAY
_SEND_OK = SendStatus.SEND_OK


class ProducerSendImpl:
    """Producer's sends to a queue of its choosing (a mixin: the state is the producer's)."""

    group: str
    create_topic_key: str
    default_topic_queue_nums: int
    compress_over: int
    compress_level: int
    retry_times_when_send_failed: int
    retry_times_when_send_async_failed: int
    retry_another_broker_when_not_store_ok: bool
    retry_response_codes: frozenset[int]
    fault_strategy: MQFaultStrategy
    topic_publish_info_table: dict[str, TopicPublishInfo]
    _options: SendRequestOptions | None
    _send_hook: SendMessageTraceHook | None

    if TYPE_CHECKING:
        @property
        def instance(self) -> MQClientInstance: ...

    async def _send_default_impl(self, msg: Message, mode: CommunicationMode, timeout: float) -> SendResult | None:
        loop = asyncio.get_running_loop()
        begin_first = loop.time()
        info = self.topic_publish_info_table.get(msg.topic)
        if info is None or not info.message_queue_list:
            info = await self._try_to_find_topic_publish_info(msg.topic)
        if not info.ok():
            raise MQClientException(
                f"No route info of this topic: {msg.topic}", response_code=ClientErrorCode.NOT_FOUND_TOPIC_EXCEPTION
            )
        times_total = self._times_total(mode)
        mq: MessageQueue | None = None
        result: SendResult | None = None
        error: BaseException | None = None
        brokers_sent: list[str] = []
        call_timeout = False
        times = 0
        while times < times_total:
            chosen = self.fault_strategy.select_one_message_queue(info, mq.broker_name if mq else None)
            if chosen is None:
                break
            mq = chosen
            times += 1
            brokers_sent.append(mq.broker_name)
            begin = loop.time()
            cost = begin - begin_first
            if timeout < cost:
                call_timeout = True
                break
            try:
                result = await self._send_kernel_impl(msg, mq, mode, timeout - cost)
                self.fault_strategy.update_fault_item(mq.broker_name, loop.time() - begin, False)
                if (
                    mode is _SYNC
                    and result is not None
                    and result.send_status is not _SEND_OK
                    and self.retry_another_broker_when_not_store_ok
                ):
                    continue
                return result
            except (RemotingError, MQClientException, MQBrokerException) as e:
                self.fault_strategy.update_fault_item(mq.broker_name, loop.time() - begin, True)
                if not self._retries(e, mode, mq, times):
                    if result is not None:
                        return result  # an earlier attempt stored it (not SEND_OK): that answer stands
                    raise
                error = e
        if result is not None:
            return result  # stored, but not SEND_OK, on every attempt
        if call_timeout:
            raise RemotingTimeoutError(f"sendDefaultImpl call timeout ({seconds_text(timeout)})") from error
        raise _send_failed(msg, times, int((loop.time() - begin_first) * 1000), brokers_sent, error) from error

    def _times_total(self, mode: CommunicationMode) -> int:
        """How many attempts a send gets: a oneway send has no answer to retry on."""
        if mode is _SYNC:
            return 1 + self.retry_times_when_send_failed
        if mode is _ASYNC:
            return 1 + self.retry_times_when_send_async_failed
        return 1

    def _retries(self, e: Exception, mode: CommunicationMode, mq: MessageQueue, times: int) -> bool:
        """Whether a failed attempt is tried again (on another broker): a network failure always; the client's
        own errors and the broker's retryable refusals only for a sync send (an async one retries network
        failures only)."""
        if isinstance(e, RemotingError):
            log.info("send to %s failed (attempt %d): %s", mq, times, e)
            return True
        if mode is _ASYNC:
            return False
        if isinstance(e, MQBrokerException):
            if e.code not in self.retry_response_codes:
                return False
            log.info("send to %s refused (attempt %d): %s", mq, times, e)
        return True

    def _send_kernel_impl(
        self, msg: Message, mq: MessageQueue, mode: CommunicationMode, timeout: float
    ) -> Coroutine[Any, Any, SendResult | None]:
        """The send's coroutine, to await. With the broker's address known (the common case) it is the API
        call's own coroutine: a frame less to enter and to resume on every send."""
        instance = self.instance
        addr = instance.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            return self._send_kernel_impl_after_route(msg, mq, mode, timeout)
        header, body, uniq_id = build_send_request(msg, mq, self._request_options())
        if mode is _ONEWAY:
            return instance.mq_client_api.send_message_oneway(addr, header, body, timeout)
        if msg.properties.get(PROPERTY_MESSAGE_TYPE) == REPLY_MESSAGE_FLAG:  # a reply (MessageUtil)
            return instance.mq_client_api.send_reply_message(addr, mq.broker_name, header, body, timeout, uniq_id, mq)
        return instance.mq_client_api.send_message(addr, mq.broker_name, header, body, timeout, uniq_id, mq)

    async def _traced_send_kernel_impl(
        self, msg: Message, mq: MessageQueue, mode: CommunicationMode, timeout: float
    ) -> SendResult | None:
        """_send_kernel_impl with the trace hook around it (SendMessageTraceHookImpl): a Pub record a send."""
        hook = self._send_hook
        if hook is None:
            return await ProducerSendImpl._send_kernel_impl(self, msg, mq, mode, timeout)
        ctx = hook.send_message_before(msg, mq, self.instance.find_broker_address_in_publish(mq.broker_name))
        result = await ProducerSendImpl._send_kernel_impl(self, msg, mq, mode, timeout)
        hook.send_message_after(ctx, result)
        return result

    async def _send_kernel_impl_after_route(
        self, msg: Message, mq: MessageQueue, mode: CommunicationMode, timeout: float
    ) -> SendResult | None:
        """_send_kernel_impl for a broker whose address the route cache lacks: refresh the route first."""
        loop = asyncio.get_running_loop()
        begin = loop.time()
        await self._try_to_find_topic_publish_info(mq.topic)
        if self.instance.find_broker_address_in_publish(mq.broker_name) is None:
            raise MQClientException(f"The broker[{mq.broker_name}] not exist")
        cost = loop.time() - begin
        if timeout < cost:
            raise RemotingTimeoutError("sendKernelImpl call timeout")
        # (the class's method: a traced producer's own attribute would trace this send a second time)
        return await ProducerSendImpl._send_kernel_impl(self, msg, mq, mode, timeout - cost)

    def _request_options(self) -> SendRequestOptions:
        """The producer's settings a request carries; rebuilt only when one of them was changed (they are
        plain attributes, RocketMQ's setters)."""
        o = self._options
        if (o is None or o.producer_group is not self.group or o.create_topic_key is not self.create_topic_key
                or o.default_topic_queue_nums != self.default_topic_queue_nums
                or o.compress_over != self.compress_over or o.compress_level != self.compress_level):
            o = self._options = SendRequestOptions(self.group, self.create_topic_key, self.default_topic_queue_nums,
                                                   self.compress_over, self.compress_level)
        return o

    async def _try_to_find_topic_publish_info(self, topic: str) -> TopicPublishInfo:
        """The cached route, else the name server's, else TBW102's (so the broker creates the topic)."""
        info = self.topic_publish_info_table.get(topic)
        if info is None or not info.ok():
            self.topic_publish_info_table.setdefault(topic, TopicPublishInfo())
            await self.instance.update_topic_route_info_from_name_server(topic, unreachable_raises=True)
            info = self.topic_publish_info_table[topic]
        if info.have_topic_router_info or info.ok():
            return info
        await self.instance.update_topic_route_info_from_name_server(
            topic, self.create_topic_key, self.default_topic_queue_nums
        )
        return self.topic_publish_info_table[topic]


def _send_failed(
    msg: Message, times: int, cost_ms: int, brokers_sent: list[str], error: BaseException | None
) -> MQClientException:
    """RocketMQ's "Send [n] times, still failed", with the last attempt's response code for the caller to test:
    the broker's, else sendDefaultImpl's ClientErrorCode for what went wrong."""
    code = -1
    if isinstance(error, MQBrokerException):
        code = error.code
    elif isinstance(error, RemotingConnectError):
        code = ClientErrorCode.CONNECT_BROKER_EXCEPTION
    elif isinstance(error, RemotingTimeoutError):
        code = ClientErrorCode.ACCESS_BROKER_TIMEOUT
    elif isinstance(error, MQClientException):
        code = ClientErrorCode.BROKER_NOT_EXIST_EXCEPTION
    return MQClientException(
        f"Send [{times}] times, still failed, cost [{cost_ms}]ms, Topic: {msg.topic}, "
        f"BrokersSent: {brokers_sent}: {error}",
        response_code=code,
    )
