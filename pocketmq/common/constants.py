"""RocketMQ's on-disk constants (4.9.8), by their Java names where RocketMQ has one."""

MESSAGE_MAGIC_CODE = 0xDAA320A7  # -626843481 as a Java int
BLANK_MAGIC_CODE = 0xCBD43194  # -875286124: the end-of-file filler record
END_FILE_MIN_BLANK_LENGTH = 8  # TOTALSIZE + MAGICCODE of the filler

OS_PAGE_SIZE = 4096

CQ_STORE_UNIT_SIZE = 20  # consume queue entry: phy offset 8, size 4, tags code 8
CQ_PRE_BLANK_SIZE = 0x7FFFFFFF  # size field of the filler entries before a queue's first real one
INDEX_HEADER_SIZE = 40
INDEX_HASH_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

# MessageSysFlag
COMPRESSED_FLAG = 0x1
MULTI_TAGS_FLAG = 0x2
TRANSACTION_NOT_TYPE = 0x0
TRANSACTION_PREPARED_TYPE = 0x4
TRANSACTION_COMMIT_TYPE = 0x8
TRANSACTION_ROLLBACK_TYPE = 0xC
TRANSACTION_TYPE_MASK = 0xC
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20

# MessageConst property keys
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
PROPERTY_WAIT_STORE_MSG_OK = "WAIT"
PROPERTY_DELAY_TIME_LEVEL = "DELAY"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"
PROPERTY_REAL_TOPIC = "REAL_TOPIC"
PROPERTY_REAL_QUEUE_ID = "REAL_QID"
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
PROPERTY_MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
PROPERTY_RECONSUME_TIME = "RECONSUME_TIME"
PROPERTY_MIN_OFFSET = "MIN_OFFSET"
PROPERTY_MAX_OFFSET = "MAX_OFFSET"
# pocketmq's own: set by a client on a pulled message whose compressed body does not inflate (damaged, or past the
# inflate limit); the body is left as stored and the value says why.
PROPERTY_BODY_INFLATE_ERROR = "BODY_INFLATE_ERROR"
KEY_SEPARATOR = " "

# Limits enforced at put time (DefaultMessageStore.checkMessage / MessageExtEncoder).
TOPIC_MAX_LENGTH = 127
MAX_PROPERTIES_LENGTH = 32767  # Short.MAX_VALUE: the properties length field is a signed short
