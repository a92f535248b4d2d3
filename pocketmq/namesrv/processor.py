"""DefaultRequestProcessor: the name server's request handlers, as in RocketMQ's namesrv."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from pocketmq.common.compression import DEFAULT_INFLATE_LIMIT
from pocketmq.common.faq_url import suggest_todo
from pocketmq.common.java_numbers import INT_MAX, INT_MIN
from pocketmq.common.java_text import parse_integer
from pocketmq.common.mix_all import NAMESPACE_ORDER_TOPIC_CONFIG
from pocketmq.common.properties_text import format_properties, parse_properties
from pocketmq.remoting.admin_body import KVTable
from pocketmq.remoting.admin_header import (
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from pocketmq.remoting.body import DataVersion, RegisterBrokerBody, body_crc32, encode_body, topic_route_body_dialect
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import BodyError, HeaderError
from pocketmq.remoting.header import (
    BrokerHeartbeatRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetRouteInfoRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel

from .config import PATH_KEYS, PROPERTY_KEYS, RUNTIME_KEYS, NamesrvConfig, config_properties, parse_runtime_value
from .kv_config_manager import KVConfigManager
from .route_info_manager import RouteInfoManager

log = logging.getLogger(__name__)

_Handler = Callable[[Channel, RemotingCommand], RemotingCommand | Awaitable[RemotingCommand]]

# A registration body bigger than this is decoded on a worker thread (a full table of 10,000 topics is over a
# megabyte, tens of milliseconds of decoding: bench/README.md), and its topics applied in steps between which
# the loop serves others.
DECODE_OFF_LOOP_BYTES = 64 * 1024


def _error(request: RemotingCommand, remark: str) -> RemotingCommand:
    return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, remark=remark)


def _header_body_crc32(request: RemotingCommand) -> int:
    """REGISTER_BROKER's bodyCrc32 as 4.9.7 reads it: an Integer, 0 (not checked) when absent or not a number."""
    text = (request.ext_fields or {}).get("bodyCrc32")
    try:
        return parse_integer(str(text), INT_MIN, INT_MAX) if text is not None else 0
    except ValueError:
        return 0


class DefaultRequestProcessor:
    """Handles the codes in ``handlers``; anything else gets REQUEST_CODE_NOT_SUPPORTED from the server."""

    def __init__(
        self,
        route_info_manager: RouteInfoManager,
        inflate_limit: int = DEFAULT_INFLATE_LIMIT,
        kv_config_manager: KVConfigManager | None = None,
        config: NamesrvConfig | None = None,
    ) -> None:
        self.route_info_manager = route_info_manager
        self.config = config if config is not None else NamesrvConfig()
        self._server: RemotingServer | None = None
        self.inflate_limit = inflate_limit  # what a compressed REGISTER_BROKER body may inflate to (the frame limit)
        self.kv_config_manager = kv_config_manager if kv_config_manager is not None else KVConfigManager()
        self.handlers: dict[int, _Handler] = {
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.QUERY_DATA_VERSION: self.query_broker_topic_config,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list_from_nameserver,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list_from_ns,
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
            RequestCode.BROKER_HEARTBEAT: self.broker_heartbeat,
            RequestCode.GET_UNIT_TOPIC_LIST: self._unit_topics(True, False),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self._unit_topics(None, True),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self._unit_topics(False, True),
        }

    def register_to(self, server: RemotingServer) -> None:
        self._server = server
        for code in self.handlers:
            server.register_processor(code, self.process_request)

    async def process_request(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        handler = self.handlers.get(request.code)
        if handler is None:
            return RemotingCommand.response_to(
                request,
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                remark=f" request type {request.code} not supported",
            )
        try:
            response = handler(channel, request)
            if not isinstance(response, RemotingCommand):
                response = await response
            return response
        except (HeaderError, BodyError) as e:
            log.warning("bad request code %s from %s: %s", request.code, channel.remote_address, e)
            return _error(request, f"bad request: {e}")

    # --- handlers (synchronous: the tables live in memory) ---

    async def register_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        # The CRC first, before the other fields are checked: 4.9.7 decodes a header field that does not parse
        # as unset, and so checks the body of a request whose brokerId is none or no number (and then fails it)
        crc = _header_body_crc32(request)
        if crc != 0 and body_crc32(request.body) != crc:
            log.warning("receive registerBroker request, crc32 not match: header %s, body %s, from %s",
                        crc, body_crc32(request.body), channel.remote_address)
            return _error(request, "crc32 not match")  # (4.9.7's remark, word for word)
        header = request.decode_header(RegisterBrokerRequestHeader)
        if request.body is not None and len(request.body) > DECODE_OFF_LOOP_BYTES:
            body = await asyncio.to_thread(RegisterBrokerBody.decode, request.body, header.compressed,
                                        self.inflate_limit, request.body_dialect)
        else:
            body = RegisterBrokerBody.decode(request.body, header.compressed, self.inflate_limit,
                                             request.body_dialect)
        delta_base = None
        if header.base_version_counter is not None:
            delta_base = DataVersion(header.base_version_timestamp or 0, header.base_version_counter)
        steps = self.route_info_manager.register_broker_in_steps(
            cluster_name=header.cluster_name,
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
            ha_server_addr=header.ha_server_addr,
            topic_config_wrapper=body.topic_config_serialize_wrapper,
            channel=channel,
            filter_server_list=body.filter_server_list,
            delta_base=delta_base,
            deleted_topics=body.deleted_topics,
            heartbeat_timeout=header.heartbeat_timeout_millis / 1000 if header.heartbeat_timeout_millis else None,
        )
        while True:
            try:
                next(steps)
            except StopIteration as done:
                result = done.value
                break
            await asyncio.sleep(0)  # let the loop serve others between steps of a big table
        if channel.closed:
            # Closed while its registration was decoded or applied: the close's clean-up ran before the broker was
            # there, and nothing else would drop it before it expires (never, with a huge heartbeat timeout).
            self.route_info_manager.on_channel_destroy(channel)
        # The ORDER_TOPIC_CONFIG namespace of the KV config, from which RocketMQ's brokers set their topics' order
        # flags (TopicConfigManager.updateOrderTopicConfig); none while the namespace does not exist.
        order_topics = self.kv_config_manager.get_kv_list_by_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return RemotingCommand.response_to(
            request,
            ResponseCode.SUCCESS,
            ext_fields=RegisterBrokerResponseHeader(
                result.ha_server_addr,
                result.master_addr,
                result.delta_accepted if delta_base is not None else None,
            ),
            body=request.encode_body(KVTable(order_topics)) if order_topics is not None else None,
        )

    def unregister_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(UnRegisterBrokerRequestHeader)
        self.route_info_manager.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    def broker_heartbeat(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """A RocketMQ 5 broker between registrations (one registered with heartbeatTimeoutMillis sends it every
        second): it is alive."""
        header = request.decode_header(BrokerHeartbeatRequestHeader)
        self.route_info_manager.update_broker_info_update_timestamp(header.broker_addr)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    def query_broker_topic_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(QueryDataVersionRequestHeader)
        data_version = request.decode_body(DataVersion)
        rim = self.route_info_manager
        changed = rim.is_broker_topic_config_changed(header.broker_addr, data_version)
        if not changed:
            # An unchanged broker that asks instead of registering is still alive.
            rim.update_broker_info_update_timestamp(header.broker_addr)
        ours = rim.query_broker_topic_config(header.broker_addr)
        return RemotingCommand.response_to(
            request,
            ResponseCode.SUCCESS,
            ext_fields=QueryDataVersionResponseHeader(changed=changed),
            body=request.encode_body(ours) if ours is not None else None,
        )

    def get_route_info_by_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetRouteInfoRequestHeader)
        route = self.route_info_manager.pick_topic_route_data(header.topic)
        if route is None:
            return RemotingCommand.response_to(
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                remark=f"No topic route info in name server for the topic: {header.topic}{suggest_todo()}",
            )
        if self.config.order_message_enable:
            route.order_topic_conf = self.kv_config_manager.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, header.topic)
        dialect = topic_route_body_dialect(
            request.body_dialect, request.version, bool(header.accept_standard_json_only)
        )
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=encode_body(route, dialect))

    def get_broker_cluster_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = request.encode_body(self.route_info_manager.get_all_cluster_info())
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)

    def get_all_topic_list_from_nameserver(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        body = request.encode_body(self.route_info_manager.get_all_topic_list())
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)

    def delete_topic_in_namesrv(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(DeleteTopicFromNamesrvRequestHeader)
        # (an empty cluster name is none: deleted everywhere, as RocketMQ's isEmpty check has it)
        self.route_info_manager.delete_topic(header.topic, header.cluster_name or None)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    def _unit_topics(self, unit: bool | None, unit_sub: bool) -> _Handler:
        def handler(channel: Channel, request: RemotingCommand) -> RemotingCommand:
            body = request.encode_body(self.route_info_manager.get_unit_topics(unit, unit_sub))
            return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)
        return handler

    def wipe_write_perm_of_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return self._write_perm_of_broker(channel, request, wipe=True)

    def add_write_perm_of_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return self._write_perm_of_broker(channel, request, wipe=False)

    def _write_perm_of_broker(self, channel: Channel, request: RemotingCommand, wipe: bool) -> RemotingCommand:
        header = request.decode_header(WipeWritePermOfBrokerRequestHeader)  # (ADD's header has the same field)
        count = self.route_info_manager.operate_write_perm_of_broker(header.broker_name, wipe)
        log.info("write perm of broker %s %s (%d topics), by %s", header.broker_name, "wiped" if wipe else "added",
                 count, channel.remote_address)
        answer = WipeWritePermOfBrokerResponseHeader(count) if wipe else AddWritePermOfBrokerResponseHeader(count)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, ext_fields=answer)

    def get_topics_by_cluster(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetTopicsByClusterRequestHeader)
        body = request.encode_body(self.route_info_manager.get_topics_by_cluster(header.cluster))
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)

    def get_system_topic_list_from_ns(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = request.encode_body(self.route_info_manager.get_system_topic_list())
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=body)

    # --- KV config (DefaultRequestProcessor's putKVConfig ... getKVListByNamespace, same answers) ---

    def get_namesrv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        port = self._server.port if self._server is not None else None
        text = format_properties(config_properties(self.config, port))
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=text.encode("utf-8"))

    def update_namesrv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        if not request.body:
            return RemotingCommand.response_to(request, ResponseCode.SUCCESS)  # RocketMQ: nothing to change
        try:
            props = parse_properties(request.body.decode("utf-8", "replace"))
        except ValueError as e:  # (a malformed \uXXXX: RocketMQ's string2Properties fails alike, with this remark)
            log.warning("UPDATE_NAMESRV_CONFIG from %s: %s", channel.remote_address, e)
            return _error(request, "string2Properties error")
        if PATH_KEYS & props.keys():
            return RemotingCommand.response_to(request, ResponseCode.NO_PERMISSION, remark="Can not update config path")
        known = {key for key, _ in PROPERTY_KEYS.values()}
        changes: dict[str, object] = {}
        for key, value in props.items():
            if key not in known:
                return _error(request, f"unknown name server config key {key!r}")
            if key not in RUNTIME_KEYS:
                return _error(request, f"{key} cannot change at run time (restart the name server with it); "
                                       f"run-time keys: {', '.join(sorted(RUNTIME_KEYS))}")
            try:
                name, new = parse_runtime_value(key, value)
            except ValueError as e:
                return _error(request, f"bad value for {key}: {e}")
            changes[name] = new
        log.info("UPDATE_NAMESRV_CONFIG %s from %s", props, channel.remote_address)
        for name, new in changes.items():
            setattr(self.config, name, new)
        # (the route table keeps copies of these two)
        self.route_info_manager.broker_channel_expired_time = self.config.broker_channel_expired_time
        self.route_info_manager.delete_topic_with_broker_registration = (
            self.config.delete_topic_with_broker_registration)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    def put_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(PutKVConfigRequestHeader)
        self.kv_config_manager.put_kv_config(header.namespace, header.key, header.value)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    def get_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetKVConfigRequestHeader)
        value = self.kv_config_manager.get_kv_config(header.namespace, header.key)
        if value is None:
            return RemotingCommand.response_to(
                request,
                ResponseCode.QUERY_NOT_FOUND,
                remark=f"No config item, Namespace: {header.namespace} Key: {header.key}",
            )
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, ext_fields=GetKVConfigResponseHeader(value))

    def delete_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(DeleteKVConfigRequestHeader)
        self.kv_config_manager.delete_kv_config(header.namespace, header.key)
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS)

    def get_kv_list_by_namespace(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetKVListByNamespaceRequestHeader)
        table = self.kv_config_manager.get_kv_list_by_namespace(header.namespace)
        if table is None:
            return RemotingCommand.response_to(
                request, ResponseCode.QUERY_NOT_FOUND, remark=f"No config item, Namespace: {header.namespace}"
            )
        return RemotingCommand.response_to(request, ResponseCode.SUCCESS, body=request.encode_body(KVTable(table)))
