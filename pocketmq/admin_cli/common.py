"""What every admin command shares: mqadmin's -n option, --json, --timeout, --protocol, ACL credentials, and
table printing."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.client.client_config import PROTOCOLS
from pocketmq.client.exceptions import MQBrokerException
from pocketmq.common.java_numbers import LONG_MAX, LONG_MIN
from pocketmq.common.util_all import time_millis_to_human_string2
from pocketmq.remoting.errors import RemotingTimeoutError

Command = Callable[[MQAdminExt, argparse.Namespace], Awaitable[Any]]


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namesrvAddr", dest="namesrv_addr",
                   default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"),
                   help="name server address(es), ';'-separated (default $NAMESRV_ADDR or 127.0.0.1:9876)")
    p.add_argument("--json", action="store_true", help="print the result as JSON (for scripts)")
    p.add_argument("--timeout", type=positive_seconds, default=5.0,
                   help="seconds each request may take (default 5, as mqadmin)")
    p.add_argument("--protocol", choices=list(PROTOCOLS), default="msgpack",
                   help="wire protocol: pocketmq's msgpack frames or RocketMQ's native ones")
    # mqadmin reads its account from $ROCKETMQ_HOME/conf/tools.yml; pocketmq takes it on the command line.
    p.add_argument("--access-key", default=os.environ.get("POCKETMQ_ACCESS_KEY"),
                   help="ACL access key: sign every request (with --secret-key); admin requests need an admin "
                        "account (default $POCKETMQ_ACCESS_KEY)")
    p.add_argument("--secret-key", default=os.environ.get("POCKETMQ_SECRET_KEY"),
                   help="ACL secret key of --access-key (default $POCKETMQ_SECRET_KEY)")


def add_target(p: argparse.ArgumentParser, required: bool = True) -> None:
    """mqadmin's -b brokerAddr | -c clusterName."""
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("-b", "--brokerAddr", dest="broker_addr", help="one broker, host:port")
    g.add_argument("-c", "--clusterName", dest="cluster_name", help="every master broker of the cluster")


def command(
    sub: Any, name: str, help_text: str, fn: Command, *, describe: str | None = None, aliases: Sequence[str] = ()
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=describe or help_text,
                                                aliases=list(aliases))
    add_common(p)

    async def run(args: argparse.Namespace) -> int:
        if (args.access_key is None) != (args.secret_key is None):
            raise ValueError("--access-key and --secret-key go together")
        async with MQAdminExt(args.namesrv_addr, timeout=args.timeout, protocol=args.protocol,
                              access_key=args.access_key, secret_key=args.secret_key) as admin:
            result = await fn(admin, args)
        if args.json:
            print(json.dumps(to_jsonable(result), indent=2, sort_keys=True))
        elif isinstance(result, Printable):
            result.print()
        return 0

    p.set_defaults(func=run)
    return p


# How long a command's own producer or consumer waits, at its exit, for the brokers to forget it: a broker that
# does not answer must not hold the exit for another --timeout (it forgets the client after 120 s anyway).
UNREGISTER_TIMEOUT = 0.5


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ClientConfig of the other clients a command opens (sendMessage's producer, consumeMessage's consumer):
    the command's protocol, account and --timeout (for every request and connection), a short exit."""
    return {"protocol": args.protocol, "access_key": args.access_key, "secret_key": args.secret_key,
            "mq_client_api_timeout": args.timeout, "connect_timeout": args.timeout,
            "unregister_timeout": min(args.timeout, UNREGISTER_TIMEOUT)}


class Printable:
    """A command's result: ``data`` for --json, ``lines`` for people."""

    def __init__(self, data: Any, lines: Sequence[str]) -> None:
        self.data = data
        self.lines = list(lines)

    def print(self) -> None:
        for line in self.lines:
            print(line)


def to_jsonable(obj: Any) -> Any:
    if isinstance(obj, Printable):
        return to_jsonable(obj.data)
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple | set):
        return [to_jsonable(v) for v in obj]
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_jsonable(to_dict())
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return obj


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """Columns as wide as their widest cell, two spaces apart (mqadmin pads with printf widths)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def java_bool(b: bool) -> str:
    return "true" if b else "false"


def subscription_group_text(c: Any) -> str:
    """SubscriptionGroupConfig.toString, as mqadmin updateSubGroup prints it."""
    return (f"SubscriptionGroupConfig [groupName={c.group_name}, consumeEnable={java_bool(c.consume_enable)}, "
            f"consumeFromMinEnable={java_bool(c.consume_from_min_enable)}, "
            f"consumeBroadcastEnable={java_bool(c.consume_broadcast_enable)}, retryQueueNums={c.retry_queue_nums}, "
            f"retryMaxTimes={c.retry_max_times}, brokerId={c.broker_id}, "
            f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
            f"notifyConsumerIdsChangedEnable={java_bool(c.notify_consumer_ids_changed_enable)}]")


def subscription_group_text_5(c: Any) -> str:
    """RocketMQ 5's SubscriptionGroupConfig.toString, as 5.x mqadmin updateSubGroup prints it (consumeMessageOrderly
    and groupRetryPolicy among the fields: what -o and -p set)."""
    p = c.group_retry_policy
    exp, cus = p.exponential_retry_policy, p.customized_retry_policy
    exp_text = "null" if exp is None else (
        f"ExponentialRetryPolicy{{initial={exp.initial}, max={exp.max}, multiplier={exp.multiplier}}}")
    cus_text = "null" if cus is None else f"CustomizedRetryPolicy{{next=[{', '.join(map(str, cus.next))}]}}"
    return (f"SubscriptionGroupConfig{{groupName={c.group_name}, consumeEnable={java_bool(c.consume_enable)}, "
            f"consumeFromMinEnable={java_bool(c.consume_from_min_enable)}, "
            f"consumeBroadcastEnable={java_bool(c.consume_broadcast_enable)}, "
            f"consumeMessageOrderly={java_bool(c.consume_message_orderly)}, retryQueueNums={c.retry_queue_nums}, "
            f"retryMaxTimes={c.retry_max_times}, groupRetryPolicy=GroupRetryPolicy{{type={p.type}, "
            f"exponentialRetryPolicy={exp_text}, customizedRetryPolicy={cus_text}}}, brokerId={c.broker_id}, "
            f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
            f"notifyConsumerIdsChangedEnable={java_bool(c.notify_consumer_ids_changed_enable)}, "
            f"groupSysFlag={c.group_sys_flag}, consumeTimeoutMinute={c.consume_timeout_minute}, "
            f"subscriptionDataSet=null, attributes={{}}}}")


def human_time(ms: int) -> str:
    """UtilAll.timeMillisToHumanString2: yyyy-MM-dd HH:mm:ss,SSS in local time."""
    return "N/A" if ms <= 0 else time_millis_to_human_string2(ms)


def parse_timestamp(text: str, option: str = "-s") -> int:
    """mqadmin's -s forms: epoch ms (a Java long, as its Long.parseLong), "now", or yyyy-MM-dd#HH:mm:ss:SSS
    (local time). ``option`` names the value in the error."""
    if text == "now":
        return int(dt.datetime.now().timestamp() * 1000)
    if text.lstrip("-").isdigit():
        if not LONG_MIN <= int(text) <= LONG_MAX:
            raise ValueError(f"{option} {text}: out of range (epoch ms up to {LONG_MAX})")
        return int(text)
    try:
        t = dt.datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise ValueError(f"{option} {text!r}: expected epoch ms, 'now' or yyyy-MM-dd#HH:mm:ss:SSS") from None
    return int(t.timestamp() * 1000)


def positive_seconds(text: str) -> float:
    """--timeout's type: a number of seconds above 0 (inf would wait forever, nan compares with nothing)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def bool_arg(text: str) -> bool:
    low = text.lower()
    if low not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return low == "true"


def one_line(e: Exception) -> str:
    """The error as one line: a broker's refusal as its code and remark, a timeout as such, anything else with
    its class name ("NameServerAddressError: name server 127.0.0.1:1 unreachable: Connection refused")."""
    text = " ".join(str(e).split()) or type(e).__name__
    if isinstance(e, MQBrokerException):
        return text  # "CODE: 17  DESC: topic[T] not exist BROKER: 127.0.0.1:10911"
    if isinstance(e, RemotingTimeoutError | TimeoutError):
        return f"timed out: {text}"
    return f"{type(e).__name__}: {text}"


def java_text(value: object) -> str:
    """``value`` as Java's string concatenation and printf write it: a missing value is "null", where mqadmin prints
    a Java null (``"[" + msg.getTags() + "]"``)."""
    return "null" if value is None else str(value)
