"""The operator's requests to a broker, as RocketMQ 4.9.8's AdminBrokerProcessor answers them: statistics (runtime
info, topic stats, consume stats), connections, a consumer's running info (asked of the client), who consumes a
topic and subscription-group deletion.

(Kept apart from admin_broker_processor.py, which holds the topic, group, offset-query and lock requests, from
admin_offset_processor.py, which holds the offset resets, and from broker_config_processor.py, which holds the
broker config's.)
"""

from __future__ import annotations

import math
import os
import shutil
import time
from typing import TYPE_CHECKING

from pocketmq.common.java_text import is_blank
from pocketmq.common.mq_version import V3_1_8_SNAPSHOT, version_desc
from pocketmq.remoting.admin_body import (
    Connection,
    ConsumerConnection,
    GroupList,
    KVTable,
    ProducerConnection,
    QueryConsumeTimeSpanBody,
    TopicOffset,
    TopicStatsTable,
    language_name,
)
from pocketmq.remoting.admin_header import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingError, RemotingTimeoutError
from pocketmq.remoting.transport import Channel
from pocketmq.storage.clean_service import disk_usage_ratio

from ..client.client_channel_info import ClientChannelInfo
from ..client_call_gate import ClientCallGate
from .base import BrokerProcessor, log, response
from .consume_stats import consume_stats, consume_time_spans

if TYPE_CHECKING:
    from pocketmq.storage.message_store import DefaultMessageStore

    from ..broker_controller import BrokerController
    from ..stats.broker_stats_manager import BrokerStatsManager

BROKER_VERSION_DESC = "V4_9_8"  # MQVersion.getVersionDesc of the version pocketmq implements

def _connection(info: ClientChannelInfo) -> Connection:
    return Connection(info.client_id, info.channel.remote_address, language_name(info.language), info.version)


def _runtime_text(seconds: float) -> str:
    """StoreStatsService.getRuntime's form."""
    s = int(seconds)
    return f"[ {s // 86400} days, {s % 86400 // 3600} hours, {s % 3600 // 60} minutes, {s % 60} seconds ]"


class AdminExtProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self._client_calls = ClientCallGate()
        h = self.handlers
        h[RequestCode.GET_BROKER_RUNTIME_INFO] = self.get_broker_runtime_info
        h[RequestCode.GET_TOPIC_STATS_INFO] = self.get_topic_stats_info
        h[RequestCode.GET_CONSUME_STATS] = self.get_consume_stats
        h[RequestCode.QUERY_CONSUME_TIME_SPAN] = self.query_consume_time_span
        h[RequestCode.GET_CONSUMER_CONNECTION_LIST] = self.get_consumer_connection_list
        h[RequestCode.GET_PRODUCER_CONNECTION_LIST] = self.get_producer_connection_list
        h[RequestCode.GET_CONSUMER_RUNNING_INFO] = self.get_consumer_running_info
        h[RequestCode.QUERY_TOPIC_CONSUME_BY_WHO] = self.query_topic_consume_by_who
        h[RequestCode.DELETE_SUBSCRIPTIONGROUP] = self.delete_subscription_group
        self.boot_timestamp = int(time.time() * 1000)

    def _broker_name(self) -> str:
        return self.controller.broker_config.broker_name

    # --- statistics ---

    async def get_broker_runtime_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        table = await self.controller.run_in_pull_executor(self.runtime_info)
        return response(request, body=request.encode_body(KVTable(table)))

    def runtime_info(self) -> dict[str, str]:
        """prepareRuntimeInfo's keys (those pocketmq has figures for); values are strings, as in RocketMQ. The
        store's own, as RocketMQ's getRuntimeInfo and StoreStatsService give them, are the helpers'."""
        c = self.controller
        store, stats = c.store, c.broker_stats_manager
        unflushed = max(store.get_max_phy_offset() - store.commit_log.mapped_file_queue.flushed_where, 0)
        earliest = 0
        min_phy = store.get_min_phy_offset()
        if store.get_max_phy_offset() > min_phy:
            msg = store.look_message_by_offset(min_phy)
            earliest = msg.store_timestamp if msg is not None else 0
        pull_threads = c.broker_config.pull_thread_pool_nums
        info = {
            # 5.x's clusterList prints it as #ACTIVATED (BrokerController.isSpecialServiceRunning: the schedule and
            # transaction-check services, or POP's revive, run, as they do on a started master)
            "brokerActive": str(c.is_running).lower(),
            "brokerVersionDesc": BROKER_VERSION_DESC,
            "brokerVersion": str(409),
            "msgPutTotalYesterdayMorning": str(stats.msg_put_total_yesterday_morning),
            "msgPutTotalTodayMorning": str(stats.msg_put_total_today_morning),
            "msgPutTotalTodayNow": str(stats.put_message_times_total),
            "msgGetTotalYesterdayMorning": str(stats.msg_get_total_yesterday_morning),
            "msgGetTotalTodayMorning": str(stats.msg_get_total_today_morning),
            "msgGetTotalTodayNow": str(stats.broker_get_total),
            "sendThreadPoolQueueSize": "0",  # sends are answered on the event loop: no queue
            "sendThreadPoolQueueCapacity": "0",
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueCapacity": str(pull_threads),
            # 5.x's lite pulls are pulls here, on the pull threads; acks are answered on the event loop
            "litePullThreadPoolQueueSize": "0",
            "litePullThreadPoolQueueCapacity": str(pull_threads),
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": str(pull_threads),
            "ackThreadPoolQueueSize": "0",
            "ackThreadPoolQueueCapacity": "0",
            "EndTransactionQueueSize": "0",  # END_TRANSACTION is answered on the event loop too
            "EndTransactionThreadPoolQueueCapacity": "0",
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "litePullThreadPoolQueueHeadWaitTimeMills": "0",
            "ackThreadPoolQueueHeadWaitTimeMills": "0",
            "dispatchBehindBytes": str(store.dispatch_behind_bytes()),
            "pageCacheLockTimeMills": "0",
            "earliestMessageTimeStamp": str(earliest),
            "startAcceptSendRequestTimeStamp": "0",
            "remainHowManyDataToFlush": human_bytes(unflushed),
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": _runtime_text(time.time() - self.boot_timestamp / 1000),
        }
        info.update(_store_stats_info(stats))
        info.update(_store_runtime_info(c.broker_config.store_root, store))
        info.update(c.schedule_message_service.build_running_stats())
        return info

    async def get_topic_stats_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetTopicStatsInfoRequestHeader)
        c = self.controller
        topic = header.topic
        tc = c.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        table = await c.run_in_pull_executor(self._topic_stats, topic, tc.write_queue_nums)
        return response(request, body=request.encode_body(table))

    def _topic_stats(self, topic: str, queue_nums: int) -> TopicStatsTable:
        store = self.controller.store
        table = TopicStatsTable()
        for i in range(queue_nums):
            lo = max(store.get_min_offset_in_queue(topic, i), 0)
            hi = max(store.get_max_offset_in_queue(topic, i), 0)
            ts = store.get_message_store_timestamp(topic, i, hi - 1) if hi > 0 else 0
            table.offset_table[MessageQueue(topic, self._broker_name(), i)] = TopicOffset(lo, hi, max(ts, 0))
        return table

    async def get_consume_stats(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetConsumeStatsRequestHeader)
        group, topic = header.consumer_group, header.topic
        # Walked on the pull thread, the offset table could gain a key meanwhile (any first commit) and the walk
        # fail: its keys are copied here, on the loop, and searched there (the copy costs the loop about a third
        # of the walk: 21 against 73 ms for 200,000 keys).
        if topic is not None and not is_blank(topic):  # (Java's blank: a no-break space is a topic's name)
            keys: list[str] = []
        else:
            keys, topic = list(self.controller.consumer_offset_manager.offset_table), None
        stats = await self.controller.run_in_pull_executor(consume_stats, self.controller, group, topic, keys,
                                                           request.version)
        return response(request, body=request.encode_body(stats))

    async def query_consume_time_span(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(QueryConsumeTimeSpanRequestHeader)
        tc = self.controller.topic_config_manager.select_topic_config(header.topic)
        if tc is None:
            return response(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        spans = await self.controller.run_in_pull_executor(consume_time_spans, self.controller, header.group,
                                                           header.topic, tc.write_queue_nums)
        return response(request, body=request.encode_body(QueryConsumeTimeSpanBody(spans)))

    def _groups_of_topic(self, topic: str) -> set[str]:
        """ConsumerOffsetManager.whichGroupByTopic."""
        prefix = topic + "@"
        return {k[len(prefix):] for k in self.controller.consumer_offset_manager.offset_table if k.startswith(prefix)}

    # --- connections ---

    async def get_consumer_connection_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetConsumerConnectionListRequestHeader)
        info = self.controller.consumer_manager.get_consumer_group_info(header.consumer_group)
        if info is None:
            return response(
                request, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{header.consumer_group}] not online"
            )
        body = ConsumerConnection(
            [_connection(ci) for ci in info.channel_info_table.values()],
            dict(info.subscription_table),
            info.consume_type,
            info.message_model,
            info.consume_from_where,
        )
        return response(request, body=request.encode_body(body))

    async def get_producer_connection_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetProducerConnectionListRequestHeader)
        channels = self.controller.producer_manager.group_channel_table.get(header.producer_group)
        if not channels:
            return response(
                request, ResponseCode.SYSTEM_ERROR, f"the producer group[{header.producer_group}] not exist"
            )
        body = ProducerConnection([_connection(ci) for ci in channels.values()])
        return response(request, body=request.encode_body(body))

    async def get_consumer_running_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """Asked of the client itself (Broker2Client.callClient); its answer goes back as it came, its body
        re-encoded when the client and the asker speak different dialects."""
        header = request.decode_header(GetConsumerRunningInfoRequestHeader)
        info = self.controller.consumer_manager.find_channel(header.consumer_group, header.client_id)
        if info is None:
            return response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{header.consumer_group}> <{header.client_id}> not online",
            )
        if info.version < V3_1_8_SNAPSHOT:
            return response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{header.client_id}> Version <{version_desc(info.version)}> too low to finish, please "
                "upgrade it to V3_1_8_SNAPSHOT",
            )
        ask = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)
        try:
            answer = await self._client_calls.call(channel, info.channel, ask,
                                                   self.controller.broker_config.call_client_timeout)
        except RemotingTimeoutError as e:
            # (an admin tool tells a client that is slow from one that failed by this code)
            return response(request, ResponseCode.CONSUME_MSG_TIMEOUT,
                            f"consumer <{header.consumer_group}> <{header.client_id}> Timeout: {e}")
        except RemotingError as e:
            return response(
                request, ResponseCode.SYSTEM_ERROR, f"invoke consumer <{header.consumer_group}> <{header.client_id}>"
                f" Exception: {e}"
            )
        body = answer.body
        if body is not None and answer.body_dialect != request.body_dialect:
            body = request.encode_body(answer.decode_body())
        return response(request, answer.code, answer.remark, body=body)

    async def query_topic_consume_by_who(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(QueryTopicConsumeByWhoRequestHeader)
        topic = header.topic
        groups = {
            g for g, info in self.controller.consumer_manager.consumer_table.items() if topic in info.subscription_table
        }
        groups |= self._groups_of_topic(topic)
        return response(request, body=request.encode_body(GroupList(sorted(groups))))

    # --- subscription groups ---

    async def delete_subscription_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(DeleteSubscriptionGroupRequestHeader)
        c = self.controller
        group = header.group_name
        log.info("DELETE_SUBSCRIPTIONGROUP %s from %s", group, channel.remote_address)
        c.subscription_group_manager.delete_subscription_group_config(group)
        clean = header.remove_offset or header.clean_offset
        if clean:
            com = c.consumer_offset_manager
            com.remove_group(group)
            com.mark_changed()
            c.broker_stats_manager.on_group_deleted(group)
        await c.subscription_group_manager.wait_persisted()
        return response(request)



# StoreStatsService's putMessageDistributeTime buckets.
_PUT_TIME_BUCKETS = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]", "[500ms~1s]",
                     "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")


def human_bytes(n: int) -> str:
    """MixAll.humanReadableByteCount(n, false): binary units, one decimal ("252.0 GiB", "512 B")."""
    if n < 1024:
        return f"{n} B"
    exp = min(int(math.log(n) / math.log(1024)), 6)
    return f"{n / 1024**exp:.1f} {'KMGTPE'[exp - 1]}iB"


def _disk_ratio(path: str, fallback: str) -> float:
    return disk_usage_ratio(path if os.path.isdir(path) else fallback)


def _three_rates(tps: float) -> str:
    # RocketMQ's StoreStatsService gives 10 s, 1 min and 10 min rates; pocketmq keeps the minute.
    return f"{tps:.2f} {tps:.2f} {tps:.2f}"


def _store_stats_info(stats: BrokerStatsManager) -> dict[str, str]:
    """StoreStatsService's keys: rates and totals of puts and gets."""
    put, get = stats.put_in_minute(), stats.broker_get_in_minute()
    found, miss = stats.get_found_in_minute().tps, stats.get_miss_in_minute().tps
    put_bytes = stats.put_message_size_total
    put_count = stats.put_message_times_total
    return {
        "putTps": _three_rates(put.tps),
        # Messages read per second, under 4.x's misspelt name and 5.x's (5.x's clusterList and exportMetrics read
        # the new one only, 4.x's tools the old one only)
        "getTransferedTps": _three_rates(get.tps),
        "getTransferredTps": _three_rates(get.tps),
        "getTotalTps": _three_rates(found + miss),
        "getFoundTps": _three_rates(found),
        "getMissTps": _three_rates(miss),
        "putMessageTimesTotal": str(put_count),
        "putMessageSizeTotal": str(put_bytes),
        "putMessageAverageSize": str(put_bytes / put_count if put_count else 0.0),
        "putMessageFailedTimes": "0",
        # StoreStatsService times every put and get; pocketmq keeps no per-request latencies (its flush
        # latencies are on /metrics), so these read as an idle RocketMQ broker's do.
        "putMessageEntireTimeMax": "0",
        "getMessageEntireTimeMax": "0",
        "putMessageDistributeTime": " ".join(f"{b}:0" for b in _PUT_TIME_BUCKETS) + " ",
        "putLatency99": "0.00",
        "putLatency999": "0.00",
        "dispatchMaxBuffer": "0",
    }


def _store_runtime_info(root: str, store: DefaultMessageStore) -> dict[str, str]:
    """DefaultMessageStore.getRuntimeInfo's keys: the commit log's offsets and the disk it fills."""
    commit_log_dir = os.path.join(root, "commitlog")
    try:
        usage = shutil.disk_usage(commit_log_dir if os.path.isdir(commit_log_dir) else root)
        disk_ratio = _disk_ratio(commit_log_dir, root)
        capacity = f"Total : {human_bytes(usage.total)}, Free : {human_bytes(usage.free)}."
    except OSError:
        disk_ratio, capacity = -1.0, "unknown"
    return {
        # No transient store pool: RocketMQ then reports Integer.MAX_VALUE buffers.
        "remainTransientStoreBufferNumbs": str(2**31 - 1),
        "commitLogMinOffset": str(store.get_min_phy_offset()),
        "commitLogMaxOffset": str(store.get_max_phy_offset()),
        "commitLogDiskRatio": f"{disk_ratio}",
        f"commitLogDiskRatio_{commit_log_dir}": f"{disk_ratio}",
        "consumeQueueDiskRatio": f"{_disk_ratio(os.path.join(root, 'consumequeue'), root)}",
        "commitLogDirCapacity": capacity,
    }
