"""RocketMQ's protocol numbers: request and response codes, language codes, flag bits, permission bits.

Values are RocketMQ 4.9.8's (``RequestCode``, ``ResponseCode``, ``LanguageCode``, ``RemotingCommand``,
``PermName``, ``TopicSysFlag``, ``MixAll``); names are kept verbatim so both code bases grep alike.
"""

from __future__ import annotations

from enum import IntEnum

from pocketmq.common.mq_version import V4_9_8

# MQVersion.Version.V4_9_8.ordinal(): the behaviour we implement. Brokers choose behaviour by the peer's
# version (e.g. maxReconsumeTimes is honoured from V3_4_9 on), so claiming 4.9.8 keeps those paths on.
VERSION = V4_9_8

# RemotingCommand flag bits.
RPC_TYPE = 0  # bit 0: 0 = request, 1 = response
RPC_ONEWAY = 1  # bit 1: 1 = one-way request, no response expected
FLAG_RESPONSE = 1 << RPC_TYPE
FLAG_ONEWAY = 1 << RPC_ONEWAY

MASTER_ID = 0  # MixAll.MASTER_ID: brokerId of a master in BrokerData.brokerAddrs


class LanguageCode(IntEnum):
    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12


class SerializeType(IntEnum):
    """How a command's header is serialized: RocketMQ's ``SerializeType`` (JSON 0, ROCKETMQ 1, the byte a native
    frame carries in its header-length word), plus pocketmq's own msgpack frame.

    MSGPACK is not a RocketMQ value and never appears in a native frame: a command that says MSGPACK and goes
    out on a native connection (one the server starts, say) takes the connection's default, JSON.
    """

    JSON = 0
    ROCKETMQ = 1
    MSGPACK = -1


class BodyDialect(IntEnum):
    """How a body's object is written: msgpack on pocketmq's frames; on native frames fastjson's default output
    (``{0:"addr"}``: non-string map keys unquoted) or, for the name server's routes to new clients, standard
    JSON (fastjson's BrowserCompatible: keys quoted, non-ASCII escaped, longs above 2^53 as strings)."""

    MSGPACK = 0
    FASTJSON = 1
    STANDARD_JSON = 2


class RequestCode(IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    UPDATE_AND_CREATE_TOPIC_LIST = 18  # RocketMQ 5: topics created in one request (updateTopicList)
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39  # broker -> producer
    NOTIFY_CONSUMER_IDS_CHANGED = 40  # broker -> consumer
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST = 225  # RocketMQ 5: groups created in one request (updateSubGroupList)
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329
    GET_TOPIC_CONFIG = 351  # RocketMQ 5: one topic's config with its attributes (what a 5.x proxy reads)
    GET_SUBSCRIPTIONGROUP_CONFIG = 352  # RocketMQ 5: one group's config (a 5.x proxy reads fifo and retries)
    LITE_PULL_MESSAGE = 361  # 5.x clients' DefaultLitePullConsumer: a PULL_MESSAGE on a pull thread pool of its own
    QUERY_ASSIGNMENT = 400  # RocketMQ 5's server-side rebalance: which queues a client consumes, by pull or pop
    RECALL_MESSAGE = 370  # RocketMQ 5: cancel a timer message before it is due (RecallMessageProcessor)
    SET_MESSAGE_REQUEST_MODE = 401  # ... and the pull-or-pop choice per topic and group
    GET_BROKER_HA_STATUS = 907  # RocketMQ 5: a broker's replication state (haStatus)
    # RocketMQ 5's POP (docs/protocol.md, "POP")
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    PEEK_MESSAGE = 200052
    CHANGE_MESSAGE_INVISIBLETIME = 200053
    NOTIFICATION = 200054
    POLLING_INFO = 200055
    POP_ROLLBACK = 200056
    BATCH_ACK_MESSAGE = 200151
    BROKER_HEARTBEAT = 904  # RocketMQ 5: a broker registered with heartbeatTimeoutMillis keeps itself alive


class ResponseCode(IntEnum):
    # 0-4 are RemotingSysResponseCode.
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    INVALID_PARAMETER = 29  # 5.x
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202  # sic, RocketMQ's spelling
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    # 5.x gives 209 and 210 to POP's long polling (the ACL codes above keep them in 4.x): aliases of one value.
    POLLING_FULL = 209
    POLLING_TIMEOUT = 210
    FLOW_CONTROL = 215
    ILLEGAL_OPERATION = 604  # 5.x: RECALL_MESSAGE of a handle that does not fit


class PermName:
    """Topic/broker permission bits (QueueData.perm, TopicConfig.perm)."""

    PERM_PRIORITY = 0x8
    PERM_READ = 0x4
    PERM_WRITE = 0x2
    PERM_INHERIT = 0x1

    @staticmethod
    def is_readable(perm: int) -> bool:
        return bool(perm & PermName.PERM_READ)

    @staticmethod
    def is_writeable(perm: int) -> bool:
        return bool(perm & PermName.PERM_WRITE)

    @staticmethod
    def is_inherited(perm: int) -> bool:
        return bool(perm & PermName.PERM_INHERIT)

    @staticmethod
    def perm_to_string(perm: int) -> str:
        """RocketMQ's ``RWX`` form; X is the inherit bit."""
        return (
            ("R" if perm & PermName.PERM_READ else "-")
            + ("W" if perm & PermName.PERM_WRITE else "-")
            + ("X" if perm & PermName.PERM_INHERIT else "-")
        )


class TopicSysFlag:
    FLAG_UNIT = 0x1
    FLAG_UNIT_SUB = 0x2
