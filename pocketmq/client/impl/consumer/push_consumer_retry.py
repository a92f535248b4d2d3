"""A message the listener could not consume goes back to the broker (DefaultMQPushConsumerImpl.sendMessageBack),
or, when that fails, is sent to the group's retry topic; a message read from the retry topic shows its original
topic to the listener."""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

from pocketmq.common.constants import COMPRESSED_FLAG, COMPRESSION_TYPE_MASK
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import CLIENT_INNER_PRODUCER_GROUP
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.header import ConsumerSendMsgBackRequestHeader

from ...exceptions import MQBrokerException, MQClientException
from ...message import Message
from ...message_const import (
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    RETRY_GROUP_TOPIC_PREFIX,
)
from ..producer.send_request import SendRequestOptions, build_send_request
from ..producer.topic_publish_info import topic_route_data_to_publish_info
from .push_consumer_state import PushConsumerState

log = logging.getLogger("pocketmq.client.impl.consumer.push_consumer_impl")
_CODEC_BITS = COMPRESSED_FLAG | COMPRESSION_TYPE_MASK


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


class PushConsumerRetry(PushConsumerState):
    """DefaultMQPushConsumerImpl's retries (a mixin: the state is the consumer's)."""

    if TYPE_CHECKING:
        def max_reconsume_times(self) -> int: ...

        def learn_missing_routes(self) -> None: ...

    def reset_retry_topic(self, msgs: list[MessageExt]) -> None:
        """A message from %RETRY%group shows its original topic to the listener."""
        rt = retry_topic(self.group)
        for msg in msgs:
            if msg.topic == rt:  # the topic first: it is what almost every message fails
                original = msg.properties.get(PROPERTY_RETRY_TOPIC)
                if original is not None:
                    msg.topic = original

    async def send_message_back(self, msg: MessageExt, delay_level: int, mq: MessageQueue) -> bool:
        """CONSUMER_SEND_MSG_BACK, else a send to %RETRY%group; False when both failed."""
        try:
            addr = self.instance.find_broker_address_in_publish(mq.broker_name)
            if addr is None:
                raise MQClientException(f"The broker[{mq.broker_name}] not exist")
            header = ConsumerSendMsgBackRequestHeader(
                offset=msg.commit_log_offset,
                group=self.group,
                delay_level=delay_level,
                origin_msg_id=msg.msg_id,
                origin_topic=msg.topic,
                max_reconsume_times=self.max_reconsume_times(),
            )
            await self.instance.mq_client_api.consumer_send_message_back(
                addr, header, self.config.send_message_back_timeout
            )
            if not self.rebalance_impl.topic_subscribe_info_table.get(retry_topic(self.group)):
                self.learn_missing_routes()  # the retry is due after its delay level, not the next poll
            return True
        except (RemotingError, MQClientException, MQBrokerException) as e:
            log.warning("%s: sendMessageBack of %s failed (%s); sending to the retry topic", self.group, msg.msg_id, e)
        return await self.send_to_retry_topic(msg, msg.reconsume_times + 1, mq)

    async def send_to_retry_topic(self, msg: MessageExt, reconsume_times: int, mq: MessageQueue) -> bool:
        """A copy of ``msg`` sent to %RETRY%group with RECONSUME_TIME = ``reconsume_times``; the broker puts it
        into the DLQ when that reached the max (how the orderly consumer dead-letters)."""
        rt = retry_topic(self.group)
        new = Message(rt, msg.body, flag=msg.flag)
        new.properties.update(msg.properties)
        new.properties.pop(PROPERTY_TRANSACTION_PREPARED, None)
        new.properties.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        new.properties[PROPERTY_RETRY_TOPIC] = msg.topic
        new.properties[PROPERTY_RECONSUME_TIME] = str(reconsume_times)
        new.properties[PROPERTY_MAX_RECONSUME_TIMES] = str(self.max_reconsume_times())
        new.delay_time_level = 3 + msg.reconsume_times
        try:
            route = self.instance.topic_route_table.get(rt) or await self.instance.fetch_and_apply_route(rt)
            queues = topic_route_data_to_publish_info(rt, route).message_queue_list  # writeable queues only
            if not queues:
                raise MQClientException(f"No route info of this topic: {rt}")
            target = random.choice(queues)
            addr = self.instance.find_broker_address_in_publish(target.broker_name)
            if addr is None:
                raise MQClientException(f"The broker[{target.broker_name}] not exist")
            header, body, uniq = build_send_request(new, target, SendRequestOptions(CLIENT_INNER_PRODUCER_GROUP))
            if msg.body_inflate_error is not None:
                # The bytes as stored, which this client could not inflate (LZ4, ZSTD, a damaged stream): they go
                # on with their compression bits, neither sent as plain bytes nor wrapped in zlib.
                body = bytes(msg.body)
                header.sys_flag = header.sys_flag & ~_CODEC_BITS | msg.sys_flag & _CODEC_BITS
            await self.instance.mq_client_api.send_message(
                addr, target.broker_name, header, body, self.config.send_message_back_timeout, uniq
            )
            return True
        except (RemotingError, MQClientException, MQBrokerException) as e:
            log.warning("%s: sending %s to %s failed: %s", self.group, msg.msg_id, rt, e)
            return False
