"""TransactionalMessageUtil: the records a transaction writes, built from what came before them.

A transaction leaves three kinds of records in the commit log (docs/storage.md, "Transactional messages"):

- the *half* message: the producer's message moved to RMQ_SYS_TRANS_HALF_TOPIC queue 0, its address kept in
  REAL_TOPIC / REAL_QID, its transaction bits cleared so it gets a consume-queue slot there (consumers of the
  real topic never see it);
- on commit, the *real* message: the half's body and properties back in the real topic and queue, with
  TRANSACTION_COMMIT_TYPE and PREPAREDTRANSACTIONOFFSET = the half's commit-log offset;
- on commit or rollback, an *op* message in RMQ_SYS_TRANS_OP_HALF_TOPIC (same queue id as the half), tag "d",
  body the half's queue offset in decimal: "this half message is done".

A half message whose outcome is still unknown when it is checked is written again (a *renewed* copy, with
TRANSACTION_CHECK_TIMES counting the checks) so the check service can keep walking the half queue in order.
"""

from __future__ import annotations

from pocketmq.common.clock import now_ms as now_ms
from pocketmq.common.constants import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TAGS,
    PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    PROPERTY_WAIT_STORE_MSG_OK,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.message import MessageExt, MessageExtBrokerInner, pack_host, properties_to_string
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from pocketmq.remoting.transport import parse_address

REMOVE_TAG = "d"  # TransactionalMessageUtil.REMOVETAG: the only op there is
TCMT_QUEUE_NUMS = 1  # queues of TRANS_CHECK_MAX_TIME_TOPIC

# MessageConst


def reset_transaction_value(sys_flag: int, transaction_type: int) -> int:
    """MessageSysFlag.resetTransactionValue: replace the two transaction bits."""
    return (sys_flag & ~TRANSACTION_TYPE_MASK) | transaction_type


def host_bytes(address: str) -> bytes:
    host, port = parse_address(address)
    return pack_host(host, port)


def half_message(msg: MessageExtBrokerInner) -> MessageExtBrokerInner:
    """TransactionalMessageBridge.parseHalfMessageInner: the producer's message as its half message."""
    props = dict(msg.properties)
    props[PROPERTY_REAL_TOPIC] = msg.topic
    props[PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.properties = props
    msg.properties_string = properties_to_string(props)
    msg.sys_flag = reset_transaction_value(msg.sys_flag, TRANSACTION_NOT_TYPE)
    msg.topic = RMQ_SYS_TRANS_HALF_TOPIC
    msg.queue_id = 0
    return msg


def _stored_again(
    half: MessageExt, topic: str, queue_id: int, props: dict[str, str], sys_flag: int,
    prepared_transaction_offset: int = 0,
) -> MessageExtBrokerInner:
    """``half`` to be written again with another topic, queue, properties or flags; the rest as the producer
    sent it."""
    return MessageExtBrokerInner(
        topic=topic,
        body=half.body,
        properties=props,
        queue_id=queue_id,
        flag=half.flag,
        sys_flag=sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=host_bytes(half.born_host),
        store_host=host_bytes(half.store_host),
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=prepared_transaction_offset,
        properties_string=properties_to_string(props),
    )


def real_message(half: MessageExt, commit_log_offset: int) -> MessageExtBrokerInner:
    """EndTransactionProcessor.endMessageTransaction + the commit flags: the committed message in its real
    topic and queue. ``commit_log_offset`` (the half's) goes into PREPAREDTRANSACTIONOFFSET."""
    props = dict(half.properties)
    topic = props.pop(PROPERTY_REAL_TOPIC)
    queue_id = int(props.pop(PROPERTY_REAL_QUEUE_ID))
    # The check's own bookkeeping on a renewed copy; consumers of Apache's committed messages never see it.
    props.pop(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET, None)
    sys_flag = reset_transaction_value(half.sys_flag, TRANSACTION_COMMIT_TYPE)
    return _stored_again(half, topic, queue_id, props, sys_flag, prepared_transaction_offset=commit_log_offset)


def renewed_half_message(half: MessageExt) -> MessageExtBrokerInner:
    """TransactionalMessageBridge.renewImmunityHalfMessageInner: the half message written again at the end of
    the half queue (its properties as given: the caller has counted the check in them), remembering the queue
    offset of the first copy in TRAN_PREPARED_QUEUE_OFFSET."""
    props = dict(half.properties)
    props.setdefault(PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET, str(half.queue_offset))
    return _stored_again(half, half.topic, half.queue_id, props, half.sys_flag)


def resumed_half_message(msg: MessageExt) -> MessageExtBrokerInner:
    """AdminBrokerProcessor.resumeCheckHalfMessage's copy: ``msg`` (a half message the check gave up on, or any
    message: nothing is checked) written to the half queue with TRANSACTION_CHECK_TIMES 0, so the check asks its
    producer again, up to transactionCheckMax times. Its body stays as stored (compressed or not)."""
    props = dict(msg.properties)
    props[PROPERTY_TRANSACTION_CHECK_TIMES] = "0"
    return _stored_again(msg, RMQ_SYS_TRANS_HALF_TOPIC, 0, props, msg.sys_flag)


def op_message(half_queue_id: int, half_queue_offset: int, store_host: bytes) -> MessageExtBrokerInner:
    """TransactionalMessageBridge.addRemoveTagInTransactionOp: "half message at this offset is done"."""
    props = {PROPERTY_TAGS: REMOVE_TAG, PROPERTY_WAIT_STORE_MSG_OK: "true"}
    return MessageExtBrokerInner(
        topic=RMQ_SYS_TRANS_OP_HALF_TOPIC,
        body=str(half_queue_offset).encode(),
        properties=props,
        queue_id=half_queue_id,
        born_timestamp=now_ms(),
        born_host=store_host,
        store_host=store_host,
        properties_string=properties_to_string(props),
    )


def check_max_time_message(half: MessageExt, topic: str) -> MessageExtBrokerInner:
    """DefaultTransactionalMessageCheckListener.toMessageExtBrokerInner: a half message checked too often, kept
    in TRANS_CHECK_MAX_TIME_TOPIC for an operator."""
    return _stored_again(half, topic, 0, dict(half.properties), half.sys_flag)
