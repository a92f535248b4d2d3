"""MQAdminExt's message lookups (queryMsgById, queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset, searchOffset):
by offset message id from the broker it names, by key or unique key through the brokers' indexes, by queue offset
as a pull, a queue's offset at a time by the broker's binary search; and a half message's transaction check
resumed (resumeCheckHalfMessage)."""

from __future__ import annotations

import logging

from pocketmq.common.codec import CorruptRecordError, decode_all
from pocketmq.common.java_numbers import LONG_MAX
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import TOOLS_CONSUMER_GROUP
from pocketmq.common.pull_sys_flag import FLAG_SUBSCRIPTION
from pocketmq.common.topic_validator import is_system_topic
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    PullMessageRequestHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    ViewMessageRequestHeader,
)
from pocketmq.remoting.transaction_header import ResumeCheckHalfMessageRequestHeader

from ..exceptions import MQClientException
from ..impl.mq_admin import broker_of_offset_msg_id, key_matches
from ..impl.mq_client_api import UNIQUE_MSG_QUERY_FLAG
from .admin_client import AdminClient

log = logging.getLogger(__name__)


class MessageAdmin(AdminClient):
    # --- messages ------------------------------------------------------------------------------------------

    def _decode_messages(self, data: bytes | None, addr: str) -> list[MessageExt]:
        try:
            return decode_all(data or b"", decompress=True)
        except (CorruptRecordError, ValueError) as e:
            raise MQClientException(f"undecodable messages from {addr}: {e}") from e

    async def view_message_by_offset_id(self, offset_msg_id: str) -> MessageExt | None:
        """The message an offsetMsgId names, read from the broker the id names. That broker must be one the name
        servers know: the id is the caller's input, and the remoting client keeps a connection to every address
        it dials, so an id naming any host:port would open (and hold) a connection there."""
        where = broker_of_offset_msg_id(offset_msg_id)
        if where is None:
            raise MQClientException(f"{offset_msg_id!r} is not an offset message id")
        if where[0] not in await self._broker_addrs():
            raise MQClientException(f"offset message id {offset_msg_id} names {where[0]}, not a broker of this cluster")
        return await self._view_at(*where)

    async def _broker_addrs(self) -> set[str]:
        info = await self.examine_broker_cluster_info()
        return {a for bd in info.broker_addr_table.values() for a in bd.broker_addrs.values()}

    async def _view_at(self, addr: str, phy: int) -> MessageExt | None:
        r = await self._broker(addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(phy))
        if r.code != ResponseCode.SUCCESS:
            return None
        msgs = self._decode_messages(r.body, addr)
        return msgs[0] if msgs else None

    async def query_message(
        self, topic: str, key: str, max_num: int = 64, begin: int = 0, end: int | None = None, unique_key: bool = False
    ) -> list[MessageExt]:
        end = LONG_MAX if end is None else end  # (RocketMQ's queryMessageByUniqKey asks to Long.MAX_VALUE)
        header = QueryMessageRequestHeader(topic, key, max_num, begin, end)
        out: list[MessageExt] = []
        for addr in (await self._topic_masters(topic)).values():
            request = RemotingCommand.request(RequestCode.QUERY_MESSAGE, header)
            if unique_key:
                request.ext_fields[UNIQUE_MSG_QUERY_FLAG] = "true"
            r = await self.api.remoting_client.invoke(addr, request, self.timeout)
            if r.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            msgs = self._decode_messages(self._ok(r, addr).body, addr)
            out += [m for m in msgs if key_matches(m, topic, key, unique_key)]
        return out

    async def query_message_by_unique_key(self, topic: str, msg_id: str) -> MessageExt | None:
        found = await self.query_message(topic, msg_id, 32, unique_key=True)
        return min(found, key=lambda m: m.store_timestamp) if found else None

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt | None:
        """By either id, as queryMsgById: the offsetMsgId when it names a known broker, else the UNIQ_KEY in the
        index of ``topic``'s brokers (of every topic's when no topic is given)."""
        where = broker_of_offset_msg_id(msg_id)
        if where is not None and where[0] in await self._broker_addrs():
            msg = await self._view_at(*where)
            if msg is not None and (topic is None or msg.topic == topic):
                return msg
        topics = [topic] if topic else [t for t in await self.fetch_all_topic_list() if not is_system_topic(t)]
        for t in topics:
            try:
                msg = await self.query_message_by_unique_key(t, msg_id)
            except MQClientException:
                continue
            if msg is not None:
                return msg
        return None

    async def resume_check_half_message(self, msg_id: str, topic: str | None = None) -> bool:
        """Have the broker that stored a half message ask its producer about it again, up to transactionCheckMax
        times more (RESUME_CHECK_HALF_MESSAGE): the message the check gave up on (its copy in
        TRANS_CHECK_MAX_TIME_TOPIC) or its last copy in the half topic, by offsetMsgId, or with ``topic`` by
        either id, as view_message finds it. False when the broker refuses, as resumeCheckHalfMessage answers."""
        msg = await (self.view_message(msg_id, topic) if topic else self.view_message_by_offset_id(msg_id))
        if msg is None:
            raise MQClientException(f"no message {msg_id}" + (f" in {topic}" if topic else ""))
        addr = msg.store_host
        if addr not in await self._broker_addrs():  # (an address read from a record: not dialled unless known)
            raise MQClientException(f"message {msg_id} was stored by {addr}, not a broker of this cluster")
        header = ResumeCheckHalfMessageRequestHeader(msg.offset_msg_id)
        r = await self._broker(addr, RequestCode.RESUME_CHECK_HALF_MESSAGE, header)
        if r.code != ResponseCode.SUCCESS:
            log.error("resuming the check of half message %s failed: %s", msg_id, r.remark)
        return r.code == ResponseCode.SUCCESS

    async def query_message_by_offset(
        self, topic: str, broker_name: str, queue_id: int, offset: int
    ) -> MessageExt | None:
        """The message at a queue offset (queryMsgByOffset: a pull of one message by TOOLS_CONSUMER)."""
        msgs = await self.pull_messages(topic, broker_name, queue_id, offset, 1)
        return msgs[0] if msgs else None

    async def pull_messages(
        self, topic: str, broker_name: str, queue_id: int, offset: int, max_nums: int = 32
    ) -> list[MessageExt]:
        """Up to ``max_nums`` messages of a queue from ``offset`` (a pull by TOOLS_CONSUMER, as the Dashboard's
        search by time); none when the broker has none there (past the end, or the offset moved)."""
        addr = await self._master_of(topic, broker_name)
        header = PullMessageRequestHeader(
            TOOLS_CONSUMER_GROUP, topic, queue_id, offset, max_nums, FLAG_SUBSCRIPTION, 0, 0, 0, "*", "TAG"
        )
        r = await self._broker(addr, RequestCode.PULL_MESSAGE, header)
        if r.code != ResponseCode.SUCCESS:
            return []
        return self._decode_messages(r.body, addr)

    async def search_offset(self, topic: str, broker_name: str, queue_id: int, timestamp: int) -> int:
        """The offset of the queue's first message stored at or after ``timestamp`` ms, the max offset when
        there is none (SEARCH_OFFSET_BY_TIMESTAMP: a binary search on the broker, mqadmin's searchOffset)."""
        return await self.search_offset_at(await self._master_of(topic, broker_name), topic, queue_id, timestamp)

    async def search_offset_at(self, addr: str, topic: str, queue_id: int, timestamp: int) -> int:
        """search_offset of the broker at ``addr``."""
        header = SearchOffsetRequestHeader(topic, queue_id, timestamp)
        r = self._ok(await self._broker(addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header), addr)
        return r.decode_header(SearchOffsetResponseHeader).offset

    async def _master_of(self, topic: str, broker_name: str) -> str:
        masters = await self._topic_masters(topic)
        addr = masters.get(broker_name)
        if addr is None:
            raise MQClientException(f"broker {broker_name!r} does not serve {topic} (it has: {', '.join(masters)})")
        return addr
