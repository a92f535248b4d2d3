"""The producer's request-reply (DefaultMQProducerImpl.request): a message marked with a correlation id, sent,
and answered by the reply the broker pushes to this client."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.errors import RemotingError

from ..exceptions import MQBrokerException, MQClientException, RequestTimeoutException
from ..impl.communication_mode import CommunicationMode
from ..impl.mq_client_instance import MQClientInstance
from ..impl.producer.topic_publish_info import TopicPublishInfo
from ..message import Message, MessageExt, SendResult
from ..message_util import (
    PROPERTY_CORRELATION_ID,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
)
from .request_future_holder import RequestCallback
from .selector import MessageQueueSelector
from .send_callback import run_callback

_ASYNC = CommunicationMode.ASYNC


class ProducerRequestReply:
    """Producer's request and request_async (a mixin: the state is the producer's)."""

    send_timeout: float
    create_topic_key: str
    _async_requests: set[asyncio.Task[MessageExt]]

    if TYPE_CHECKING:
        @property
        def instance(self) -> MQClientInstance: ...

        def make_sure_state_ok(self) -> MQClientInstance: ...

        async def _send(
            self,
            msg: Message,
            mode: CommunicationMode,
            queue: MessageQueue | None,
            selector: MessageQueueSelector | None,
            arg: Any,
            timeout: float | None,
        ) -> SendResult | None: ...

        async def _try_to_find_topic_publish_info(self, topic: str) -> TopicPublishInfo: ...

    # --- request-reply -------------------------------------------------------------------------------------

    async def request(
        self,
        msg: Message,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> MessageExt:
        """Send ``msg`` as a request and wait for its reply (RocketMQ's DefaultMQProducer.request).

        The message gets CORRELATION_ID, REPLY_TO_CLIENT (this client's id) and TTL; a consumer answers with
        ``MessageUtil.create_reply_message(msg, body)`` sent by any producer, and the broker pushes the reply
        here. RequestTimeoutException when no reply comes within ``timeout`` (default ``send_timeout``)
        seconds; MQClientException when the request could not be sent."""
        self.make_sure_state_ok()
        timeout = self.send_timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        begin = loop.time()
        correlation_id = await self._prepare_send_request(msg, timeout)
        holder = self.instance.request_future_holder
        future = holder.add(correlation_id)
        try:
            remaining = timeout - (loop.time() - begin)
            try:
                # ASYNC: like RocketMQ's request, retried on network failures only.
                await self._send(msg, _ASYNC, queue, selector, arg, max(remaining, 0.001))
            except (MQClientException, MQBrokerException, RemotingError) as e:
                raise MQClientException(f"send request message to <{msg.topic}> fail: {e}") from e
            remaining = timeout - (loop.time() - begin)
            try:
                async with asyncio.timeout(max(remaining, 0)):  # not wait_for: it can swallow a cancellation
                    return await future
            except TimeoutError:
                raise RequestTimeoutException(
                    f"send request message to <{msg.topic}> OK, but wait reply message timeout, "
                    f"{int(timeout * 1000)}ms"
                ) from None
        finally:
            holder.remove(correlation_id)

    def request_async(
        self,
        msg: Message,
        callback: RequestCallback | None = None,
        timeout: float | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> asyncio.Task[MessageExt]:
        """``request`` started at once: await the task, or pass a RequestCallback (``on_success(reply)`` /
        ``on_exception(exc)``, called on the event loop; ``async def`` ones run as tasks of their own). Requests
        still waiting at shutdown are cancelled."""
        self.make_sure_state_ok()
        task = asyncio.get_running_loop().create_task(
            self.request(msg, timeout, queue=queue, selector=selector, arg=arg)
        )
        self._async_requests.add(task)
        task.add_done_callback(self._async_requests.discard)
        if callback is not None:
            task.add_done_callback(lambda t: run_callback(callback, t))
        return task

    async def _prepare_send_request(self, msg: Message, timeout: float) -> str:
        """prepareSendRequest: mark ``msg`` as a request of this client; make sure the brokers know this client
        (they push the reply to it by id) before the request reaches them."""
        correlation_id = str(uuid.uuid4())
        msg.put_property(PROPERTY_CORRELATION_ID, correlation_id)
        msg.put_property(PROPERTY_MESSAGE_REPLY_TO_CLIENT, self.instance.client_id)
        msg.put_property(PROPERTY_MESSAGE_TTL, str(int(timeout * 1000)))
        if msg.topic not in self.instance.topic_route_table:
            await self._try_to_find_topic_publish_info(msg.topic)
            # Every broker must know this client: the reply topic has a queue on each, and a broker that does not
            # know it cannot push the reply (the replier gets "channel of ... not found"). They are TBW102's, whose
            # route the periodic refresh may not have fetched yet this soon after the start.
            if self.create_topic_key not in self.instance.topic_route_table:
                await self.instance.update_topic_route_info_from_name_server(self.create_topic_key)
            await self.instance.send_heartbeat_to_all_brokers()
        return correlation_id
