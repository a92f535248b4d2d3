"""The checks of a pop request before anything is read, in RocketMQ 5's PopMessageProcessor.processRequest order: the
broker, the counts, the topic and queue, the group, the filter; then pocketmq's own refusals of values 5.5.0
fails or parks on. Peek, notification and polling info call the topic-and-group checks (check_topic_and_group)
themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.clock import now_ms
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.codes import PermName, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.pop_header import PopMessageRequestHeader
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import MessageFilter

from ..filter import (
    EXPRESSION_TYPE_TAG,
    SUB_ALL,
    SubscriptionParseError,
    build_subscription_data,
    message_filter_for,
)
from ..longpolling.pop_long_polling_service import born_time_of, timeout_too_much
from .base import log, response
from .pop_answers import group_not_exist, topic_not_exist

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

MAX_POP_NUMS = 32  # RocketMQ refuses more per pop


def check_pop_request(c: BrokerController, channel: Channel, request: RemotingCommand,
                      header: PopMessageRequestHeader, first_run: bool
                      ) -> RemotingCommand | tuple[TopicConfig, MessageFilter]:
    bc = c.broker_config
    now = now_ms()
    if first_run and timeout_too_much(born_time_of(header.born_time, now), header.poll_time, now):
        return response(request, ResponseCode.POLLING_TIMEOUT,
                        f"the broker[{bc.broker_ip1}] pop message is timeout too much")
    if not PermName.is_readable(bc.broker_permission):
        return response(request, ResponseCode.NO_PERMISSION,
                        f"the broker[{bc.broker_ip1}] pop message is forbidden")
    if header.max_msg_nums > MAX_POP_NUMS:
        return response(request, ResponseCode.INVALID_PARAMETER,
                        f"the broker[{bc.broker_ip1}] pop message's num is greater than {MAX_POP_NUMS}")
    if not bc.timer_wheel_enable:  # (checkpoints and acks are timer messages: revive_log.py)
        return response(request, ResponseCode.SYSTEM_ERROR,
                        f"the broker[{bc.broker_ip1}] pop message is forbidden because timerWheelEnable is false")
    tc = check_topic_and_group(c, channel, request, header.topic, header.queue_id, header.consumer_group)
    if isinstance(tc, RemotingCommand):
        return tc
    flt = pop_message_filter(request, header.topic, header.exp, header.exp_type)
    if isinstance(flt, RemotingCommand):
        return flt
    # pocketmq's own refusals (docs/compatibility.md, "a bad pop request") come where 5.5.0 fails or parks on
    # these values, after its checks of the topic, the queue, the group and the filter: a pop of a topic that
    # does not exist is TOPIC_NOT_EXIST whatever its counts and times, on both.
    if header.max_msg_nums <= 0:
        return response(request, ResponseCode.INVALID_PARAMETER,
                        f"the broker[{bc.broker_ip1}] pop message's num {header.max_msg_nums} is not 1..32")
    if header.invisible_time < 0 or header.poll_time < 0:
        return response(request, ResponseCode.INVALID_PARAMETER,
                        f"invisibleTime {header.invisible_time} and pollTime {header.poll_time} must be >= 0")
    if header.invisible_time > bc.timer_max_delay_sec * 1000:
        # (its checkpoint is a timer message, which the timer would refuse: the message would never come back)
        return response(request, ResponseCode.INVALID_PARAMETER,
                        f"invisibleTime {header.invisible_time} is past timerMaxDelaySec "
                        f"({bc.timer_max_delay_sec} s)")
    return tc, flt


def check_topic_and_group(c: BrokerController, channel: Channel, request: RemotingCommand, topic: str,
                          queue_id: int, group: str) -> RemotingCommand | TopicConfig:
    """The checks pop, peek and notification share: the topic, the queue id (below 0: all) and the group."""
    tc = c.topic_config_manager.select_topic_config(topic)
    if tc is None:
        return topic_not_exist(request, topic)
    if not PermName.is_readable(tc.perm):
        return response(request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden")
    if queue_id >= tc.read_queue_nums:
        return response(request, ResponseCode.INVALID_PARAMETER,
                        f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                        f"[{tc.read_queue_nums}] consumer:[/{channel.remote_address}]")
    sgc = c.subscription_group_manager.find_subscription_group_config(group)
    if sgc is None:
        return group_not_exist(request, group)
    if not sgc.consume_enable:
        return response(request, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
    return tc


def pop_message_filter(request: RemotingCommand, topic: str, exp: str | None, exp_type: str | None
                       ) -> MessageFilter | RemotingCommand:
    # As RocketMQ 5's PopMessageProcessor: no expression at all is TAG "*" whatever the type says, and SQL92
    # is served whether or not enablePropertyFilter is set (only pulls and CHECK_CLIENT_CONFIG look at it).
    if not exp:
        exp, exp_type = SUB_ALL, EXPRESSION_TYPE_TAG
    try:
        return message_filter_for(build_subscription_data(topic, exp, exp_type))
    except SubscriptionParseError as e:
        # (5.5.0's remark names no cause: the cause goes to the log)
        log.info("pop of %s: subscription %r (%s) does not parse: %s", topic, exp, exp_type, e)
        return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
