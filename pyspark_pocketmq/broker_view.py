"""What the driver asks the cluster while planning: which queues a subscription covers, their offset
ranges, offsets by store time, and (optionally) a consumer group's offsets to mirror progress into."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from pocketmq.client import MessageQueue, MQBrokerException, MQClientException, PullStatus, SyncPullConsumer
from pocketmq.client.admin.admin_client import AdminClient
from pocketmq.common.mix_all import get_reply_topic
from pocketmq.common.topic_validator import (
    is_system_topic,  # (the broker's own topics: a subscribePattern never matches them)
)
from pocketmq.remoting.body import ClusterInfo
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.errors import RemotingError

from .offsets import Offsets, QueueRef
from .options import DEFAULT_PROTOCOL, Credentials, InvalidOptionError, OffsetSpec, Subscription, client_credentials
from .planning import resolve_offsets
from .time_seek import first_at_or_after

READER_GROUP = "pocketmq-spark-reader"
MASTER_ID = 0

T = TypeVar("T")


def private_instance(role: str) -> str:
    """A client instance name of its own, so no two Spark-side clients in one process share an instance."""
    return f"spark-{role}-{uuid.uuid4().hex[:12]}"


def to_mq(q: QueueRef) -> MessageQueue:
    return MessageQueue(q.topic, q.broker_name, q.queue_id)


class BrokerView:
    """One client connection for planning; not picklable, so readers keep it out of what they pickle."""

    def __init__(
        self, endpoints: str, timeout: float, protocol: str = DEFAULT_PROTOCOL, credentials: Credentials | None = None
    ) -> None:
        self.endpoints = endpoints
        self.protocol = protocol
        self.credentials = credentials
        self._consumer = SyncPullConsumer(
            READER_GROUP, endpoints, instance_name=private_instance("view"), consumer_pull_timeout=timeout,
            protocol=protocol, **client_credentials(credentials),
        )
        self._group_consumers: dict[str, SyncPullConsumer] = {}
        self._timeout = timeout
        # Cluster info and requests to a broker no route names: an admin connection, on a loop of its own that
        # lives as long as the view (the driver calls the view from one thread, outside any event loop).
        self._admin: AdminClient | None = None
        self._admin_loop: asyncio.Runner | None = None

    def close(self) -> None:
        for c in self._group_consumers.values():
            c.close()
        self._group_consumers.clear()
        self._consumer.close()
        if self._admin_loop is not None:
            if self._admin is not None:
                self._admin_loop.run(self._admin.close())
            self._admin_loop.close()
        self._admin, self._admin_loop = None, None

    def _admin_run(self, call: Callable[[AdminClient], Coroutine[Any, Any, T]]) -> T:
        """``call(admin)``'s coroutine, run to its end on the admin connection."""
        if self._admin_loop is None:
            self._admin_loop = asyncio.Runner()
        if self._admin is None:
            self._admin = AdminClient(self.endpoints, timeout=self._timeout, protocol=self.protocol,
                                      **client_credentials(self.credentials))
        return self._admin_loop.run(call(self._admin))

    def cluster_info(self) -> ClusterInfo:
        return self._admin_run(lambda admin: admin.examine_broker_cluster_info())

    def __enter__(self) -> BrokerView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- queues --------------------------------------------------------------------------------------------

    def topic_queues(self, topic: str) -> list[QueueRef]:
        """The topic's readable queues; none while the topic does not exist."""
        return self._routed_queues(topic) or []

    def _routed_queues(self, topic: str) -> list[QueueRef] | None:
        """The topic's readable queues; None when the name server has no route for it."""
        try:
            mqs = self._consumer.fetch_subscribe_message_queues(topic)
        except MQClientException as e:
            if e.response_code == ResponseCode.TOPIC_NOT_EXIST:
                return None
            if "Namesrv return empty" in str(e):  # a route without readable queues (said in words only)
                return []
            raise
        return sorted(QueueRef(m.topic, m.broker_name, m.queue_id) for m in mqs)

    def queues(self, subscription: Subscription, *, named_topics_exist: bool = False) -> list[QueueRef]:
        """The queues ``subscription`` covers now. With ``named_topics_exist`` (batch reads), a topic that
        'subscribe' names and the name server has no route for is an error; a streaming query waits for it
        instead, as it waits for a pattern to match."""
        if subscription.pattern is not None:
            pattern = re.compile(subscription.pattern)
            topics = [t for t in self._consumer.fetch_topic_list()
                      if pattern.fullmatch(t) and not is_system_topic(t)]
            own = self._own_topics() if topics else set()
            return sorted(q for t in topics if t not in own for q in self.topic_queues(t))
        if subscription.assigned:
            return self._assigned_queues(subscription.assigned)
        out: list[QueueRef] = []
        for topic in subscription.topics:
            queues = self._routed_queues(topic)
            if queues is None and named_topics_exist:
                raise InvalidOptionError(f"option 'subscribe': topic {topic} does not exist (the name server has "
                                         "no route for it)")
            out += queues or []
        return sorted(out)

    def _own_topics(self) -> set[str]:
        """The topics a cluster makes for itself, each named after it or a broker, the cluster's reply topic
        too (Apache's TopicConfigManager registers them as system topics; is_system_topic cannot know the
        names)."""
        info = self.cluster_info()
        return {*info.cluster_addr_table, *map(get_reply_topic, info.cluster_addr_table), *info.broker_addr_table}

    def _assigned_queues(self, assigned: Iterable[tuple[str, str | None, int]]) -> list[QueueRef]:
        by_topic: dict[str, list[QueueRef]] = {}
        out: set[QueueRef] = set()
        for topic, broker, queue_id in assigned:
            if topic not in by_topic:
                by_topic[topic] = self.topic_queues(topic)
            existing = by_topic[topic]
            found = [q for q in existing if q.queue_id == queue_id and broker in (None, q.broker_name)]
            if not found:
                where = f"{topic}/{broker}/{queue_id}" if broker else f"{topic}/{queue_id}"
                raise InvalidOptionError(f"option 'assign': queue {where} does not exist")
            out.update(found)
        return sorted(out)

    # --- offsets -------------------------------------------------------------------------------------------

    def min_offsets(self, queues: Iterable[QueueRef]) -> Offsets:
        return {q: max(self._consumer.min_offset(to_mq(q)), 0) for q in queues}

    def max_offsets(self, queues: Iterable[QueueRef]) -> Offsets:
        return {q: self._consumer.max_offset(to_mq(q)) for q in queues}

    def unrouted_max_offsets(self, queues: Iterable[QueueRef]) -> dict[QueueRef, int | None]:
        """For queues that left the route: the max offset their broker reports, asked at the address it is
        registered with; None when it is not registered or does not answer (a broker restarting unregisters
        first, and a route without the topic names no address to ask)."""
        queues = list(queues)
        if not queues:
            return {}
        info = self.cluster_info()
        out: dict[QueueRef, int | None] = {}
        for q in queues:
            data = info.broker_addr_table.get(q.broker_name)
            addr = data.broker_addrs.get(MASTER_ID) if data is not None else None
            out[q] = None if addr is None else self._broker_max_offset(addr, q)
        return out

    def _broker_max_offset(self, addr: str, q: QueueRef) -> int | None:
        try:
            return self._admin_run(lambda admin: admin.api.get_max_offset(addr, q.topic, q.queue_id, self._timeout))
        except (MQBrokerException, MQClientException, RemotingError, OSError):
            return None  # shutting down, not unregistered yet: as unknown as a broker that is away

    def offsets_by_time(self, queues: Iterable[QueueRef], timestamp_ms: int) -> Offsets:
        """Per queue, the first offset stored at or after ``timestamp_ms`` (the end when there is none)."""
        return {q: self._offset_by_time(to_mq(q), timestamp_ms) for q in queues}

    def _offset_by_time(self, mq: MessageQueue, timestamp_ms: int) -> int:
        found = self._consumer.seek_by_timestamp(mq, timestamp_ms)
        max_offset = self._consumer.max_offset(mq)
        if found >= max_offset:
            return max_offset
        return first_at_or_after(found, max(self._consumer.min_offset(mq), 0), max_offset, timestamp_ms,
                                 lambda start, count: self._store_times(mq, start, count))

    def _store_times(self, mq: MessageQueue, start: int, count: int) -> list[tuple[int, int]]:
        result = self._consumer.pull(mq, "*", start, count)
        if result.pull_status != PullStatus.FOUND:
            return []
        return [(m.queue_offset, m.store_timestamp) for m in result.msg_found_list]

    def resolve(self, spec: OffsetSpec, timestamp_ms: int | None, queues: list[QueueRef], default: int,
                name: str, bounds: tuple[Offsets, Offsets] | None = None) -> Offsets:
        """Concrete offsets for a starting/ending option: by store time when a timestamp is given, else
        "earliest" / "latest" / JSON (queues the JSON leaves out get ``default``). ``bounds``: the queues'
        min and max offsets when the caller has them already."""
        if timestamp_ms is not None:
            return self.offsets_by_time(queues, timestamp_ms)
        if bounds is not None:
            earliest, latest = bounds
        else:
            earliest = self.min_offsets(queues) if spec != "latest" else {}
            latest = self.max_offsets(queues) if spec != "earliest" else {}
        return resolve_offsets(spec, queues, earliest, latest, default, name)

    def commit_to_group(self, group: str, offsets: Mapping[QueueRef, int]) -> None:
        """Store ``offsets`` as ``group``'s consume offsets on the brokers (for lag dashboards only)."""
        consumer = self._group_consumers.get(group)
        if consumer is None:
            consumer = SyncPullConsumer(group, self.endpoints, instance_name=private_instance("group"),
                                        protocol=self.protocol, **client_credentials(self.credentials))
            self._group_consumers[group] = consumer
        for q, offset in sorted(offsets.items()):
            consumer.update_consume_offset(to_mq(q), offset, flush=False)
        consumer.persist()
