"""The console's JSON API: what each page shows, read through MQAdminExt (so it works against any cluster), and
the admin actions, refused unless the console was started with admin rights."""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import web

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQBrokerException, MQClientException
from pocketmq.client.impl.mq_admin import broker_of_offset_msg_id
from pocketmq.client.message import Message
from pocketmq.client.producer.producer import Producer
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DLQ_GROUP_TOPIC_PREFIX as DLQ_PREFIX
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX, is_system_group
from pocketmq.common.mix_all import get_retry_topic as retry_topic
from pocketmq.common.topic_validator import is_system_topic as _is_system_topic
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import ResponseCode

from . import storage_view
from .fanout import BrokerCalls, consume_stats_by_group
from .inputs import ApiError, finite, json_body, json_or_none, number, query_arg, text
from .rebalances import RebalanceLog, parse_history
from .storage_reads import StorageBusy, StorageReads

JsonHandler = Callable[[web.Request], Awaitable[Any]]

CONSOLE_PRODUCER_GROUP = "CONSOLE_PRODUCER"
MAX_SEARCH = 64
SEARCH_BATCH = 32  # messages per pull in a search by time, as the Dashboard's
MAX_TOPIC_SAMPLES = 1000
MAX_QUEUES = 1024


class ConsoleApi:
    def __init__(self, admin: MQAdminExt, namesrv_addr: str, admin_rights: bool, store_roots: dict[str, str],
                 access_key: str | None = None, secret_key: str | None = None,
                 hash_slots: int = 5_000_000, index_num: int = 20_000_000) -> None:
        self.admin = admin
        self.namesrv_addr = namesrv_addr
        self.admin_rights = admin_rights
        self.store_roots = store_roots  # broker name -> store root, for the storage page
        self.access_key, self.secret_key = access_key, secret_key
        self.hash_slots, self.index_num = hash_slots, index_num
        self.timer_precision_ms = 1000  # the store's timerPrecisionMs: the wheel's slots hold time / precision
        # topic -> (monotonic time, (broker, queue id) -> max offset) at its last view: each queue's TPS is the
        # offsets it gained since, per second. Bounded: the oldest topics are forgotten first.
        self._topic_samples: OrderedDict[str, tuple[float, dict[tuple[str, int], int]]] = OrderedDict()
        self._rebalances = RebalanceLog()
        self._producer: Producer | None = None
        self._producer_lock = asyncio.Lock()
        self.storage_reads = StorageReads()

    def routes(self) -> list[tuple[str, str, JsonHandler]]:
        """(method, path, handler): each handler answers a JSON-ready value."""
        get, post = "GET", "POST"
        return [
            (get, "/api/info", self.info),
            (get, "/api/cluster", self.cluster),
            (get, "/api/topics", self.topics),
            (get, "/api/topic", self.topic),
            (post, "/api/topic", self.create_topic),
            (post, "/api/topic/delete", self.delete_topic),
            (get, "/api/groups", self.groups),
            (get, "/api/group", self.group),
            (post, "/api/group/reset", self.reset_offsets),
            (get, "/api/messages", self.search_messages),
            (get, "/api/message", self.message),
            (post, "/api/send", self.send),
            (get, "/api/storage/files", self.storage_files),
            (get, "/api/storage/record", self.storage_record),
        ]

    async def close(self) -> None:
        if self._producer is not None:
            await self._producer.shutdown()

    # --- plumbing ------------------------------------------------------------------------------------------

    def _require_admin(self) -> None:
        if not self.admin_rights:
            raise ApiError(403, "this console is read-only: start it with --admin to change the cluster")

    def _store_root(self, request: web.Request) -> str:
        if not self.store_roots:
            raise ApiError(404, "no store to show: run the console inside `pocketmq dev` or give --store")
        broker = request.query.get("broker") or next(iter(self.store_roots))
        root = self.store_roots.get(broker)
        if root is None:
            raise ApiError(404, f"no store known for broker {broker!r}")
        return root

    # --- info and cluster ----------------------------------------------------------------------------------

    async def info(self, request: web.Request) -> dict[str, Any]:
        return {"namesrv": self.namesrv_addr, "admin": self.admin_rights, "storage": sorted(self.store_roots)}

    async def cluster(self, request: web.Request) -> dict[str, Any]:
        info = await self.admin.examine_broker_cluster_info()
        addrs = [(cluster, name, broker_id, addr)
                 for cluster, names in sorted(info.cluster_addr_table.items()) for name in sorted(names)
                 if (bd := info.broker_addr_table.get(name)) is not None
                 for broker_id, addr in sorted(bd.broker_addrs.items())]
        calls = BrokerCalls()  # concurrently: a broker that never answers costs the page one timeout, not one each
        runtimes = await asyncio.gather(*(calls.ask(addr, partial(self.admin.fetch_broker_runtime_stats, addr))
                                          for *_, addr in addrs))
        rows = []
        now = time.time() * 1000
        for (cluster, name, broker_id, addr), rt in zip(addrs, runtimes, strict=True):
            row: dict[str, Any] = {"cluster": cluster, "broker": name, "id": broker_id, "addr": addr}
            if rt is None:
                rows.append({**row, "error": calls.errors.get(addr, "no answer")})
                continue
            boot = _int(rt.get("bootTimestamp"))
            rows.append({
                **row, "version": rt.get("brokerVersionDesc", ""),
                "put_tps": _first(rt.get("putTps", "")), "get_tps": _first(rt.get("getTransferedTps", "")),
                "put_today": _int(rt.get("msgPutTotalTodayNow")), "get_today": _int(rt.get("msgGetTotalTodayNow")),
                "disk_ratio": _float(rt.get("commitLogDiskRatio")),
                "commitlog_min": _int(rt.get("commitLogMinOffset")),
                "commitlog_max": _int(rt.get("commitLogMaxOffset")),
                "dispatch_behind": _int(rt.get("dispatchBehindBytes")),
                "uptime_s": round((now - boot) / 1000) if boot else None,
            })
        return {"namesrv": self.admin.api.namesrv_addr_list, "brokers": rows}

    # --- topics --------------------------------------------------------------------------------------------

    async def topics(self, request: web.Request) -> dict[str, Any]:
        names = await self.admin.fetch_all_topic_list()
        # The cluster and broker names are topics too (a broker registers them): the name server says which.
        try:
            named = set(await self.admin.get_system_topic_list_from_ns())
        except (MQClientException, MQBrokerException):
            named = set()
        return {"topics": [{"topic": t, "system": _is_system_topic(t) or t in named} for t in names]}

    async def topic(self, request: web.Request) -> dict[str, Any]:
        topic = query_arg(request, "topic")
        route = await self.admin.examine_topic_route_info(topic)
        stats = await self.admin.examine_topic_stats(topic)
        now = time.monotonic()
        offsets = {(mq.broker_name, mq.queue_id): o.max_offset for mq, o in stats.offset_table.items()}
        then, before = self._topic_samples.pop(topic, (now, {}))
        self._topic_samples[topic] = (now, offsets)
        while len(self._topic_samples) > MAX_TOPIC_SAMPLES:
            self._topic_samples.popitem(last=False)
        elapsed = now - then
        queues = [{"broker": mq.broker_name, "queue_id": mq.queue_id, "min_offset": o.min_offset,
                   "max_offset": o.max_offset, "last_update": o.last_update_timestamp,
                   "tps": (round((o.max_offset - before[(mq.broker_name, mq.queue_id)]) / elapsed, 2)
                           if elapsed > 0 and (mq.broker_name, mq.queue_id) in before else None)}
                  for mq, o in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id))]
        try:
            groups = await self.admin.query_topic_consume_by_who(topic)
        except (MQClientException, MQBrokerException):
            groups = []
        return {"topic": topic, "queues": queues, "groups": groups,
                "route": {"queue_datas": [q.to_dict() for q in route.queue_datas],
                          "broker_datas": [{"broker": b.broker_name, "cluster": b.cluster,
                                            "addrs": {str(k): v for k, v in b.broker_addrs.items()}}
                                           for b in route.broker_datas]}}

    async def create_topic(self, request: web.Request) -> dict[str, Any]:
        self._require_admin()
        body = await json_body(request)
        topic = text(body, "topic").strip()
        if not topic:
            raise ApiError(400, "give a topic name")
        queues = number(body.get("queues", 4), "queues", 1, MAX_QUEUES)
        cluster = await self._cluster(body)
        tc = TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues)
        addrs = await self.admin.create_topic(tc, cluster=cluster)
        return {"created": topic, "brokers": addrs}

    async def _cluster(self, body: dict[str, Any]) -> str | None:
        """The body's cluster, else the first the name server knows."""
        given = text(body, "cluster")
        return given or next(iter((await self.admin.examine_broker_cluster_info()).cluster_addr_table), None)

    async def delete_topic(self, request: web.Request) -> dict[str, Any]:
        self._require_admin()
        body = await json_body(request)
        topic = text(body, "topic").strip()
        cluster = await self._cluster(body)
        if not topic or not cluster:
            raise ApiError(400, "give a topic (and a cluster when there are several)")
        return {"deleted": topic, "brokers": await self.admin.delete_topic(topic, cluster)}

    # --- consumer groups -----------------------------------------------------------------------------------

    async def groups(self, request: web.Request) -> dict[str, Any]:
        # Each master's groups and all their stats on it: two requests a master (as /metrics).
        masters = list((await self.admin.master_addrs()).values())
        calls = BrokerCalls()
        tables = await asyncio.gather(*(calls.ask(a, partial(self.admin.get_all_subscription_group, a))
                                        for a in masters))
        by_broker = await consume_stats_by_group(self.admin, calls, masters)
        stats: dict[str, list[Any]] = {}
        for groups, found in zip(tables, by_broker, strict=True):
            for g in groups or ():
                stats.setdefault(g, []).extend((found or {}).get(g, ()))
        rows = [{"group": g, "system": _is_system_group(g),
                 "lag": sum(s.compute_total_diff() for s in found) if found else None,
                 "tps": _tps(sum(s.consume_tps for s in found)) if found else None}
                for g, found in sorted(stats.items())]
        return {"groups": rows}

    async def group(self, request: web.Request) -> dict[str, Any]:
        group = query_arg(request, "group")
        out: dict[str, Any] = {"group": group, "queues": [], "clients": [], "lag": 0}
        try:
            stats = await self.admin.examine_consume_stats(group)
        except (MQClientException, MQBrokerException) as e:
            out["error"] = str(e)
            stats = None
        owners: dict[tuple[str, str, int], str] = {}
        reported: list[dict[str, Any]] = []
        try:
            conn = await self.admin.examine_consumer_connection_info(group)
            out["clients"] = [{"client_id": c.client_id, "addr": c.client_addr, "language": c.language,
                               "version": c.version} for c in conn.connection_set]
            out["consume_type"], out["message_model"] = conn.consume_type, conn.message_model
            for c in conn.connection_set:
                try:
                    running = await self.admin.get_consumer_running_info(group, c.client_id)
                except (MQClientException, MQBrokerException):
                    continue
                out.setdefault("strategy", running.properties.get("allocateMessageQueueStrategy"))
                reported.extend(parse_history(c.client_id, running.properties))
                for key in running.mq_table:
                    owned = _parse_mq_key(key)
                    if owned is not None:
                        owners[owned] = c.client_id
        except (MQClientException, MQBrokerException):
            pass  # no consumer online
        out["rebalances"] = self._rebalances.merge(group, reported)
        if stats is not None:
            for mq, w in sorted(stats.offset_table.items(),
                                key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)):
                lag = max(0, w.broker_offset - w.consumer_offset)
                out["lag"] += lag
                out["queues"].append({"topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id,
                                      "broker_offset": w.broker_offset, "consumer_offset": w.consumer_offset,
                                      "lag": lag, "last_timestamp": w.last_timestamp,
                                      "client": owners.get((mq.topic, mq.broker_name, mq.queue_id), "")})
            out["tps"] = _tps(stats.consume_tps)
        return out

    async def reset_offsets(self, request: web.Request) -> dict[str, Any]:
        self._require_admin()
        body = await json_body(request)
        group, topic = text(body, "group"), text(body, "topic")
        if not group or not topic:
            raise ApiError(400, "give a group and a topic")
        timestamp = number(body.get("timestamp", -1), "timestamp")
        result = await self.admin.reset_offset_by_timestamp(topic, group, timestamp)
        return {"online": result.online,
                "offsets": [{"broker": mq.broker_name, "queue_id": mq.queue_id, "offset": off}
                            for mq, off in sorted(result.offsets.items(),
                                                  key=lambda kv: (kv[0].broker_name, kv[0].queue_id))]}

    # --- messages ------------------------------------------------------------------------------------------

    async def search_messages(self, request: web.Request) -> dict[str, Any]:
        """By topic and time, by key, by unique id (msgId) or by offset id."""
        topic = query_arg(request, "topic", required=False)
        key = query_arg(request, "key", required=False)
        msg_id = query_arg(request, "msgId", required=False)
        offset_id = query_arg(request, "offsetId", required=False)
        found: list[MessageExt] = []
        if offset_id:
            msg = await self.admin.view_message_by_offset_id(offset_id)
            found = [msg] if msg else []
        elif msg_id:
            msg = await self.admin.view_message(msg_id, topic or None)
            found = [msg] if msg else []
        elif key:
            if not topic:
                raise ApiError(400, "a search by key needs its topic")
            found = await self.admin.query_message(topic, key, MAX_SEARCH)
        elif topic:
            begin = number(request.query.get("begin") or 0, "begin")
            end = number(request.query.get("end") or int(time.time() * 1000) + 60_000, "end")
            found = await self._by_time(topic, begin, end)
        else:
            raise ApiError(400, "give a topic (and a time range), a key, a msgId or an offsetId")
        return {"messages": [_summary(m) for m in found[:MAX_SEARCH]]}

    async def _by_time(self, topic: str, begin: int, end: int) -> list[MessageExt]:
        """Up to MAX_SEARCH messages stored between ``begin`` and ``end``, queue by queue, as RocketMQ Dashboard's
        queryMessageByTopic: each queue read from the offset the broker's SEARCH_OFFSET_BY_TIMESTAMP gives for
        ``begin`` (not from its min offset: a big queue would be read to its end first)."""
        stats = await self.admin.examine_topic_stats(topic)
        out: list[MessageExt] = []
        for mq, o in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id)):
            if len(out) >= MAX_SEARCH:
                break
            out += await self._queue_by_time(topic, mq.broker_name, mq.queue_id, o.max_offset, begin, end,
                                             MAX_SEARCH - len(out))
        return sorted(out, key=lambda m: m.store_timestamp)

    async def _queue_by_time(self, topic: str, broker: str, queue_id: int, max_offset: int, begin: int, end: int,
                             wanted: int) -> list[MessageExt]:
        offset = await self.admin.search_offset(topic, broker, queue_id, begin)
        last = await self.admin.search_offset(topic, broker, queue_id, end)
        found: list[MessageExt] = []
        while offset <= last and offset < max_offset and len(found) < wanted:
            batch = await self.admin.pull_messages(topic, broker, queue_id, offset, SEARCH_BATCH)
            if not batch:
                break
            for msg in batch:
                if msg.store_timestamp > end or len(found) >= wanted:
                    return found
                if msg.store_timestamp >= begin:
                    found.append(msg)
            offset = batch[-1].queue_offset + 1
        return found

    async def message(self, request: web.Request) -> dict[str, Any]:
        msg_id = query_arg(request, "msgId")
        topic = query_arg(request, "topic", required=False)
        msg = await self.admin.view_message(msg_id, topic or None)
        if msg is None:
            raise ApiError(404, f"no message {msg_id}")
        out = _summary(msg)
        out["properties"] = dict(msg.properties)
        out["body_hex"] = msg.body.hex()
        out["body_text"] = msg.body.decode("utf-8", "replace")
        out["body_json"] = json_or_none(msg.body)
        out["history"] = await self._retry_history(msg)
        return out

    async def _retry_history(self, msg: MessageExt) -> list[dict[str, Any]]:
        """The copies of the message that consumers sent back: a copy keeps the UNIQ_KEY, and once its delay is
        over it is stored (and indexed) in %RETRY%group, or in %DLQ%group after the last retry."""
        if not msg.uniq_key or msg.topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_PREFIX)):
            return []
        try:
            groups = await self.admin.query_topic_consume_by_who(msg.topic)
        except (MQClientException, MQBrokerException):
            return []
        out: list[dict[str, Any]] = []
        for group in groups:
            for kind, topic in (("retry", retry_topic(group)), ("DLQ", DLQ_PREFIX + group)):
                try:
                    copies = await self.admin.query_message(topic, msg.uniq_key, 32, unique_key=True)
                except (MQClientException, MQBrokerException):
                    continue  # no such topic: never sent back
                out += [{**_summary(m), "group": group, "kind": kind} for m in copies]
        return sorted(out, key=lambda m: m["store_timestamp"])

    async def send(self, request: web.Request) -> dict[str, Any]:
        self._require_admin()
        body = await json_body(request)
        topic = text(body, "topic").strip()
        if not topic:
            raise ApiError(400, "give a topic")
        msg = Message(topic, text(body, "body").encode(), tags=text(body, "tags") or None,
                      keys=text(body, "keys") or None)
        producer = await self._get_producer()
        result = await producer.send(msg)
        where = broker_of_offset_msg_id(result.offset_msg_id)
        return {"msg_id": result.msg_id, "offset_msg_id": result.offset_msg_id,
                "commitlog_offset": where[1] if where else None,
                "broker": result.message_queue.broker_name, "queue_id": result.message_queue.queue_id,
                "queue_offset": result.queue_offset, "status": result.send_status.name}

    async def _get_producer(self) -> Producer:
        async with self._producer_lock:
            if self._producer is None:
                producer = Producer(CONSOLE_PRODUCER_GROUP, self.namesrv_addr, access_key=self.access_key,
                                    secret_key=self.secret_key)
                await producer.start()
                self._producer = producer
            return self._producer

    # --- storage -------------------------------------------------------------------------------------------

    async def storage_files(self, request: web.Request) -> dict[str, Any]:
        root = self._store_root(request)
        return await self.storage_reads.run(storage_view.files_view, root, storage_view.MAX_RECORDS,
                                            self.timer_precision_ms)

    async def storage_record(self, request: web.Request) -> dict[str, Any]:
        root = self._store_root(request)
        offset = number(query_arg(request, "offset"), "offset", 0)
        try:
            return await self.storage_reads.run(storage_view.record_view, root, offset, self.hash_slots, self.index_num)
        except LookupError as e:
            raise ApiError(404, str(e))


def _summary(m: MessageExt) -> dict[str, Any]:
    return {"msg_id": m.uniq_key or m.offset_msg_id, "offset_msg_id": m.offset_msg_id, "topic": m.topic,
            "tags": m.tags, "keys": m.keys, "queue_id": m.queue_id, "queue_offset": m.queue_offset,
            "commitlog_offset": m.commit_log_offset, "store_timestamp": m.store_timestamp,
            "born_timestamp": m.born_timestamp, "born_host": m.born_host, "store_host": m.store_host,
            "reconsume_times": m.reconsume_times, "size": m.store_size, "body_size": len(m.body),
            "retry_topic": m.properties.get("RETRY_TOPIC"), "origin_msg_id": m.properties.get("ORIGIN_MESSAGE_ID")}


def _parse_mq_key(key: str) -> tuple[str, str, int] | None:
    """A ConsumerRunningInfo mqTable key (the queue as fastjson writes it) as (topic, broker, queue id)."""
    d = json_or_none(key)
    try:
        return str(d["topic"]), str(d["brokerName"]), int(d["queueId"])
    except (KeyError, TypeError, ValueError):  # (not an object, a field missing, a queue id that is no number)
        return None


def _is_system_group(group: str) -> bool:
    return is_system_group(group) or group == CONSOLE_PRODUCER_GROUP


def _first(tps: str) -> float:
    try:
        return finite(float(tps.split()[0]))
    except (IndexError, ValueError):
        return 0.0


def _tps(v: float) -> float | None:
    """A broker's consume TPS to show; None for NaN or an infinity (a broker's JSON may carry them: the page's
    JSON cannot)."""
    return round(v, 2) if math.isfinite(v) else None


def _int(v: str | None) -> int:
    try:
        return int(v or 0)
    except ValueError:
        return 0


def _float(v: str | None) -> float | None:
    try:
        return finite(float(v)) if v is not None else None
    except ValueError:
        return None


def error_response(e: Exception) -> tuple[int, dict[str, Any]]:
    """An exception as (HTTP status, JSON body): refusals keep the broker's response code and remark."""
    if isinstance(e, ApiError):
        return e.status, {"error": str(e), "code": e.code}
    if isinstance(e, StorageBusy):
        return 503, {"error": str(e), "code": None}
    if isinstance(e, MQBrokerException):
        status = 403 if e.response_code == ResponseCode.NO_PERMISSION else 502
        return status, {"error": str(e), "code": e.response_code}
    if isinstance(e, MQClientException):
        if e.response_code == ResponseCode.TOPIC_NOT_EXIST:
            return 404, {"error": str(e), "code": e.response_code}
        return 400, {"error": str(e), "code": getattr(e, "response_code", None)}
    return 500, {"error": f"{type(e).__name__}: {e}"}
