"""DefaultMQProducerImpl.recallMessage: RECALL_MESSAGE to the broker a timer message's recall handle names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common import mix_all
from pocketmq.common.recall_message_handle import RecallHandleError, decode_handle
from pocketmq.remoting.recall_header import RecallMessageRequestHeader

from ...exceptions import MQClientException
from ...validators import check_topic

if TYPE_CHECKING:
    from ...producer.producer import Producer


async def recall_message(producer: Producer, topic: str, recall_handle: str, timeout: float) -> str:
    """The recalled message's id. MQClientException for a handle that does not decode or a broker not found;
    MQBrokerException with the broker's code and remark when it refuses (a message due already, for one)."""
    instance = producer.make_sure_state_ok()
    check_topic(topic)
    if mix_all.is_retry_or_dlq_topic(topic):
        raise MQClientException("topic is not supported")
    try:
        handle = decode_handle(recall_handle)
    except RecallHandleError as e:
        raise MQClientException(str(e)) from e
    info = await producer._try_to_find_topic_publish_info(topic)
    addr = instance.find_broker_address_in_publish(handle.broker_name)
    if addr is None:  # another broker of the topic (behind a proxy, any of them forwards)
        addr = next((a for a in map(instance.find_broker_address_in_publish,
                                    (mq.broker_name for mq in info.message_queue_list)) if a), None)
    if addr is None:
        raise MQClientException("The broker service address not found")
    header = RecallMessageRequestHeader(topic=topic, recall_handle=recall_handle, producer_group=producer.group,
                                        broker_name=handle.broker_name)
    return await instance.mq_client_api.recall_message(addr, header, timeout)
