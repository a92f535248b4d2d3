"""What the answers of RocketMQ 5's POP family (pop, peek, notification, polling info, ack, change invisible time)
share with Apache RocketMQ 5.5.0's: the TOPIC_NOT_EXIST and SUBSCRIPTION_GROUP_NOT_EXIST remarks with 5.x's FAQ
address, the remark an answer has when 5.5.0's processor never sets one, and the fields a refusal still carries;
and a pop's own answer, from what its reads gathered (pop_queue_reader.PopContext)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.faq_url import APPLY_TOPIC_URL_5, SUBSCRIPTION_GROUP_NOT_EXIST_URL_5, suggest_todo
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import CommandHeader
from pocketmq.remoting.pop_header import PopMessageResponseHeader
from pocketmq.storage.results import GetMessageStatus

from .base import response

if TYPE_CHECKING:
    from .pop_queue_reader import PopContext


def topic_not_exist(request: RemotingCommand, topic: str) -> RemotingCommand:
    return response(request, ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please! {suggest_todo(APPLY_TOPIC_URL_5)}")


def group_not_exist(request: RemotingCommand, group: str) -> RemotingCommand:
    return response(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                    f"subscription group [{group}] does not exist, {suggest_todo(SUBSCRIPTION_GROUP_NOT_EXIST_URL_5)}")


def with_blank_header(answer: RemotingCommand, blank: CommandHeader) -> RemotingCommand:
    """5.5.0 builds these answers from their response header's class before its first check, so a refusal carries
    the header's primitive fields at Java's defaults (0, false): ``blank`` holds them."""
    if not answer.ext_fields:
        answer.ext_fields = blank.to_ext()
    return answer


def pop_found(request: RemotingCommand, ctx: PopContext) -> RemotingCommand:
    return response(request, ResponseCode.SUCCESS, GetMessageStatus.FOUND.value, ext_fields=pop_response_header(ctx),
                    body=b"".join(ctx.buffers))


def pop_response_header(ctx: PopContext) -> PopMessageResponseHeader:
    return PopMessageResponseHeader(
        ctx.pop_time, ctx.header.invisible_time, ctx.revive_qid, ctx.rest_num,
        ";".join(ctx.start_offset_info), ";".join(ctx.msg_offset_info),
        ";".join(ctx.order_count_info) if ctx.order else None,
    )
