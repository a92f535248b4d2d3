"""bench/e2e.py's servers and the three systems it drives (pocketmq, Redis Streams, NATS JetStream), each behind
one small interface (``System``): send, send a batch, open a group, fetch, settle, receive."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

BATCH = 32
BODY_BYTES = 128
LATENCY_RATE = 1000  # msgs/s
WARMUP = 200  # untimed sends per send workload (connections, topic creation); (c) consumes them too
STAMP = struct.Struct(">qq")  # (sequence number, perf_counter_ns at send) at the head of a latency body
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")  # Debian puts nats-server in /usr/sbin
REDIS_PERSISTENCE = "appendonly yes, appendfsync everysec"

OnBody = Callable[[bytes], None]





def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_binary(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *SBIN]))


@contextlib.contextmanager
def server(name: str, argv: list[str], log: Path, ready: str, timeout: float = 30.0) -> Iterator[None]:
    """Run ``argv`` in its own session until the block ends; ready once ``ready`` shows in its output.

    Its own session keeps Ctrl-C in the terminal from reaching it half-way through a run: we stop the whole
    group ourselves (SIGTERM, then SIGKILL), on every way out of the block.
    """
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + timeout
        while ready.encode() not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_bytes()[-2000:].decode(errors="replace")
                raise RuntimeError(f"{name} did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(0.05)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def version(binary: str) -> str | None:
    path = find_binary(binary)
    if path is None:
        return None
    try:
        return subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


# --- clients: one adapter per system, same five calls -----------------------------------------------------


class System(Protocol):
    async def send(self, topic: str, body: bytes) -> None: ...

    async def send_batch(self, topic: str, bodies: list[bytes]) -> None: ...

    async def open_group(self, topic: str) -> None: ...

    async def fetch(self) -> int:
        """One fetch of up to BATCH messages of the group opened last, acked; the number received."""
        ...

    async def settle(self) -> None:
        """Until the server has the acks of every fetch so far (the end of the consume workload)."""
        ...

    async def receive(self, topic: str, on_body: OnBody, stop: asyncio.Event) -> None:
        """Receive new messages of ``topic`` as fast as possible until ``stop`` is set."""
        ...


class PocketMQ:
    def __init__(self, namesrv: str, protocol: str = "msgpack") -> None:
        from pocketmq.client import Message, Producer, PullConsumer, PullStatus, SendStatus

        self._message, self._found, self._ok = Message, PullStatus.FOUND, SendStatus.SEND_OK
        self.producer = Producer(f"bench-producers-{protocol}", namesrv, protocol=protocol)
        self.consumer = PullConsumer(f"bench-consumers-{protocol}", namesrv, protocol=protocol)
        self._queues: list[Any] = []
        self._next: dict[Any, int] = {}
        self._turn = 0

    async def __aenter__(self) -> PocketMQ:
        await self.producer.start()
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.consumer.shutdown()
        await self.producer.shutdown()

    async def send(self, topic: str, body: bytes) -> None:
        result = await self.producer.send(self._message(topic, body))
        if result.send_status is not self._ok:
            raise RuntimeError(result.send_status)

    async def send_batch(self, topic: str, bodies: list[bytes]) -> None:
        result = await self.producer.send_batch([self._message(topic, b) for b in bodies])
        if result.send_status is not self._ok:
            raise RuntimeError(result.send_status)

    async def open_group(self, topic: str) -> None:
        self._queues = await self.consumer.fetch_subscribe_message_queues(topic)
        self._next = {mq: max(await self.consumer.fetch_consume_offset(mq), 0) for mq in self._queues}

    async def fetch(self) -> int:
        # Round-robin over the topic's queues, one pull in flight. Each pull carries the offset the previous
        # fetch of its queue reached (update_consume_offset(flush=False) caches it; the next pull of that
        # queue sends it with FLAG_COMMIT_OFFSET, as RocketMQ's push consumer commits): the broker has a
        # queue's ack before it serves that queue again, as Redis has the XACK before the next XREADGROUP.
        mq = self._queues[self._turn % len(self._queues)]
        self._turn += 1
        result = await self.consumer.pull(mq, "*", self._next[mq], BATCH)
        if result.pull_status is not self._found:
            return 0
        self._next[mq] = result.next_begin_offset
        await self.consumer.update_consume_offset(mq, result.next_begin_offset, flush=False)
        return len(result.msg_found_list)

    async def settle(self) -> None:
        # The acks of each queue's last fetch have no next pull to ride on: persist() sends them one-way, and
        # a request answered on the same connection comes after them.
        await self.consumer.persist()
        await self.consumer.fetch_consume_offset(self._queues[0], from_store=True)

    async def receive(self, topic: str, on_body: OnBody, stop: asyncio.Event) -> None:
        # One long poll in flight per queue, as RocketMQ's push consumer does; offsets are cached and
        # persisted in the background (update_consume_offset(flush=False)), as the push consumer does too.
        # The first send created the topic on the broker; the name server learns of it from the broker's
        # next registration, a moment later.
        for _ in range(100):
            try:
                queues = await self.consumer.fetch_subscribe_message_queues(topic)
                break
            except Exception:
                await asyncio.sleep(0.05)
        else:
            queues = await self.consumer.fetch_subscribe_message_queues(topic)

        async def one_queue(mq: Any) -> None:
            offset = await self.consumer.max_offset(mq)
            while not stop.is_set():
                result = await self.consumer.pull_blocking(mq, "*", offset, BATCH, timeout=0.5)
                for m in result.msg_found_list:
                    on_body(m.body)
                offset = result.next_begin_offset
                await self.consumer.update_consume_offset(mq, offset, flush=False)

        await asyncio.gather(*(one_queue(mq) for mq in queues))


class RedisStreams:
    def __init__(self, port: int) -> None:
        import redis.asyncio as redis

        self._connect = lambda: redis.Redis(host="127.0.0.1", port=port, protocol=2)
        self.r = self._connect()
        self._stream = ""
        self._unacked: list[bytes] = []

    async def __aenter__(self) -> RedisStreams:
        await self.r.ping()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.r.aclose()

    async def send(self, topic: str, body: bytes) -> None:
        await self.r.xadd(topic, {"d": body})

    async def send_batch(self, topic: str, bodies: list[bytes]) -> None:
        pipe = self.r.pipeline(transaction=False)  # one write, BATCH replies, no MULTI/EXEC
        for b in bodies:
            pipe.xadd(topic, {"d": b})
        await pipe.execute()

    async def open_group(self, topic: str) -> None:
        await self.r.xgroup_create(topic, "bench", id="0")
        self._stream = topic

    async def fetch(self) -> int:
        # The previous fetch's XACK and this XREADGROUP go in one pipeline: one round trip, the ack applied
        # before the read, as NATS's acks and pocketmq's one-way commits are.
        pipe = self.r.pipeline(transaction=False)
        if self._unacked:
            pipe.xack(self._stream, "bench", *self._unacked)
        pipe.xreadgroup("bench", "c1", {self._stream: ">"}, count=BATCH)
        reply = (await pipe.execute())[-1]
        self._unacked = [i for _, entries in reply for i, _ in entries]
        return len(self._unacked)

    async def settle(self) -> None:
        if self._unacked:
            await self.r.xack(self._stream, "bench", *self._unacked)
            self._unacked = []

    async def receive(self, topic: str, on_body: OnBody, stop: asyncio.Event) -> None:
        r = self._connect()  # a blocking XREADGROUP holds its connection: not the producer's
        try:
            await r.xgroup_create(topic, "latency", id="$", mkstream=True)
            while not stop.is_set():
                reply = await r.xreadgroup("latency", "c1", {topic: ">"}, count=BATCH, block=500)
                ids = []
                for _, entries in reply:
                    for i, fields in entries:
                        on_body(fields[b"d"])
                        ids.append(i)
                if ids:
                    await r.xack(topic, "latency", *ids)
        finally:
            await r.aclose()


class NatsJetStream:
    def __init__(self, port: int) -> None:
        self._url = f"nats://127.0.0.1:{port}"
        self.nc: Any = None
        self.js: Any = None
        self._sub: Any = None
        self._streams: set[str] = set()

    async def __aenter__(self) -> NatsJetStream:
        import nats

        self.nc = await nats.connect(self._url)
        self.js = self.nc.jetstream()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.nc.close()

    async def _stream(self, topic: str) -> None:
        from nats.js.api import StorageType

        # One file-store stream per workload, as pocketmq and Redis get a topic / stream each; created on
        # first use, as the others create theirs.
        await self.js.add_stream(name=topic.upper(), subjects=[topic], storage=StorageType.FILE)
        self._streams.add(topic)

    async def send(self, topic: str, body: bytes) -> None:
        if topic not in self._streams:
            await self._stream(topic)
        await self.js.publish(topic, body)

    async def send_batch(self, topic: str, bodies: list[bytes]) -> None:
        # publish_async writes the BATCH messages back to back and returns their ack futures: a pipeline,
        # as the Redis one is; the batch is done when every ack is in.
        if topic not in self._streams:
            await self._stream(topic)
        futures = [await self.js.publish_async(topic, b) for b in bodies]
        await asyncio.gather(*futures)

    async def open_group(self, topic: str) -> None:
        from nats.js.api import AckPolicy, ConsumerConfig

        config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, max_ack_pending=-1)
        self._sub = await self.js.pull_subscribe(topic, durable="bench", config=config)

    async def fetch(self) -> int:
        import nats.errors

        try:
            msgs = await self._sub.fetch(BATCH, timeout=1.0)
        except nats.errors.TimeoutError:
            return 0
        # msg.ack() writes the ack without waiting for a reply. The server reads one connection in order,
        # so the acks are applied before it serves the next fetch. (AckPolicy.ALL with one awaited ack per
        # fetch measured the same, within noise; awaiting 32 acks, half as fast.)
        for m in msgs:
            await m.ack()
        return len(msgs)

    async def settle(self) -> None:
        await self.nc.flush()  # PING/PONG: the server has read every ack before it

    async def receive(self, topic: str, on_body: OnBody, stop: asyncio.Event) -> None:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        # A push consumer: the server sends each message as it is stored, NATS's lowest-latency way to read
        # a stream (a pull fetch(32) would wait to fill its batch).
        async def on_msg(msg: Any) -> None:
            on_body(msg.data)
            await msg.ack()

        config = ConsumerConfig(deliver_policy=DeliverPolicy.NEW, ack_policy=AckPolicy.EXPLICIT)
        sub = await self.js.subscribe(topic, durable="latency", cb=on_msg, manual_ack=True, config=config)
        try:
            await stop.wait()
        finally:
            await sub.unsubscribe()
