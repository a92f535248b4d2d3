"""Cluster, broker and name server commands: clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig,
getNamesrvConfig, updateNamesrvConfig."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from pocketmq.client.admin.mq_admin_ext import MQAdminExt

from .common import Printable, add_target, command, one_line, table


def add(sub: Any) -> None:
    command(sub, "clusterList", "List cluster infos", cluster_list)
    p = command(sub, "brokerStatus", "Fetch broker runtime status data", broker_status)
    add_target(p)
    p = command(sub, "getBrokerConfig", "Get broker config by cluster or special broker!", get_broker_config)
    add_target(p)
    p = command(sub, "updateBrokerConfig", "Update broker's config", update_broker_config,
                describe="Update a broker's config at run time (only the keys the broker reads at each use).")
    add_target(p)
    p.add_argument("-k", "--key", required=True, help="config key")
    p.add_argument("-v", "--value", required=True, help="config value")
    command(sub, "getNamesrvConfig", "Get configs of name server.", get_namesrv_config)
    p = command(sub, "updateNamesrvConfig", "Update configs of name server.", update_namesrv_config,
                describe="Update the name servers' config at run time (only the keys read at each use).")
    p.add_argument("-k", "--key", required=True, help="config key")
    p.add_argument("-v", "--value", required=True, help="config value")


async def _addrs(admin: MQAdminExt, args: argparse.Namespace) -> list[str]:
    if args.broker_addr:
        return [args.broker_addr]
    return list((await admin.master_addrs(args.cluster_name)).values())


def _first(tps: str) -> float:
    try:
        return float(tps.split()[0])
    except (ValueError, IndexError):
        return 0.0


async def cluster_list(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    info = await admin.examine_broker_cluster_info()
    rows, data = [], []
    now = time.time() * 1000
    for cluster in sorted(info.cluster_addr_table):
        for name in sorted(info.cluster_addr_table[cluster]):
            bd = info.broker_addr_table.get(name)
            if bd is None:
                continue
            for bid, addr in sorted(bd.broker_addrs.items()):
                try:
                    rt = await admin.fetch_broker_runtime_stats(addr)
                except Exception as e:
                    # Listed with blanks, as mqadmin does, which prints the exception's stack trace: a blank row
                    # alone (an ACL refusal, a broker gone) looked like an idle broker of no version.
                    print(f"pocketmq clusterList: no runtime stats from {name} ({addr}), its row is left blank: "
                          f"{one_line(e)}", file=sys.stderr)
                    rt = {}
                earliest = int(rt.get("earliestMessageTimeStamp", "0") or 0)
                hours = (now - earliest) / 3_600_000 if earliest > 0 else 0.0
                in_tps, out_tps = _first(rt.get("putTps", "")), _first(rt.get("getTransferedTps", ""))
                space = float(rt.get("commitLogDiskRatio", "0") or 0)
                rows.append((cluster, name, bid, addr, rt.get("brokerVersionDesc", ""), f"{in_tps:9.2f}(0,0ms)",
                             f"{out_tps:9.2f}(0,0ms)", rt.get("sendThreadPoolQueueHeadWaitTimeMills", "0"),
                             f"{hours:.2f}", f"{space:.4f}"))
                data.append({"clusterName": cluster, "brokerName": name, "brokerId": bid, "addr": addr,
                             "version": rt.get("brokerVersionDesc"), "inTps": in_tps, "outTps": out_tps,
                             "hours": hours, "space": space})
    headers = ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)", "#OutTPS(LOAD)",
               "#PCWait(ms)", "#Hour", "#SPACE")
    return Printable(data, table(headers, rows))


async def broker_status(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    out: dict[str, dict[str, str]] = {}
    lines: list[str] = []
    addrs = await _addrs(admin, args)
    for addr in addrs:
        kv = await admin.fetch_broker_runtime_stats(addr)
        out[addr] = kv
        for k in sorted(kv):  # mqadmin's printf widths: a longer key pushes its own line only
            prefix = f"{addr:<24} " if len(addrs) > 1 or args.cluster_name else ""
            lines.append(f"{prefix}{k:<32}: {kv[k]}")
    return Printable(out if len(addrs) > 1 or args.cluster_name else out[addrs[0]], lines)


async def get_broker_config(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    out: dict[str, dict[str, str]] = {}
    lines: list[str] = []
    for addr in await _addrs(admin, args):
        conf = await admin.get_broker_config(addr)
        out[addr] = conf
        # mqadmin names the role when it walks a cluster (_addrs gives the masters), not for -b.
        lines.append(f"============{'Master: ' if args.cluster_name else ''}{addr}============")
        lines += [f"{k:<50}=  {v}" for k, v in sorted(conf.items())]
    return Printable(out, lines)


async def update_broker_config(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    addrs = await _addrs(admin, args)
    for addr in addrs:
        await admin.update_broker_config(addr, {args.key: args.value})
    return Printable({"brokers": addrs, args.key: args.value},
                     [f"update broker config success, {a}" for a in addrs])


async def get_namesrv_config(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    configs = await admin.get_name_server_config()
    lines: list[str] = []
    for addr, conf in configs.items():
        lines.append(f"============{addr}============")
        lines += [f"{k:<50}=  {v}" for k, v in sorted(conf.items())]
    return Printable(configs, lines)


async def update_namesrv_config(admin: MQAdminExt, args: argparse.Namespace) -> Printable:
    addrs = await admin.update_name_server_config({args.key: args.value})
    return Printable({"nameServers": addrs, args.key: args.value},
                     [f"update name server config success![{', '.join(addrs)}]", f"{args.key} : {args.value}"])
