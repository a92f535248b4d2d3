"""Message commands: queryMsgById, queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset, sendMessage,
consumeMessage (queryMsgTraceById lives in trace.py)."""

from __future__ import annotations

import argparse
from typing import Any

from pocketmq.client import Message, MessageQueue, Producer, PullConsumer, PullStatus
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.exceptions import MQClientException
from pocketmq.common.constants import PROPERTY_KEYS
from pocketmq.common.message import MessageExt
from pocketmq.common.mix_all import TOOLS_CONSUMER_GROUP

from .common import Printable, client_options, command, human_time, java_text, parse_timestamp, table


def add(sub: Any) -> None:
    p = command(sub, "queryMsgById", "Query Message by Id", query_msg_by_id,
                describe="Query a message by its id: the offsetMsgId, or the msgId (UNIQ_KEY) a send returned.")
    p.add_argument("-i", "--msgId", required=True, help="message id(s), ','-separated")
    p.add_argument("-t", "--topic", help="the message's topic (needed to look a UNIQ_KEY up quickly)")

    p = command(sub, "queryMsgByKey", "Query Message by Key", query_msg_by_key)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-k", "--msgKey", dest="key", required=True, help="Message Key")
    p.add_argument("-b", "--beginTimestamp", dest="begin", type=int, default=0, help="begin timestamp (ms)")
    p.add_argument("-e", "--endTimestamp", dest="end", type=int, help="end timestamp (ms)")

    p = command(sub, "queryMsgByUniqueKey", "Query Message by Unique key", query_msg_by_unique_key)
    p.add_argument("-i", "--msgId", required=True, help="Message Id (UNIQ_KEY)")
    p.add_argument("-t", "--topic", required=True, help="The topic of msg")

    p = command(sub, "queryMsgByOffset", "Query Message by offset", query_msg_by_offset)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True)
    p.add_argument("-i", "--queueId", dest="queue_id", type=int, required=True)
    p.add_argument("-o", "--offset", type=int, required=True, help="Queue Offset")

    # The shell's one way to send and to consume: mqadmin's commands, `send` and `consume` their short names.
    p = command(sub, "sendMessage", "Send a message (alias: send)", send_message, aliases=["send"])
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-p", "--body", required=True, help="UTF-8 string format of the message body")
    p.add_argument("-k", "--key", help="Message keys")
    p.add_argument("-c", "--tags", help="Message tags")
    p.add_argument("-b", "--broker", help="Send message to target broker")
    p.add_argument("-i", "--qid", type=int, help="Send message to target queue")

    p = command(sub, "consumeMessage", "Consume message (alias: consume)", consume_message, aliases=["consume"])
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-b", "--brokerName", dest="broker_name", help="Broker name")
    p.add_argument("-i", "--queueId", dest="queue_id", type=int, help="Queue Id")
    p.add_argument("-o", "--offset", type=int, help="Queue Offset")
    p.add_argument("-g", "--consumerGroup", dest="group", default=TOOLS_CONSUMER_GROUP, help="Consumer group name")
    p.add_argument("-s", "--beginTimestamp", dest="begin",
                   help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
    p.add_argument("-e", "--endTimestamp", dest="end", help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
    p.add_argument("-c", "--MessageNumber", dest="count", type=int, default=128,
                   help="Number of message to be consumed")


def message_data(msg: MessageExt) -> dict[str, Any]:
    return {
        "msgId": msg.msg_id, "offsetMsgId": msg.offset_msg_id, "topic": msg.topic, "tags": msg.tags,
        "keys": msg.keys, "queueId": msg.queue_id, "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset, "reconsumeTimes": msg.reconsume_times,
        "bornTimestamp": msg.born_timestamp, "storeTimestamp": msg.store_timestamp, "bornHost": msg.born_host,
        "storeHost": msg.store_host, "sysFlag": msg.sys_flag, "properties": dict(msg.properties),
        "body": body_text(msg),
    }


def body_text(msg: MessageExt) -> str:
    if msg.body_inflate_error is not None:
        # (the stored bytes of a body that did not inflate, LZ4 or ZSTD for one, are not text to print)
        return f"<{len(msg.body)} bytes as stored, not inflated: {msg.body_inflate_error}>"
    return msg.body.decode("utf-8", "replace")


def message_lines(msg: MessageExt, offset_id: bool = True) -> list[str]:
    """QueryMsgByIdSubCommand.printMsg's fields (the body printed, not written to a file); queryMsgByUniqueKey
    prints no OffsetID, as mqadmin's."""
    fields = [
        *((("OffsetID:", msg.offset_msg_id),) if offset_id else ()), ("Topic:", msg.topic),
        ("Tags:", f"[{java_text(msg.tags)}]"), ("Keys:", f"[{java_text(msg.properties.get(PROPERTY_KEYS))}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset), ("CommitLog Offset:", msg.commit_log_offset),
        ("Reconsume Times:", msg.reconsume_times), ("Born Timestamp:", human_time(msg.born_timestamp)),
        ("Store Timestamp:", human_time(msg.store_timestamp)), ("Born Host:", msg.born_host),
        ("Store Host:", msg.store_host), ("System Flag:", msg.sys_flag),
        ("Properties:", "{" + ", ".join(f"{k}={v}" for k, v in msg.properties.items()) + "}"),
        ("Message Body:", body_text(msg)),
    ]
    return [f"{k:<20} {v}" for k, v in fields]


def _found(msgs: list[MessageExt], what: str, offset_id: bool = True) -> Printable:
    if not msgs:
        raise MQClientException(f"Message not found: {what}")
    lines: list[str] = []
    for m in msgs:
        lines += [*message_lines(m, offset_id), ""]
    return Printable([message_data(m) for m in msgs] if len(msgs) > 1 else message_data(msgs[0]), lines[:-1])


async def query_msg_by_id(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    found = []
    for msg_id in (i.strip() for i in args.msgId.split(",") if i.strip()):
        msg = await admin.view_message(msg_id, args.topic)
        if msg is None:
            raise MQClientException(f"Message not found: id {msg_id}")
        found.append(msg)
    return _found(found, args.msgId)


async def query_msg_by_key(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    msgs = await admin.query_message(args.topic, args.key, 64, args.begin, args.end)
    rows = [(m.msg_id, m.queue_id, m.queue_offset) for m in msgs]
    return Printable([message_data(m) for m in msgs], table(("#Message ID", "#QID", "#Offset"), rows))


async def query_msg_by_unique_key(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    msg = await admin.query_message_by_unique_key(args.topic, args.msgId)
    return _found([msg] if msg else [], f"topic {args.topic} id {args.msgId}", offset_id=False)


async def query_msg_by_offset(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    msg = await admin.query_message_by_offset(args.topic, args.broker_name, args.queue_id, args.offset)
    return _found([msg] if msg else [], f"{args.topic} {args.broker_name}/{args.queue_id} offset {args.offset}")


async def send_message(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    if (args.broker is None) != (args.qid is None):
        raise MQClientException("give both -b broker and -i queue id, or neither")
    msg = Message(args.topic, args.body.encode("utf-8"), tags=args.tags, keys=args.key)
    async with Producer("PID_SMSC", args.namesrv_addr, send_timeout=args.timeout,
                        instance_name=f"sendMessage-{id(msg)}", **client_options(args)) as producer:
        mq = MessageQueue(args.topic, args.broker, args.qid) if args.broker is not None else None
        r = await producer.send(msg, mq)
    row = (r.message_queue.broker_name, r.message_queue.queue_id, r.send_status.name, r.msg_id)
    data = {"brokerName": row[0], "queueId": row[1], "sendStatus": row[2], "msgId": r.msg_id,
            "offsetMsgId": r.offset_msg_id, "queueOffset": r.queue_offset}
    return Printable(data, table(("#Broker Name", "#QID", "#Send Result", "#MsgId"), [row]))


async def consume_message(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    """Print up to -c messages of the topic (or one queue from -o), optionally within [-s, -e]; commits nothing.
    The lines are mqadmin's: "Consume ok" before each batch found, a MSGID line per message (MessageExt's
    toString), and a "print msg finished" line per queue read to its end."""
    if args.count <= 0:
        raise MQClientException("Please input a positive messageNumber!")  # (mqadmin's words)
    begin = parse_timestamp(args.begin, "-s") if args.begin else None
    end = parse_timestamp(args.end, "-e") if args.end else None
    out: list[MessageExt] = []
    lines: list[str] = []
    async with PullConsumer(args.group, args.namesrv_addr, consumer_pull_timeout=args.timeout,
                            instance_name=f"consumeMessage-{id(out)}", **client_options(args)) as consumer:
        for mq in await _queues_to_read(consumer, args):
            if len(out) >= args.count:
                break
            offset = await _start_offset(consumer, mq, args.offset, begin)
            await _pull_message_by_queue(consumer, mq, offset, end, args.count, out, lines)
    return Printable([message_data(m) for m in out[: args.count]], lines or ["no message"])


async def _queues_to_read(consumer: PullConsumer, args: argparse.Namespace) -> list[MessageQueue]:
    """The topic's queues, or those of -b and -i, in mqadmin's order (by broker, then queue)."""
    queues = await consumer.fetch_subscribe_message_queues(args.topic)
    if args.broker_name is not None:
        queues = [q for q in queues if q.broker_name == args.broker_name]
    if args.queue_id is not None:
        queues = [q for q in queues if q.queue_id == args.queue_id]
    return sorted(queues, key=lambda q: (q.broker_name, q.queue_id))


async def _start_offset(consumer: PullConsumer, mq: MessageQueue, offset: int | None, begin: int | None) -> int:
    """-o when given, else the first offset stored at or after -s, else the queue's first."""
    if offset is not None:
        return offset
    if begin is not None:
        return await consumer.seek_by_timestamp(mq, begin)
    return await consumer.min_offset(mq)


async def _pull_message_by_queue(
    consumer: PullConsumer, mq: MessageQueue, offset: int, end: int | None, count: int, out: list[MessageExt],
    lines: list[str],
) -> None:
    """Messages of one queue from ``offset`` into ``out`` (those stored by -e), until ``out`` holds ``count`` or
    the queue has no more, with mqadmin's lines for them."""
    while len(out) < count:
        result = await consumer.pull(mq, "*", offset, min(32, count - len(out)))
        if result.pull_status is not PullStatus.FOUND:
            lines.append(f"{java_message_queue(mq)} print msg finished. status={result.pull_status.name}, "
                         f"offset={offset}")
            return
        found = [m for m in result.msg_found_list if end is None or m.store_timestamp <= end]
        lines.append("Consume ok")
        lines += [f"MSGID: {m.msg_id} {java_message_ext(m, mq.broker_name)} BODY: "
                  f"{m.body.decode('utf-8', 'replace')}" for m in found]
        out += found
        offset = result.next_begin_offset


def java_message_queue(mq: MessageQueue) -> str:
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def java_message_ext(m: MessageExt, broker_name: str) -> str:
    """MessageExt.toString (4.9.7), Message.toString within: Java's signed bytes, a null transaction id."""
    props = "{" + ", ".join(f"{k}={v}" for k, v in m.properties.items()) + "}"
    body = "[" + ", ".join(str(b - 256 if b > 127 else b) for b in m.body) + "]"
    return (f"MessageExt [brokerName={broker_name}, queueId={m.queue_id}, storeSize={m.store_size}, "
            f"queueOffset={m.queue_offset}, sysFlag={m.sys_flag}, bornTimestamp={m.born_timestamp}, "
            f"bornHost=/{m.born_host}, storeTimestamp={m.store_timestamp}, storeHost=/{m.store_host}, "
            f"msgId={m.offset_msg_id}, commitLogOffset={m.commit_log_offset}, bodyCRC={m.body_crc}, "
            f"reconsumeTimes={m.reconsume_times}, preparedTransactionOffset={m.prepared_transaction_offset}, "
            f"toString()=Message{{topic='{m.topic}', flag={m.flag}, properties={props}, body={body}, "
            f"transactionId='null'}}]")
