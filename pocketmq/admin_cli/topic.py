"""Topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus, updateOrderConf."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQClientException
from pocketmq.common.attribute import AttributeError_, parse_to_map
from pocketmq.common.java_hash import hash_map_order
from pocketmq.common.mix_all import NAMESPACE_ORDER_TOPIC_CONFIG, is_retry_or_dlq_topic
from pocketmq.remoting import fastjson
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.errors import RemotingError
from pocketmq.remoting.route_data import TopicRouteData

from .common import Printable, add_target, bool_arg, command, human_time, table


def add(sub: Any) -> None:
    p = command(sub, "updateTopic", "Update or create topic", update_topic)
    add_target(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-r", "--readQueueNums", dest="read", type=int, default=8, help="set read queue nums (8)")
    p.add_argument("-w", "--writeQueueNums", dest="write", type=int, default=8, help="set write queue nums (8)")
    p.add_argument("-p", "--perm", type=int, default=6, help="set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]")
    p.add_argument("-o", "--order", type=bool_arg, default=False, help="set topic's order(true|false)")
    p.add_argument("-a", "--attributes", type=_attributes, default={},
                   help="attribute(+a=b,+c=d,-e), e.g. +message.type=FIFO (NORMAL|FIFO|DELAY|TRANSACTION|MIXED)")

    p = command(sub, "deleteTopic", "Delete topic from broker and NameServer.", delete_topic)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-c", "--clusterName", dest="cluster_name", required=True, help="delete topic from which cluster")

    p = command(sub, "topicList", "Fetch all topic list from name server", topic_list)
    p.add_argument("-c", "--clusterModel", dest="cluster_model", action="store_true",
                   help="with each topic's cluster and consumer groups")

    p = command(sub, "topicRoute", "Examine topic route info", topic_route)
    p.add_argument("-t", "--topic", required=True)

    p = command(sub, "topicStatus", "Examine topic Status info", topic_status)
    p.add_argument("-t", "--topic", required=True)

    p = command(sub, "updateOrderConf", "Create or update or delete order conf", update_order_conf)
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument("-m", "--method", required=True, choices=("put", "get", "delete"), help="option type")
    p.add_argument("-v", "--orderConf", dest="order_conf", default="",
                   help="set order conf [eg. brokerName1:num;brokerName2:num]")


def _attributes(text: str) -> dict[str, str]:
    try:
        return parse_to_map(text)
    except AttributeError_ as e:
        raise argparse.ArgumentTypeError(str(e)) from None


async def update_topic(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    tc = TopicConfig(args.topic, args.read, args.write, args.perm, order=args.order, attributes=args.attributes)
    addrs = await admin.create_topic(tc, cluster=args.cluster_name, broker_addr=args.broker_addr)
    lines = [f"create topic to {a} success." for a in addrs] + [str(tc)]
    data: dict[str, object] = {"brokers": addrs, "topicConfig": tc}
    if args.order:
        data["orderConf"] = await _set_order_conf(admin, tc, args, lines)
    return Printable(data, lines)


async def _set_order_conf(admin: MQAdminExt, tc: TopicConfig, args: argparse.Namespace, lines: list[str]) -> str:
    """mqadmin's order conf of ``updateTopic -o true``: the topic's queues on the broker, or on every broker of the
    cluster, in the name servers' ORDER_TOPIC_CONFIG, which the brokers take their order flags from at their next
    registration. Its line has no line break of its own: mqadmin prints the next one straight after it."""
    info = await admin.examine_broker_cluster_info()
    if args.broker_addr:
        name = next((n for n, bd in info.broker_addr_table.items() if args.broker_addr in bd.broker_addrs.values()),
                    None)
        if name is None:
            raise MQClientException(f"no broker at {args.broker_addr} in the name servers' cluster info")
        conf = f"{name}:{tc.write_queue_nums}"
        lines[0] = f"set broker orderConf. isOrder=true, orderConf=[{conf}]{lines[0]}"
        return await admin.create_or_update_order_conf(tc.topic_name, conf, False)
    names = hash_map_order(sorted(info.cluster_addr_table.get(args.cluster_name, ())))
    conf = ";".join(f"{n}:{tc.write_queue_nums}" for n in names)
    lines[-1] = f"set cluster orderConf. isOrder=true, orderConf=[{conf}]{lines[-1]}"
    return await admin.create_or_update_order_conf(tc.topic_name, conf, True)


async def update_order_conf(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    """mqadmin's updateOrderConf: the topic's entry in the name servers' ORDER_TOPIC_CONFIG namespace."""
    topic, conf = args.topic.strip(), args.order_conf.strip()
    data = {"topic": topic, "orderConf": conf or None}
    if args.method == "get":
        value = await admin.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        if value is None:  # (mqadmin fails with the name server's QUERY_NOT_FOUND)
            raise MQClientException(f"No config item, Namespace: {NAMESPACE_ORDER_TOPIC_CONFIG} Key: {topic}")
        data["orderConf"] = value
        return Printable(data, [f"get orderConf success. topic=[{topic}], orderConf=[{value}] "])
    if args.method == "put":
        if not conf:
            raise MQClientException("please set orderConf with option -v.")
        await admin.create_or_update_order_conf(topic, conf, True)
        return Printable(data, [f"update orderConf success. topic=[{topic}], orderConf=[{conf}]"])
    await admin.delete_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
    return Printable(data, [f"delete orderConf success. topic=[{topic}]"])


async def delete_topic(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    addrs = await admin.delete_topic(args.topic, args.cluster_name)
    return Printable({"topic": args.topic, "cluster": args.cluster_name, "brokers": addrs},
                     [f"delete topic [{args.topic}] from cluster [{args.cluster_name}] success.",
                      f"delete topic [{args.topic}] from NameServer success."])


async def topic_list(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    topics = await admin.fetch_all_topic_list()
    if not args.cluster_model:
        return Printable(topics, topics)
    info = await admin.examine_broker_cluster_info()
    cluster_of = {name: bd.cluster for name, bd in info.broker_addr_table.items()}
    silent: set[str] = set()  # brokers that did not answer: not asked again by this command
    rows = []
    for t in topics:
        if is_retry_or_dlq_topic(t):
            continue
        try:
            route = await admin.examine_topic_route_info(t)
        except Exception:  # a topic deleted meanwhile: listed without details, as mqadmin does
            rows.append(("", t, ""))
            continue
        cluster = next((cluster_of.get(q.broker_name, "") for q in route.queue_datas), "")
        for g in await _consumer_groups(admin, t, route, silent) or [""]:
            rows.append((cluster, t, g))
    data = [{"clusterName": c, "topic": t, "consumerGroup": g} for c, t, g in rows]
    return Printable(data, table(("#Cluster Name", "#Topic", "#Consumer Group"), rows))


async def _consumer_groups(admin: MQAdminExt, topic: str, route: TopicRouteData, silent: set[str]) -> list[str]:
    """The groups consuming ``topic`` at its master brokers, but those in ``silent``. A broker that does not answer
    is named on stderr and added to ``silent``: asked once per topic, it held the command --timeout per topic."""
    groups: set[str] = set()
    for bd in route.broker_datas:
        addr = bd.select_broker_addr()
        if addr is None or addr in silent:
            continue
        try:
            groups.update(await admin.query_topic_consume_by_who_at(addr, topic))
        except RemotingError as e:
            silent.add(addr)
            print(f"pocketmq topicList: {bd.broker_name} ({addr}) did not answer; its topics are listed without "
                  f"their consumer groups ({e})", file=sys.stderr)
        except Exception:  # (a broker's refusal: the topic deleted meanwhile, as above)
            continue
    return sorted(groups)


async def topic_route(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    route = await admin.examine_topic_route_info(args.topic)
    return Printable(route, fastjson.dumps_pretty(route).splitlines())


async def topic_status(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    stats = await admin.examine_topic_stats(args.topic)
    items = sorted(stats.offset_table.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id))
    # A queue that never had a message shows no time, as mqadmin's does.
    rows = [(mq.broker_name, mq.queue_id, o.min_offset, o.max_offset,
             human_time(o.last_update_timestamp) if o.last_update_timestamp > 0 else "") for mq, o in items]
    data = [{"brokerName": mq.broker_name, "queueId": mq.queue_id, **o.to_dict()} for mq, o in items]
    return Printable(data, table(("#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"), rows))
