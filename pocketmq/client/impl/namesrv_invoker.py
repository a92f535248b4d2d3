"""How MQClientAPIImpl asks the name servers: the one that answered last first, failing over to the next when one
cannot be connected to or does not answer, and the errors that say which address failed and why (unreachable, or
closing the connection on the client's protocol)."""

from __future__ import annotations

import asyncio
import logging
import os
import random

from pocketmq.common.util_all import seconds_text
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import (
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from pocketmq.remoting.wire_protocol import WireProtocol

from ..exceptions import NameServerAddressError, NameServerProtocolError

log = logging.getLogger(__name__)

SHOWN_ADDRESSES = 5  # name servers an error names, at most: a list of thousands made a line of tens of KB


def name_server_unreachable(causes: dict[str, BaseException]) -> NameServerAddressError:
    """One line naming each address and why connecting to it failed; the last failure is the cause."""

    def why(e: BaseException) -> str:
        # The errno's own words: asyncio's loop says "Connect call failed ('127.0.0.1', 1)", uvloop's
        # "Connection refused"; both mean the same and should read the same.
        if isinstance(e, OSError) and isinstance(e.errno, int) and e.errno > 0:
            return os.strerror(e.errno)
        if isinstance(e, OSError) and e.strerror:
            return e.strerror  # a resolver error (socket.gaierror) has a negative errno
        if isinstance(e, TimeoutError):
            return f"connecting timed out{': ' + str(e) if str(e) else ''}"
        return str(e) or type(e).__name__

    if len(causes) == 1:
        [(addr, cause)] = causes.items()
        error = NameServerAddressError(f"name server {addr} unreachable: {why(cause)}")
    else:
        each = "; ".join(f"{addr}: {why(cause)}" for addr, cause in list(causes.items())[:SHOWN_ADDRESSES])
        if len(causes) > SHOWN_ADDRESSES:
            each += f"; and {len(causes) - SHOWN_ADDRESSES} more"
        error = NameServerAddressError(f"no name server reachable ({each})")
        cause = list(causes.values())[-1]
    error.__cause__ = cause
    return error

class NameServerInvoker:
    """The name-server requests of MQClientAPIImpl (its base), over its ``remoting_client``."""

    remoting_client: RemotingClient

    def __init__(self, namesrv_addrs: list[str]) -> None:
        self._namesrv_addrs = namesrv_addrs
        self._namesrv_index = random.randrange(len(namesrv_addrs))
        self._namesrv_chosen: str | None = None
        self._namesrv_answered: set[str] = set()  # the name servers that have answered this client

    @property
    def namesrv_addr_list(self) -> list[str]:
        return list(self._namesrv_addrs)

    def _namesrv_candidates(self) -> list[str]:
        """The name server in use first, then the others round-robin from a moving start."""
        addrs = self._namesrv_addrs
        self._namesrv_index = (self._namesrv_index + 1) % len(addrs)
        order = addrs[self._namesrv_index:] + addrs[: self._namesrv_index]
        chosen = self._namesrv_chosen
        if chosen is not None and chosen in order:
            order.remove(chosen)
            order.insert(0, chosen)
        return order

    async def invoke_namesrv(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Invoke on one name server; fail over to the next when connecting fails or when it does not answer.

        Each name server still to try gets an equal share of the time left, so a hung one (it accepts but never
        answers) costs its share, not the whole ``timeout`` (RocketMQ's client moves on only when connecting
        fails). Every request a client sends a name server is a read, so asking another one again is safe. The
        one that answered is asked first next time; after any other failure the next call starts elsewhere.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last: RemotingError | None = None
        unreachable: dict[str, BaseException] = {}  # address -> the OSError or TimeoutError of connecting
        timed_out: list[str] = []
        candidates = self._namesrv_candidates()
        for i, addr in enumerate(candidates):
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            share = remaining / (len(candidates) - i)
            try:
                response = await self.remoting_client.invoke(addr, request, share)
            except RemotingConnectError as e:
                log.info("name server %s unreachable: %s", addr, e)
                last = e
                if e.__cause__ is not None:
                    unreachable[addr] = e.__cause__
                if self._namesrv_chosen == addr:
                    self._namesrv_chosen = None
                continue
            except RemotingTimeoutError as e:
                if i + 1 < len(candidates):  # (the last one's timeout is the error raised below: said once)
                    log.warning("name server %s did not answer within %s; asking the next one", addr,
                                seconds_text(share))
                last = e
                timed_out.append(addr)
                if self._namesrv_chosen == addr:
                    self._namesrv_chosen = None
                continue
            except RemotingSendRequestError as e:
                self._namesrv_chosen = None
                if self._may_speak_another_protocol(addr):
                    raise NameServerProtocolError(
                        f"the name server {addr} closed the connection without answering: if it is Apache "
                        f"RocketMQ, use protocol='rocketmq' (--protocol rocketmq on pocketmq's command line; "
                        f"this client speaks pocketmq's msgpack protocol)"
                    ) from e
                raise
            except RemotingError:
                self._namesrv_chosen = None
                raise
            self._namesrv_chosen = addr
            self._namesrv_answered.add(addr)
            return response
        if last is None or timed_out:
            raise _no_answer(timeout, timed_out)
        if unreachable and last.__cause__ is not None:  # not when the client was closed meanwhile
            raise name_server_unreachable(unreachable)
        raise last

    def _may_speak_another_protocol(self, addr: str) -> bool:
        """Whether ``addr``, which closed the connection before answering, may be a name server of the other
        protocol: Apache RocketMQ's closes the connection on a msgpack frame it cannot decode, and the remoting
        error alone (then a "No route info" from a send) had users looking for a missing topic."""
        client = self.remoting_client
        return addr not in self._namesrv_answered and client.wire_protocol is WireProtocol.MSGPACK and not client.closed


def _no_answer(timeout: float, timed_out: list[str]) -> RemotingTimeoutError:
    # (the timeout as given, and which servers it ran out on: "hung" blamed a healthy name server that was given
    # 1 ms)
    waiting = f" waiting for {', '.join(timed_out)}" if timed_out else ""
    return RemotingTimeoutError(f"no name server answered: the timeout of {seconds_text(timeout)} ran out{waiting}")
