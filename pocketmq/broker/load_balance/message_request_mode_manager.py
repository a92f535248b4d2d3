"""MessageRequestModeManager: the pull-or-pop choice per topic and consumer group, set by SET_MESSAGE_REQUEST_MODE
(mqadmin setConsumeMode) and kept in ``messageRequestMode.json`` as RocketMQ's broker keeps it:
``{"messageRequestModeMap": {topic: {group: {topic, consumerGroup, mode, popShareQueueNum}}}}``."""

from __future__ import annotations

import os
from typing import Any

from pocketmq.remoting.assignment_body import SetMessageRequestModeRequestBody
from pocketmq.remoting.body import Reader

from ..config_file import ConfigManager


class MessageRequestModeManager(ConfigManager):
    def __init__(self, config_dir: str) -> None:
        super().__init__(os.path.join(config_dir, "messageRequestMode.json"))
        self.message_request_mode_map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = {}

    def set_message_request_mode(self, body: SetMessageRequestModeRequestBody) -> None:
        # The caller persists before it answers, as RocketMQ's broker does.
        self.message_request_mode_map.setdefault(body.topic, {})[body.consumer_group] = body

    def get_message_request_mode(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        return self.message_request_mode_map.get(topic, {}).get(group)

    def encode(self) -> dict[str, Any]:
        return {
            "messageRequestModeMap": {
                topic: {group: body.to_dict() for group, body in groups.items()}
                for topic, groups in self.message_request_mode_map.items()
            }
        }

    def decode(self, data: Any) -> None:
        table = Reader(data).map("messageRequestModeMap", {})
        for topic, groups in table.items():
            modes = Reader({topic: groups}).object_map(topic, SetMessageRequestModeRequestBody, {})
            self.message_request_mode_map[topic] = modes
