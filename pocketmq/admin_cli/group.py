"""Consumer and producer group commands: updateSubGroup, deleteSubGroup, consumerProgress, consumerConnection,
producerConnection, resetOffsetByTime, cloneGroupOffset."""

from __future__ import annotations

import argparse
from typing import Any

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.common.mix_all import DLQ_GROUP_TOPIC_PREFIX as DLQ_PREFIX
from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX as RETRY_PREFIX
from pocketmq.remoting.client_body import SubscriptionGroupConfig
from pocketmq.remoting.errors import BodyError
from pocketmq.remoting.fastjson import JsonSyntaxError, loads
from pocketmq.remoting.group_retry_policy import GroupRetryPolicy

from .common import (
    Printable,
    add_target,
    bool_arg,
    command,
    human_time,
    parse_timestamp,
    subscription_group_text,
    subscription_group_text_5,
    table,
)

VERSION_DESC = {409: "V4_9_8"}


def _version(v: int) -> str:
    return VERSION_DESC.get(v, str(v))


def group_retry_policy_arg(text: str) -> GroupRetryPolicy:
    """-p: the policy's JSON, read as mqadmin's JSON.parseObject reads it (a missing field takes its default)."""
    try:
        return GroupRetryPolicy.from_dict(loads(text.strip()))
    except (JsonSyntaxError, BodyError) as e:
        raise argparse.ArgumentTypeError(f"bad groupRetryPolicy {text!r}: {e}") from None


def add(sub: Any) -> None:
    p = command(sub, "updateSubGroup", "Update or create subscription group", update_sub_group)
    add_target(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    p.add_argument("-s", "--consumeEnable", type=bool_arg, default=True, help="consume enable")
    p.add_argument("-m", "--consumeFromMinEnable", type=bool_arg, default=False, help="from min offset")
    p.add_argument("-d", "--consumeBroadcastEnable", type=bool_arg, default=False, help="broadcast")
    p.add_argument("-o", "--consumeMessageOrderly", type=bool_arg,
                   help="consume message orderly (RocketMQ 5: the group's 5.x SDK consumers are FIFO)")
    p.add_argument("-q", "--retryQueueNums", type=int, default=1, help="retry queue nums")
    p.add_argument("-r", "--retryMaxTimes", type=int, default=16, help="retry max times")
    p.add_argument("-p", "--groupRetryPolicy", type=group_retry_policy_arg,
                   help="the json string of retry policy (RocketMQ 5, exp: "
                        '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}} '
                        '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,10000]}} )')
    p.add_argument("-i", "--brokerId", type=int, default=0, help="consumer from which broker id")
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", type=int, default=1, help="which broker id when slow")
    p.add_argument("-a", "--notifyConsumerIdsChanged", type=bool_arg, default=True, help="notify consumerId changed")

    p = command(sub, "deleteSubGroup", "Delete subscription group from broker.", delete_sub_group)
    add_target(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="subscription group name")
    p.add_argument("-r", "--removeOffset", type=bool_arg, default=False, help="remove the group's offsets too")

    p = command(sub, "consumerProgress", "Query consumers's progress, speed", consumer_progress)
    p.add_argument("-g", "--groupName", dest="group",
                   help="consumer group name (default: a summary line for every group with a retry topic)")
    p.add_argument("-t", "--topicName", dest="topic", help="topic name (default: every topic of the group)")
    p.add_argument("-s", "--showClientIP", type=bool_arg, default=False, help="show the client holding each queue")

    p = command(sub, "consumerConnection", "Query consumer's socket connection, client version and subscription",
                consumer_connection)
    p.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")

    p = command(sub, "producerConnection", "Query producer's socket connection and client version",
                producer_connection)
    p.add_argument("-g", "--producerGroup", dest="group", required=True, help="producer group name")
    p.add_argument("-t", "--topic", required=True, help="topic name")

    p = command(sub, "resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).",
                reset_offset_by_time)
    p.add_argument("-g", "--group", required=True, help="set the consumer group")
    p.add_argument("-t", "--topic", required=True, help="set the topic")
    p.add_argument("-s", "--timestamp", required=True,
                   help="set the timestamp[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
    p.add_argument("-f", "--force", type=bool_arg, default=True, help="set the force rollback by timestamp switch")
    p.add_argument("-b", "--broker", dest="broker_addr", help="broker addr (with -q: reset that queue only)")
    p.add_argument("-q", "--queue", dest="queue_id", type=int, default=-1, help="queue id (with -b)")
    p.add_argument("-o", "--offset", type=int, help="Expect queue offset (with -b and -q; else the timestamp's)")

    p = command(sub, "cloneGroupOffset", "clone offset from other group.", clone_group_offset)
    p.add_argument("-s", "--srcGroup", dest="src_group", required=True, help="set source consumer group")
    p.add_argument("-d", "--destGroup", dest="dest_group", required=True, help="set destination consumer group")
    p.add_argument("-t", "--topic", required=True, help="set the topic")
    p.add_argument("-o", "--offline", type=bool_arg, default=False,
                   help="the group or the topic is offline: clone even if the group's online consumers do not "
                        "subscribe to the topic")


async def update_sub_group(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    cfg = SubscriptionGroupConfig(
        args.group, args.consumeEnable, args.consumeFromMinEnable, args.consumeBroadcastEnable, args.retryQueueNums,
        args.retryMaxTimes, args.brokerId, args.whichBrokerWhenConsumeSlowly, args.notifyConsumerIdsChanged,
        consume_message_orderly=bool(args.consumeMessageOrderly),
        group_retry_policy=args.groupRetryPolicy or GroupRetryPolicy(),
    )
    # -o and -p are 5.x mqadmin's options: its line shows what they set (4.9.x's has neither field)
    five = args.consumeMessageOrderly is not None or args.groupRetryPolicy is not None
    text = subscription_group_text_5(cfg) if five else subscription_group_text(cfg)
    addrs = await admin.create_subscription_group(cfg, cluster=args.cluster_name, broker_addr=args.broker_addr)
    return Printable({"brokers": addrs, "subscriptionGroupConfig": cfg},
                     [f"create subscription group to {a} success." for a in addrs] + [text])


async def delete_sub_group(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    addrs = await admin.delete_subscription_group(args.group, args.cluster_name, args.broker_addr, args.removeOffset)
    where = f" in cluster [{args.cluster_name}]" if args.cluster_name else ""
    lines = [f"delete subscription group [{args.group}] from broker [{a}]{where} success." for a in addrs]
    topics: list[str] = []
    if args.cluster_name:
        # As mqadmin: a group deleted from a cluster takes its retry and dead-letter topics along.
        for topic in (RETRY_PREFIX + args.group, DLQ_PREFIX + args.group):
            await admin.delete_topic(topic, args.cluster_name)
            topics.append(topic)
            lines += [f"delete topic [{topic}] from cluster [{args.cluster_name}] success.",
                      f"delete topic [{topic}] from NameServer success."]
    return Printable({"group": args.group, "brokers": addrs, "deletedTopics": topics}, lines)


async def consumer_progress(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    if args.group is None:
        return await _all_groups_progress(admin)
    stats = await admin.examine_consume_stats(args.group, args.topic)
    owners: dict[Any, str] = {}
    if args.showClientIP:
        try:
            conn = await admin.examine_consumer_connection_info(args.group)
            for c in conn.connection_set:
                info = await admin.get_consumer_running_info(args.group, c.client_id)
                for key in info.mq_table:
                    owners[key] = c.client_addr.rsplit(":", 1)[0]
        except Exception:  # offline group: no owners to show
            owners = {}
    from pocketmq.remoting import fastjson

    rows, data = [], []
    for mq, w in sorted(stats.offset_table.items(), key=lambda kv: (kv[0].topic, kv[0].broker_name, kv[0].queue_id)):
        diff = w.broker_offset - w.consumer_offset
        client = owners.get(fastjson.dumps(mq), "N/A")
        # mqadmin shows the client column with -s only, and the last consume time to the second.
        last = human_time(w.last_timestamp).split(",")[0]
        rows.append((mq.topic, mq.broker_name, mq.queue_id, w.broker_offset, w.consumer_offset,
                     *((client,) if args.showClientIP else ()), diff, last))
        data.append({"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, "brokerOffset":
                     w.broker_offset, "consumerOffset": w.consumer_offset, "clientIP": client, "diff": diff,
                     "lastTimestamp": w.last_timestamp})
    headers = ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset",
               *(("#Client IP",) if args.showClientIP else ()), "#Diff", "#LastTime")
    lines = table(headers, rows) + ["", f"Consume TPS: {stats.consume_tps:.2f}",
                                    f"Diff Total: {stats.compute_total_diff()}"]
    return Printable({"queues": data, "consumeTps": stats.consume_tps, "diffTotal": stats.compute_total_diff()},
                     lines)


async def _all_groups_progress(admin: MQAdminExt) -> Printable:
    """mqadmin's consumerProgress without -g: every group that has a retry topic (each group that ever consumed
    has one), with its online clients, their type and model, TPS and total lag. A group whose stats or
    connections cannot be read is shown offline or without lag, as mqadmin shows it."""
    groups = [t[len(RETRY_PREFIX):] for t in await admin.fetch_all_topic_list() if t.startswith(RETRY_PREFIX)]
    infos: list[dict[str, Any]] = []
    for g in groups:
        tps, diff = 0, 0
        try:
            stats = await admin.examine_consume_stats(g)
            tps, diff = int(stats.consume_tps), stats.compute_total_diff()
        except Exception:  # no offsets anywhere yet: mqadmin logs and shows zeros
            pass
        count, version, ctype, model = 0, "OFFLINE", "", ""
        try:
            cc = await admin.examine_consumer_connection_info(g)
            count = len(cc.connection_set)
            version = _version(min(c.version for c in cc.connection_set))
            ctype = "PULL" if cc.consume_type == "CONSUME_ACTIVELY" else "PUSH"
            model = (cc.message_model or "") if ctype == "PUSH" else ""
        except Exception:  # not online
            pass
        infos.append({"group": g, "count": count, "version": version, "type": ctype, "model": model,
                      "consumeTps": tps, "diffTotal": diff})
    # GroupConsumeInfo.compareTo: most clients first, then most lag (then by name, for a stable listing).
    infos.sort(key=lambda i: (-i["count"], -i["diffTotal"], i["group"]))
    rows = [(i["group"], i["count"], i["version"], i["type"], i["model"], i["consumeTps"], i["diffTotal"])
            for i in infos]
    return Printable(infos, table(("#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total"), rows))


async def consumer_connection(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    cc = await admin.examine_consumer_connection_info(args.group)
    rows = [(c.client_id, c.client_addr, c.language, _version(c.version))
            for c in sorted(cc.connection_set, key=lambda c: c.client_id)]
    lines = table(("#ClientId", "#ClientAddr", "#Language", "#Version"), rows)
    lines += ["", "Below is subscription:"]
    lines += table(("#Topic", "#SubExpression"), [(t, s.sub_string) for t, s in sorted(cc.subscription_table.items())])
    lines += ["", f"ConsumeType: {cc.consume_type}", f"MessageModel: {cc.message_model}",
              f"ConsumeFromWhere: {cc.consume_from_where}"]
    return Printable(cc, lines)


async def producer_connection(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    pc = await admin.examine_producer_connection_info(args.group, args.topic)
    # mqadmin prints a numbered line per producer, without a header.
    lines = [f"{i:04d}  {c.client_id:<32} {c.client_addr:<22} {c.language:<8} {_version(c.version)}"
             for i, c in enumerate(sorted(pc.connection_set, key=lambda c: c.client_id), 1)]
    return Printable(pc, lines)


async def reset_offset_by_time(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    ts = parse_timestamp(args.timestamp)
    if args.broker_addr is not None and args.queue_id >= 0:
        return await _reset_queue_offset(admin, args, ts)
    result = await admin.reset_offset_by_timestamp(args.topic, args.group, ts, args.force)
    items = sorted(result.offsets.items(), key=lambda kv: (kv[0].broker_name, kv[0].queue_id))
    lines = [f"rollback consumer offset by specified group[{args.group}], topic[{args.topic}], "
             f"force[{str(args.force).lower()}], timestamp(string)[{args.timestamp}], timestamp(long)[{ts}]"]
    if not result.online:
        lines.append("the consumer group is not online: its offsets were set at the brokers")
    lines += table(("#brokerName", "#queueId", "#offset"), [(mq.broker_name, mq.queue_id, o) for mq, o in items])
    data = {"online": result.online, "timestamp": ts,
            "offsets": [{"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": o} for mq, o in items]}
    return Printable(data, lines)


async def _reset_queue_offset(admin: MQAdminExt, args: argparse.Namespace, ts: int) -> Printable:
    """mqadmin's -b/-q: one queue, to -o or to the timestamp's offset (searchOffset); an offset of 0 or less is
    printed and left alone, as mqadmin does."""
    addr, queue_id = args.broker_addr, args.queue_id
    lines = [f"start reset consumer offset by specified, group[{args.group}], topic[{args.topic}], "
             f"queueId[{queue_id}], broker[{addr}], timestamp(string)[{args.timestamp}], timestamp(long)[{ts}]"]
    offset = args.offset
    if offset is None:
        offset = await admin.search_offset_at(addr, args.topic, queue_id, ts)
    lines.append(f"reset consumer offset to {offset}")
    if offset > 0:
        await admin.reset_offset_by_queue_id(addr, args.group, args.topic, queue_id, offset)
    data = {"brokerAddr": addr, "queueId": queue_id, "offset": offset, "timestamp": ts}
    return Printable(data, lines)


async def clone_group_offset(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    """mqadmin's cloneGroupOffset. mqadmin copies every queue of the source group's consume stats (each of its
    topics, whatever -t says) with UPDATE_CONSUMER_OFFSET and ignores -o; pocketmq asks the topic's brokers to
    clone the topic's offsets (CLONE_GROUP_OFFSET), which honours -o."""
    src, dest, topic = args.src_group.strip(), args.dest_group.strip(), args.topic.strip()  # (as mqadmin trims)
    brokers = await admin.clone_group_offset(src, dest, topic, args.offline)
    line = f"clone group offset success. srcGroup[{src}], destGroup=[{dest}], topic[{topic}]"
    return Printable({"srcGroup": src, "destGroup": dest, "topic": topic, "offline": args.offline,
                      "brokers": brokers}, [line])
