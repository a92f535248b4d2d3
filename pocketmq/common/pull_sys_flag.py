"""RocketMQ's PullSysFlag: the bits of a PULL_MESSAGE request's sysFlag, which the client sets and the broker reads."""

from __future__ import annotations

FLAG_COMMIT_OFFSET = 0x1  # the consumer's offset rides along, for the broker to store
FLAG_SUSPEND = 0x2  # the broker may hold the pull until a message arrives (long polling)
FLAG_SUBSCRIPTION = 0x4  # the subscription comes with the pull (else the heartbeat's is used)
FLAG_CLASS_FILTER = 0x8
FLAG_LITE_PULL_MESSAGE = 0x10


def build_sys_flag(commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool = False) -> int:
    return (
        (FLAG_COMMIT_OFFSET if commit_offset else 0)
        | (FLAG_SUSPEND if suspend else 0)
        | (FLAG_SUBSCRIPTION if subscription else 0)
        | (FLAG_CLASS_FILTER if class_filter else 0)
    )


def clear_commit_offset_flag(sys_flag: int) -> int:
    return sys_flag & ~FLAG_COMMIT_OFFSET
