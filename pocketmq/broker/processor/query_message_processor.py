"""QueryMessageProcessor: QUERY_MESSAGE (12) by key and VIEW_MESSAGE_BY_ID (33) by commit-log offset."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.mix_all import UNIQUE_MSG_QUERY_FLAG
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader
from pocketmq.remoting.transport import Channel

from .base import BrokerProcessor, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

DEFAULT_QUERY_MAX_NUM = 32  # MessageStoreConfig.defaultQueryMaxNum


class QueryMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.QUERY_MESSAGE] = self.query_message
        self.handlers[RequestCode.VIEW_MESSAGE_BY_ID] = self.view_message_by_id

    async def query_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(QueryMessageRequestHeader)
        max_num = header.max_num
        if request.ext_fields.get(UNIQUE_MSG_QUERY_FLAG) == "true":  # (4.9.7's equals: "TRUE" is not the flag)
            max_num = DEFAULT_QUERY_MAX_NUM
        if max_num < 0:
            # 4.9.7 sizes its list of offsets by maxNum before anything else: a negative one is its
            # IllegalArgumentException, SYSTEM_ERROR (0 finds nothing, QUERY_NOT_FOUND)
            return response(request, ResponseCode.SYSTEM_ERROR, f"maxNum {max_num} is negative")
        c = self.controller
        result = await c.run_in_pull_executor(
            c.store.query_message, header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp
        )
        resp_header = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        )
        if result.buffers:
            return response(request, ext_fields=resp_header, body=result.body)
        return response(
            request,
            ResponseCode.QUERY_NOT_FOUND,
            "can not find message, maybe time range not correct",
            ext_fields=resp_header,
        )

    async def view_message_by_id(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(ViewMessageRequestHeader)
        c = self.controller
        record = None
        if header.offset >= 0:
            record = await c.run_in_pull_executor(c.store.select_one_message_by_offset, header.offset)
        if record is None:
            return response(request, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {header.offset}")
        return response(request, body=record)
