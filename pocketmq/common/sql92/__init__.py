"""RocketMQ's SQL92 message filter (rocketmq-filter): parse an expression once, then test message properties.

    >>> f = compile_sql92("a > 5 AND b IN ('x', 'y')")
    >>> f.matches({"a": "7", "b": "x"}), f.matches({"a": "7"})
    (True, False)

Property values are strings, as on the wire; compared with a numeric literal they are read as numbers (as
RocketMQ does), and a comparison involving a missing property is unknown, which never matches.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..bounded_cache import BoundedCache
from .errors import EvaluationError, SqlParseError
from .java_values import Value
from .nodes import BooleanNode
from .parser import MAX_LENGTH, parse

__all__ = ["EvaluationError", "Sql92Expression", "SqlParseError", "compile_sql92"]


class Sql92Expression:
    """A compiled filter. Immutable and thread-safe: the broker shares one per expression string."""

    __slots__ = ("expression", "tree")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self.tree: BooleanNode = parse(expression)

    def evaluate(self, properties: Mapping[str, str]) -> Value:
        """True, False or None (unknown); raises EvaluationError where Java would throw."""
        return self.tree.evaluate(properties)

    def matches(self, properties: Mapping[str, str]) -> bool:
        """ExpressionMessageFilter.isMatchedByCommitLog: only a TRUE result matches; unknown and evaluation
        errors do not."""
        try:
            return self.tree.evaluate(properties) is True
        except EvaluationError:
            return False

    def __repr__(self) -> str:
        return f"Sql92Expression({self.expression!r})"


def _compile(expression: str) -> Sql92Expression | tuple[str, int]:
    try:
        return Sql92Expression(expression)
    except SqlParseError as e:
        return e.reason, e.position


# Parsed expressions and parse failures, as SelectorParser's PARSE_CACHE keeps both: a client that sends the same
# malformed filter with every pull costs one parse, not one per pull. A failure is kept as its reason and position
# and raised anew each time (an exception object raised again would keep growing its traceback).
_COMPILED: BoundedCache[str, Sql92Expression | tuple[str, int]] = BoundedCache(_compile, 256, max_key_len=4096)


def compile_sql92(expression: str) -> Sql92Expression:
    """Parse ``expression`` (cached, like SelectorParser's parse cache); raises SqlParseError."""
    if not isinstance(expression, str) or len(expression) > MAX_LENGTH:
        return Sql92Expression(expression)  # raises at once; not kept, or the table could hold 256 frames' worth
    compiled = _COMPILED.get(expression) or _COMPILED[expression]
    if isinstance(compiled, tuple):
        raise SqlParseError(compiled[0], expression, compiled[1])
    return compiled
