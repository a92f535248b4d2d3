"""``python -m namesrv [--host H] [--port P]``: run a name server until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal

from .config import NamesrvConfig
from .namesrv_controller import NamesrvController


def parse_args(argv: list[str] | None = None) -> NamesrvConfig:
    defaults = NamesrvConfig()
    p = argparse.ArgumentParser(prog="python -m namesrv", description="pocketmq name server")
    p.add_argument("--host", default=defaults.listen_host, help="listen address (default %(default)s)")
    p.add_argument(
        "--port", type=int, default=defaults.listen_port, help="0 = any free port (default %(default)s)"
    )
    p.add_argument(
        "--scan-interval",
        type=float,
        default=defaults.scan_not_active_broker_interval,
        help="seconds between scans for silent brokers (default %(default)s)",
    )
    p.add_argument(
        "--broker-expire",
        type=float,
        default=defaults.broker_channel_expired_time,
        help="seconds of silence after which a broker is dropped (default %(default)s)",
    )
    a = p.parse_args(argv)
    return NamesrvConfig(
        listen_host=a.host,
        listen_port=a.port,
        scan_not_active_broker_interval=a.scan_interval,
        broker_channel_expired_time=a.broker_expire,
    )


async def serve(config: NamesrvConfig) -> None:
    stop = asyncio.Event()
    with contextlib.suppress(NotImplementedError):  # no signal handlers on some platforms
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with NamesrvController(config) as controller:
        print(f"The Name Server boot success. address={controller.address}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    config = parse_args(argv)
    try:
        import uvloop
    except ImportError:
        run = asyncio.run
    else:
        run = uvloop.run
    with contextlib.suppress(KeyboardInterrupt):
        run(serve(config))


if __name__ == "__main__":
    main()
