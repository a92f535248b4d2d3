"""BrokerController: builds the broker's parts, starts them in order and stops them cleanly."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from pocketmq.common.constants import CQ_STORE_UNIT_SIZE
from pocketmq.common.message import pack_host
from pocketmq.remoting.acl.validator import PlainAccessValidator
from pocketmq.remoting.tasks import TaskTracker, run_whole
from pocketmq.remoting.transport import Channel
from pocketmq.storage.message_filter import MessageFilter
from pocketmq.storage.message_store import DefaultMessageStore
from pocketmq.storage.results import GetMessageResult

from .broker_outer_api import BrokerOuterAPI, RegisterResult
from .broker_registration import BrokerRegistration
from .client import (
    ClientHousekeepingService,
    ConsumerManager,
    DefaultConsumerIdsChangeListener,
    ProducerManager,
)
from .client.rebalance_lock_manager import RebalanceLockManager
from .config import BrokerConfig
from .config_file import ConfigManager
from .consumer_offset_manager import ConsumerOffsetManager
from .consumer_order_info_manager import ConsumerOrderInfoManager
from .deleted_topic_manager import DeletedTopicManager
from .longpolling import PullRequestHoldService
from .longpolling.notify_message_arriving_listener import NotifyMessageArrivingListener
from .open_files_limit import raise_open_files_limit
from .pop import PopReviveService
from .processor import (
    AdminBrokerProcessor,
    ClientManageProcessor,
    ConsumerManageProcessor,
    PullMessageProcessor,
    QueryMessageProcessor,
    SendMessageProcessor,
)
from .processor.ack_message_processor import AckMessageProcessor
from .processor.admin_consumer_status_processor import AdminConsumerStatusProcessor
from .processor.admin_ext_processor import AdminExtProcessor
from .processor.admin_offset_processor import AdminOffsetProcessor
from .processor.admin_queue_processor import AdminQueueProcessor
from .processor.admin_transaction_processor import AdminTransactionProcessor
from .processor.broker_config_processor import BrokerConfigProcessor
from .processor.broker_status_processor import BrokerStatusProcessor
from .processor.change_invisible_time_processor import ChangeInvisibleTimeProcessor
from .processor.consumer_manage_processor import total_physical_memory
from .processor.end_transaction_processor import EndTransactionProcessor
from .processor.notification_processor import NotificationProcessor
from .processor.peek_message_processor import PeekMessageProcessor
from .processor.pop_message_processor import PopMessageProcessor
from .processor.pop_rollback_processor import PopRollbackProcessor
from .processor.query_assignment_processor import QueryAssignmentProcessor
from .processor.recall_message_processor import RecallMessageProcessor
from .processor.reply_message_processor import ReplyMessageProcessor
from .schedule import ScheduleMessageService
from .stats import BrokerStatsManager
from .subscription_group_manager import SubscriptionGroupManager
from .topic_config_manager import TopicConfigManager
from .transaction import TransactionalMessageCheckService, TransactionalMessageService
from .vip_channel import broker_remoting_server

log = logging.getLogger(__name__)
T = TypeVar("T")


class BrokerController:
    """One broker. ``await start()`` / ``await shutdown()``, or ``async with BrokerController(config):``."""

    def __init__(self, config: BrokerConfig, config_file: str | os.PathLike[str] | None = None) -> None:
        self.broker_config = config
        # The properties file the broker was started from (-c): UPDATE_BROKER_CONFIG writes its changes into it.
        self.config_file = os.path.abspath(config_file) if config_file is not None else None
        self.store_config = config.to_store_config()
        self.store = DefaultMessageStore(self.store_config)
        self.tasks = TaskTracker(log)
        self.registration = BrokerRegistration(self)
        self.topic_config_manager = TopicConfigManager(config, on_change=self.registration.on_topic_config_changed)
        self.deleted_topic_manager = DeletedTopicManager(config)
        self.subscription_group_manager = SubscriptionGroupManager(config)
        self.consumer_offset_manager = ConsumerOffsetManager(config)
        self.consumer_order_info_manager = ConsumerOrderInfoManager(config)
        self.consumer_ids_change_listener = DefaultConsumerIdsChangeListener(
            config.notify_consumer_ids_changed_enable, self.tasks
        )
        self.consumer_manager = ConsumerManager(self.consumer_ids_change_listener, config.channel_expired_timeout)
        self.producer_manager = ProducerManager(config.channel_expired_timeout)
        self.rebalance_lock_manager = RebalanceLockManager(config.rebalance_lock_max_live_time)
        self.client_housekeeping_service = ClientHousekeepingService(self.producer_manager, self.consumer_manager,
                                                                     self.rebalance_lock_manager)
        self.schedule_message_service = ScheduleMessageService(self)
        self.broker_stats_manager = BrokerStatsManager(config.broker_cluster_name, config.stats_sample_interval,
                                                       self.store.commit_log)
        self.remoting_server = broker_remoting_server(config)  # (and its VIP channel)
        self.transactional_message_service = TransactionalMessageService(self)
        self.transactional_message_check_service = TransactionalMessageCheckService(
            self, self.transactional_message_service
        )
        self.send_message_processor = SendMessageProcessor(self)
        self.end_transaction_processor = EndTransactionProcessor(self)
        self.pull_message_processor = PullMessageProcessor(self)
        self._create_waiting_parts(config)
        # (before the processors: the server-side rebalance reads routes through its name-server client)
        self.broker_outer_api = BrokerOuterAPI.for_broker(config)
        self._register_processors()
        self.remoting_server.on_channel_close(self._on_channel_close)
        self._initial_acl(config)
        # storeHost of written messages: brokerIP1 and the port actually bound (known after start()).
        self.store_host = pack_host(config.store_host_ip, config.listen_port)
        self._pull_executor: ThreadPoolExecutor | None = None
        self._memory_bytes = int(total_physical_memory() * config.access_message_in_memory_max_ratio / 100)
        self._started = False
        self._stopped = False

    def _register_processors(self) -> None:
        """RocketMQ's registerProcessor: each processor takes its request codes on the server."""
        processors = (
            self.send_message_processor,
            self.pull_message_processor,
            QueryMessageProcessor(self),
            ClientManageProcessor(self),
            ConsumerManageProcessor(self),
            AdminBrokerProcessor(self),
            AdminExtProcessor(self),
            BrokerConfigProcessor(self),
            BrokerStatusProcessor(self),
            AdminQueueProcessor(self),
            AdminConsumerStatusProcessor(self),
            AdminTransactionProcessor(self),
            AdminOffsetProcessor(self),
            ReplyMessageProcessor(self),
            self.end_transaction_processor,
            RecallMessageProcessor(self),
            self.pop_message_processor,
            self.ack_message_processor,
            ChangeInvisibleTimeProcessor(self),
            PeekMessageProcessor(self),
            PopRollbackProcessor(self),
            self.notification_processor,
        )
        for p in processors:
            p.register_to(self.remoting_server)
        self.query_assignment_processor = QueryAssignmentProcessor(self)
        self.query_assignment_processor.register_to(self.remoting_server)

    def _initial_acl(self, config: BrokerConfig) -> None:
        acl_file = config.resolved_acl_file
        if config.acl_enable and acl_file is not None:
            # Read now, so a bad file stops the broker before it listens. Every request is checked, as RocketMQ's
            # broker does with aclEnable=true.
            self.remoting_server.request_validator = PlainAccessValidator.for_broker(acl_file)
            log.info("access control on: accounts from %s", acl_file)

    def _create_waiting_parts(self, config: BrokerConfig) -> None:
        """What parks requests until messages arrive (pulls, pops, notifications) and what wakes them."""
        self.pull_request_hold_service = PullRequestHoldService(
            self.store.get_max_offset_in_queue,
            self.pull_message_processor.execute_request_when_wakeup,
            self.tasks,
            config.pull_request_hold_check_interval,
            on_park=self.store.reput_service.hurry,
            max_parked=config.max_pull_polling_size,
        )
        self._create_pop_parts()
        self.message_arriving_listener = NotifyMessageArrivingListener(
            self.pull_request_hold_service, self.pop_message_processor.long_polling,
            self.notification_processor.long_polling, self.schedule_message_service, self.store.reput_service,
        )
        # The dispatcher polls every 1 ms while pulls or pops wait for arrivals, every 10 ms while none does.
        self.store.reput_service.prompt_needed = self.message_arriving_listener.someone_waits
        # (after a put: see NotifyMessageArrivingListener.dispatch_soon_if_awaited)
        self.dispatch_soon_if_awaited = self.message_arriving_listener.dispatch_soon_if_awaited

    def _create_pop_parts(self) -> None:
        """RocketMQ 5's POP: its processors (registered with the others) and the revive service."""
        self.pop_message_processor = PopMessageProcessor(self)
        self.ack_message_processor = AckMessageProcessor(self)
        self.notification_processor = NotificationProcessor(self)
        self.pop_revive_service = PopReviveService(self)

    # --- addresses ---

    @property
    def port(self) -> int:
        return self.remoting_server.port

    @property
    def address(self) -> str:
        """The advertised address, ``brokerIP1:port`` with the port actually bound (valid after start())."""
        return f"{self.broker_config.broker_ip1}:{self.remoting_server.port}"

    @property
    def is_running(self) -> bool:
        return self._started and not self._stopped

    # --- lifecycle ---

    async def start(self) -> None:
        """Load the store, listen, start the services and register with the name servers. Cut short anywhere
        (a failure, or cancelled: a caller's timeout, Ctrl-C), it undoes what it started before the exception goes
        on: no store thread left running, no store lock held, no port left open."""
        if self._started:
            raise RuntimeError("broker already started")
        self._started = True
        bc = self.broker_config
        self._pull_executor = ThreadPoolExecutor(bc.pull_thread_pool_nums, thread_name_prefix="pull")
        try:
            # Store recovery may read every file: never on the event loop. Whole: cancelled meanwhile, the
            # thread would go on loading (and start the store's threads) after the store's shutdown below.
            began = time.monotonic()
            await run_whole(asyncio.to_thread(self._load_and_start_store))
            log.info("config and store loaded in %.3f s", time.monotonic() - began)
            if self.deleted_topic_manager.prune(self.store.commit_log.get_min_offset()):
                self.deleted_topic_manager.persist_soon()
            await self.remoting_server.start()
        except BaseException:
            # e.g. the store directory is locked by another broker, or the port is taken. Only the store to undo:
            # shutdown() would write config files that may not have loaded.
            self._stopped = True
            self._pull_executor.shutdown(wait=False)
            await run_whole(asyncio.to_thread(self.store.shutdown))  # a no-op when the store never loaded
            await self.remoting_server.stop()  # (cancelled once it listened)
            raise
        try:
            self._start_services()
            began = time.monotonic()
            await self.register_broker_all()
            log.info("registered with the name servers in %.3f s", time.monotonic() - began)
        except BaseException:
            # Cancelled while it registers (a name server that does not answer keeps it there for
            # registerBrokerTimeoutMills), or a service failed: shut down whatever started, as shutdown() does.
            # Unregistering only from the name servers that took a registration: the others would only add a
            # timeout each.
            await run_whole(self._shutdown(unregister=bool(self.registration.acked_versions)))
            raise
        log.info(
            "The broker[%s, %s] boot success. serializeType=msgpack and name server is %s",
            bc.broker_name,
            self.address,
            bc.namesrv_addr or "(none)",
        )

    def _start_services(self) -> None:
        """Everything after the store and the port: long polling, POP revive, schedule and transaction checks,
        the periodic persists, stats and registration."""
        bc = self.broker_config
        self.store_host = pack_host(bc.store_host_ip, self.remoting_server.port)
        # (the store's own fallback too: the timer's deliveries name no store host)
        self.store.set_store_address(bc.store_host_ip, self.remoting_server.port)
        self.message_arriving_listener.start()
        self.pop_revive_service.start()
        self.pop_message_processor.buffer_merge.start()
        self.schedule_message_service.start()
        self.transactional_message_check_service.start()
        tasks = self.tasks
        tasks.periodic("persist-consumer-offsets", bc.flush_consumer_offset_interval,
                       self.consumer_offset_manager.persist_if_changed)
        tasks.periodic("persist-consumer-order-info", bc.flush_consumer_offset_interval,
                       self.consumer_order_info_manager.persist_if_changed)
        tasks.periodic("client-housekeeping", bc.client_housekeeping_interval,
                       self.client_housekeeping_service.scan_exception_channel)
        self.broker_stats_manager.sample()
        tasks.periodic("broker-stats-sample", bc.stats_sample_interval, self._sample_stats)
        if bc.namesrv_addr_list:
            tasks.periodic("register-broker", bc.register_name_server_period, self.register_broker_all)

    def _config_managers(self) -> tuple[ConfigManager, ...]:
        return (
            self.topic_config_manager,
            self.deleted_topic_manager,
            self.subscription_group_manager,
            self.consumer_offset_manager,
            self.consumer_order_info_manager,
            self.schedule_message_service,
            self.query_assignment_processor.message_request_mode_manager,
        )

    def _load_and_start_store(self) -> None:
        raise_open_files_limit()
        os.makedirs(self.broker_config.config_dir, exist_ok=True)
        for manager in self._config_managers():
            if not manager.load():
                raise RuntimeError(f"cannot load {manager.config_file_path} (nor its .bak); the log says why. Mend "
                                   f"one, or move both aside to start without what they held")
        self.store.message_arriving_listener = self.message_arriving_listener.arriving
        self.store.load()
        self.store.set_deleted_topics(self.deleted_topic_manager.deleted_topic_table)
        self.store.start()
        counts: dict[str, int] = {}
        for topic, queue_id in list(self.store.consume_queue_table):
            counts[topic] = max(counts.get(topic, 0), queue_id + 1)
        self.topic_config_manager.recover_topics(counts)  # (written back before it returns)

    async def shutdown(self) -> None:
        """Unregister, stop serving, persist the config files and shut the store down (no abort file left)."""
        if not self._started or self._stopped:
            return
        await self._shutdown(unregister=True)

    async def _shutdown(self, unregister: bool) -> None:
        # (also a start cut short after the store loaded: each part's shutdown copes with a part never started)
        self._stopped = True
        bc = self.broker_config
        await self.tasks.close()
        if unregister and bc.namesrv_addr_list:
            try:
                await asyncio.wait_for(
                    self.broker_outer_api.unregister_broker_all(bc.namesrv_addr_list, self.registration.identity()),
                    bc.register_broker_timeout + 1,
                )
            except TimeoutError:
                log.warning("unregistering from the name servers timed out")
        await self.remoting_server.stop()
        try:
            await self.pop_message_processor.buffer_merge.flush_all()  # before the offsets are persisted
        except Exception:
            log.exception("cannot write the buffered pop checkpoints at shutdown")
        self.message_arriving_listener.shutdown()
        self.schedule_message_service.shutdown()
        for manager in self._config_managers():
            await manager.wait_persisted()
            try:
                await manager.persist_if_changed()
            except Exception:  # (not only a disk's error: the store must still be shut down cleanly below)
                log.exception("cannot persist %s at shutdown", manager.config_file_path)
        self.topic_config_manager.close()
        executor = self._pull_executor
        if executor is not None:
            await asyncio.to_thread(executor.shutdown, True)
        await asyncio.to_thread(self.store.shutdown)
        await self.broker_outer_api.close()
        log.info("broker %s at %s shut down", bc.broker_name, self.address)

    async def __aenter__(self) -> BrokerController:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # --- name server registration ---

    async def register_broker_all(self, force_full: bool = False) -> list[RegisterResult]:
        """REGISTER_BROKER with every name server (see BrokerRegistration.register_all)."""
        return await self.registration.register_all(force_full)

    async def _sample_stats(self) -> None:
        for _ in self.broker_stats_manager.sample_in_steps():
            await asyncio.sleep(0)  # the loop's own work between steps

    # --- helpers for the processors ---

    async def run_in_pull_executor(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a store read on a pull thread: reads may touch the disk, the event loop must not."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pull_executor, functools.partial(fn, *args))

    def get_message(
        self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int, message_filter: MessageFilter
    ) -> GetMessageResult | asyncio.Future[GetMessageResult]:
        """A pull's store read: the result, read right here when what it reads is in memory; else a future of
        it, read on a pull thread.

        "In memory" is RocketMQ's rule (checkInDiskByCommitOffset): the record lies within the newest
        accessMessageInMemoryMaxRatio % of physical memory worth of commit log. A consumer keeping up reads
        what was just written; a pull thread would only add two thread handoffs (the read copies from the
        mapped file while holding the GIL wherever it runs). Reads of older data keep the pull threads, and
        so do filters that read every candidate record (SQL92): that is CPU work for up to hundreds of records,
        and on a pull thread the loop still gets the GIL every switch interval meanwhile.
        """
        store = self.store
        if not getattr(message_filter, "needs_commit_log", False) and self._in_memory(topic, queue_id, offset):
            return store.get_message(group, topic, queue_id, offset, max_msg_nums, message_filter)
        return asyncio.get_running_loop().run_in_executor(
            self._pull_executor,
            functools.partial(store.get_message, group, topic, queue_id, offset, max_msg_nums, message_filter),
        )

    def is_in_memory(self, topic: str, queue_id: int, offset: int) -> bool:
        """Whether a read of ``offset`` in the queue would come from memory (see get_message)."""
        return self._in_memory(topic, queue_id, offset)

    def _in_memory(self, topic: str, queue_id: int, offset: int) -> bool:
        store = self.store
        memory = self._memory_bytes
        if store.get_max_phy_offset() - store.get_min_phy_offset() <= memory:
            return True  # the whole commit log fits: no need to look the queue up (most dev and test brokers)
        behind = store.get_max_offset_in_queue(topic, queue_id) - offset
        if behind <= 0:
            return True  # nothing to read: the answer comes from the queue's offsets alone
        if behind * CQ_STORE_UNIT_SIZE > memory:
            return False  # even the queue entries are too far back to be in memory
        return store.get_max_phy_offset() - store.get_commit_log_offset_in_queue(topic, queue_id, offset) <= memory

    def _on_channel_close(self, channel: Channel) -> None:
        self.client_housekeeping_service.on_channel_close(channel)
        self.message_arriving_listener.on_channel_close(channel)

