"""AllocateMachineRoomNearby (MACHINE_ROOM_NEARBY-<inner>): queues stay in their machine room when a consumer
lives there; queues of rooms with no live consumer are shared by every client. Splits use the wrapped strategy."""

from __future__ import annotations

from typing import Protocol

from pocketmq.remoting.client_body import MessageQueue

from .strategy import AllocateMessageQueueStrategy, check_allocate_args


class MachineRoomResolver(Protocol):
    """Which machine room a broker's queue and a client id are deployed in; never empty."""

    def broker_deploy_in(self, mq: MessageQueue) -> str: ...

    def consumer_deploy_in(self, client_id: str) -> str: ...


class AllocateMachineRoomNearby:
    def __init__(self, strategy: AllocateMessageQueueStrategy, resolver: MachineRoomResolver) -> None:
        if strategy is None:
            raise ValueError("allocateMessageQueueStrategy is null")
        if resolver is None:
            raise ValueError("machineRoomResolver is null")
        self.strategy = strategy
        self.resolver = resolver

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self.strategy.name}"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: list[MessageQueue], cid_all: list[str]
    ) -> list[MessageQueue]:
        if not check_allocate_args(consumer_group, current_cid, mq_all, cid_all):
            return []
        room_mqs: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.resolver.broker_deploy_in(mq)
            if not room:
                raise ValueError(f"Machine room is null for mq {mq}")
            room_mqs.setdefault(room, []).append(mq)
        room_cids: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.resolver.consumer_deploy_in(cid)
            if not room:
                raise ValueError(f"Machine room is null for consumer id {cid}")
            room_cids.setdefault(room, []).append(cid)

        result: list[MessageQueue] = []
        current_room = self.resolver.consumer_deploy_in(current_cid)
        local_mqs = room_mqs.pop(current_room, None)
        if local_mqs:
            result += self.strategy.allocate(consumer_group, current_cid, local_mqs, room_cids[current_room])
        # Java walks a TreeMap: orphaned rooms in name order.
        for room in sorted(room_mqs):
            if room not in room_cids:
                result += self.strategy.allocate(consumer_group, current_cid, room_mqs[room], list(cid_all))
        return result
