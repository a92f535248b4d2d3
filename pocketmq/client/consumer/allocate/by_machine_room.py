"""AllocateMessageQueueByMachineRoom (MACHINE_ROOM): only queues of brokers named ``<idc>@<name>`` with ``idc``
in ``consumeridcs`` are consumed; each client takes an equal block and the remainder goes one each to the first
clients, taken from the tail."""

from __future__ import annotations

from collections.abc import Iterable

from pocketmq.common.java_text import java_split
from pocketmq.remoting.client_body import MessageQueue


class AllocateMessageQueueByMachineRoom:
    name = "MACHINE_ROOM"

    def __init__(self, consumeridcs: Iterable[str] = ()) -> None:
        self.consumeridcs = set(consumeridcs)

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        # RocketMQ's version skips the empty-argument checks of the other strategies: an unknown client gets nothing.
        if current_cid not in cid_all:
            return []
        index = cid_all.index(current_cid)
        premq_all = [mq for mq in mq_all if _idc_of(mq.broker_name) in self.consumeridcs]
        mod, rem = divmod(len(premq_all), len(cid_all))
        result = premq_all[index * mod : index * mod + mod]
        if rem > index:
            result.append(premq_all[index + mod * len(cid_all)])
        return result


def _idc_of(broker_name: str) -> str | None:
    # Java's split("@") drops trailing empty strings, so "idc@" has one part and never matches.
    parts = java_split(broker_name, "@")
    return parts[0] if len(parts) == 2 else None
