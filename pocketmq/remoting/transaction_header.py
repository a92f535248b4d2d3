"""Headers of the transactional-message requests (RocketMQ 4.9.8's names and wire names).

END_TRANSACTION (37) goes producer -> broker, one-way: the outcome of a local transaction, either right after the
half message was stored or as the answer to a check. CHECK_TRANSACTION_STATE (39) goes broker -> producer,
one-way: "what became of this half message?", the half message itself in the body.
"""

from __future__ import annotations

from dataclasses import dataclass

from .header_codec import CommandHeader


@dataclass(slots=True)
class EndTransactionRequestHeader(CommandHeader):
    """END_TRANSACTION (37), producer -> broker."""

    producer_group: str
    tran_state_table_offset: int  # the half message's offset in RMQ_SYS_TRANS_HALF_TOPIC's queue
    commit_log_offset: int  # the half message's commit-log offset
    commit_or_rollback: int  # MessageSysFlag: TRANSACTION_COMMIT_TYPE, _ROLLBACK_TYPE or _NOT_TYPE (unknown)
    from_transaction_check: bool = False
    msg_id: str = ""
    transaction_id: str | None = None


@dataclass(slots=True)
class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39), broker -> producer."""

    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


@dataclass(slots=True)
class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """RESUME_CHECK_HALF_MESSAGE (323), an operator -> broker: the half message at this offsetMsgId is to be
    checked again (its check count back to 0)."""

    msg_id: str | None = None
