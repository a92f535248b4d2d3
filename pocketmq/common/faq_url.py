"""RocketMQ's FAQUrl: the pointer its servers append to the remarks of refused requests (suggestTodo) and the one
its clients add to an error that has none (attachDefaultURL).

4.9's servers point at the faq page; 5.x's at the 06FAQ page. pocketmq answers most requests as 4.9.7 does, and
the requests 4.9.7 does not have (POP and its siblings) as 5.5.0 does, so both addresses are here."""

from __future__ import annotations

APPLY_TOPIC_URL = "http://rocketmq.apache.org/docs/faq/"
DEFAULT_FAQ_URL_5 = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
APPLY_TOPIC_URL_5 = DEFAULT_FAQ_URL_5
SUBSCRIPTION_GROUP_NOT_EXIST_URL_5 = DEFAULT_FAQ_URL_5
UNEXPECTED_EXCEPTION_URL = DEFAULT_FAQ_URL_5
_TIP_BEGIN = "\nSee "


def suggest_todo(url: str = APPLY_TOPIC_URL) -> str:
    return f"{_TIP_BEGIN}{url} for further details."


def attach_default_url(message: str) -> str:
    if _TIP_BEGIN in message:
        return message
    return f"{message}\nFor more information, please visit the url, {UNEXPECTED_EXCEPTION_URL}"
