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
from pocketmq.client.producer.producer import Producer
from pocketmq.common.mix_all import is_system_group
from pocketmq.common.topic_validator import is_system_topic as _is_system_topic
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import ResponseCode

from . import storage_view
from .fanout import BrokerCalls, consume_stats_by_group
from .inputs import ApiError, finite, json_body, json_or_none, number, query_arg, text
from .message_api import CONSOLE_PRODUCER_GROUP, ConsoleMessages
from .rebalances import RebalanceLog, parse_history
from .storage_reads import StorageBusy, StorageReads

JsonHandler = Callable[[web.Request], Awaitable[Any]]

MAX_TOPIC_SAMPLES = 1000
MAX_QUEUES = 1024


class ConsoleApi(ConsoleMessages):
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
