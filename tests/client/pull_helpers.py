"""Reading back everything a topic holds, for the client tests that check what was stored or delivered."""

from __future__ import annotations

from pocketmq.client import MessageExt, PullConsumer, PullStatus


async def pull_queues(consumer: PullConsumer, topic: str, expression: str = "*") -> list[MessageExt]:
    """Every message of each of the topic's queues from offset 0, pulled until a queue has no more. A filtered
    pull whose batch matched nothing answers NO_MATCHED_MSG with where to go on from: not the queue's end."""
    out: list[MessageExt] = []
    for mq in await consumer.fetch_subscribe_message_queues(topic):
        offset = 0
        while True:
            result = await consumer.pull(mq, expression, offset, 32)
            out.extend(result.msg_found_list)
            if result.pull_status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
                break
            offset = result.next_begin_offset
    return out
