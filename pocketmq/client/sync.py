"""Blocking wrappers for scripts: SyncProducer, SyncPullConsumer, SyncPushConsumer and SyncSimpleConsumer.

Each runs its client on a private event loop in a daemon thread and waits for every call, so plain code
without asyncio can send and pull:

    with SyncProducer("PG", "127.0.0.1:9876") as producer:
        producer.send(Message("TopicTest", b"hello"))

The loop comes from the current event-loop policy, so it is uvloop's when the application installed that.
Do not call these from inside a running event loop's thread: use Producer / PullConsumer there.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Protocol, Self, TypeVar

from pocketmq.remoting.client_body import MessageQueue

from .consumer.pull_consumer import PullConsumer
from .consumer.push_consumer import PushConsumer
from .consumer.simple_consumer import SimpleConsumer
from .exceptions import MQClientException
from .message import Message, MessageExt, PullResult, SendResult
from .producer.producer import Producer, SendCallback
from .producer.request_future_holder import RequestCallback
from .producer.selector import MessageQueueSelector

T = TypeVar("T")


class _Startable(Protocol):
    async def start(self) -> Any: ...

    async def shutdown(self) -> Any: ...


_C = TypeVar("_C", bound=_Startable)


class _LoopThread:
    """An event loop running forever in a daemon thread; ``run`` submits a coroutine and waits for it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(ready,), name=name, daemon=True)
        self._thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a sync client cannot be called from its own event loop")
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the loop is closed: the client was shut down
            coro.close()  # (never to run: no "coroutine was never awaited" warning)
            if not self.loop.is_closed():
                raise
        raise MQClientException(f"{self._thread.name} was shut down (close()): it cannot be used any more")

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no result within {timeout}s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return

        async def cancel_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(cancel_rest(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


class _StartedClient:
    """A client started on a _LoopThread of its own when the wrapper is made, shut down (loop and thread too) by
    ``close()`` / ``shutdown()`` or at the end of a ``with`` block."""

    _runner: _LoopThread
    _client: Any
    _stopping: threading.Lock

    def _start(self, name: str, make: Callable[[], _C]) -> _C:
        self._stopping = threading.Lock()
        self._runner = _LoopThread(name)
        try:
            client = make()
            self._runner.run(client.start())
        except BaseException:
            self._runner.stop()
            raise
        self._client = client
        return client

    def close(self) -> None:
        with self._stopping:  # (a second caller waits for the first one's close: see SyncPushConsumer.shutdown)
            if self._runner.loop.is_closed():
                return
            try:
                self._runner.run(self._client.shutdown())
            finally:
                self._runner.stop()

    def shutdown(self) -> None:
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncProducer(_StartedClient):
    """A started Producer behind blocking calls; arguments are Producer's."""

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        self.producer = self._start(f"SyncProducer-{group}", lambda: Producer(group, namesrv_addr, **kwargs))

    def send(
        self, msg: Message, queue: MessageQueue | None = None, *, selector: MessageQueueSelector | None = None,
        arg: Any = None, timeout: float | None = None,
    ) -> SendResult:
        return self._runner.run(self.producer.send(msg, queue, selector=selector, arg=arg, timeout=timeout))

    def send_async(
        self, msg: Message, callback: SendCallback | None = None, **kwargs: Any
    ) -> concurrent.futures.Future[SendResult]:
        """A concurrent.futures.Future; ``callback`` runs on the client's thread."""

        async def start() -> SendResult:
            return await self.producer.send_async(msg, callback, **kwargs)

        return self._runner.submit(start())

    def send_oneway(self, msg: Message, queue: MessageQueue | None = None, **kwargs: Any) -> None:
        self._runner.run(self.producer.send_oneway(msg, queue, **kwargs))

    def send_batch(self, msgs: Iterable[Message], queue: MessageQueue | None = None, **kwargs: Any) -> SendResult:
        return self._runner.run(self.producer.send_batch(list(msgs), queue, **kwargs))

    def send_batch_async(
        self, msgs: Iterable[Message], queue: MessageQueue | None = None, **kwargs: Any
    ) -> concurrent.futures.Future[SendResult]:
        """send_batch without waiting: a concurrent.futures.Future of the batch's SendResult."""
        return self._runner.submit(self.producer.send_batch(list(msgs), queue, **kwargs))

    def recall_message(self, topic: str, recall_handle: str, timeout: float | None = None) -> str:
        """Producer.recall_message: cancel a timer message by its SendResult's recall handle."""
        return self._runner.run(self.producer.recall_message(topic, recall_handle, timeout))

    def request(self, msg: Message, timeout: float | None = None, **kwargs: Any) -> MessageExt:
        """Producer.request: send ``msg`` and block until its reply (RequestTimeoutException after ``timeout``)."""
        return self._runner.run(self.producer.request(msg, timeout, **kwargs))

    def request_async(
        self, msg: Message, callback: RequestCallback | None = None, timeout: float | None = None, **kwargs: Any
    ) -> concurrent.futures.Future[MessageExt]:
        """A concurrent.futures.Future of the reply; ``callback`` runs on the client's thread."""

        async def start() -> MessageExt:
            return await self.producer.request_async(msg, callback, timeout, **kwargs)

        return self._runner.submit(start())

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._runner.run(self.producer.fetch_publish_message_queues(topic))

    def query_message(
        self, topic: str, key: str, max_num: int = 32, begin: int = 0, end: int | None = None
    ) -> list[MessageExt]:
        return self._runner.run(self.producer.query_message(topic, key, max_num, begin, end))

    def view_message(self, topic: str, msg_id: str) -> MessageExt | None:
        return self._runner.run(self.producer.view_message(topic, msg_id))



class SyncPullConsumer(_StartedClient):
    """A started PullConsumer behind blocking calls; arguments are PullConsumer's."""

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        self.consumer = self._start(f"SyncPullConsumer-{group}", lambda: PullConsumer(group, namesrv_addr, **kwargs))

    def fetch_subscribe_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._runner.run(self.consumer.fetch_subscribe_message_queues(topic))

    def fetch_topic_list(self) -> list[str]:
        return self._runner.run(self.consumer.fetch_topic_list())

    def pull(self, mq: MessageQueue, sub_expression: str | None, offset: int, max_nums: int = 32, **kwargs: Any
             ) -> PullResult:
        return self._runner.run(self.consumer.pull(mq, sub_expression, offset, max_nums, **kwargs))

    def pull_async(self, mq: MessageQueue, sub_expression: str | None, offset: int, max_nums: int = 32,
                   **kwargs: Any) -> concurrent.futures.Future[PullResult]:
        """pull without waiting: a concurrent.futures.Future of the result, so the next request can be on the
        wire while the caller works on the previous answer."""
        return self._runner.submit(self.consumer.pull(mq, sub_expression, offset, max_nums, **kwargs))

    def pull_blocking(
        self, mq: MessageQueue, sub_expression: str | None, offset: int, max_nums: int = 32,
        timeout: float | None = None, **kwargs: Any,
    ) -> PullResult:
        return self._runner.run(self.consumer.pull_blocking(mq, sub_expression, offset, max_nums, timeout, **kwargs))

    def fetch_consume_offset(self, mq: MessageQueue, from_store: bool = False) -> int:
        return self._runner.run(self.consumer.fetch_consume_offset(mq, from_store))

    def update_consume_offset(self, mq: MessageQueue, offset: int, *, flush: bool = True) -> None:
        self._runner.run(self.consumer.update_consume_offset(mq, offset, flush=flush))

    def persist(self) -> None:
        self._runner.run(self.consumer.persist())

    def seek_by_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self._runner.run(self.consumer.seek_by_timestamp(mq, timestamp_ms))

    def min_offset(self, mq: MessageQueue) -> int:
        return self._runner.run(self.consumer.min_offset(mq))

    def max_offset(self, mq: MessageQueue) -> int:
        return self._runner.run(self.consumer.max_offset(mq))



class SyncPushConsumer:
    """A PushConsumer on a private event loop; arguments are PushConsumer's.

        consumer = SyncPushConsumer("CG", "127.0.0.1:9876")
        consumer.subscribe("TopicTest", "*")
        consumer.register_message_listener(on_messages)  # plain functions run on the consumer's threads
        with consumer:  # start() ... shutdown()
            ...
    """

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        self.consumer = PushConsumer(group, namesrv_addr, **kwargs)
        self._runner: _LoopThread | None = None
        self._stopping = threading.Lock()

    def subscribe(self, topic: str, expression: str | None = "*", expression_type: str = "TAG") -> None:
        self.consumer.subscribe(topic, expression, expression_type)

    def register_message_listener(self, listener: Any) -> None:
        self.consumer.register_message_listener(listener)

    def register_message_listener_orderly(self, listener: Any) -> None:
        self.consumer.register_message_listener_orderly(listener)

    def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the consumer was started already")
        runner = self._runner = _LoopThread(f"SyncPushConsumer-{self.consumer.group}")
        try:
            runner.run(self.consumer.start())
        except BaseException:
            self._runner = None  # start() shut the consumer down again: it may be started once more
            runner.stop()
            raise

    def shutdown(self) -> None:
        """Shut the consumer down; start() may start it again (on a new loop), as PushConsumer.start() can.

        A second caller (a listener stopping its consumer while the main thread leaves its ``with`` block) waits
        for the first one's shutdown and returns: both ran at once, and the first to stop the loop cancelled the
        other's wait."""
        with self._stopping:
            runner = self._runner
            if runner is None or runner.loop.is_closed():
                return
            try:
                runner.run(self.consumer.shutdown())
            finally:
                runner.stop()
                self._runner = None

    close = shutdown

    def __enter__(self) -> SyncPushConsumer:
        if self._runner is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class SyncSimpleConsumer(_StartedClient):
    """A SimpleConsumer behind blocking calls; arguments are SimpleConsumer's. ``*_async`` calls return a
    concurrent.futures.Future at once.

        with SyncSimpleConsumer("CG", "127.0.0.1:9876", subscriptions={"Orders": "*"}) as consumer:
            for msg in consumer.receive(16, invisible_duration=30):
                consumer.ack(msg)
    """

    def __init__(self, group: str, namesrv_addr: str, **kwargs: Any) -> None:
        consumer = SimpleConsumer(group, namesrv_addr, **kwargs)
        self.consumer = self._start(f"SyncSimpleConsumer-{group}", lambda: consumer)

    def subscribe(self, topic: str, expression: str | None = "*", expression_type: str = "TAG") -> None:
        self.consumer.subscribe(topic, expression, expression_type)

    def unsubscribe(self, topic: str) -> None:
        self.consumer.unsubscribe(topic)

    def receive(self, max_message_num: int = 16, invisible_duration: float = 30.0,
                await_duration: float | None = None) -> list[MessageExt]:
        return self._runner.run(self.consumer.receive(max_message_num, invisible_duration, await_duration))

    def receive_async(self, max_message_num: int = 16, invisible_duration: float = 30.0,
                      await_duration: float | None = None) -> concurrent.futures.Future[list[MessageExt]]:
        return self._runner.submit(self.consumer.receive(max_message_num, invisible_duration, await_duration))

    def ack(self, msg: MessageExt) -> None:
        self._runner.run(self.consumer.ack(msg))

    def ack_async(self, msg: MessageExt) -> concurrent.futures.Future[None]:
        return self._runner.submit(self.consumer.ack(msg))

    def ack_batch(self, msgs: list[MessageExt]) -> None:
        self._runner.run(self.consumer.ack_batch(msgs))

    def change_invisible_duration(self, msg: MessageExt, invisible_duration: float) -> str:
        return self._runner.run(self.consumer.change_invisible_duration(msg, invisible_duration))

    def change_invisible_duration_async(self, msg: MessageExt, invisible_duration: float
                                        ) -> concurrent.futures.Future[str]:
        return self._runner.submit(self.consumer.change_invisible_duration(msg, invisible_duration))

