"""PeekMessageProcessor: PEEK_MESSAGE (200052): what a pop would return, without taking it (no offset moves, no
checkpoint, no long polling); PULL_NOT_FOUND when there is nothing. The answer's restNum counts the messages the
queues held for the group before the peek; its pop time, invisible time and revive queue are 0."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.pop_header import PeekMessageRequestHeader, PopMessageResponseHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import TagsFilter
from pocketmq.storage.results import GetMessageStatus

from .base import BrokerProcessor, response
from .pop_answers import with_blank_header
from .pop_request_checks import check_topic_and_group

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

_ALL = TagsFilter(None)
_BLANK = PopMessageResponseHeader(0, 0, 0, 0)


class PeekMessageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.PEEK_MESSAGE] = self.peek_message

    async def peek_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(PeekMessageRequestHeader)
        pop = self.controller.pop_message_processor
        tc = check_topic_and_group(self.controller, channel, request, header.topic, header.queue_id,
                                   header.consumer_group)
        if isinstance(tc, RemotingCommand):
            return with_blank_header(tc, _BLANK)
        # As 5.5.0's PeekMessageProcessor: no bound of 32 (that is a pop's); 0 reads nothing (PULL_NOT_FOUND, the
        # rest counted). A negative count is refused, after the checks above (5.5.0: SYSTEM_ERROR there, an
        # ArrayList of negative capacity). The store's read takes at most maxTransferCountOnMessageInMemory a queue
        # whatever is asked.
        if header.max_msg_nums < 0:
            return with_blank_header(response(request, ResponseCode.INVALID_PARAMETER,
                                              f"maxMsgNums {header.max_msg_nums} is below 0"), _BLANK)
        group = header.consumer_group
        targets = [(header.topic, q) for q in (range(tc.read_queue_nums) if header.queue_id < 0 else [header.queue_id])]
        retry = self.controller.topic_config_manager.select_topic_config(pop.retry_topic(header.topic, group))
        if retry is not None:
            targets += [(retry.topic_name, q) for q in range(retry.read_queue_nums)]
        buffers: list[bytes] = []
        count = rest = 0
        for topic, queue_id in targets:
            offset = pop.offsets.pop_offset(group, topic, queue_id, 1, init=False)
            # (what the queues held before the peek, as 5.5.0 counts it: a peek takes nothing, so nothing is left
            # fewer by it)
            rest += max(0, self.controller.store.get_max_offset_in_queue(topic, queue_id) - offset)
            need = header.max_msg_nums - count
            if need > 0:
                result = await pop.offsets.read(group, topic, queue_id, offset, need, _ALL)
                buffers += result.buffers
                count += result.message_count
        # No pop time: nothing was popped, no invisible time started (5.5.0 leaves the header's fields at 0 too).
        answer = PopMessageResponseHeader(0, 0, 0, rest)
        if not count:
            return response(request, ResponseCode.PULL_NOT_FOUND, GetMessageStatus.NO_MESSAGE_IN_QUEUE.value,
                            ext_fields=answer)
        return response(request, ResponseCode.SUCCESS, GetMessageStatus.FOUND.value, ext_fields=answer,
                        body=b"".join(buffers))
