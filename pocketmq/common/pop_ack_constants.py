"""RocketMQ 5's POP names (PopAckConstants, KeyBuilder, MessageConst's POP properties): both the broker and the
client need them, the client to read receipt handles and retry topics."""

from __future__ import annotations

from .constants import PROPERTY_FIRST_POP_TIME as PROPERTY_FIRST_POP_TIME
from .constants import PROPERTY_POP_CK as PROPERTY_POP_CK
from .constants import PROPERTY_POP_CK_OFFSET as PROPERTY_POP_CK_OFFSET
from .constants import PROPERTY_SHARDING_KEY as PROPERTY_SHARDING_KEY
from .mix_all import CID_RMQ_SYS_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from .topic_validator import SYSTEM_TOPIC_PREFIX

REVIVE_TOPIC_PREFIX = SYSTEM_TOPIC_PREFIX + "REVIVE_LOG_"
REVIVE_GROUP = CID_RMQ_SYS_PREFIX + "REVIVE_GROUP"
CK_TAG = "ck"
ACK_TAG = "ack"
BATCH_ACK_TAG = "bAck"
SPLIT = "@"
# The revive queue id a receipt handle of an orderly pop carries: no checkpoint was written, the ack goes to
# ConsumerOrderInfoManager.
POP_ORDER_REVIVE_QUEUE = 999

# ConsumeInitMode: where a group without an offset starts popping a queue.
CONSUME_INIT_MODE_MIN = 0
CONSUME_INIT_MODE_MAX = 1

_SEPARATOR_V1 = "_"
_SEPARATOR_V2 = "+"


def build_cluster_revive_topic(cluster_name: str) -> str:
    return REVIVE_TOPIC_PREFIX + cluster_name


def build_pop_retry_topic(topic: str, group: str, v2: bool = False) -> str:
    """%RETRY%group_topic (v1, RocketMQ's default) or %RETRY%group+topic (enableRetryTopicV2)."""
    return RETRY_GROUP_TOPIC_PREFIX + group + (_SEPARATOR_V2 if v2 else _SEPARATOR_V1) + topic


def is_pop_retry_topic_v2(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and _SEPARATOR_V2 in topic


def parse_normal_topic(topic: str, group: str) -> str:
    """The topic a pop retry topic of ``group`` retries (the topic itself when it is none)."""
    for sep in (_SEPARATOR_V2, _SEPARATOR_V1):
        prefix = RETRY_GROUP_TOPIC_PREFIX + group + sep
        if topic.startswith(prefix):
            return topic[len(prefix):]
    return topic


def build_polling_key(topic: str, group: str, queue_id: int) -> str:
    return f"{topic}{SPLIT}{group}{SPLIT}{queue_id}"
