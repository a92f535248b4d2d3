"""MQAdminExt's offset operations: the reset (resetOffsetByTime), through the group's running consumers, or, with
none running, straight into the brokers' stored offsets; the running consumers' own offsets (getConsumeStatus); a
group's offsets cloned into another (cloneGroupOffset); the time spans of a group's queues and a topic's correction
offsets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pocketmq.common.mix_all import get_retry_topic
from pocketmq.remoting.admin_body import (
    ConsumerConnection,
    ConsumeStats,
    GetConsumerStatusBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    ResetOffsetBody,
)
from pocketmq.remoting.admin_header import (
    CloneGroupOffsetRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ResetOffsetRequestHeader,
)
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.header import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)

from ..exceptions import MQClientException
from .admin_client import AdminClient

_GROUP_HAS_NO_OFFSETS = "THe consumer group <"  # (sic) Broker2Client.resetOffset's remark


@dataclass(slots=True)
class ResetOffsetResult:
    """What resetOffsetByTime did: the new offset of every queue, and whether running consumers took them
    (online) or the brokers' stored offsets were set directly (the group had no consumer running; a RocketMQ 5
    broker sets them itself in both cases)."""

    offsets: dict[MessageQueue, int] = field(default_factory=dict)
    online: bool = True


class OffsetAdmin(AdminClient):
    # --- offsets -------------------------------------------------------------------------------------------

    async def query_consume_time_span(self, topic: str, group: str) -> list[QueueTimeSpan]:
        """Each queue's first and last store times, and those of the group's position (queryConsumeTimeSpan)."""
        spans: list[QueueTimeSpan] = []
        header = QueryConsumeTimeSpanRequestHeader(topic, group)
        for addr in (await self._topic_masters(topic)).values():
            r = self._ok(await self._broker(addr, RequestCode.QUERY_CONSUME_TIME_SPAN, header), addr)
            spans += r.decode_body(QueryConsumeTimeSpanBody).consume_time_span_set
        return spans

    async def get_consume_status(
        self, topic: str, group: str, client_id: str | None = None
    ) -> dict[str, dict[MessageQueue, int]]:
        """Each running consumer's offsets of ``topic`` as it holds them, by client id; only the one whose id is
        ``client_id`` when given (getConsumeStatus: the first broker of the topic's route asks the group's
        consumers, INVOKE_BROKER_TO_GET_CONSUMER_STATUS). A push or pull consumer has the offsets of the queues
        it consumed; a lite pull or POP consumer none. MQBrokerException when no consumer of the group runs."""
        masters = await self._topic_masters(topic)
        if not masters:
            return {}
        addr = next(iter(masters.values()))
        header = GetConsumerStatusRequestHeader(topic, group, client_id)
        r = self._ok(await self._broker(addr, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header), addr)
        return r.decode_body(GetConsumerStatusBody).consumer_table

    async def clone_group_offset(
        self, src_group: str, dest_group: str, topic: str | None, offline: bool = False
    ) -> list[str]:
        """``dest_group`` given ``src_group``'s offsets of ``topic`` (None: of each topic the source group has
        offsets of) on every master broker of the topic (of the source group's retry topic when None), which
        copy them (CLONE_GROUP_OFFSET); the addresses asked. Unless ``offline``, a broker leaves out a topic the
        group's online consumers do not subscribe to. RocketMQ's DefaultMQAdminExt asks the brokers of the
        retry topic in both cases; a topic's offsets are on the topic's brokers, whether or not the group ever
        had a retry topic there."""
        masters = await self._topic_masters(topic or get_retry_topic(src_group))
        header = CloneGroupOffsetRequestHeader(src_group, dest_group, topic, offline)
        for addr in masters.values():
            self._ok(await self._broker(addr, RequestCode.CLONE_GROUP_OFFSET, header), addr)
        return list(masters.values())

    async def query_correction_offset(
        self, addr: str, topic: str, group: str, filter_groups: Iterable[str] | None = None
    ) -> dict[int, int]:
        """MQClientAPIImpl.queryCorrectionOffset at one broker: per queue of ``topic``, the lowest offset of the
        groups other than ``filter_groups`` (QUERY_CORRECTION_OFFSET; ``group`` is its compareGroup)."""
        header = QueryCorrectionOffsetHeader(group, topic, None if filter_groups is None else ",".join(filter_groups))
        r = self._ok(await self._broker(addr, RequestCode.QUERY_CORRECTION_OFFSET, header), addr)
        return r.decode_body(QueryCorrectionOffsetBody).correction_offsets

    async def reset_offset_by_timestamp(
        self, topic: str, group: str, timestamp: int, force: bool = True
    ) -> ResetOffsetResult:
        """The group's offsets of ``topic`` set to the first message stored at or after ``timestamp`` (ms; -1 =
        the end). Running consumers take them over at once (INVOKE_BROKER_TO_RESET_OFFSET); when the group has
        none running, the brokers' stored offsets are set directly (as mqadmin falls back to the old way).

        A RocketMQ 5 broker does the reset itself, running consumers or not: it stores the offsets, its running
        consumers move to them at their next pull, and ``force=False`` is not honoured (the offsets go back or
        forward). ``online`` is then whether the group had consumers connected."""
        masters = await self._topic_masters(topic)
        result = ResetOffsetResult()
        offline: list[str] = []
        header = ResetOffsetRequestHeader(topic, group, timestamp, force)
        for addr in masters.values():
            r = await self._broker(addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
            if r.code == ResponseCode.CONSUMER_NOT_ONLINE:
                offline.append(addr)
                continue
            if r.code == ResponseCode.SYSTEM_ERROR and (r.remark or "").startswith(_GROUP_HAS_NO_OFFSETS):
                # The group never consumed the topic on this broker: nothing to reset there (mqadmin fails the
                # whole command instead).
                continue
            result.offsets.update(self._ok(r, addr).decode_body(ResetOffsetBody).offset_table)
        if offline:
            result.online = len(offline) < len(masters) and bool(result.offsets)
            for addr in offline:
                result.offsets.update(await self._reset_offline(addr, topic, group, timestamp, force))
        elif result.offsets:
            # A 5.x broker (useServerSideResetOffset, its default) sets the group's offsets itself and answers
            # SUCCESS whether or not any consumer runs: only the group's connections tell.
            result.online = await self._consumers_online(group, list(masters.values()))
        if not result.offsets:
            raise MQClientException(f"the consumer group {group} has no offsets of {topic} on any broker")
        return result

    async def reset_offset_by_queue_id(
        self, broker_addr: str, group: str, topic: str, queue_id: int, offset: int
    ) -> dict[MessageQueue, int]:
        """One queue of the group set to ``offset`` at ``broker_addr``, running consumers or not
        (resetOffsetByQueueId; a RocketMQ 5 or pocketmq broker: a 4.x one takes it for a reset of the whole topic).
        As RocketMQ 5's admin does, the offset is committed first (UPDATE_CONSUMER_OFFSET, which the broker ignores
        while an earlier reset of the queue is held), then the reset is asked for, which the broker refuses for an
        offset outside the queue's range: such an offset past the queue's end is then the group's all the same, as
        with RocketMQ's admin. A negative one is refused here, before anything is sent (RocketMQ's admin commits
        it, and the group then starts the queue over)."""
        if offset < 0:
            raise MQClientException(f"reset offset {offset} of {topic} queue {queue_id}: an offset is 0 or more")
        update = UpdateConsumerOffsetRequestHeader(group, topic, queue_id, offset)
        self._ok(await self._broker(broker_addr, RequestCode.UPDATE_CONSUMER_OFFSET, update), broker_addr)
        header = ResetOffsetRequestHeader(topic, group, 0, False, queue_id, offset)
        r = self._ok(await self._broker(broker_addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header), broker_addr)
        return r.decode_body(ResetOffsetBody).offset_table if r.body else {}

    async def _consumers_online(self, group: str, addrs: list[str]) -> bool:
        """Whether any of ``addrs`` has a consumer of ``group`` connected (a consumer heartbeats to every broker
        of its topics)."""
        header = GetConsumerConnectionListRequestHeader(group)
        for addr in addrs:
            r = await self._broker(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
            if r.code == ResponseCode.SUCCESS and r.decode_body(ConsumerConnection).connection_set:
                return True
        return False

    async def _reset_offline(
        self, addr: str, topic: str, group: str, timestamp: int, force: bool
    ) -> dict[MessageQueue, int]:
        stats = self._ok(
            await self._broker(addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(group, topic)), addr
        )
        table = stats.decode_body(ConsumeStats).offset_table
        if not table:
            raise MQClientException(f"the group {group} has no offsets of {topic} at {addr}")
        out: dict[MessageQueue, int] = {}
        for mq, w in table.items():
            if timestamp == -1:
                r = self._ok(
                    await self._broker(addr, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic, mq.queue_id)),
                    addr,
                )
                target = r.decode_header(GetMaxOffsetResponseHeader).offset
            else:
                r = self._ok(
                    await self._broker(
                        addr,
                        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                        SearchOffsetRequestHeader(topic, mq.queue_id, timestamp),
                    ),
                    addr,
                )
                target = r.decode_header(SearchOffsetResponseHeader).offset
            if not force and target > w.consumer_offset:
                # Only back, unless forced (resetOffsetConsumeOffset): the offset is left as it is, not written
                # again, which would make one for a queue the group never committed and could move back one the
                # group committed meanwhile.
                out[mq] = w.consumer_offset
                continue
            update = UpdateConsumerOffsetRequestHeader(group, topic, mq.queue_id, target)
            self._ok(await self._broker(addr, RequestCode.UPDATE_CONSUMER_OFFSET, update), addr)
            out[mq] = target
        return out
