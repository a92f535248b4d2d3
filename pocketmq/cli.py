"""The `pocketmq` command: run servers (`dev`, `namesrv`, `broker`) and use them with mqadmin's commands
(`sendMessage` and `consumeMessage`, also called `send` and `consume`; `updateTopic`, `clusterList`,
`consumerProgress` ...)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import os
import shutil
import signal
import sys
from typing import Any

from .runtime import freeze_start_up_objects, run

# The commands that run servers: `pocketmq dev` and the rest start without mqadmin's commands, whose modules load
# the whole client (its import is most of a server's start-up time).
SERVER_COMMANDS = frozenset({"dev", "namesrv", "broker", "console"})


def _port(text: str) -> int:
    """A port argument: 0 (any free one) to 65535. Bigger ones wrapped round on uvloop (75412 bound 9876)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range 0-65535")
    return port


def _add_dev(sub) -> None:
    p = sub.add_parser("dev", help="a name server and a broker in one process (what `make run` starts)")
    # (--store, --broker-port and --host: None when not given, so that a -c file's storePathRootDir, listenPort
    # and brokerIP1 are not overridden by the defaults)
    p.add_argument("--store", help="folder for the broker's store (default ./.pocketmq)")
    p.add_argument("--namesrv-port", type=_port, default=9876, help="0 picks a free port")
    p.add_argument("--broker-port", type=_port, help="default 10911; 0 picks a free port")
    p.add_argument("--host", help="address to bind and advertise (default loopback)")
    p.add_argument("-c", "--config", help="broker properties file: its values win over the defaults, the options "
                                          "given here over its values")
    p.add_argument("--console-host", default="127.0.0.1", help="address the web console binds (default loopback)")
    p.add_argument("--console-port", type=_port, default=8080, help="the web console's port (0 picks a free one)")
    p.add_argument("--console-allow-host", action="append", default=[], metavar="NAME",
                   help="a name the console answers to besides loopback's and --console-host (repeat per name): "
                        "requests with another Host header are refused, against DNS rebinding")
    p.add_argument("--no-console", action="store_true", help="do not serve the web console and /metrics")
    p.add_argument("--console-read-only", action="store_true",
                   help="the console may only look (by default `dev`'s console may also create, delete and send)")
    p.add_argument("--grpc-port", type=_port, default=8081,
                   help="RocketMQ 5's gRPC endpoint for the 5.x SDKs (default 8081; 0 picks a free port)")
    p.add_argument("--grpc-tls", choices=["permissive", "disabled", "enforcing"], default="permissive",
                   help="TLS on the gRPC port: permissive (default) serves TLS and plaintext alike, as RocketMQ's "
                        "proxy")
    p.add_argument("--tls-cert", help="PEM certificate for the gRPC port (default: a self-signed one made at start)")
    p.add_argument("--tls-key", help="its PEM private key")
    p.add_argument("--no-grpc", action="store_true", help="do not serve the gRPC endpoint")
    p.add_argument("--proxy-mode", choices=["local", "cluster"], default="local",
                   help="how the gRPC endpoint reaches the broker: local (default) hands it each request in-process, "
                        "cluster sends it over a socket (RocketMQ's -pm)")
    p.set_defaults(func=_dev)


def _add_console(sub) -> None:
    p = sub.add_parser("console", help="the web console and /metrics for any cluster, read through the admin API")
    p.add_argument("-n", "--namesrvAddr", dest="namesrv_addr", required=True,
                   help="name server address(es), host:port, ';'-separated")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    p.add_argument("--port", type=_port, default=8080, help="0 picks a free port")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a name the console answers to besides loopback's and --host (repeat per name): requests "
                        "with another Host header are refused, against DNS rebinding")
    p.add_argument("--admin", action="store_true",
                   help="allow admin actions (create/delete topics, reset offsets, send); read-only without it")
    p.add_argument("--access-key", help="ACL account the console signs its requests with (admin actions need an "
                                        "admin account)")
    p.add_argument("--secret-key", help="its secret key")
    p.add_argument("--store", action="append", default=[], metavar="[BROKER=]PATH",
                   help="a broker's store folder (…/store) to show on the storage page; repeat per broker")
    p.add_argument("--protocol", choices=["msgpack", "rocketmq"], default="msgpack",
                   help="wire protocol to the cluster (rocketmq: Apache RocketMQ's own)")
    p.set_defaults(func=_console)


class PortInUseError(OSError):
    """A server's port is taken. The OS's error names only the address; this one names the option that moves it."""


@contextlib.contextmanager
def _port_option(server: str, port: int, option: str):
    try:
        yield
    except OSError as e:
        if e.errno != errno.EADDRINUSE:
            raise
        raise PortInUseError(f"{server} port {port} is already in use (another pocketmq, or RocketMQ, running?): "
                             f"stop it, or choose another port with {option} (0 picks a free one)") from e


# A console bound to every interface answers only to the names it knows (against DNS rebinding): say how to add one.
OTHER_HOSTS = ("on every interface; from another machine, open it by a name or address given with {option} NAME "
               "(other Host names are refused)")


def _console_missing() -> str | None:
    try:
        import aiohttp  # noqa: F401
        import prometheus_client  # noqa: F401
    except ImportError as e:
        return f"the web console needs the console extra (pip install 'pocketmq[console]'): {e}"
    return None


async def _console(args) -> int:
    missing = _console_missing()
    if missing:
        raise RuntimeError(missing)
    from pocketmq.console import ConsoleServer
    from pocketmq.storage.inspect import NOT_A_STORE, is_store, store_folder

    roots: dict[str, str] = {}
    for item in args.store:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = "broker-a" if not roots else f"store-{len(roots)}", item
        # A typo would otherwise show an empty store, and `pocketmq dev --store F`'s folder none of F/store.
        path = store_folder(os.path.abspath(path), "pocketmq console")
        if not is_store(path):
            raise ValueError(f"--store {path} {NOT_A_STORE}")
        roots[name] = path
    stop = _stop_on_signal()
    console = ConsoleServer(args.namesrv_addr, args.host, args.port, admin=args.admin, store_roots=roots,
                            access_key=args.access_key, secret_key=args.secret_key, protocol=args.protocol,
                            allowed_hosts=args.allow_host)
    with _port_option("the console's", args.port, "--port"):
        await console.start()
    print(f"pocketmq console: {console.url} ({'admin' if args.admin else 'read-only'}; metrics at "
          f"{console.url}metrics)", flush=True)
    if console.on_every_interface:
        print(f"pocketmq console: {OTHER_HOSTS.format(option='--allow-host')}", flush=True)
    try:
        await stop.wait()
    finally:
        await console.stop()
    return 0


def _add_namesrv(sub) -> None:
    p = sub.add_parser("namesrv", help="run a name server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_port, default=9876, help="0 picks a free port")
    p.add_argument("--scan-interval", type=float, default=10.0, help="seconds between expiry scans")
    p.add_argument("--broker-expire", type=float, default=120.0,
                   help="seconds of silence after which a broker is dropped")
    p.add_argument("--acl-file", help="plain ACL file (plain_acl.yml): route changes then need an admin's signature")
    p.set_defaults(func=_namesrv)


def _add_broker(sub) -> None:
    p = sub.add_parser("broker", help="run a broker from a RocketMQ-style properties file")
    p.add_argument("-c", "--config", required=True, help="properties file, e.g. configs/broker.conf")
    p.add_argument("-n", "--namesrv-addr",
                   help="name server address(es), ';'-separated; wins over the file's namesrvAddr, which wins over "
                        "$NAMESRV_ADDR")
    p.add_argument("-p", "--print-config", action="store_true", help="print the effective settings and exit")
    p.set_defaults(func=_broker)


def _stop_on_signal() -> asyncio.Event:
    """Install the Ctrl-C/SIGTERM handlers; call it before announcing "listening", which callers may act on at once."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop


# `pocketmq dev`'s store sizes, where the file given with -c sets none: every commit-log and index file reserves
# its whole size on disk when created (so that a full disk refuses puts instead of killing the process), and
# RocketMQ's 1 GiB commit-log files plus a 420 MB index file would take 1.4 GiB of a laptop's disk at the first
# message. 128 MiB and a 42 MB index (500,000 slots, 2,000,000 entries) take 170 MB.
DEV_STORE_DEFAULTS: dict[str, Any] = {
    "mapped_file_size_commit_log": 128 * 1024 * 1024,
    "max_hash_slot_num": 500_000,
    "max_index_num": 2_000_000,
}


async def _dev(args) -> int:
    from pocketmq.broker.broker_controller import BrokerController
    from pocketmq.namesrv.config import NamesrvConfig
    from pocketmq.namesrv.namesrv_controller import NamesrvController

    stop = _stop_on_signal()
    config = _dev_broker_config(args)
    args.host = args.host or "127.0.0.1"  # (the name server's and the gRPC endpoint's address)
    namesrv = NamesrvController(NamesrvConfig(listen_host=args.host, listen_port=args.namesrv_port,
                                              acl_file=config.resolved_acl_file if config.acl_enable else None))
    with _port_option("the name server's", args.namesrv_port, "--namesrv-port"):
        await namesrv.start()
    config.namesrv_addr = namesrv.address
    try:
        broker = BrokerController(config, config_file=args.config)
        with _port_option("the broker's", config.listen_port, "--broker-port"):
            await broker.start()
    except BaseException:
        await namesrv.shutdown()
        raise
    console = proxy = None
    try:  # (from here on, whatever fails stops the broker cleanly: no abort file left for the next start)
        console_note = grpc_note = None
        if not args.no_console:
            console, console_note = await _start_console(args, namesrv.address, broker)
        if not args.no_grpc:
            proxy, grpc_note = await _start_grpc(args, namesrv.address, broker)
        freeze_start_up_objects()
        print(f"pocketmq dev: name server {namesrv.address}, broker {config.broker_name} at {broker.address}")
        if (vip := _vip_note(broker)) is not None:
            print(f"  {vip}")
        if proxy is not None:
            print(f"  gRPC:    {proxy.endpoint}  (RocketMQ 5 SDKs; TLS {args.grpc_tls})")
        elif grpc_note is not None:
            print(f"  no gRPC endpoint: {grpc_note}")
        if console is not None:
            print(f"  console: {console.url}  (metrics: {console.url}metrics)")
            if console.on_every_interface:
                print(f"           {OTHER_HOSTS.format(option='--console-allow-host')}")
        elif console_note is not None:
            print(f"  no console: {console_note}")
        print(f"  store: {config.store_root}")
        me = _command_name()
        print(f"  try:   {me} sendMessage -n {namesrv.address} -t TopicTest -p hello")
        print(f"         {me} consumeMessage -n {namesrv.address} -t TopicTest -c 1")
        if config.acl_enable:  # (unsigned, both would be refused: say how to sign them, not the secret itself)
            print(f"         signed by an account of {config.resolved_acl_file}: add --access-key and --secret-key,")
            print("         or set POCKETMQ_ACCESS_KEY and POCKETMQ_SECRET_KEY")
        print("  Ctrl-C stops it cleanly.", flush=True)
        await stop.wait()
    finally:
        print("pocketmq dev: shutting down", flush=True)
        if proxy is not None:
            await proxy.stop()
        if console is not None:
            await console.stop()
        await broker.shutdown()
        await namesrv.shutdown()
    return 0


def _command_name() -> str:
    """How to run this pocketmq from the user's shell: ``pocketmq`` when that is the one on PATH, else the path of
    the script beside this interpreter (a virtualenv not activated, as `make run` leaves it)."""
    script = os.path.join(os.path.dirname(sys.executable), "pocketmq")
    on_path = shutil.which("pocketmq")
    if not os.path.exists(script) or (on_path is not None and os.path.samefile(on_path, script)):
        return "pocketmq"
    relative = os.path.relpath(script)
    return script if relative.startswith("..") else relative


def _dev_store(folder: str) -> str:
    return os.path.join(os.path.abspath(folder), "store")


def _dev_broker_config(args):
    """The broker's config: the dev defaults, the -c file over them, the command line's over both."""
    from pocketmq.broker.config import BrokerConfig

    defaults = dict(DEV_STORE_DEFAULTS, broker_ip1="127.0.0.1", listen_port=10911,
                    store_path_root_dir=_dev_store(".pocketmq"))
    overrides = {"namesrv_addr": None}  # (set once it listens)
    if args.host is not None:
        overrides["broker_ip1"] = args.host
    if args.broker_port is not None:
        overrides["listen_port"] = args.broker_port
    if args.store is not None:
        overrides["store_path_root_dir"] = _dev_store(args.store)
    config = (BrokerConfig.from_properties(args.config, defaults=defaults, **overrides) if args.config
              else BrokerConfig(**{**defaults, **overrides}))
    # With aclEnable the in-process name server checks the same ACL file, so the broker needs an admin account
    # (accessKey/secretKey) to register: say so now rather than run a broker no client can find.
    acl_file = config.resolved_acl_file if config.acl_enable else None
    if acl_file is not None and config.access_key is None:
        raise ValueError("aclEnable=true in `pocketmq dev` needs accessKey/secretKey (an admin account of "
                         f"{acl_file}) in the broker config, to register with the name server")
    return config


async def _start_console(args, namesrv_addr: str, broker: Any) -> tuple[Any, str | None]:
    """The web console, or None and why not (a port in use, or its extra not installed, leaves the rest of `dev`
    running)."""
    note = _console_missing()
    if note is not None:
        return None, note
    from pocketmq.console import ConsoleServer

    config = broker.broker_config
    console = ConsoleServer(namesrv_addr, args.console_host, args.console_port,
                            admin=not args.console_read_only, local_brokers=[broker],
                            access_key=config.access_key, secret_key=config.secret_key,
                            allowed_hosts=args.console_allow_host)
    try:
        await console.start()
    except OSError as e:  # e.g. the port is taken: the cluster is still worth running
        await console.stop()
        return None, f"could not serve the console on port {args.console_port} (--console-port): {e}"
    return console, None


async def _start_grpc(args, namesrv_addr: str, broker: Any) -> tuple[Any, str | None]:
    """The gRPC endpoint, or None and why not (a port in use leaves the rest of `dev` running). It hands its requests
    to the broker in-process unless --proxy-mode cluster."""
    from pocketmq.proxy.config import ProxyConfig, ProxyMode, TlsMode
    from pocketmq.proxy.proxy_startup import GrpcProxy

    # With ACL on, the endpoint checks its callers against the broker's accounts and signs its own requests with
    # the broker's key pair (as the in-process cluster does); without them it let every caller through.
    bc = broker.broker_config
    acl: dict[str, Any] = {}
    if bc.acl_enable:
        acl = {"acl_file": bc.resolved_acl_file, "access_key": bc.access_key, "secret_key": bc.secret_key}
    config = ProxyConfig(namesrv_addr, grpc_host=args.host, grpc_server_port=args.grpc_port,
                         tls_mode=TlsMode(args.grpc_tls), tls_cert_file=args.tls_cert, tls_key_file=args.tls_key,
                         proxy_mode=ProxyMode(args.proxy_mode), **acl)
    try:
        return await GrpcProxy(config, {broker.address: broker.remoting_server}).start(), None
    except (OSError, RuntimeError) as e:
        return None, f"could not serve gRPC on port {args.grpc_port} (--grpc-port): {e}"


def namesrv_config(args):
    from pocketmq.namesrv.config import NamesrvConfig

    return NamesrvConfig(listen_host=args.host, listen_port=args.port,
                         scan_not_active_broker_interval=args.scan_interval,
                         broker_channel_expired_time=args.broker_expire, acl_file=args.acl_file)


async def _namesrv(args) -> int:
    from pocketmq.namesrv.namesrv_controller import NamesrvController

    stop = _stop_on_signal()
    namesrv = NamesrvController(namesrv_config(args))
    with _port_option("the name server's", args.port, "--port"):
        await namesrv.start()
    freeze_start_up_objects()
    print(f"pocketmq name server listening on {namesrv.address}", flush=True)
    try:
        await stop.wait()
    finally:
        await namesrv.shutdown()
        print("pocketmq name server shut down cleanly", flush=True)
    return 0


def _vip_note(broker) -> str | None:
    """The line about the VIP channel (listenPort - 2, where Java clients with vipChannelEnabled send)."""
    server = broker.remoting_server
    if server.vip_address is not None:
        return f"VIP channel: {server.vip_address}  (Java clients with vipChannelEnabled)"
    if server.vip_error is not None:
        return (f"no VIP channel: port {server.vip_port} not bound ({server.vip_error}); Java clients with "
                "vipChannelEnabled cannot send to this broker")
    return None


async def _broker(args) -> int:
    from pocketmq.broker.broker_controller import BrokerController
    from pocketmq.broker.config import BrokerConfig

    overrides = {"namesrv_addr": args.namesrv_addr} if args.namesrv_addr else {}
    # -n, else the file's namesrvAddr, else $NAMESRV_ADDR: RocketMQ's BrokerConfig defaults namesrvAddr to it.
    defaults = {"namesrv_addr": os.environ.get("NAMESRV_ADDR") or None}
    origins = {"namesrv_addr": "-n" if args.namesrv_addr else "$NAMESRV_ADDR"}
    config = BrokerConfig.from_properties(args.config, defaults=defaults, origins=origins, **overrides)
    if args.print_config:
        sys.stdout.write(config.to_properties())
        return 0
    if not config.namesrv_addr_list:
        print(f"pocketmq broker: warning: no name server (namesrvAddr in {args.config}, -n or $NAMESRV_ADDR): "
              "the broker registers nowhere, so clients that look it up through a name server cannot find it",
              file=sys.stderr, flush=True)
    stop = _stop_on_signal()
    broker = BrokerController(config, config_file=args.config)
    with _port_option("the broker's", config.listen_port, f"listenPort in {args.config}"):
        await broker.start()
    freeze_start_up_objects()
    bound = broker.remoting_server.address  # (bindAddress; brokerIP1 is what the name server tells clients)
    told = "" if bound == broker.address else f" (clients are told {broker.address})"
    print(f"pocketmq broker {config.broker_name} listening on {bound}{told}, store {config.store_root}", flush=True)
    if (vip := _vip_note(broker)) is not None:
        print(f"pocketmq broker {config.broker_name}: {vip}", flush=True)
    try:
        await stop.wait()
    finally:
        await broker.shutdown()
        print("pocketmq broker shut down cleanly", flush=True)
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; for one of SERVER_COMMANDS (the ``command`` about to run) without mqadmin's
    commands."""
    parser = argparse.ArgumentParser(prog="pocketmq", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_dev(sub)
    _add_namesrv(sub)
    _add_broker(sub)
    _add_console(sub)
    if command not in SERVER_COMMANDS:
        from .admin_cli import add_admin_commands

        add_admin_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)  # (the only option before it is -v)
    args = build_parser(command).parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        code = run(args.func(args)) or 0
        sys.stdout.flush()  # (a reader that went away shows here, not at the interpreter's exit)
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`pocketmq brokerStatus | head`): stop quietly, as a shell's tools do. Python would
        # flush stdout again at exit and fail the same way, so it points at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:  # a clear one-line error for people; the traceback with -v
        if args.verbose:
            raise
        from .admin_cli.common import one_line

        print(f"pocketmq {args.command}: {one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
