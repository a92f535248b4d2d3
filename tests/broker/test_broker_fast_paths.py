"""The broker's fast paths: sends and pulls answered as they are read, in-memory
pulls without the pull threads. Each must keep the slow path's answers and never make the loop wait."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

from pocketmq.common import MessageExtBrokerInner
from pocketmq.common.codec import decode_all
from pocketmq.common.message_batch import BatchItem
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    GetMaxOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    UpdateConsumerOffsetRequestHeader,
)
from pocketmq.storage.config import FlushDiskType

GUARD = 5.0  # a bound for things that should happen promptly; never a timing assertion


async def test_sync_flush_sends_wait_for_the_group_commit_while_the_loop_keeps_serving(
    cluster: Any, poll: Callable
) -> None:
    broker = await cluster.broker(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    mq, other = cluster.mq(broker), cluster.mq(broker)
    assert (await mq.send("TopicSync", b"warm-up")).code == ResponseCode.SUCCESS
    # A disk slow enough to see the wait cannot be had for real in a test: the group commit's flush is held
    # on an event instead (the flush itself still runs once released).
    real_flush = broker.store.flush_commit_log
    in_flush, release = threading.Event(), threading.Event()

    def held_flush(least_pages: int) -> None:
        in_flush.set()
        release.wait(GUARD)
        real_flush(least_pages)

    broker.store.flush_commit_log = held_flush  # type: ignore[method-assign]
    try:
        single = asyncio.create_task(mq.send("TopicSync", b"durable"))
        await poll(in_flush.is_set)
        batch = asyncio.create_task(mq.send_batch("TopicSync", [BatchItem(0, b"b1", ""), BatchItem(0, b"b2", "")]))
        # While both wait for the flush, the loop answers everyone: the same connection, another one, and a
        # send that does not wait for the disk (WAIT=false).
        max_offset = await mq.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader("TopicSync", 0))
        no_wait = await other.send("TopicSync", b"no wait", properties=mq.props(WAIT="false"))
        assert max_offset.code == ResponseCode.SUCCESS and no_wait.code == ResponseCode.SUCCESS
        assert not single.done() and not batch.done()
    finally:
        release.set()
    assert (await asyncio.wait_for(single, GUARD)).code == ResponseCode.SUCCESS
    assert (await asyncio.wait_for(batch, GUARD)).code == ResponseCode.SUCCESS
    assert broker.store.commit_log.mapped_file_queue.flushed_where >= broker.store.get_max_phy_offset() - 1000


async def test_a_put_from_another_thread_is_dispatched_too(broker, mq, dispatched) -> None:
    assert (await mq.send("TopicThreads", b"from the loop")).code == ResponseCode.SUCCESS
    # Appends from the loop and from any other thread reach the same dispatcher thread.
    msg = MessageExtBrokerInner(topic="TopicThreads", body=b"from a thread", queue_id=0)
    assert (await asyncio.to_thread(broker.store.put_message, msg)).is_ok
    await dispatched(broker)
    resp = await mq.pull("G", "TopicThreads", 0, 0)
    assert [m.body for m in decode_all(resp.body)] == [b"from the loop", b"from a thread"]


async def test_pulls_of_recent_messages_skip_the_pull_threads_and_read_the_same(cluster: Any, dispatched) -> None:
    memory = await cluster.broker("memory")
    disk = await cluster.broker("disk", access_message_in_memory_max_ratio=0)  # everything counts as on disk
    bodies = [b"m%d" % i for i in range(40)]
    pulled, read_on = {}, {}
    for broker in (memory, disk):
        # Only watches where the store reads run (the read itself is the real one).
        threads: list[str] = []
        read = broker.store.get_message

        def watched(*args: Any, _read: Any = read, _threads: list[str] = threads) -> Any:
            if args[1] == "TopicHot":  # not the schedule service polling its own queues
                _threads.append(threading.current_thread().name)
            return _read(*args)

        broker.store.get_message = watched  # type: ignore[method-assign]
        mq = cluster.mq(broker)
        for body in bodies:
            assert (await mq.send("TopicHot", body, tags="T")).code == ResponseCode.SUCCESS
        await dispatched(broker)
        first = await mq.pull("G", "TopicHot", 0, 0, max_nums=32)
        rest = await mq.pull("G", "TopicHot", 0, int(first.ext_fields["nextBeginOffset"]), max_nums=32)
        read_on[broker] = set(threads)
        empty = await mq.pull("G", "TopicHot", 0, len(bodies))
        assert empty.code == ResponseCode.PULL_NOT_FOUND
        pulled[broker] = [m.body for r in (first, rest) for m in decode_all(r.body)]
    assert pulled[memory] == pulled[disk] == bodies
    assert read_on[memory] == {threading.current_thread().name}  # the event loop's thread
    assert read_on[disk] and all(name.startswith("pull") for name in read_on[disk])


async def test_inline_processors_answer_from_memory_with_a_plain_call_and_hand_back_only_what_waits(
    cluster: Any, dispatched: Callable
) -> None:
    # The broker's inline processors, called as the transport calls them, on a real connection's channel.
    memory = await cluster.broker("memory")
    disk = await cluster.broker("disk", access_message_in_memory_max_ratio=0)  # every read goes to a pull thread
    answers: dict[str, Any] = {}
    for broker in (memory, disk):
        mq = cluster.mq(broker)
        await mq.create_group("G")
        assert (await mq.send("TopicInline", b"first")).code == ResponseCode.SUCCESS
        await dispatched(broker)
        (channel,) = broker.remoting_server.channels
        inline = broker.remoting_server._inline_processors

        def call(code: int, header: Any, body: bytes | None = None, _inline: Any = inline, _ch: Any = channel) -> Any:
            return _inline[code](_ch, RemotingCommand.request(code, header, body))

        header = SendMessageRequestHeaderV2.from_v1(SendMessageRequestHeader(
            producer_group="PG", topic="TopicInline", default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
            sys_flag=0, born_timestamp=0, flag=0, properties=""))
        send = call(RequestCode.SEND_MESSAGE_V2, header, b"second")
        update = call(RequestCode.UPDATE_CONSUMER_OFFSET, UpdateConsumerOffsetRequestHeader("G", "TopicInline", 0, 1))
        query = call(RequestCode.QUERY_CONSUMER_OFFSET, QueryConsumerOffsetRequestHeader("G", "TopicInline", 0))
        # Plain answers: no coroutine, nothing left to run.
        assert isinstance(send, RemotingCommand) and send.code == ResponseCode.SUCCESS
        assert isinstance(update, RemotingCommand) and update.code == ResponseCode.SUCCESS
        assert isinstance(query, RemotingCommand) and query.ext_fields["offset"] == 1
        # A group new to the queue needs a store read on a pull thread: an awaitable, whatever the broker.
        new_group = call(RequestCode.QUERY_CONSUMER_OFFSET, QueryConsumerOffsetRequestHeader("G2", "TopicInline", 0))
        found = ResponseCode.SUCCESS if broker is memory else ResponseCode.QUERY_NOT_FOUND  # (its data: "on disk")
        assert inspect.isawaitable(new_group) and (await new_group).code == found
        await dispatched(broker)
        pull = call(RequestCode.PULL_MESSAGE, mq.pull_request("G", "TopicInline", 0, 0))
        name = "memory" if broker is memory else "disk"
        if isinstance(pull, RemotingCommand):
            answers[name] = ("plain", pull)
        else:
            assert inspect.isawaitable(pull)
            answers[name] = ("awaited", await pull)
    # A pull of what is in memory is answered by the call; one that must read on a pull thread is awaited.
    assert {name: kind for name, (kind, _) in answers.items()} == {"memory": "plain", "disk": "awaited"}
    for _, pulled in answers.values():
        assert [m.body for m in decode_all(pulled.body)] == [b"first", b"second"]
