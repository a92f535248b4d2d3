"""AllocateMessageQueueConsistentHash (CONSISTENT_HASH): a hash ring of ``virtual_node_cnt`` virtual nodes per
client; each queue goes to the first virtual node at or after its hash, wrapping around.

Hashes and keys are RocketMQ's (ConsistentHashRouter with its default MD5Hash), so a Python and a Java consumer
in one group agree on the split: a virtual node is ``"<clientId>-<n>"``, a queue is ``MessageQueue.toString()``,
and the hash is the first 4 bytes of the key's MD5, big-endian, unsigned.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable

from pocketmq.remoting.client_body import MessageQueue

from .strategy import check_allocate_args

HashFunction = Callable[[str], int]


def md5_hash(key: str) -> int:
    # Java's key.getBytes() uses the platform charset; UTF-8 is what every current JVM defaults to.
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


def message_queue_key(mq: MessageQueue) -> str:
    """MessageQueue.toString() in Java, the key each queue is hashed by."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


class ConsistentHashRouter:
    """A ring of virtual nodes. Two virtual nodes with the same hash: the one added last wins, as in Java's
    TreeMap.put."""

    def __init__(self, nodes: list[str], virtual_node_cnt: int, hash_function: HashFunction = md5_hash) -> None:
        if virtual_node_cnt < 0:
            raise ValueError(f"illegal virtual node counts :{virtual_node_cnt}")
        self._hash = hash_function
        ring: dict[int, str] = {}
        replicas: dict[str, int] = {}
        for node in nodes:
            existing = replicas.get(node, 0)  # a node listed twice gets further replica indexes, as addNode does
            for i in range(virtual_node_cnt):
                ring[hash_function(f"{node}-{existing + i}")] = node
            replicas[node] = existing + virtual_node_cnt
        self._points = sorted(ring)
        self._owners = [ring[p] for p in self._points]

    def route_node(self, key: str) -> str | None:
        if not self._points:
            return None
        i = bisect.bisect_left(self._points, self._hash(key))
        return self._owners[i if i < len(self._points) else 0]


class AllocateMessageQueueConsistentHash:
    name = "CONSISTENT_HASH"

    def __init__(self, virtual_node_cnt: int = 10, hash_function: HashFunction | None = None) -> None:
        if virtual_node_cnt < 0:
            raise ValueError(f"illegal virtualNodeCnt :{virtual_node_cnt}")
        self.virtual_node_cnt = virtual_node_cnt
        self.hash_function = hash_function or md5_hash

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        if not check_allocate_args(consumer_group, current_cid, mq_all, cid_all):
            return []
        router = ConsistentHashRouter(list(cid_all), self.virtual_node_cnt, self.hash_function)
        return [mq for mq in mq_all if router.route_node(message_queue_key(mq)) == current_cid]
