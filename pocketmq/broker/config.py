"""BrokerConfig: the broker's settings, and the RocketMQ-style properties file they are read from.

Python attributes are snake_case and every interval is in seconds (float), so tests can run the timers in
milliseconds. The properties file speaks RocketMQ: camelCase keys as in RocketMQ's ``broker.conf`` and, for
time keys that RocketMQ reads in milliseconds (``registerNameServerPeriod=30000``), milliseconds.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Any

from pocketmq.common.mix_all import DEFAULT_TRACE_REGION_ID
from pocketmq.common.properties_text import property_line
from pocketmq.common.topic_validator import RMQ_SYS_TRACE_TOPIC
from pocketmq.remoting.wire_protocol import WireProtocol
from pocketmq.storage.config import FlushDiskType, MessageStoreConfig, parse_delay_levels

from .broker_identity import BrokerIdentity
from .config_addresses import host_ip, namesrv_addr_error
from .config_checks import check_value
from .config_fields import _f
from .config_properties import BrokerConfigError, decode_properties_file, format_value, read_properties
from .message_store_config_keys import MessageStoreConfigKeys
from .netty_server_config import NettyServerConfig

__all__ = ["BrokerConfig", "BrokerConfigError", "NAMESRV_PROTOCOLS"]

log = logging.getLogger(__name__)

# RocketMQ's PopReviveService.ckRewriteIntervalsInSeconds (10, 20, 30, 60, ... 3600, 7200).
DEFAULT_CK_REWRITE_INTERVALS = "10s 20s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

# namesrvProtocol's values (the client's ``protocol`` names the same two).
NAMESRV_PROTOCOLS = {"msgpack": WireProtocol.MSGPACK, "rocketmq": WireProtocol.NATIVE}
_SECRET_FIELDS = frozenset({"access_key", "secret_key"})  # left out of what GET_BROKER_CONFIG answers
_MASTER_ROLES = ("ASYNC_MASTER", "SYNC_MASTER")  # brokerRole's values pocketmq takes (RocketMQ's BrokerRole, no SLAVE)


# The bases are listed last-first because a dataclass puts the fields of the base listed last first: the keys
# print (to_properties, GET_BROKER_CONFIG) identity first, then Netty's, the store's and the broker's own.
@dataclass
class BrokerConfig(MessageStoreConfigKeys, NettyServerConfig, BrokerIdentity):
    """A broker's settings, each with its ``broker.conf`` key: RocketMQ's BrokerConfig (with its BrokerIdentity),
    and the NettyServerConfig and MessageStoreConfig keys its broker.conf also takes, as one object."""

    # --- addresses ---
    # Advertised to name servers as it is written; a host name is resolved for the storeHost of every message
    # (store_host_ip). Empty: the default (RocketMQ's: the machine's first non-loopback address).
    broker_ip1: str = _f("127.0.0.1", "brokerIP1")
    namesrv_addr: str | None = _f(None, "namesrvAddr")  # "host:port;host:port"
    broker_permission: int = _f(6, "brokerPermission")  # PermName bits; 6 = READ|WRITE

    # --- topics and groups ---
    auto_create_topic_enable: bool = _f(True, "autoCreateTopicEnable")
    auto_create_subscription_group: bool = _f(True, "autoCreateSubscriptionGroup")
    default_topic_queue_nums: int = _f(8, "defaultTopicQueueNums")
    cluster_topic_enable: bool = _f(True, "clusterTopicEnable")
    broker_topic_enable: bool = _f(True, "brokerTopicEnable")
    trace_topic_enable: bool = _f(False, "traceTopicEnable")
    # What the broker stamps on every message it stores (MSG_REGION, TRACE_ON) and answers every send with: a
    # client skips its traces of a message whose TRACE_ON is false (traceTopicEnable only creates the topic).
    region_id: str = _f(DEFAULT_TRACE_REGION_ID, "regionId")
    trace_on: bool = _f(True, "traceOn")
    msg_trace_topic_name: str = _f(RMQ_SYS_TRACE_TOPIC, "msgTraceTopicName")
    # A reply (SEND_REPLY_MESSAGE) is pushed to the requesting client and, with this on, also stored in the
    # reply topic (<cluster>_REPLY_TOPIC).
    store_reply_message_enable: bool = _f(True, "storeReplyMessageEnable")
    # RocketMQ 5's typed topics: MIXED is refused at creation unless this is on (BrokerConfig), and a send whose
    # type does not fit its topic's message.type is refused (the proxy's enableTopicMessageTypeCheck; pocketmq
    # checks topics that have a message.type only: an untyped topic takes every type, as a 5.x broker does).
    enable_mixed_message_type: bool = _f(False, "enableMixedMessageType")
    enable_topic_message_type_check: bool = _f(True, "enableTopicMessageTypeCheck")

    # --- name server registration ---
    register_name_server_period: float = _f(30.0, "registerNameServerPeriod", "ms")
    register_broker_timeout: float = _f(6.0, "registerBrokerTimeoutMills", "ms")
    compressed_register: bool = _f(False, "compressedRegister")
    # pocketmq's own: what the broker speaks to its name servers. "msgpack": pocketmq's frames, with delta
    # registrations; "rocketmq": RocketMQ's native frames and RegisterBrokerBody (JSON, or with compressedRegister
    # RocketMQ's compressed form), full tables only: what an Apache RocketMQ name server reads. pocketmq's name
    # server reads both.
    namesrv_protocol: str = _f("msgpack", "namesrvProtocol")
    # RocketMQ 5.x: sent with every registration as heartbeatTimeoutMillis, the time a name server keeps this
    # broker without a registration before its scan drops it (5.x name servers, pocketmq's; 4.x ignores it and
    # keeps its 120 s). None: not sent.
    broker_not_active_timeout: float | None = _f(None, "brokerNotActiveTimeoutMillis", "ms")

    # --- pulls and long polling ---
    long_polling_enable: bool = _f(True, "longPollingEnable")
    short_polling_time: float = _f(1.0, "shortPollingTimeMills", "ms")
    # pocketmq's own: parked pulls in all; past it a pull finding nothing is answered at once, as without the
    # suspend flag (RocketMQ parks any number, each holding its request until its timeout).
    max_pull_polling_size: int = _f(100_000, "maxPullPollingSize")
    # PullRequestHoldService's safety re-check of parked pulls (RocketMQ: 5 s, not configurable there).
    pull_request_hold_check_interval: float = _f(5.0, "pullRequestHoldCheckInterval", "ms")
    pull_thread_pool_nums: int = _f(4, "pullMessageThreadPoolNums")  # threads doing store reads
    # SQL92 subscriptions, off as in RocketMQ: SQL92 pulls are answered SYSTEM_ERROR, and a consumer's start-up
    # check (CHECK_CLIENT_CONFIG) fails with a message naming this setting.
    enable_property_filter: bool = _f(False, "enablePropertyFilter")

    # --- POP (docs/broker.md, "POP") ---
    # Queues of rmq_sys_REVIVE_LOG_<cluster>: checkpoints and acks of pops, spread over them by pop.
    revive_queue_num: int = _f(8, "reviveQueueNum")
    # How often each revive queue is read and expired checkpoints revived (RocketMQ: reviveInterval, 1 s).
    revive_interval: float = _f(1.0, "reviveInterval", "ms")
    # pocketmq's own keys for two of RocketMQ's constants, so that tests can run them in milliseconds: how long
    # before its revive time a checkpoint reaches its revive queue through the timer wheel (the acks come at the
    # revive time; PopAckConstants.ackTimeInterval, 1 s), and the margin past that the revive service waits, in
    # the deliver times it has read, before it takes a checkpoint's acks for complete (PopAckConstants.SECOND,
    # 1 s; three of them without a record make a revive queue quiet).
    pop_ack_time_interval: float = _f(1.0, "popAckTimeInterval", "ms")
    pop_revive_margin: float = _f(1.0, "popReviveMargin", "ms")
    # A checkpoint whose message the revive service cannot put back (its retry topic refuses it) is written anew
    # for that message, due the next of these intervals later (RocketMQ's rePutCK; the intervals are its constant
    # PopReviveService.ckRewriteIntervalsInSeconds, a pocketmq key so that tests can run them in ms, in
    # messageDelayLevel's form); after the last one it is dropped when skipWhenCKRePutReachMaxTimes is set, else
    # written again at the last interval for as long as the put fails (RocketMQ's default).
    pop_ck_rewrite_intervals: str = _f(DEFAULT_CK_REWRITE_INTERVALS, "popCkRewriteIntervals")
    skip_when_ck_re_put_reach_max_times: bool = _f(False, "skipWhenCKRePutReachMaxTimes")
    # Percent of pops that read the group's pop retry topic first (RocketMQ: popFromRetryProbability, 20).
    pop_from_retry_probability: int = _f(20, "popFromRetryProbability")
    # A PRIORITY topic's pops (5.5.0): the retry topic first this percent of the time (none: the topic's
    # priorities come first), and its queues read from the highest (priorityOrderAsc: the larger the priority the
    # sooner; off, from queue 0). Other topics' pops read their queues the same way round, from a random one.
    pop_from_retry_probability_for_priority: int = _f(0, "popFromRetryProbabilityForPriority")
    priority_order_asc: bool = _f(True, "priorityOrderAsc")
    # Parked pops per topic@group@queue before POLLING_FULL (RocketMQ: popPollingSize).
    pop_polling_size: int = _f(1024, "popPollingSize")
    # Parked pops in all (of POP_MESSAGE, and of NOTIFICATION apart) before POLLING_FULL (RocketMQ:
    # maxPopPollingSize).
    max_pop_polling_size: int = _f(100_000, "maxPopPollingSize")
    # Checkpoints wait in memory for their acks this long before they are written (RocketMQ:
    # enablePopBufferMerge, off there; popCkStayBufferTime): a message acked within it costs no revive-log record.
    enable_pop_buffer_merge: bool = _f(True, "enablePopBufferMerge")
    pop_ck_stay_buffer_time: float = _f(10.0, "popCkStayBufferTime", "ms")
    # pocketmq's own: how often the buffer is scanned for checkpoints to write.
    pop_buffer_scan_interval: float = _f(0.05, "popBufferScanInterval", "ms")
    # Retried pops go to %RETRY%group+topic instead of %RETRY%group_topic (RocketMQ: enableRetryTopicV2).
    enable_retry_topic_v2: bool = _f(False, "enableRetryTopicV2")
    # With v2 on, pops and notifications also read the v1 retry topic (what was revived before the switch).
    retrieve_message_from_pop_retry_topic_v1: bool = _f(True, "retrieveMessageFromPopRetryTopicV1")
    # A new group starts at offset 0 of a queue whose first message is still in memory, not at its end
    # (RocketMQ: initPopOffsetByCheckMsgInMem).
    init_pop_offset_by_check_msg_in_mem: bool = _f(True, "initPopOffsetByCheckMsgInMem")
    # --- server-side rebalance (QUERY_ASSIGNMENT, RocketMQ 5) ---
    # Off: a client that asks gets every queue of the topic and splits nothing (serverLoadBalancerEnable).
    server_load_balancer_enable: bool = _f(True, "serverLoadBalancerEnable")
    # How groups without a SET_MESSAGE_REQUEST_MODE of their own consume: "PULL" or "POP".
    default_message_request_mode: str = _f("PULL", "defaultMessageRequestMode")
    default_pop_share_queue_num: int = _f(-1, "defaultPopShareQueueNum")
    # How long a topic's queues read from the name server serve assignments before they are read again.
    load_balance_poll_name_server_interval: float = _f(30.0, "loadBalancePollNameServerInterval", "ms")

    # --- recalls ---
    # RocketMQ 5's RecallMessage (RECALL_MESSAGE, docs/broker.md §4.6). RocketMQ's default is off (a recall is
    # answered NO_PERMISSION "recall failed, operation is forbidden"); pocketmq's is on, so the 5.x SDKs'
    # recallMessage works against a development broker as it is.
    recall_message_enable: bool = _f(True, "recallMessageEnable")
    allow_recall_when_broker_not_writeable: bool = _f(True, "allowRecallWhenBrokerNotWriteable")

    # --- transactional messages (docs/broker.md, "Transactional messages") ---
    # A half message younger than this is not asked about yet (RocketMQ: transactionTimeOut, 6 s).
    transaction_timeout: float = _f(6.0, "transactionTimeOut", "ms")
    # How often the half messages are checked, and how many times one is asked about before it is discarded.
    transaction_check_interval: float = _f(60.0, "transactionCheckInterval", "ms")
    transaction_check_max: int = _f(15, "transactionCheckMax")
    reject_transaction_message: bool = _f(False, "rejectTransactionMessage")

    # --- consumer offsets and clients ---
    flush_consumer_offset_interval: float = _f(5.0, "flushConsumerOffsetInterval", "ms")
    channel_expired_timeout: float = _f(120.0, "channelExpiredTimeout", "ms")  # 5.x key; 4.9.8 constant
    client_housekeeping_interval: float = _f(10.0, "clientHousekeepingInterval", "ms")
    notify_consumer_ids_changed_enable: bool = _f(True, "notifyConsumerIdsChangedEnable")
    # pocketmq's own key for RocketMQ's constant (Broker2Client.callClient, 10 s), so that tests can run it short:
    # how long a running-info request or a reply forwarded to a client waits for its answer.
    call_client_timeout: float = _f(10.0, "callClientTimeoutMillis", "ms")
    # RebalanceLockManager: a queue lock not renewed for this long is free (RocketMQ: 60 s system property).
    rebalance_lock_max_live_time: float = _f(60.0, "rebalanceLockMaxLiveTime", "ms")

    # --- statistics ---
    # How often BrokerStatsManager snapshots its counters (RocketMQ: every 10 s); rates are over a minute. The
    # hour's snapshots come every 60 intervals and the day's every 360 (RocketMQ's 10 minutes and hour).
    stats_sample_interval: float = _f(10.0, "statsSampleInterval", "ms")

    # --- access control (docs/broker.md, "Access control") ---
    acl_enable: bool = _f(False, "aclEnable")
    # pocketmq's own: the plain ACL file (RocketMQ reads ${ROCKETMQ_HOME}/conf/plain_acl.yml, which is also the
    # default here when ROCKETMQ_HOME is set).
    acl_file: str | None = _f(None, "aclFile")
    # pocketmq's own: the account the broker signs its calls to the name servers with (REGISTER_BROKER...).
    access_key: str | None = _f(None, "accessKey")
    secret_key: str | None = _f(None, "secretKey")

    def __post_init__(self) -> None:
        self.flush_disk_type = FlushDiskType(self.flush_disk_type)
        self.broker_ip1 = self.broker_ip1.strip() or BrokerConfig.broker_ip1
        self.store_host_ip  # noqa: B018  (resolves a host name, or says it does not)
        if self.broker_role not in _MASTER_ROLES:
            raise BrokerConfigError(
                f"brokerRole {self.broker_role!r}: expected {' or '.join(_MASTER_ROLES)} (pocketmq runs masters only; "
                "SLAVE is not supported)")
        if self.broker_id != 0:  # (RocketMQ's BrokerStartup sets a master's brokerId to 0 whatever the file says)
            log.warning("brokerId %s with brokerRole %s: a master's brokerId is 0, as RocketMQ sets it",
                        self.broker_id, self.broker_role)
            self.broker_id = 0
        if (reason := namesrv_addr_error(self.namesrv_addr)) is not None:
            raise BrokerConfigError(reason)
        if self.namesrv_protocol not in NAMESRV_PROTOCOLS:
            raise BrokerConfigError(
                f"namesrvProtocol {self.namesrv_protocol!r}: expected one of {', '.join(NAMESRV_PROTOCOLS)}")
        if (self.access_key is None) != (self.secret_key is None):
            raise BrokerConfigError("accessKey and secretKey go together: set both or neither")
        if self.acl_enable and self.resolved_acl_file is None:
            raise BrokerConfigError(
                "aclEnable=true needs aclFile (or ROCKETMQ_HOME, for $ROCKETMQ_HOME/conf/plain_acl.yml)")
        try:
            self.connection_limits  # noqa: B018  (checks the values)
        except ValueError as e:
            raise BrokerConfigError(str(e)) from None
        for f in dataclasses.fields(self):  # (the checks UPDATE_BROKER_CONFIG applies too)
            try:
                check_value(f, getattr(self, f.name))
            except ValueError as e:
                raise BrokerConfigError(str(e)) from None
        try:
            parse_delay_levels(self.message_delay_level)
            parse_delay_levels(self.pop_ck_rewrite_intervals, "popCkRewriteIntervals")
        except ValueError as e:
            raise BrokerConfigError(str(e)) from None
        if not 0 <= self.listen_port <= 65535:  # (uvloop wrapped a bigger one round: 99999 bound 34463)
            raise BrokerConfigError(f"listenPort {self.listen_port} is out of range 0-65535")

    # --- derived values ---

    @property
    def namesrv_addr_list(self) -> list[str]:
        if not self.namesrv_addr:
            return []
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    @property
    def resolved_acl_file(self) -> str | None:
        """``aclFile``, else ``$ROCKETMQ_HOME/conf/plain_acl.yml`` as RocketMQ reads it, else None."""
        if self.acl_file:
            return os.path.abspath(os.path.expanduser(self.acl_file))
        home = os.environ.get("ROCKETMQ_HOME")
        return os.path.join(home, "conf", "plain_acl.yml") if home else None

    @property
    def store_host_ip(self) -> str:
        """brokerIP1 as an IP address, what every message's storeHost packs."""
        return host_ip(self.broker_ip1)

    @property
    def namesrv_wire_protocol(self) -> WireProtocol:
        return NAMESRV_PROTOCOLS[self.namesrv_protocol]

    @property
    def config_dir(self) -> str:
        """``${storePathRootDir}/config``: topics.json, subscriptionGroup.json, consumerOffset.json."""
        return os.path.join(self.store_root, "config")

    def to_store_config(self) -> MessageStoreConfig:
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            target = f.metadata.get("store")
            if target is not None:
                kwargs[target] = getattr(self, f.name)
        kwargs["store_path_root_dir"] = self.store_root
        kwargs["store_host"] = self.store_host_ip
        kwargs["store_port"] = self.listen_port
        return MessageStoreConfig(**kwargs)

    # --- properties file ---

    @classmethod
    def from_properties(cls, path: str | os.PathLike[str], defaults: dict[str, Any] | None = None,
                        origins: dict[str, str] | None = None, **overrides: Any) -> BrokerConfig:
        """Read a RocketMQ-style properties file (``key=value``, ``#``/``!`` comments).

        Unknown keys raise BrokerConfigError naming the key and line; ``overrides`` (snake_case attributes)
        win over the file, e.g. a ``-n`` given on the command line.
        """
        with open(path, "rb") as f:
            text = decode_properties_file(f.read(), str(path))
        return cls.from_properties_text(text, source=str(path), defaults=defaults, origins=origins, **overrides)

    @classmethod
    def from_properties_text(cls, text: str, source: str = "<string>", defaults: dict[str, Any] | None = None,
                             origins: dict[str, str] | None = None, **overrides: Any) -> BrokerConfig:
        """``defaults`` (snake_case attributes) replace the class defaults: the file wins over them. ``origins``
        names where a default's or an override's value came from (``-n``, ``$NAMESRV_ADDR``), for its error."""
        by_key = {f.metadata["key"]: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = dict(defaults or {})
        from_file = read_properties(by_key, text, source)
        values.update(from_file)
        values.update(overrides)
        if (reason := namesrv_addr_error(values.get("namesrv_addr"))) is not None:
            from_elsewhere = "namesrv_addr" in overrides or "namesrv_addr" not in from_file
            raise BrokerConfigError(f"{(origins or {}).get('namesrv_addr', source) if from_elsewhere else source}: "
                                    f"{reason}")
        try:
            return cls(**values)
        except ValueError as e:
            raise BrokerConfigError(f"{source}: {e}") from None

    def to_properties(self, secrets: bool = True, bound_port: int | None = None) -> str:
        """The settings as a properties text (the inverse of from_properties_text); with ``secrets`` False,
        without the broker's key pair; ``bound_port``: the port listened on, for a listenPort of 0."""
        lines = []
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "listen_port" and bound_port:
                v = bound_port
            if v is None or (not secrets and f.name in _SECRET_FIELDS):
                continue
            lines.append(property_line(f.metadata["key"], format_value(f, v)))  # (escaped: it reads back the same)
        return "\n".join(lines) + "\n"
