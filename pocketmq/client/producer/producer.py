"""Producer: RocketMQ's DefaultMQProducer and DefaultMQProducerImpl in one asyncio class.

    async with Producer("PG", "127.0.0.1:9876") as producer:
        result = await producer.send(Message("TopicTest", b"hello", tags="TagA"))

Sync sends retry (another broker first) on network errors and on the broker codes in
``retry_response_codes``, within one ``send_timeout`` budget; async sends retry network errors only; one-way
sends and sends to a chosen queue (``queue=`` or ``selector=``) are tried once. The send path (sendDefaultImpl,
sendKernelImpl) is in send_impl.py, request-reply in request_reply.py, SendCallback in send_callback.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from pocketmq.common.mix_all import DEFAULT_PRODUCER_GROUP
from pocketmq.common.pop_ack_constants import PROPERTY_SHARDING_KEY
from pocketmq.common.topic_validator import AUTO_CREATE_TOPIC_KEY_TOPIC
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.errors import RemotingTimeoutError

from ..batch import generate_from_list
from ..client_config import ClientConfig
from ..exceptions import MQClientException
from ..impl.communication_mode import CommunicationMode
from ..impl.mq_admin import query_message, query_message_by_id
from ..impl.mq_client_instance import MQClientInstance
from ..impl.mq_client_manager import MQClientManager
from ..impl.producer.recall_message import recall_message
from ..impl.producer.send_request import SendRequestOptions
from ..impl.producer.topic_publish_info import TopicPublishInfo
from ..impl.teardown import Teardown, undo_start
from ..message import Message, MessageExt, SendResult
from ..trace.async_trace_dispatcher import AsyncTraceDispatcher
from ..trace.trace_hooks import SendMessageTraceHook
from ..validators import check_group, check_message
from .fault_strategy import MQFaultStrategy
from .request_reply import ProducerRequestReply
from .selector import MessageQueueSelector, select_message_queue_by_hash
from .send_callback import SendCallback, run_callback
from .send_impl import ProducerSendImpl

DEFAULT_RETRY_RESPONSE_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)


# Reading an Enum member off its class runs Python code in 3.11 (a descriptor call).
_SYNC = CommunicationMode.SYNC


class Producer(ProducerRequestReply, ProducerSendImpl):
    def __init__(
        self,
        group: str,
        namesrv_addr: str,
        *,
        send_timeout: float = 3.0,
        retry_times_when_send_failed: int = 2,
        retry_times_when_send_async_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        retry_response_codes: Iterable[int] = DEFAULT_RETRY_RESPONSE_CODES,
        compress_over: int = 4096,
        compress_level: int = 5,
        max_message_size: int = 4 * 1024 * 1024,
        default_topic_queue_nums: int = 4,
        create_topic_key: str = AUTO_CREATE_TOPIC_KEY_TOPIC,
        send_latency_fault_enable: bool = False,
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
        **client_options: Any,
    ) -> None:
        """``client_options`` are ClientConfig fields: instance_name, client_ip, poll_name_server_interval,
        heartbeat_broker_interval, mq_client_api_timeout, connect_timeout, unit_name, busy_poll, protocol,
        access_key/secret_key, rpc_hook.
        ``enable_msg_trace`` records each send in the trace topic (RMQ_SYS_TRACE_TOPIC or
        ``custom_trace_topic``), as RocketMQ's DefaultMQProducer(group, enableMsgTrace, customizedTraceTopic)."""
        self.group = group
        self.client_config = ClientConfig(namesrv_addr=namesrv_addr, **client_options)
        self.send_timeout = send_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_times_when_send_async_failed = retry_times_when_send_async_failed
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.retry_response_codes = frozenset(retry_response_codes)
        self.compress_over = compress_over
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.default_topic_queue_nums = default_topic_queue_nums
        self.create_topic_key = create_topic_key
        self.fault_strategy = MQFaultStrategy(send_latency_fault_enable)
        self.topic_publish_info_table: dict[str, TopicPublishInfo] = {}
        self._instance: MQClientInstance | None = None
        self._teardown = Teardown(f"producer {group}")
        self._async_sends: set[asyncio.Task[SendResult]] = set()
        self._async_requests: set[asyncio.Task[MessageExt]] = set()
        self._options: SendRequestOptions | None = None
        self.enable_msg_trace = enable_msg_trace
        self.custom_trace_topic = custom_trace_topic
        self.trace_dispatcher: AsyncTraceDispatcher | None = None
        self._send_hook: SendMessageTraceHook | None = None

    # --- lifecycle -----------------------------------------------------------------------------------------

    @property
    def client_id(self) -> str:
        return self.client_config.build_mq_client_id()

    @property
    def instance(self) -> MQClientInstance:
        return self.make_sure_state_ok()

    def make_sure_state_ok(self) -> MQClientInstance:
        if self._instance is None:
            raise MQClientException("The producer service state not OK, maybe started once or not started yet")
        return self._instance

    async def start(self) -> None:
        await self._teardown.wait()  # (a shutdown whose caller was cancelled may still be under way)
        if self._instance is not None:
            raise MQClientException("The producer service state not OK, maybe started once")
        check_group(self.group)
        if self.group == DEFAULT_PRODUCER_GROUP:
            raise MQClientException(
                f"producerGroup can not equal {DEFAULT_PRODUCER_GROUP}, please specify another one."
            )
        self.client_config.change_instance_name_to_pid()  # (DefaultMQProducerImpl.start)
        # Routes learned before a shutdown name brokers whose addresses went with the old instance: a restarted
        # producer's new instance found a route here, no address for its broker, and failed its first sends.
        self.topic_publish_info_table.clear()
        # TBW102's (the createTopicKey's) route, kept by the periodic refresh, names every broker that may create
        # a topic: they all get this producer's heartbeats (a requester's reply may come through any of them, and a
        # transaction's check from any that holds a half message), as DefaultMQProducerImpl.start arranges.
        self.topic_publish_info_table.setdefault(self.create_topic_key, TopicPublishInfo())
        instance = MQClientManager.get_instance().get_or_create_mq_client_instance(self.client_config)
        instance.register_producer(self.group, self)
        self._instance = instance
        try:
            await self._start_services(instance)
        except BaseException as e:  # (failed or cancelled: nothing of it goes on; it may be started again)
            await undo_start(e, self._begin_shutdown, self._teardown)
            raise

    async def _start_services(self, instance: MQClientInstance) -> None:  # (start() once registered)
        await instance.start()
        await instance.send_heartbeat_to_all_brokers()
        if self.enable_msg_trace:
            await self._start_trace()

    async def _start_trace(self) -> None:
        dispatcher = AsyncTraceDispatcher(self.group, self.client_config, self.custom_trace_topic)
        await dispatcher.start()
        self.trace_dispatcher = dispatcher
        self._send_hook = SendMessageTraceHook(dispatcher, self.group)
        # Only a traced producer pays for the hook: its instance attribute shadows the class's method.
        self._send_kernel_impl = self._traced_send_kernel_impl  # type: ignore[method-assign]

    async def shutdown(self) -> None:
        """Let async sends in flight finish, unregister the group from the brokers, release the instance; in a task
        of its own (impl/teardown.py): a cancelled caller does not stop it half-way, a second call waits for it."""
        self._begin_shutdown()
        await self._teardown.wait()

    def _begin_shutdown(self) -> None:
        if not self._teardown.active and self._instance is not None:
            self._teardown.begin(self._do_shutdown(self._instance))

    async def _do_shutdown(self, instance: MQClientInstance) -> None:
        if self._async_sends:
            await asyncio.wait(list(self._async_sends))
        for task in list(self._async_requests):
            task.cancel()  # no reply can reach a client that is going away
        if self._async_requests:
            await asyncio.wait(list(self._async_requests))
        if self.trace_dispatcher is not None:
            dispatcher, self.trace_dispatcher = self.trace_dispatcher, None
            await dispatcher.shutdown()  # sends the records still queued
            del self._send_kernel_impl
            self._send_hook = None
        self._instance = None
        await instance.unregister_producer(self.group)
        await instance.shutdown()

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # --- sending -------------------------------------------------------------------------------------------

    async def send(
        self,
        msg: Message,
        queue: MessageQueue | None = None,
        *,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send and wait for the broker's answer. ``queue`` or ``selector(mqs, msg, arg)`` pins the queue."""
        if queue is None and selector is None:  # the common case, one coroutine less than through _send
            group = msg.properties.get(PROPERTY_SHARDING_KEY)
            if group is not None:  # a message group's messages go to one queue, in order
                by_group = select_message_queue_by_hash
                return await self._send(msg, _SYNC, None, by_group, group, timeout)  # type: ignore[return-value]
            return await self._send_default_impl(msg, _SYNC, self._checked(msg, timeout))  # type: ignore[return-value]
        return await self._send(msg, _SYNC, queue, selector, arg, timeout)  # type: ignore[return-value]

    def send_async(
        self,
        msg: Message,
        callback: SendCallback | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> asyncio.Task[SendResult]:
        """Start a send and return at once. Await the task, or pass a callback with ``on_success(result)`` /
        ``on_exception(exc)`` (plain or async), called on the event loop. Retries network failures only."""
        self.make_sure_state_ok()  # fail now, not inside the task
        task: asyncio.Task[SendResult] = asyncio.get_running_loop().create_task(
            self._send(msg, CommunicationMode.ASYNC, queue, selector, arg, timeout)  # type: ignore[arg-type]
        )
        self._async_sends.add(task)
        task.add_done_callback(self._async_sends.discard)
        if callback is not None:
            task.add_done_callback(lambda t: run_callback(callback, t))
        return task

    async def send_oneway(
        self, msg: Message, queue: MessageQueue | None = None, *, selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> None:
        """Send without waiting for an answer: one attempt, no result, no retry."""
        await self._send(msg, CommunicationMode.ONEWAY, queue, selector, arg, None)

    async def send_batch(
        self, msgs: Iterable[Message], queue: MessageQueue | None = None, *, timeout: float | None = None
    ) -> SendResult:
        """Send messages of one topic as one request, stored atomically with consecutive offsets."""
        batch = generate_from_list(msgs, self.max_message_size)
        return await self.send(batch, queue, timeout=timeout)

    async def recall_message(self, topic: str, recall_handle: str, timeout: float | None = None) -> str:
        """Cancel a timer message before it is due, by the ``recall_handle`` of its SendResult (RocketMQ 5); the
        message's id. MQBrokerException when the broker refuses (ILLEGAL_OPERATION once it is due)."""
        return await recall_message(self, topic, recall_handle, self.send_timeout if timeout is None else timeout)

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        info = await self._try_to_find_topic_publish_info(topic)
        return list(info.message_queue_list)

    async def query_message(
        self, topic: str, key: str, max_num: int = 32, begin: int = 0, end: int | None = None
    ) -> list[MessageExt]:
        """Stored messages of ``topic`` with ``key`` among their KEYS, through the brokers' index (queryMessage)."""
        return await query_message(self.instance, topic, key, max_num, begin, end)

    async def view_message(self, topic: str, msg_id: str) -> MessageExt | None:
        """A stored message of ``topic`` by the id its send returned (UNIQ_KEY) or by its offsetMsgId
        (MQAdmin.viewMessage(topic, msgId)); None when not found."""
        return await query_message_by_id(self.instance, topic, msg_id)

    async def _send(
        self,
        msg: Message,
        mode: CommunicationMode,
        queue: MessageQueue | None,
        selector: MessageQueueSelector | None,
        arg: Any,
        timeout: float | None,
    ) -> SendResult | None:
        timeout = self._checked(msg, timeout)
        if queue is not None and selector is not None:
            raise MQClientException("pass either queue or selector, not both")
        if queue is None and selector is None:
            return await self._send_default_impl(msg, mode, timeout)
        loop = asyncio.get_running_loop()
        begin = loop.time()
        if queue is not None:
            if msg.topic != queue.topic:
                raise MQClientException("message's topic not equal mq's topic")
        else:
            info = await self._try_to_find_topic_publish_info(msg.topic)
            if not info.ok():
                raise MQClientException(f"No route info for this topic, {msg.topic}")
            queue = selector(list(info.message_queue_list), msg, arg)  # type: ignore[misc]
            if queue is None:
                raise MQClientException("select message queue return null.")
        cost = loop.time() - begin
        if timeout < cost:
            raise RemotingTimeoutError("sendSelectImpl call timeout")
        return await self._send_kernel_impl(msg, queue, mode, timeout - cost)

    def _checked(self, msg: Message, timeout: float | None) -> float:
        """The checks every send starts with (started, message valid); the timeout it gets."""
        self.make_sure_state_ok()
        check_message(msg, self.max_message_size)
        return self.send_timeout if timeout is None else timeout

    # --- ProducerInner (called by MQClientInstance) --------------------------------------------------------

    def publish_topics(self) -> list[str]:
        return list(self.topic_publish_info_table)

    def is_publish_topic_need_update(self, topic: str) -> bool:
        info = self.topic_publish_info_table.get(topic)
        return info is not None and not info.ok()

    def update_topic_publish_info(self, topic: str, info: TopicPublishInfo) -> None:
        if topic in self.topic_publish_info_table:
            self.topic_publish_info_table[topic] = info
