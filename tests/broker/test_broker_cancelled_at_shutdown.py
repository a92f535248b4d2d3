"""Background work cancelled by shutdown between a write and the progress that records it.

A broker's shutdown cancels its periodic jobs wherever they are (TaskTracker.close), then persists their progress.
A job cut after writing a message and before recording it leaves the next broker on the store to write it again:
a transaction asked about (and committed) twice, a popped message revived twice, acked messages revived. Each
test cancels the real job at the point where its first write is under way, restarts the broker on the same
store and counts what the restarted broker does. Every put waits for the dispatcher (``max_dispatch_lag_bytes``
1), as a put under load does, so the job is suspended inside its write when it is cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from broker_harness import Cluster
from pop_wire import FAST_REVIVE, PopClient, settle_revive

from pocketmq.broker import BrokerController
from pocketmq.common.codec import decode_all, decode_message_id
from pocketmq.common.constants import TRANSACTION_COMMIT_TYPE, TRANSACTION_PREPARED_TYPE
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import SendMessageResponseHeader
from pocketmq.remoting.transaction_header import EndTransactionRequestHeader
from pocketmq.storage.timer.timer_routing import TIMER_TOPIC

# POP's timers in milliseconds, the revive run by hand.
POP_FAST = {**FAST_REVIVE, "revive_interval": 3600.0}


async def messages(broker: BrokerController, topic: str) -> list[Any]:
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    return decode_all(broker.store.get_message("t", topic, 0, 0, 100).body)


async def broker_under_load(cluster: Cluster, **settings: Any) -> BrokerController:
    """A broker whose every put waits until the dispatcher has dispatched it, however long that takes: the store
    gives up waiting after 50 ms, and on a loaded machine the job then ran past its write before the test saw it."""
    broker = await cluster.broker(max_dispatch_lag_bytes=1, **settings)
    broker.store.dispatch_hold_timeout = 30.0  # (a stop of the dispatcher ends the wait too)
    return broker


async def unbuffered_pops(cluster: Cluster, messages_in_pt: int) -> tuple[BrokerController, Any]:
    """A broker whose pops write their checkpoints at once (no buffer merge, the revive run by hand), with
    ``messages_in_pt`` messages m0, m1, ... in queue 0 of topic PT."""
    broker = await broker_under_load(cluster, revive_queue_num=1, enable_pop_buffer_merge=False, **POP_FAST)
    mq = cluster.mq(broker)
    for i in range(messages_in_pt):
        await mq.send("PT", f"m{i}".encode(), queue_id=0)
    await messages(broker, "PT")
    return broker, mq


async def cancel_when(job: asyncio.Future[Any], under_way: Callable[[], bool]) -> None:
    """Cancel ``job`` (as shutdown does) at the first turn of the loop where ``under_way()`` holds."""
    while not under_way() and not job.done():
        await asyncio.sleep(0)
    assert not job.done(), "the job ended before it could be cancelled"
    job.cancel()
    await asyncio.gather(job, return_exceptions=True)


async def test_a_transaction_check_cancelled_after_asking_is_not_asked_twice_by_the_next_broker(
        cluster: Cluster) -> None:
    broker = await broker_under_load(cluster, transaction_timeout=0.0, transaction_check_interval=3600.0)
    mq = cluster.mq(broker)
    for name in ("a", "b", "c"):
        sent = await mq.send("TxnT", name.encode(), queue_id=0, sys_flag=TRANSACTION_PREPARED_TYPE,
                             properties=mq.props("T", UNIQ_KEY=f"U-{name}", TRAN_MSG="true", PGROUP="TxnPG"))
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    await messages(broker, RMQ_SYS_TRANS_HALF_TOPIC)
    service = broker.transactional_message_service
    await cancel_when(asyncio.ensure_future(broker.transactional_message_check_service.check_once()),
                      lambda: service.checks_sent >= 1)
    written = len(await messages(broker, RMQ_SYS_TRANS_HALF_TOPIC))
    again = await cluster.restart(broker)
    await again.transactional_message_check_service.check_once()
    # One question per undecided transaction in a round, about the copy it writes. (Before: the walk's progress
    # was recorded only at its end, so the next broker wrote "a" back once more and asked about two live copies
    # of it, each of which a producer commits.)
    assert again.transactional_message_service.checks_sent == 3
    copies = await messages(again, RMQ_SYS_TRANS_HALF_TOPIC)
    assert sorted(m.properties["UNIQ_KEY"] for m in copies[written:]) == ["U-a", "U-b", "U-c"]


async def test_a_revive_round_cancelled_mid_checkpoint_revives_each_message_once(cluster: Cluster) -> None:
    broker, mq = await unbuffered_pops(cluster, 5)
    popped = await PopClient(mq).pop("G", "PT", 0, invisible=1, init_mode=1)
    assert len(popped.bodies) == 5
    revive = broker.pop_revive_service

    async def rounds() -> None:  # (their invisible time is over, none was acked: a round soon revives them)
        while True:
            await revive.revive_all()
            await asyncio.sleep(0.01)

    await cancel_when(asyncio.ensure_future(rounds()), lambda: revive.revived >= 1)
    again = await cluster.restart(broker)
    await settle_revive(again)
    retry = again.pop_message_processor.retry_topic("PT", "G")
    assert sorted(m.body for m in await messages(again, retry)) == [f"m{i}".encode() for i in range(5)]


async def test_a_checkpoint_written_while_the_scan_is_cancelled_counts_as_written(cluster: Cluster) -> None:
    broker = await broker_under_load(cluster, revive_queue_num=1, pop_ck_stay_buffer_time=0.0,
                                     pop_buffer_scan_interval=3600.0, **POP_FAST)
    mq = cluster.mq(broker)
    pop = PopClient(mq, broker.broker_config.broker_name)
    for i in range(3):
        await mq.send("PT", f"m{i}".encode(), queue_id=0)
    await messages(broker, "PT")
    popped = await pop.pop("G", "PT", 0, invisible=300, init_mode=1)
    assert len(popped.bodies) == 3
    merge = broker.pop_message_processor.buffer_merge
    await cancel_when(asyncio.ensure_future(merge.scan()), lambda: any(e.storing for e in merge.buffer.values()))
    # Shutdown's window (requests are served until the server stops): the consumer acks what it consumed. The
    # checkpoint is in the revive log, so the acks must be too.
    for handle in popped.handles:
        assert (await pop.ack("G", "PT", handle)).code == ResponseCode.SUCCESS
    again = await cluster.restart(broker)
    await settle_revive(again)  # the checkpoint and its acks through the timer, past their revive time
    assert await messages(again, again.pop_message_processor.retry_topic("PT", "G")) == []


# The same for a request's handler. The server's stop closes the connections, waits for them to close, then
# cancels the handlers still running: a handler whose write outlasts the close (a sync flush on a slow disk) is
# cut after it. The tests cancel the handler at once (what the stop does to it, without the wait that a slow disk
# would outlast), stop the server, restart the broker and count.

async def cut_handlers_when(broker: BrokerController, under_way: Callable[[], bool]) -> None:
    server = broker.remoting_server
    while not under_way():
        await asyncio.sleep(0)
    running = [t for t in server._tasks if not t.done()]
    assert running, "the handler ended before it could be cut"
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    await server.stop()


def dispatched(broker: BrokerController, topic: str, count: int) -> Callable[[], bool]:
    return lambda: broker.store.get_max_offset_in_queue(topic, 0) >= count


async def test_a_commit_cut_by_the_servers_stop_ends_its_half_message(cluster: Cluster) -> None:
    broker = await broker_under_load(cluster, transaction_timeout=0.0, transaction_check_interval=3600.0)
    mq = cluster.mq(broker)
    sent = await mq.send("TxnT", b"a", queue_id=0, sys_flag=TRANSACTION_PREPARED_TYPE,
                         properties=mq.props("T", UNIQ_KEY="U-a", TRAN_MSG="true", PGROUP="TxnPG"))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    half = sent.decode_header(SendMessageResponseHeader)
    commit = EndTransactionRequestHeader(producer_group="TxnPG", tran_state_table_offset=half.queue_offset,
                                         commit_log_offset=decode_message_id(half.msg_id)[1],
                                         commit_or_rollback=TRANSACTION_COMMIT_TYPE, msg_id="U-a")
    await mq.client.invoke_oneway(broker.address,
                                  RemotingCommand.request(RequestCode.END_TRANSACTION, commit, oneway=True))
    await cut_handlers_when(broker, dispatched(broker, "TxnT", 1))
    again = await cluster.restart(broker)
    await again.transactional_message_check_service.check_once()
    assert again.transactional_message_service.checks_sent == 0  # the op record says it is done
    assert [m.body for m in await messages(again, "TxnT")] == [b"a"]


async def test_a_pop_cut_by_the_servers_stop_commits_what_its_checkpoint_holds(cluster: Cluster) -> None:
    broker, mq = await unbuffered_pops(cluster, 3)
    pop = asyncio.ensure_future(PopClient(mq).pop("G", "PT", 0, invisible=60_000, init_mode=1))
    await cut_handlers_when(broker, dispatched(broker, TIMER_TOPIC, 1))  # (the checkpoint waits in the timer)
    await asyncio.gather(pop, return_exceptions=True)
    again = await cluster.restart(broker)
    # The checkpoint revives them once their invisible time is over; a pop now must not hand them out again.
    assert (await PopClient(cluster.mq(again)).pop("G", "PT", 0, init_mode=1)).bodies == []


async def test_a_change_of_invisible_time_cut_by_the_servers_stop_revives_the_message_once(
        cluster: Cluster) -> None:
    broker, mq = await unbuffered_pops(cluster, 1)
    client = PopClient(mq, broker.broker_config.broker_name)
    [handle] = (await client.pop("G", "PT", 0, invisible=300, init_mode=1)).handles
    change = asyncio.ensure_future(client.change_invisible("G", "PT", handle, 100))
    await cut_handlers_when(broker, dispatched(broker, TIMER_TOPIC, 2))  # (both checkpoints wait in the timer)
    await asyncio.gather(change, return_exceptions=True)
    again = await cluster.restart(broker)
    await settle_revive(again)  # both checkpoints' times are over
    retry = again.pop_message_processor.retry_topic("PT", "G")
    assert [m.body for m in await messages(again, retry)] == [b"m0"]
