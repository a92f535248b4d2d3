"""Bodies of RocketMQ 5's server-side rebalance: QUERY_ASSIGNMENT (400) asks a broker which queues a client of a
group consumes and how (pull or pop); SET_MESSAGE_REQUEST_MODE (401) sets that "how" for a topic and group."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .body import Reader
from .client_body import MESSAGE_MODELS, MessageQueue

# RocketMQ's MessageRequestMode: consume a queue by pull (client-side offsets) or by pop (broker-side).
MESSAGE_REQUEST_MODES = ("PULL", "POP")


@dataclass(slots=True)
class QueryAssignmentRequestBody:
    """QUERY_ASSIGNMENT (400) body."""

    topic: str
    consumer_group: str
    client_id: str
    strategy_name: str = "AVG"
    message_model: str = "CLUSTERING"

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "consumerGroup": self.consumer_group,
            "clientId": self.client_id,
            "strategyName": self.strategy_name,
            "messageModel": self.message_model,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueryAssignmentRequestBody:
        r = Reader(obj, path)
        return cls(
            r.str("topic"),
            r.str("consumerGroup"),
            r.str("clientId"),
            r.str("strategyName", "AVG"),
            r.enum("messageModel", MESSAGE_MODELS, "CLUSTERING"),
        )


@dataclass(slots=True)
class MessageQueueAssignment:
    """One queue assigned to the client, and whether it pulls or pops it."""

    message_queue: MessageQueue
    mode: str = "PULL"
    attachments: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"messageQueue": self.message_queue.to_dict(), "mode": self.mode, "attachments": self.attachments}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> MessageQueueAssignment:
        r = Reader(obj, path)
        return cls(
            MessageQueue.from_dict(r.map("messageQueue"), r.at("messageQueue")),
            r.enum("mode", MESSAGE_REQUEST_MODES, "PULL"),
            dict(r.map("attachments", {})),
        )


@dataclass(slots=True)
class QueryAssignmentResponseBody:
    """QUERY_ASSIGNMENT (400) answer body."""

    # None: the broker could not compute an assignment (unknown topic, no consumers); the client keeps its queues.
    message_queue_assignments: list[MessageQueueAssignment] | None = None

    def to_dict(self) -> dict[str, Any]:
        if self.message_queue_assignments is None:
            return {}  # fastjson leaves a null set out
        ordered = sorted(
            self.message_queue_assignments,
            key=lambda a: (a.message_queue.topic, a.message_queue.broker_name, a.message_queue.queue_id),
        )
        return {"messageQueueAssignments": [a.to_dict() for a in ordered]}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> QueryAssignmentResponseBody:
        return cls(Reader(obj, path).objects("messageQueueAssignments", MessageQueueAssignment, None))


@dataclass(slots=True)
class SetMessageRequestModeRequestBody:
    """SET_MESSAGE_REQUEST_MODE (401) body."""

    topic: str
    consumer_group: str
    mode: str = "PULL"
    # With POP: how many following clients' queues each client pops as well; <= 0 pops every queue of the topic.
    pop_share_queue_num: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "consumerGroup": self.consumer_group,
            "mode": self.mode,
            "popShareQueueNum": self.pop_share_queue_num,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> SetMessageRequestModeRequestBody:
        r = Reader(obj, path)
        return cls(
            r.str("topic"),
            r.str("consumerGroup"),
            r.enum("mode", MESSAGE_REQUEST_MODES, "PULL"),
            r.int("popShareQueueNum", 0),
        )
