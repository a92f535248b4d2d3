"""Delayed delivery: SCHEDULE_TOPIC_XXXX back to the real topics."""

from .schedule_message_service import ScheduleMessageService

__all__ = ["ScheduleMessageService"]
