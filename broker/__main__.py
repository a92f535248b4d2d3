"""``python -m broker -c configs/broker.conf [-n host:port;host:port]``: run a broker until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys

from .broker_controller import BrokerController
from .config import BrokerConfig, BrokerConfigError


def parse_args(argv: list[str] | None = None) -> BrokerConfig:
    p = argparse.ArgumentParser(prog="python -m broker", description="pocketmq broker")
    p.add_argument("-c", "--config", help="broker properties file (RocketMQ broker.conf keys)")
    p.add_argument("-n", "--namesrv-addr", help="name server addresses, ';'-separated (overrides the file)")
    p.add_argument("-p", "--print-config", action="store_true", help="print the effective config and exit")
    a = p.parse_args(argv)
    overrides = {"namesrv_addr": a.namesrv_addr} if a.namesrv_addr else {}
    try:
        config = BrokerConfig.from_properties(a.config, **overrides) if a.config else BrokerConfig(**overrides)
    except (BrokerConfigError, OSError) as e:
        p.exit(2, f"python -m broker: {e}\n")
    if a.print_config:
        sys.stdout.write(config.to_properties())
        p.exit(0)
    return config


async def serve(config: BrokerConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # Both signals take the same graceful path. Handling SIGINT here (rather than as KeyboardInterrupt) also
    # makes `kill -INT` work on a broker started in the background, where SIGINT starts out ignored.
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # no signal handlers on some platforms
            loop.add_signal_handler(sig, stop.set)
    controller = BrokerController(config)
    await controller.start()
    print(f"The broker[{config.broker_name}, {controller.address}] boot success.", flush=True)
    try:
        await stop.wait()
    finally:
        # Also reached when the task is cancelled: the shutdown still runs to completion (no abort file left).
        await controller.shutdown()
        print("The broker shut down cleanly.", flush=True)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    config = parse_args(argv)
    try:
        import uvloop
    except ImportError:
        run = asyncio.run
    else:
        run = uvloop.run
    try:
        run(serve(config))
    except KeyboardInterrupt:
        pass
    except (OSError, RuntimeError) as e:  # port in use, store locked by another broker, unreadable config files
        logging.getLogger("broker").error("the broker could not start: %s", e)
        sys.exit(1)


if __name__ == "__main__":
    main()
