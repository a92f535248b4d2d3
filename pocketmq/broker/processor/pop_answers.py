"""What the answers of RocketMQ 5's POP family (pop, peek, notification, polling info, ack, change invisible time)
share with Apache RocketMQ 5.5.0's: the TOPIC_NOT_EXIST and SUBSCRIPTION_GROUP_NOT_EXIST remarks with 5.x's FAQ
address, the remark an answer has when 5.5.0's processor never sets one, and the fields a refusal still carries."""

from __future__ import annotations

from pocketmq.common.faq_url import APPLY_TOPIC_URL_5, SUBSCRIPTION_GROUP_NOT_EXIST_URL_5, suggest_todo
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import CommandHeader

from .base import response


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
