"""The console's message pages, as RocketMQ Dashboard's MessageController has them (queryMessageByTopic, by key,
by id, viewMessage with the copies its consumers sent back), and the admin's send."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from aiohttp import web

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQBrokerException, MQClientException
from pocketmq.client.impl.mq_admin import broker_of_offset_msg_id
from pocketmq.client.message import Message
from pocketmq.client.producer.producer import Producer
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import DLQ_GROUP_TOPIC_PREFIX as DLQ_PREFIX
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX
from pocketmq.common.mix_all import get_retry_topic as retry_topic

from .inputs import ApiError, json_body, json_or_none, number, query_arg, text

CONSOLE_PRODUCER_GROUP = "CONSOLE_PRODUCER"
MAX_SEARCH = 64
SEARCH_BATCH = 32  # messages per pull in a search by time, as the Dashboard's


class ConsoleMessages:
    """ConsoleApi's message handlers (a mixin: the state is the API's)."""

    admin: MQAdminExt
    namesrv_addr: str
    access_key: str | None
    secret_key: str | None
    _producer: Producer | None
    _producer_lock: asyncio.Lock

    if TYPE_CHECKING:
        def _require_admin(self) -> None: ...

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


def _summary(m: MessageExt) -> dict[str, Any]:
    return {"msg_id": m.uniq_key or m.offset_msg_id, "offset_msg_id": m.offset_msg_id, "topic": m.topic,
            "tags": m.tags, "keys": m.keys, "queue_id": m.queue_id, "queue_offset": m.queue_offset,
            "commitlog_offset": m.commit_log_offset, "store_timestamp": m.store_timestamp,
            "born_timestamp": m.born_timestamp, "born_host": m.born_host, "store_host": m.store_host,
            "reconsume_times": m.reconsume_times, "size": m.store_size, "body_size": len(m.body),
            "retry_topic": m.properties.get("RETRY_TOPIC"), "origin_msg_id": m.properties.get("ORIGIN_MESSAGE_ID")}
