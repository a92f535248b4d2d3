"""RocketMQ's FAQUrl: the pointer its servers append to the remarks of refused requests (suggestTodo, 4.9's
address; 5.x's servers point at the 06FAQ page below) and the one its clients add to an error that has none
(attachDefaultURL)."""

from __future__ import annotations

APPLY_TOPIC_URL = "http://rocketmq.apache.org/docs/faq/"
UNEXPECTED_EXCEPTION_URL = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
_TIP_BEGIN = "\nSee "


def suggest_todo(url: str = APPLY_TOPIC_URL) -> str:
    return f"{_TIP_BEGIN}{url} for further details."


def attach_default_url(message: str) -> str:
    if _TIP_BEGIN in message:
        return message
    return f"{message}\nFor more information, please visit the url, {UNEXPECTED_EXCEPTION_URL}"
