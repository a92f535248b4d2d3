"""GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG (mqadmin getBrokerConfig / updateBrokerConfig), as RocketMQ's
AdminBrokerProcessor and its Configuration answer them: the settings as a properties text; a change applied to the
running broker at once, then written into the properties file the broker was started from (Configuration.update,
which ends with persist()), so that it survives a restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
from typing import TYPE_CHECKING

from pocketmq.common.properties_text import parse_properties
from pocketmq.remoting import fastjson
from pocketmq.remoting.admin_header import GetBrokerConfigResponseHeader
from pocketmq.remoting.body import DataVersion
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel

from ..config import BrokerConfig
from ..config_checks import check_value, value_error
from ..config_file import write_bytes_file_sync
from ..config_properties import (
    convert_value,
    format_value,
    unknown_key_message,
    update_properties_bytes,
)
from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

# UPDATE_BROKER_CONFIG changes only the keys whose value the broker reads at each use (as RocketMQ reads them: the
# clean service's retention keys at each round, the transaction check's keys at each check, maxMessageSize at each
# put, enableRetryTopicV2 and retrieveMessageFromPopRetryTopicV1 at each pop and revive, the transaction, reply and
# recall switches at each send, reply and recall: an operator stops transactional sends without a restart, as on
# RocketMQ 5). The others (ports, paths,
# store sizes, thread counts) take effect at the next start: change them in the properties file.
RUNTIME_KEYS = frozenset({
    "autoCreateTopicEnable", "autoCreateSubscriptionGroup", "defaultTopicQueueNums", "brokerPermission",
    "longPollingEnable", "shortPollingTimeMills", "enablePropertyFilter", "traceTopicEnable",
    "channelExpiredTimeout", "maxMessageSize", "fileReservedTime", "deleteWhen", "diskMaxUsedSpaceRatio",
    "diskSpaceWarningLevelRatio", "diskSpaceCleanForciblyRatio", "maxTransferCountOnMessageInMemory",
    "maxTransferBytesOnMessageInMemory", "transactionTimeOut", "transactionCheckMax", "transactionCheckInterval",
    "enableRetryTopicV2", "retrieveMessageFromPopRetryTopicV1", "rejectTransactionMessage", "storeReplyMessageEnable",
    "recallMessageEnable", "allowRecallWhenBrokerNotWriteable",
})
_BY_KEY = {f.metadata["key"]: f for f in dataclasses.fields(BrokerConfig)}
# Keys RocketMQ 5's AdminBrokerProcessor never lets UPDATE_BROKER_CONFIG change (its initConfigBlackList; the
# configBlackList key adds to them there, a key pocketmq does not have): NO_PERMISSION, as there.
CONFIG_BLACK_LIST = frozenset({"brokerConfigPath", "rocketmqHome", "configBlackList"})

# Keys mqadmin's exportConfigs copies with Properties.setProperty, which refuses a null (its NullPointerException
# failed the command): settings pocketmq has no use for, at the values it works as.
# NettyClientConfig's clientCallbackExecutorThreads (its default, the machine's CPUs) is what 5.x's exportMetrics
# reports as the broker's cpuNum.
_FIXED_CONFIG = (f"clientCallbackExecutorThreads={os.cpu_count() or 1}\n"
                 "filterServerNums=0\nslaveReadEnable=false\nuseTLS=false\n")


class BrokerConfigProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.GET_BROKER_CONFIG] = self.get_broker_config
        self.handlers[RequestCode.UPDATE_BROKER_CONFIG] = self.update_broker_config
        self.config_version = DataVersion()
        self._file_lock = asyncio.Lock()  # one read-change-write of the properties file at a time

    async def get_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        # Without the broker's own key pair: any account may read the config (as in RocketMQ, whose BrokerConfig
        # has no such keys), and the pair is an admin account of the name servers.
        c = self.controller
        text = c.broker_config.to_properties(secrets=False, bound_port=c.port) + _FIXED_CONFIG
        version = fastjson.dumps(self.config_version)  # Configuration.getDataVersionJson
        return response(request, ext_fields=GetBrokerConfigResponseHeader(version), body=text.encode("utf-8"))

    async def update_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        if not request.body:
            return response(request)  # RocketMQ: no body, nothing to change
        try:
            props = parse_properties(request.body.decode("utf-8", "replace"))
        except ValueError as e:  # (a malformed \uXXXX: RocketMQ's string2Properties fails alike)
            return response(request, ResponseCode.SYSTEM_ERROR, f"string2Properties error: {e}")
        if CONFIG_BLACK_LIST.intersection(props):  # (AdminBrokerProcessor.validateBlackListConfigExist)
            return response(request, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        changes: dict[str, object] = {}
        for key, value in props.items():
            refusal = _refusal(key, value, changes)
            if refusal is not None:
                return response(request, ResponseCode.SYSTEM_ERROR, refusal)
        log.info("UPDATE_BROKER_CONFIG %s from %s", props, channel.remote_address)
        bc = self.controller.broker_config
        for name, new in changes.items():
            setattr(bc, name, new)
        await self._apply_broker_config(changes)
        await self._persist(changes)
        return response(request)

    async def _apply_broker_config(self, changes: dict[str, object]) -> None:
        c = self.controller
        bc = c.broker_config
        if "channel_expired_timeout" in changes:
            c.consumer_manager.channel_expired_timeout = bc.channel_expired_timeout
            c.producer_manager.channel_expired_timeout = bc.channel_expired_timeout
        self._apply_store_config(changes)
        if "transaction_check_interval" in changes:
            c.transactional_message_check_service.interval_changed()
        self.config_version.next_version()
        if c.topic_config_manager.apply_broker_config(changes):
            # (TBW102's queues, or a topic created): routable once the answer is sent, as a created topic is
            await c.topic_config_manager.wait_persisted()
            await c.register_broker_all()
        if "broker_permission" in changes:
            # Every topic's advertised perm changes, and no topic did: a delta of the changed topics would be
            # empty, so the whole table goes.
            c.topic_config_manager.data_version.next_version()
            await c.register_broker_all(force_full=True)

    def _apply_store_config(self, changes: dict[str, object]) -> None:
        """The store works from its own copy of the settings (to_store_config): the changed ones go there too, as
        to_store_config turns them (a percent ratio into a fraction), for the store's next read of them."""
        c = self.controller
        targets = [f.metadata["store"] for f in dataclasses.fields(BrokerConfig)
                   if f.name in changes and "store" in f.metadata]
        if not targets:
            return
        fresh = c.broker_config.to_store_config()
        for target in targets:
            setattr(c.store_config, target, getattr(fresh, target))
        if "max_message_size" in changes:
            c.store.commit_log.update_max_message_size(c.store_config.max_message_size)

    async def _persist(self, changes: dict[str, object]) -> None:
        """Configuration.persist: the changed keys into the properties file the broker was started from (-c), its
        other lines and comments kept. RocketMQ writes every setting into a file of its own when there is none
        (~/store/config/broker.properties), which no start reads again: pocketmq writes nothing then, and the
        change lasts until the broker stops, as there."""
        path = self.controller.config_file
        if path is None:
            return
        bc = self.controller.broker_config
        values = {_key(name): format_value(_field(name), getattr(bc, name)) for name in changes}
        async with self._file_lock:
            try:
                await asyncio.to_thread(_write_properties, path, values)
            except OSError as e:  # (RocketMQ logs it and answers success: the running broker has the change)
                log.error("cannot write the broker config change %s into %s: %s", values, path, e)


def _refusal(key: str, value: str, changes: dict[str, object]) -> str | None:
    """Why ``key=value`` cannot change at run time, or None with its attribute's value added to ``changes``."""
    f = _BY_KEY.get(key)
    if f is None:
        return unknown_key_message(key, list(_BY_KEY))
    if key not in RUNTIME_KEYS:
        return (f"{key} cannot change at run time (set it in the broker's properties file and restart); "
                f"run-time keys: {', '.join(sorted(RUNTIME_KEYS))}")
    try:
        converted = convert_value(f, value.strip())  # (as the properties file is read at start)
    except ValueError as e:
        return value_error(key, str(e))
    try:
        check_value(f, converted)  # (the checks a value in the properties file passes at start)
    except ValueError as e:
        return str(e)
    changes[f.name] = converted
    return None


def _field(name: str) -> dataclasses.Field[object]:
    return next(f for f in _BY_KEY.values() if f.name == name)


def _key(name: str) -> str:
    return str(_field(name).metadata["key"])


def _write_properties(path: str, values: dict[str, str]) -> None:
    """The file rewritten with ``values`` (tmp file, then .bak, as the JSON config files), its permission bits
    kept: a file holding secretKey stays unreadable to others. A symbolic link is followed, not replaced."""
    path = os.path.realpath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
            mode: int | None = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
    except FileNotFoundError:  # (deleted since the start: the changes alone, as RocketMQ writes a missing file)
        data, mode = b"", None
    write_bytes_file_sync(path, update_properties_bytes(data, values), mode)
