"""bench/e2e.py's workloads for RocketMQ's C++ client (PyPI ``rocketmq`` 0.4.4), run by that client's own
interpreter (.venv-rocketmq-cpp/bin/python, `make native-clients`), never imported:

    cpp_client.py --namesrv 127.0.0.1:9876 send --topic T --count 50000 --warmup 200 --body-bytes 128
    cpp_client.py --namesrv 127.0.0.1:9876 push --topic T --group G --expect 50200

``send``: one producer, each send_sync awaited, as (a). ``push``: a push consumer of a new group reads ``topic``
from its first offset (a new group starts there while the messages are in memory, as in RocketMQ), as (e);
msgs/s from start() (the rebalance included) to the last distinct message. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time

from rocketmq.client import Message, Producer, PushConsumer, SendStatus
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import MSG_CALLBACK_FUNC, dll

CONSUME_SUCCESS = 0  # the C API's CConsumeStatus


def send(args: argparse.Namespace) -> dict[str, object]:
    producer = Producer(args.group, timeout=3000)
    if args.log_dir:
        dll.SetProducerLogPath(producer._handle, args.log_dir.encode())
    producer.set_namesrv_addr(args.namesrv)
    producer.start()
    body = os.urandom(args.body_bytes)

    def one() -> bool:
        msg = Message(args.topic)
        ffi_check(dll.SetByteMessageBody(msg._handle, body, len(body)))
        return producer.send_sync(msg).status == SendStatus.OK

    for _ in range(args.warmup):  # the route, the connection, the topic's creation
        one()
    rt: list[int] = []
    failed = 0
    clock = time.perf_counter_ns
    begin = clock()
    for _ in range(args.count):
        start = clock()
        try:
            failed += not one()
        except Exception:
            failed += 1
        rt.append(clock() - start)
    seconds = (clock() - begin) / 1e9
    producer.shutdown()
    return {"tps": round((args.count - failed) / seconds), "max_rt_ms": round(max(rt) / 1e6, 3),
            "avg_rt_ms": round(statistics.fmean(rt) / 1e6, 3), "failed": failed}


def push(args: argparse.Namespace) -> dict[str, object]:
    consumer = PushConsumer(args.group)
    if args.log_dir:
        dll.SetPushConsumerLogPath(consumer._handle, args.log_dir.encode())
    consumer.set_namesrv_addr(args.namesrv)
    consumer.set_thread_count(args.threads)
    seen: set[tuple[int, int]] = set()
    deliveries = 0
    lock = threading.Lock()
    done = threading.Event()
    last = [0.0]

    def on_message(_consumer: int, handle: int) -> int:
        # The raw callback: RecvMessage's wrapper costs a Python object per message, and only two fields are read.
        nonlocal deliveries
        key = (dll.GetMessageQueueId(handle), dll.GetMessageQueueOffset(handle))
        with lock:
            deliveries += 1
            seen.add(key)
            if len(seen) >= args.expect and not done.is_set():
                last[0] = time.perf_counter()
                done.set()
        return CONSUME_SUCCESS

    ffi_check(dll.Subscribe(consumer._handle, args.topic.encode(), b"*"))
    callback = MSG_CALLBACK_FUNC(on_message)
    consumer._register_callback(callback)
    begin = time.perf_counter()
    consumer.start()
    finished = done.wait(args.timeout)
    end = last[0] if finished else time.perf_counter()
    consumer.shutdown()
    return {"msgs_per_s": round(len(seen) / (end - begin)), "received": len(seen), "expected": args.expect,
            "duplicates": deliveries - len(seen)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namesrv", required=True)
    parser.add_argument("--log-dir", help="folder for librocketmq's own log files")
    sub = parser.add_subparsers(dest="workload", required=True)
    s = sub.add_parser("send")
    s.add_argument("--topic", required=True)
    s.add_argument("--group", default="bench-cpp-producer")
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--warmup", type=int, default=200)
    s.add_argument("--body-bytes", type=int, default=128)
    p = sub.add_parser("push")
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--expect", type=int, required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    out = send(args) if args.workload == "send" else push(args)
    print(json.dumps(out), flush=True)
    # librocketmq's threads sometimes hang in interpreter shutdown: the figures are out, leave.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
