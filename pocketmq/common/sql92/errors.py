"""Errors of the SQL92 filter: a malformed expression (at compile time) and a failed evaluation."""

from __future__ import annotations


class SqlParseError(ValueError):
    """The expression is not valid RocketMQ SQL92. ``position`` is the 0-based offset of the offending
    character or token in the expression; ``line`` and ``column`` are 1-based, as JavaCC reports them."""

    def __init__(self, message: str, expression: str, position: int) -> None:
        position = max(0, min(position, len(expression)))
        self.reason = message
        self.expression = expression
        self.position = position
        self.line = expression.count("\n", 0, position) + 1
        self.column = position - (expression.rfind("\n", 0, position) + 1) + 1
        super().__init__(f"{message} at line {self.line}, column {self.column} (position {position})")


class EvaluationError(Exception):
    """Evaluation hit what Java would throw (a property that is not a number compared with a number ...).

    RocketMQ's broker catches it and treats the message as not matching, whatever the rest of the expression
    says; ``Sql92Expression.matches`` does the same.
    """
