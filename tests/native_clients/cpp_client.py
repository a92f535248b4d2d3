"""Drive RocketMQ's C++ client (PyPI ``rocketmq`` 0.4.4, librocketmq bundled) for pocketmq's native tests.

Run by the client's own interpreter (.venv-rocketmq-cpp/bin/python, `make native-clients`), never imported:

    cpp_client.py --namesrv 127.0.0.1:9876 send --topic T --group PG --count 1000 --prefix run1
    cpp_client.py --namesrv ... push --topic T --group CG --expression "TagA || TagB" --expect 10 [--retry-key K]
    cpp_client.py --namesrv ... pull --topic T --group CG [--expression TagA] [--start-offset 0]
    cpp_client.py --namesrv ... --access-key K --secret-key S send ...   (signed, for a cluster with ACL on)

Output: one JSON object per line on stdout ({"event": ...}); the last one is {"event": "done", ...}. A line
"stop" on stdin ends a push consumer early, or its --linger. Every scenario has a deadline (--timeout) after
which the script prints {"event": "done", "timed_out": true} and exits by itself, even when the library hangs in
shutdown.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import threading

from rocketmq.client import Message, Producer, PullConsumer, PushConsumer, RecvMessage, SendStatus
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import MSG_CALLBACK_FUNC, _CMessageQueue, _CPullStatus, dll

_print_lock = threading.Lock()
CONSUME_SUCCESS, RECONSUME_LATER = 0, 1  # the C API's CConsumeStatus
TAGS = ("TagA", "TagB")


def emit(event: str, **fields: object) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps({"event": event, **fields}, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def start_watchdog(seconds: float) -> None:
    """Leave after ``seconds`` whatever the library is doing (a stuck shutdown included)."""

    def expire() -> None:
        emit("done", timed_out=True)
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


def body_for(prefix: str, i: int) -> str:
    """Message i's body; the Node driver (node/client.js) builds the same ones."""
    if i % 10 == 3:
        return f"{prefix}-{i} big " + "0123456789abcdef" * 320  # 5 KiB: over 4 KiB, so sent compressed
    if i % 10 == 7:
        return f"{prefix}-{i} grüße, 你好, привет, 🚀"
    return f"{prefix}-{i}"


def keys_for(prefix: str, i: int) -> str:
    return f"{prefix}-{i} {prefix}-five" if i % 5 == 0 else f"{prefix}-{i}"  # several keys: space-separated


def text(value: bytes | str | None) -> str | None:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def describe(msg: RecvMessage) -> dict[str, object]:
    """What a received message carries (read inside the callback: the library frees it afterwards)."""
    props = {}
    for name in ("idx", "city", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "UNIQ_KEY"):
        value = msg.get_property(name)
        if value:
            props[name] = text(value)
    return {
        "topic": msg.topic, "tags": text(msg.tags), "keys": text(msg.keys), "body": text(msg.body),
        "msg_id": msg.id, "queue_id": msg.queue_id, "queue_offset": msg.queue_offset,
        "reconsume_times": msg.reconsume_times, "props": props,
    }


def set_log_path(setter: str, handle: object, log_dir: str | None) -> None:
    if log_dir:
        getattr(dll, setter)(handle, log_dir.encode())


def set_credentials(client: Producer | PushConsumer | PullConsumer, args: argparse.Namespace) -> None:
    """ACL credentials (the library's SessionCredentials: it signs every request with them)."""
    if args.access_key:
        client.set_session_credentials(args.access_key, args.secret_key, args.channel)


def scenario_send(args: argparse.Namespace) -> None:
    producer = Producer(args.group, timeout=3000)
    set_log_path("SetProducerLogPath", producer._handle, args.log_dir)
    producer.set_namesrv_addr(args.namesrv)
    set_credentials(producer, args)
    producer.start()
    emit("started", client="cpp", role="producer")
    ok = 0
    for i in range(args.count):
        body = body_for(args.prefix, i)
        msg = Message(args.topic)
        msg.set_tags(TAGS[i % 2])
        msg.set_keys(keys_for(args.prefix, i))
        msg.set_property("idx", str(i))
        if i % 10 == 7:
            msg.set_property("city", "Zürich")
        raw = body.encode("utf-8")
        ffi_check(dll.SetByteMessageBody(msg._handle, raw, len(raw)))
        sent = {"i": i, "tags": TAGS[i % 2], "keys": keys_for(args.prefix, i), "body": body}
        try:
            if args.orderly:
                # The hashing selector picks queue (arg % queues): one order id, one queue.
                result = producer.send_orderly(msg, i % args.order_ids)
                sent["order_id"] = i % args.order_ids
            else:
                result = producer.send_sync(msg)
        except Exception as exc:  # a failed send is a result to report, not a crash
            emit("sent", status="ERROR", error=f"{type(exc).__name__}: {exc}", **sent)
            continue
        status = "SEND_OK" if result.status == SendStatus.OK else result.status.name
        ok += status == "SEND_OK"
        emit("sent", status=status, msg_id=result.msg_id, offset=result.offset, **sent)
    # No producer.shutdown(): once in a while it aborts the process (std::terminate on an uncaught
    # boost::thread_interrupted from one of the library's threads, seen against Apache 4.9.7 too), after every send
    # had its answer. Leaving a producer by closing its connections is what the brokers see of a crashed client.
    emit("done", timed_out=False, sent=args.count, ok=ok)


def scenario_push(args: argparse.Namespace) -> None:
    consumer = PushConsumer(args.group, orderly=args.orderly)
    set_log_path("SetPushConsumerLogPath", consumer._handle, args.log_dir)
    consumer.set_namesrv_addr(args.namesrv)
    set_credentials(consumer, args)
    consumer.set_thread_count(args.threads)
    done = threading.Event()
    stopped = threading.Event()
    consumed: set[str] = set()
    retried: set[str] = set()
    lock = threading.Lock()

    def on_message(_consumer: int, handle: int) -> int:
        # A raw callback, not PushConsumer.subscribe's wrapper: that one re-raises the listener's exception
        # in ctypes, which then returns an undefined status instead of RECONSUME_LATER. Note the library
        # answers a whole pulled batch with its first failure: a RECONSUME_LATER sends every message of that
        # pull back to %RETRY%<group>, the ones consumed before it and the ones not yet shown.
        seen = describe(RecvMessage(handle))
        key = seen["keys"] or seen["msg_id"]
        with lock:
            if args.retry_key and seen["keys"] == args.retry_key and key not in retried:
                retried.add(key)
                emit("message", answer="RECONSUME_LATER", **seen)
                return RECONSUME_LATER
            consumed.add(key)
            emit("message", answer="CONSUME_SUCCESS", **seen)
            if args.expect and len(consumed) >= args.expect:
                done.set()
        return CONSUME_SUCCESS

    ffi_check(dll.Subscribe(consumer._handle, args.topic.encode(), args.expression.encode()))
    consumer._register_callback(MSG_CALLBACK_FUNC(on_message))

    def read_stdin() -> None:
        for line in sys.stdin:
            if line.strip() == "stop":
                stopped.set()
                done.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    consumer.start()
    emit("started", client="cpp", role="push", group=args.group, pid=os.getpid())
    done.wait()
    # Late duplicates and the retry of a message would show here; offsets get persisted meanwhile.
    stopped.wait(args.linger)
    consumer.shutdown()
    with lock:
        emit("done", timed_out=False, consumed=len(consumed))


def scenario_pull(args: argparse.Namespace) -> None:
    consumer = PullConsumer(args.group)
    set_log_path("SetPullConsumerLogPath", consumer._handle, args.log_dir)
    consumer.set_namesrv_addr(args.namesrv)
    set_credentials(consumer, args)
    consumer.start()
    emit("started", client="cpp", role="pull", group=args.group)
    mqs = ctypes.POINTER(_CMessageQueue)()
    size = ctypes.c_int()
    ffi_check(dll.FetchSubscriptionMessageQueues(consumer._handle, args.topic.encode(), ctypes.byref(mqs),
                                                 ctypes.byref(size)))
    queues = []
    for n in range(size.value):
        mq = mqs[n]
        offset, statuses, result = args.start_offset, [], None
        for _ in range(args.max_pulls):
            res = dll.Pull(consumer._handle, ctypes.pointer(mq), args.expression.encode(), offset, args.batch)
            status = _CPullStatus(res.pullStatus).name
            statuses.append(status)
            result = {"next_offset": res.nextBeginOffset, "min_offset": res.minOffset, "max_offset": res.maxOffset}
            if res.pullStatus == _CPullStatus.FOUND:
                for k in range(res.size):
                    emit("message", **describe(RecvMessage(res.msgFoundList[k])))
            dll.ReleasePullResult(res)
            if status == "BROKER_TIMEOUT":
                continue
            if status in ("NO_NEW_MSG", "OFFSET_ILLEGAL") and result["next_offset"] == offset:
                break
            offset = result["next_offset"]
        queues.append({"topic": text(mq.topic), "broker": text(mq.brokerName), "queue_id": mq.queueId,
                       "statuses": statuses, **(result or {})})
    ffi_check(dll.ReleaseSubscriptionMessageQueue(mqs))
    consumer.shutdown()
    if not queues:  # the library reports a topic it could not route as one without queues
        emit("done", timed_out=False, queues=[], error=f"no queues for topic {args.topic}")
        return
    emit("done", timed_out=False, queues=queues)


def main() -> None:
    parser = argparse.ArgumentParser(description="RocketMQ C++ client driver (JSON lines on stdout)")
    parser.add_argument("--namesrv", required=True, help="name server address, host:port")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before the script gives up")
    parser.add_argument("--log-dir", help="folder for librocketmq's own log files")
    parser.add_argument("--access-key", help="ACL access key (with --secret-key): every request is signed")
    parser.add_argument("--secret-key", default="")
    parser.add_argument("--channel", default="ALIYUN", help="the library's auth channel (OnsChannel header)")
    sub = parser.add_subparsers(dest="scenario", required=True)

    send = sub.add_parser("send", help="sync sends with tags, keys, a property, non-ASCII and 5 KiB bodies")
    send.add_argument("--topic", required=True)
    send.add_argument("--group", default="CppProducer")
    send.add_argument("--count", type=int, default=10)
    send.add_argument("--prefix", default="cpp")
    send.add_argument("--orderly", action="store_true", help="send_orderly, order id i %% --order-ids")
    send.add_argument("--order-ids", type=int, default=4)

    push = sub.add_parser("push", help="a push consumer; stops after --expect messages (+ --linger) or 'stop'")
    push.add_argument("--topic", required=True)
    push.add_argument("--group", required=True)
    push.add_argument("--expression", default="*")
    push.add_argument("--expect", type=int, default=0, help="distinct messages to consume, 0 = until 'stop'")
    push.add_argument("--linger", type=float, default=1.0, help="seconds to stay up after --expect (or to 'stop')")
    push.add_argument("--retry-key", help="answer RECONSUME_LATER the first time this key arrives")
    push.add_argument("--orderly", action="store_true")
    push.add_argument("--threads", type=int, default=2)

    pull = sub.add_parser("pull", help="PullConsumer: every queue from --start-offset until no new message")
    pull.add_argument("--topic", required=True)
    pull.add_argument("--group", default="CppPullConsumer")
    pull.add_argument("--expression", default="*")
    pull.add_argument("--start-offset", type=int, default=0)
    pull.add_argument("--batch", type=int, default=32)
    pull.add_argument("--max-pulls", type=int, default=1000, help="per queue")

    args = parser.parse_args()
    start_watchdog(args.timeout)
    {"send": scenario_send, "push": scenario_push, "pull": scenario_pull}[args.scenario](args)
    sys.stdout.flush()
    # The library's threads and destructors can hang a normal exit; everything is reported already.
    os._exit(0)


if __name__ == "__main__":
    main()
