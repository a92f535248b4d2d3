"""`pocketmq send` and `pocketmq consume`: mqadmin's sendMessage / consumeMessage, for quick manual use."""

from __future__ import annotations

import os
import time

from pocketmq.client import Message, Producer, PullConsumer, PullStatus
from pocketmq.client.client_config import PROTOCOLS


def add_tool_commands(sub) -> None:
    p = sub.add_parser("send", help="send messages (mqadmin sendMessage)")
    p.add_argument("-n", "--namesrv-addr", default="127.0.0.1:9876")
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-p", "--body", required=True, help="message body (UTF-8 text)")
    p.add_argument("-c", "--tags")
    p.add_argument("-k", "--keys", help="space-separated keys")
    p.add_argument("-g", "--group", default="pocketmq_tools_producer")
    p.add_argument("--count", type=int, default=1, help="send the body this many times")
    _add_protocol(p)
    p.set_defaults(func=_send)

    c = sub.add_parser("consume", help="print messages of a topic (mqadmin consumeMessage)")
    c.add_argument("-n", "--namesrv-addr", default="127.0.0.1:9876")
    c.add_argument("-t", "--topic", required=True)
    c.add_argument("-g", "--group", help="consumer group: start from its offsets and commit progress; "
                                          "without it, read from the start and commit nothing")
    c.add_argument("-s", "--sub-expression", default="*", help="tags, e.g. 'TagA || TagB'")
    c.add_argument("--count", type=int, help="stop after this many messages, waiting for them if needed; "
                                              "without it, print what is there now and stop")
    c.add_argument("--wait", type=float, default=30.0, help="with --count: give up after this many seconds")
    _add_protocol(c)
    c.set_defaults(func=_consume)


def _add_protocol(parser) -> None:
    parser.add_argument("--protocol", choices=list(PROTOCOLS), default="msgpack",
                        help="wire protocol: pocketmq's msgpack frames (default) or RocketMQ's native ones, which "
                             "an Apache RocketMQ cluster also understands")
    parser.add_argument("--access-key", default=os.environ.get("POCKETMQ_ACCESS_KEY"),
                        help="ACL access key: sign every request (with --secret-key; default $POCKETMQ_ACCESS_KEY)")
    parser.add_argument("--secret-key", default=os.environ.get("POCKETMQ_SECRET_KEY"),
                        help="ACL secret key of --access-key (default $POCKETMQ_SECRET_KEY)")


def _client_options(args) -> dict:
    if (args.access_key is None) != (args.secret_key is None):
        raise ValueError("--access-key and --secret-key go together")
    return {"protocol": args.protocol, "access_key": args.access_key, "secret_key": args.secret_key}


async def _send(args) -> int:
    body = args.body.encode()
    async with Producer(args.group, args.namesrv_addr, **_client_options(args)) as producer:
        for _ in range(args.count):
            r = await producer.send(Message(args.topic, body, tags=args.tags, keys=args.keys))
            print(f"{r.send_status.name} msgId={r.msg_id} offsetMsgId={r.offset_msg_id} "
                  f"queue={r.message_queue.broker_name}/{r.message_queue.queue_id} queueOffset={r.queue_offset}")
    return 0


def _show(msg) -> None:
    body = msg.body.decode(errors="replace")
    print(f"{msg.topic} queue={msg.queue_id} offset={msg.queue_offset} msgId={msg.msg_id} "
          f"offsetMsgId={msg.offset_msg_id} tags={msg.tags or ''} keys={' '.join(msg.keys)} body={body}")


async def _consume(args) -> int:
    group = args.group or "pocketmq_tools_consumer"
    deadline = time.monotonic() + args.wait
    seen = 0
    async with PullConsumer(group, args.namesrv_addr, **_client_options(args)) as consumer:
        queues = await consumer.fetch_subscribe_message_queues(args.topic)
        offsets = {}
        for mq in queues:
            stored = await consumer.fetch_consume_offset(mq) if args.group else -1
            offsets[mq] = stored if stored >= 0 else await consumer.min_offset(mq)
        while True:
            progressed = False
            for mq in queues:
                want = None if args.count is None else args.count - seen
                if want is not None and want <= 0:
                    break
                result = await consumer.pull(mq, args.sub_expression, offsets[mq], max_nums=min(32, want or 32))
                if result.pull_status in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
                    progressed = progressed or result.next_begin_offset != offsets[mq]
                for msg in result.msg_found_list[:want]:
                    _show(msg)
                    seen += 1
                offsets[mq] = result.next_begin_offset
                if args.group:
                    await consumer.update_consume_offset(mq, offsets[mq])
            if args.count is None and not progressed:
                break
            if args.count is not None and (seen >= args.count or time.monotonic() >= deadline):
                break
            if not progressed:
                await _wait_for_any(consumer, queues, args.sub_expression, offsets, deadline)
    if args.count is not None and seen < args.count:
        print(f"only {seen} of {args.count} messages arrived within {args.wait:g} s")
        return 1
    return 0


async def _wait_for_any(consumer, queues, expression, offsets, deadline) -> None:
    """Long-poll the first queue briefly so an idle topic costs no busy loop."""
    remaining = deadline - time.monotonic()
    if remaining > 0 and queues:
        mq = queues[0]
        await consumer.pull_blocking(mq, expression, offsets[mq], 1, timeout=min(1.0, remaining))
