"""AsyncTraceDispatcher: trace records queued by the hooks, batched into trace messages and sent by a producer
of the client's own (group ``_INNER_TRACE_PRODUCER-<group>``) to the trace topic.

As RocketMQ's: a bounded queue (a record that finds it full is dropped and counted, never blocks a send or a
listener), batches of up to ``batch_size`` records gathered for up to ``flush_interval``, each trace message's
body at most ``max_msg_size`` bytes, its KEYS the message ids (and message keys) it holds so that a query by
message id finds it. ``flush()`` sends what is queued; shutting down flushes first.

Unlike RocketMQ's, a trace message also ends where its KEYS would pass ``KEYS_BUDGET``: the broker refuses a
message whose properties pass 32,767 bytes, and forty batch sends of 32 in one window (each record keyed by its
batch's joined ids, 1 KB) were enough to lose every record of the window.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from pocketmq.common.topic_validator import RMQ_SYS_TRACE_TOPIC
from pocketmq.remoting.errors import RemotingError

from ..exceptions import MQBrokerException, MQClientException
from ..message import Message
from .trace_constants import GROUP_NAME_PREFIX
from .trace_context import TraceContext
from .trace_data_encoder import encoder_from_context_bean

if TYPE_CHECKING:
    from ..client_config import ClientConfig
    from ..producer.producer import Producer

log = logging.getLogger(__name__)

# Bytes of KEYS (UTF-8, with their separators) a trace message carries at most: under the broker's 32,767 bytes of
# properties, with room for the others (UNIQ_KEY, WAIT, the region stamp).
KEYS_BUDGET = 30_000


class AsyncTraceDispatcher:
    def __init__(
        self,
        group: str,
        client_config: ClientConfig,
        trace_topic: str | None = None,
        *,
        batch_size: int = 100,
        max_msg_size: int = 128 * 1024,
        queue_size: int = 2048,
        flush_interval: float = 0.1,
        send_timeout: float = 5.0,
    ) -> None:
        self.group = group
        self.client_config = client_config
        self.trace_topic = trace_topic or RMQ_SYS_TRACE_TOPIC
        self.batch_size = batch_size
        self.max_msg_size = max_msg_size
        self.queue_size = queue_size
        self.flush_interval = flush_interval
        self.send_timeout = send_timeout
        self.discarded = 0  # records dropped because the queue was full
        self.sent_messages = 0  # trace messages the trace topic took
        self._queue: collections.deque[TraceContext] = collections.deque()
        self._nonempty = asyncio.Event()
        self._lock = asyncio.Lock()
        self._producer: Producer | None = None
        self._worker: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from ..producer.producer import Producer  # (the producer creates dispatchers: imported when one starts)

        cfg = self.client_config
        options: dict[str, Any] = {
            f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.name != "namesrv_addr"
        }
        # The trace producer shares the client's instance (connections, routes); its group is the traced
        # group's with RocketMQ's prefix, numbered when a producer and a consumer group of the same name in
        # one client are both traced.
        base = f"{GROUP_NAME_PREFIX}{self.group}"
        for n in range(1, 100):
            producer = Producer(base if n == 1 else f"{base}-{n}", cfg.namesrv_addr, **options)
            try:
                await producer.start()
            except MQClientException as e:
                if "has been created before" in str(e):
                    continue
                raise
            break
        else:
            raise MQClientException(f"no trace producer group free for {self.group}")
        self._producer = producer
        self._worker = asyncio.get_running_loop().create_task(self._run(), name=f"trace-{self.group}")

    def append(self, ctx: TraceContext) -> bool:
        if len(self._queue) >= self.queue_size:
            self.discarded += 1
            if self.discarded % 1000 == 1:
                log.info("trace queue of %s full: %d records discarded", self.group, self.discarded)
            return False
        self._queue.append(ctx)
        self._nonempty.set()
        return True

    async def flush(self) -> None:
        """Send every queued record now."""
        await self._send_pending(all_of_them=True)

    async def shutdown(self) -> None:
        if self._producer is None:
            return
        await self.flush()  # (waits for a batch the worker is sending: cancelling it then would lose it)
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
        await self.flush()
        producer, self._producer = self._producer, None
        await producer.shutdown()

    async def _run(self) -> None:
        while True:
            await self._nonempty.wait()
            if len(self._queue) < self.batch_size:
                await asyncio.sleep(self.flush_interval)  # let a batch gather
            await self._send_pending(all_of_them=False)

    async def _send_pending(self, all_of_them: bool) -> None:
        async with self._lock:
            queue = self._queue
            while queue:
                batch = [queue.popleft() for _ in range(min(self.batch_size, len(queue)))]
                if not queue:
                    self._nonempty.clear()
                await self._send_batch(batch)
                if not all_of_them:
                    break

    async def _send_batch(self, contexts: list[TraceContext]) -> None:
        data: list[str] = []
        keys: set[str] = set()
        size = key_bytes = 0
        for ctx in contexts:
            bean = encoder_from_context_bean(ctx)
            added = _key_bytes(bean.trans_key - keys)
            if data and key_bytes + added > KEYS_BUDGET:
                await self._send_trace_data(data, keys)
                data, keys, size, key_bytes = [], set(), 0, 0
                added = _key_bytes(bean.trans_key)
            data.append(bean.trans_data)
            keys |= bean.trans_key
            size += len(bean.trans_data)
            key_bytes += added
            if size >= self.max_msg_size:
                await self._send_trace_data(data, keys)
                data, keys, size, key_bytes = [], set(), 0, 0
        if data:
            await self._send_trace_data(data, keys)

    async def _send_trace_data(self, data: list[str], keys: set[str]) -> None:
        producer = self._producer
        if producer is None:
            return
        msg = Message(self.trace_topic, "".join(data).encode("utf-8"), keys=_within_budget(sorted(keys)))
        try:
            await producer.send(msg, timeout=self.send_timeout)
            self.sent_messages += 1
        except (MQClientException, MQBrokerException, RemotingError) as e:
            log.info("trace data of %s not sent to %s: %s", self.group, self.trace_topic, e)


def _key_bytes(keys: set[str]) -> int:
    return sum(len(key.encode("utf-8")) + 1 for key in keys)  # (+1: the separator)


def _within_budget(keys: list[str]) -> list[str]:
    """The keys that fit KEYS_BUDGET: one record alone may have more (a batch of a thousand messages, keyed by their
    joined ids); its trace is then stored, though not found by the keys left out, rather than refused."""
    kept: list[str] = []
    total = 0
    for key in keys:
        total += len(key.encode("utf-8")) + 1
        if total > KEYS_BUDGET:
            log.info("a trace message's keys pass %d bytes: %d of %d kept", KEYS_BUDGET, len(kept), len(keys))
            break
        kept.append(key)
    return kept
