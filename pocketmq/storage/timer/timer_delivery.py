"""Putting a due timer message again: in its real topic and queue, or, rolled, in rmq_sys_wheel_timer
(TimerMessageStore.convert / convertMessage / doPut)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from pocketmq.common.constants import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DEL_UNIQKEY,
    PROPERTY_TIMER_DEQUEUE_MS,
    PROPERTY_TIMER_ENQUEUE_MS,
    PROPERTY_TIMER_ROLL_TIMES,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from pocketmq.common.message import LOOPBACK_HOST, MessageExt, MessageExtBrokerInner, pack_host

from ..results import PutMessageStatus

if TYPE_CHECKING:
    from .timer_message_store import TimerMessageStore

log = logging.getLogger(__name__)

PUT_OK, PUT_NEED_RETRY, PUT_NO_RETRY = 0, 1, 2
_NO_RETRY = (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
             PutMessageStatus.WHEEL_TIMER_NOT_ENABLE, PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL)


def host_bytes(address: str) -> bytes:
    host, _, port = address.rpartition(":")
    try:
        return pack_host(host, int(port))
    except ValueError:
        return LOOPBACK_HOST


def roll_times(props: dict[str, str]) -> int:
    """How often the message went round the wheel; a producer's value that is no number counts as none (RocketMQ
    fails on it, and its wheel stops at that slot for good)."""
    try:
        return int(props.get(PROPERTY_TIMER_ROLL_TIMES, "0"))
    except ValueError:
        return 0


def convert(msg: MessageExt, enqueue_time: int, roll: bool, store_host: bytes | None) -> MessageExtBrokerInner | None:
    """The message to put for ``msg``; None when it lacks its real address (it cannot go anywhere)."""
    props = dict(msg.properties)
    if enqueue_time != -1:
        props[PROPERTY_TIMER_ENQUEUE_MS] = str(enqueue_time)
    if roll:
        props[PROPERTY_TIMER_ROLL_TIMES] = str(roll_times(props) + 1)
    props[PROPERTY_TIMER_DEQUEUE_MS] = str(time.time_ns() // 1_000_000)
    props[PROPERTY_WAIT_STORE_MSG_OK] = "false"
    if roll:
        topic, queue_id = msg.topic, msg.queue_id
    else:
        # REAL_TOPIC / REAL_QID stay: RocketMQ 5 clears them after it has encoded the properties it stores, so
        # its delivered message carries them (seen against 5.5.0: tests/apache).
        topic = props.get(PROPERTY_REAL_TOPIC, "")
        try:
            queue_id = int(props.get(PROPERTY_REAL_QUEUE_ID, ""))
        except ValueError:
            return None
        if not topic:
            return None
    return MessageExtBrokerInner(topic=topic, body=msg.body, properties=props, queue_id=queue_id, flag=msg.flag,
                   sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=host_bytes(msg.born_host),
                   store_host=store_host, reconsume_times=msg.reconsume_times)


class TimerDelivery:
    def __init__(self, timer: TimerMessageStore) -> None:
        self.timer = timer

    def deliver(self, msg: MessageExt, enqueue_time: int, roll: bool) -> bool:
        """Put ``msg`` again. A put the store refuses for a while is retried (three times, or for as long as it
        takes with timerEnableRetryUntilSuccess), one it will never take is dropped with a log line, as
        RocketMQ does. False when the store stopped first (the message is tried again at the next start)."""
        timer = self.timer
        if not roll and PROPERTY_TIMER_DEL_UNIQKEY in msg.properties:
            # A delete marker due already when it was enqueued (its message went before it): nothing to do, as
            # RocketMQ's doPut refuses one.
            log.warning("dropping delete marker %s: not put in its topic", msg.msg_id)
            return True
        inner = convert(msg, enqueue_time, roll, None)
        if inner is None:
            log.error("dropping timer message %s: no REAL_TOPIC/REAL_QID", msg.msg_id)
            return True
        retries = 0
        while True:
            outcome = self.do_put(inner)
            if outcome == PUT_OK:
                if roll:
                    timer.rolled += 1
                else:
                    timer.delivered += 1
                return True
            if outcome == PUT_NO_RETRY:
                log.warning("dropping timer message %s: the store will not take it", msg.msg_id)
                return True
            if not timer.running:
                return False
            retries += 1
            if not timer.config.timer_enable_retry_until_success and retries >= 3:
                log.error("timer message %s not delivered after %d tries", msg.msg_id, retries)
                return True
            time.sleep(timer.precision_ms / 2000)

    def do_put(self, inner: MessageExtBrokerInner) -> int:
        result = self.timer.store.put_message(inner)
        status = result.status
        if status.is_ok:
            return PUT_OK
        if status in _NO_RETRY:
            return PUT_NO_RETRY
        return PUT_NEED_RETRY
