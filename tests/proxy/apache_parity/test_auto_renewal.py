"""Auto-renewed receives of push consumers on both proxies (RENEW_APACHE, RENEW_POCKETMQ: calls.py), and of a
client without Telemetry."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..conftest import D, S, metadata
from .calls import (
    GHOST_TOPIC,
    auto_renewed_receive,
    handle_invisible_time,
    messages_of,
    renewal_runs_out,
    send_one,
    shape,
    without_frame,
)


def test_a_message_whose_auto_renewal_ran_out_comes_back_after_its_groups_retry_delay(both_servers):
    """Two push consumers of groups whose retry policies' first delays are 1 s and 1 hour: each receives the
    message with auto renewal (hidden for the proxy's default invisible time) and never acks it. Renewed until
    renewMaxTimeMillis, it is then nacked with its group's delay: the 1 s group's comes back (its second delivery
    attempt), the 1 hour group's not, though its renewal ran out at the same time and its default invisible time
    is long over by then."""
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(renewal_runs_out, name, stub) for name, stub in both_servers.items()}
        got = {name: future.result() for name, future in futures.items()}
    views = {name: ([[(m.system_properties.message_id, m.system_properties.delivery_attempt,
                       handle_invisible_time(m.system_properties.receipt_handle)) for m in msgs] for msgs in first],
                    [(m.system_properties.message_id, m.system_properties.delivery_attempt) for m in again],
                    shape(long_again))
             for name, (first, again, long_again) in got.items()}
    assert views["pocketmq"] == views["apache"], views
    once = [("0102FC0000000171190B1C3CCC0000AA01", 1, 3000)]
    assert views["apache"][:2] == ([once, once], [("0102FC0000000171190B1C3CCC0000AA01", 2)])
    assert views["apache"][2][0][0] == D.Code.MESSAGE_NOT_FOUND


def test_an_auto_renewed_receive_of_a_client_without_telemetry(both_servers):
    """A client that never opened a Telemetry stream receives with auto renewal: Apache 5.5.0 refuses it (its
    Settings are missing: a NullPointerException, an internal error); pocketmq serves the message unrenewed, hidden
    for the proxy's default invisible time, after which it comes back (its second delivery attempt) unacked."""
    brokers = {name: stub.QueryRoute(S.QueryRouteRequest(topic=D.Resource(name=GHOST_TOPIC)), metadata=metadata(),
                                     timeout=30).message_queues[0].broker.name for name, stub in both_servers.items()}
    message_id = "0102FC0000000171190B1C3CCC0000AA02"
    for stub in both_servers.values():
        send_one(stub, GHOST_TOPIC, message_id)
    answers = {name: auto_renewed_receive(stub, brokers[name], GHOST_TOPIC, "ParityGhostG", "ghost@1")
               for name, stub in both_servers.items()}
    refused = without_frame(answers["apache"][0].status)
    assert refused[0] == D.Code.INTERNAL_SERVER_ERROR and '"settings" is null' in refused[1], refused
    assert not messages_of(answers["apache"])
    [msg] = messages_of(answers["pocketmq"])
    assert (msg.system_properties.message_id, msg.system_properties.delivery_attempt) == (message_id, 1)
    assert handle_invisible_time(msg.system_properties.receipt_handle) == 3000
    stub = both_servers["pocketmq"]
    again: list[Any] = []
    deadline = time.monotonic() + 60
    while not again:
        assert time.monotonic() < deadline, "the message never came back"
        again = messages_of(auto_renewed_receive(stub, brokers["pocketmq"], GHOST_TOPIC, "ParityGhostG", "ghost@1"))
    assert [(m.system_properties.message_id, m.system_properties.delivery_attempt) for m in again] == \
        [(message_id, 2)]
