"""Recursive-descent parser for RocketMQ's SQL92 grammar (SelectorParser.jj), with the same precedence and
the same compile-time checks (ComparisonExpression.create*, asBooleanExpression).

Precedence, loosest first: OR; AND; ``=``, ``<>``, IS [NOT] NULL; ``>``, ``>=``, ``<``, ``<=``, [NOT] BETWEEN,
[NOT] IN, [NOT] CONTAINS/STARTSWITH/ENDSWITH; unary ``+``, ``-`` and NOT. As in RocketMQ, NOT binds tighter than
a comparison: ``NOT a = 1`` means ``(NOT a) = 1``; write ``NOT (a = 1)``.

One deliberate difference: RocketMQ's grammar has no end-of-input rule, so it silently ignores whatever follows
a complete expression (``a = 1 b = 2`` filters by ``a = 1``). Here trailing tokens are an error.
"""

from __future__ import annotations

from ..java_numbers import INT_MAX, INT_MIN, LONG_MAX
from .errors import SqlParseError
from .java_values import JavaLong, compare, type_name
from .lexer import Token, tokenize
from .nodes import (
    And,
    BooleanCast,
    BooleanConstant,
    BooleanNode,
    Constant,
    Equal,
    In,
    Negate,
    Node,
    Not,
    Or,
    Property,
    Relation,
    StringMatch,
    depth,
)

_RELATIONAL = (">", ">=", "<", "<=")
_STRING_MATCH = ("CONTAINS", "STARTSWITH", "ENDSWITH")
_DOUBLE_MAX = 1.7976931348623157e308
_DOUBLE_MIN = 5e-324  # Double.MIN_VALUE, the smallest positive double
# Parentheses and prefix operators recurse in the parser, and every tree level is a frame when evaluating:
# both are bounded so that no expression can exhaust the stack of the broker thread that runs it.
MAX_NESTING = 64
MAX_DEPTH = 128
# Filters are parsed on the broker's event loop, at a few microseconds a character: an expression of megabytes
# (RocketMQ takes anything a frame holds, 16 MiB) would stop every other request for seconds. Real filters are a
# few hundred characters; 65,536 leaves room for long generated IN lists and costs a fraction of a second at most.
MAX_LENGTH = 64 * 1024


def parse(expression: str) -> BooleanNode:
    if not isinstance(expression, str):
        raise TypeError("the SQL92 expression must be a str")
    if len(expression) > MAX_LENGTH:
        raise SqlParseError(
            f"expression of {len(expression)} characters, longer than the {MAX_LENGTH} pocketmq accepts",
            expression,
            MAX_LENGTH,
        )
    return _Parser(expression).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.nesting = 0

    # --- token helpers ---

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, k: int = 1) -> Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def take(self) -> Token:
        t = self.tokens[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def expect(self, kind: str, what: str | None = None) -> Token:
        if self.tok.kind != kind:
            self.fail(f"expected {what or repr(kind)}", self.tok)
        return self.take()

    def fail(self, message: str, at: Token | None = None) -> None:
        t = at or self.tok
        found = "end of input" if t.kind == "EOF" else repr(self.text[t.pos : t.pos + max(1, len(t.text))])
        if t.kind == "STRING":
            found = "a string literal"
        raise SqlParseError(f"{message}, found {found}", self.text, t.pos)

    def error(self, message: str, at: Token) -> SqlParseError:
        return SqlParseError(message, self.text, at.pos)

    # --- grammar ---

    def parse(self) -> BooleanNode:
        if self.tok.kind == "EOF":
            self.fail("empty expression")
        start = self.tok
        node = self.or_expr()
        if self.tok.kind != "EOF":
            if self.text.startswith("--", self.tok.pos):
                self.fail("unexpected text after a complete expression ('--' starts a comment only when a line end "
                          "follows it)")
            self.fail("unexpected text after a complete expression")
        tree = self.as_boolean(node, start)
        if depth(tree) > MAX_DEPTH:
            raise self.error(f"expression nests more than {MAX_DEPTH} levels deep", start)
        return tree

    # A chain is collected and built once: combining pairwise copied the operands at every operator, which made
    # a long chain quadratic in its length (seconds of the broker's event loop for a few hundred kilobytes).
    def or_expr(self) -> Node:
        start = self.tok
        first = self.and_expr()
        if self.tok.kind != "OR":
            return first
        operands: list[BooleanNode] = []
        _extend(operands, Or, self.as_boolean(first, start))
        while self.tok.kind == "OR":
            self.take()
            right_start = self.tok
            _extend(operands, Or, self.as_boolean(self.and_expr(), right_start))
        return Or(tuple(operands))

    def and_expr(self) -> Node:
        start = self.tok
        first = self.equality()
        if self.tok.kind != "AND":
            return first
        operands: list[BooleanNode] = []
        _extend(operands, And, self.as_boolean(first, start))
        while self.tok.kind == "AND":
            self.take()
            right_start = self.tok
            _extend(operands, And, self.as_boolean(self.equality(), right_start))
        return And(tuple(operands))

    def equality(self) -> Node:
        left_tok = self.tok
        left = self.comparison()
        links = 0
        while True:
            t = self.tok
            links += 1
            if links > MAX_DEPTH:
                # Each link nests the chain one level deeper: refused here rather than after building it all.
                raise self.error(f"expression nests more than {MAX_DEPTH} levels deep", left_tok)
            if t.kind in ("=", "<>"):
                self.take()
                right_tok = self.tok
                right = self.comparison()
                self.check_equal_operand(left, left_tok)
                self.check_equal_operand(right, right_tok)
                # checkEqualOperandCompatability: TRUE = 1 is refused, 1 = TRUE is not.
                if isinstance(left, BooleanConstant) and isinstance(right, Constant):
                    raise self.error(f"'{left}' cannot be compared with '{right}'", t)
                eq = Equal(left, right)
                left = eq if t.kind == "=" else Not(eq)
            elif t.kind == "IS" and self.peek().kind == "NULL":
                self.take()
                self.take()
                left = Equal(left, BooleanConstant(None))
            elif t.kind == "IS":
                self.take()
                self.expect("NOT", "NULL or NOT NULL after IS")
                self.expect("NULL", "NULL after IS NOT")
                left = Not(Equal(left, BooleanConstant(None)))
            else:
                return left

    def comparison(self) -> Node:
        left_tok = self.tok
        left = self.unary()
        while True:
            t = self.tok
            negated = t.kind == "NOT" and self.peek().kind in ("BETWEEN", "IN", *_STRING_MATCH)
            kind = self.peek().kind if negated else t.kind
            if kind in _RELATIONAL and not negated:
                self.take()
                right_tok = self.tok
                right = self.unary()
                self.check_less_than_operand(left, left_tok)
                self.check_less_than_operand(right, right_tok)
                left = Relation(kind, left, right)
            elif kind in _STRING_MATCH:
                self.take()
                if negated:
                    self.take()
                left = StringMatch(kind, left, self.string_literal(kind), negated)
            elif kind == "BETWEEN":
                self.take()
                if negated:
                    self.take()
                low_tok = self.tok
                low = self.unary()
                self.expect("AND", "AND in BETWEEN ... AND ...")
                high_tok = self.tok
                high = self.unary()
                left = self.between(left, low, high, negated, t, left_tok, low_tok, high_tok)
            elif kind == "IN":
                self.take()
                if negated:
                    self.take()
                if not isinstance(left, Property):
                    raise self.error(f"Expected a property for In expression, got: {left}", t)
                self.expect("(", "'(' after IN")
                values = [self.string_literal("IN")]
                while self.tok.kind == ",":
                    self.take()
                    values.append(self.string_literal("IN"))
                self.expect(")", "')' or ',' in the IN list")
                left = In(left, frozenset(values), negated)
            else:
                return left

    def between(
        self,
        value: Node,
        low: Node,
        high: Node,
        negated: bool,
        at: Token,
        value_tok: Token,
        low_tok: Token,
        high_tok: Token,
    ) -> Node:
        if not negated and isinstance(low, Constant | BooleanConstant) and isinstance(high, Constant | BooleanConstant):
            if low.value is None or high.value is None:
                raise self.error("Illegal values of between, values can not be null!", at)
            try:
                ordered = compare(high.value, low.value) >= 0
            except Exception:
                ordered = True  # Java rethrows a conversion failure here too, but the operand check below fails first
            if not ordered:
                raise self.error(
                    f"Illegal values of between, left value({low}) must less than or equal to right value({high})", at
                )
        for node, tok in ((value, value_tok), (low, low_tok), (high, high_tok)):
            self.check_less_than_operand(node, tok)
        if negated:
            return Or((Relation("<", value, low), Relation(">", value, high)))
        return And((Relation(">=", value, low), Relation("<=", value, high)))

    def unary(self) -> Node:
        t = self.tok
        if t.kind in ("+", "-", "NOT", "("):
            self.nesting += 1
            if self.nesting > MAX_NESTING:
                raise self.error(f"more than {MAX_NESTING} nested parentheses or prefix operators", t)
            try:
                return self._unary(t)
            finally:
                self.nesting -= 1
        return self.primary()

    def _unary(self, t: Token) -> Node:
        if t.kind == "+":
            self.take()
            return self.unary()
        if t.kind == "-":
            self.take()
            return Negate(self.unary())
        if t.kind == "NOT":
            self.take()
            operand_tok = self.tok
            return Not(self.as_boolean(self.unary(), operand_tok))
        return self.primary()

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "STRING":
            self.take()
            return Constant(t.text)
        if t.kind == "INT":
            self.take()
            return self.decimal(t)
        if t.kind == "FLOAT":
            self.take()
            return self.float_literal(t)
        if t.kind in ("TRUE", "FALSE", "NULL"):
            self.take()
            return BooleanConstant({"TRUE": True, "FALSE": False, "NULL": None}[t.kind])
        if t.kind == "ID":
            self.take()
            return Property(t.text)
        if t.kind == "(":
            self.take()
            node = self.or_expr()
            self.expect(")", "')'")
            return node
        self.fail("expected a literal, a property name or '('")
        raise AssertionError  # unreachable: fail() raises

    # --- literals ---

    def string_literal(self, after: str) -> str:
        if self.tok.kind != "STRING":
            self.fail(f"expected a string literal after {after}")
        return self.take().text

    def decimal(self, t: Token) -> Constant:
        text = t.text[:-1] if t.text[-1] in "lL" else t.text
        v = int(text)
        if v > LONG_MAX:
            raise self.error(f"number {t.text} is out of the long range", t)
        if INT_MIN <= v <= INT_MAX:
            return Constant(v)  # an Integer, even with an L suffix (ConstantExpression.createFromDecimal)
        return Constant(JavaLong(v))

    def float_literal(self, t: Token) -> Constant:
        v = float(t.text)
        if v > _DOUBLE_MAX:
            raise self.error(f"{t.text} is greater than {_DOUBLE_MAX}", t)
        if v < _DOUBLE_MIN:
            # RocketMQ's createFloat rejects every double below Double.MIN_VALUE, which includes 0.0 and any
            # literal that rounds to zero: write the integer 0 instead.
            raise self.error(f"{t.text} is less than 4.9E-324 (RocketMQ rejects zero float literals; write 0)", t)
        return Constant(v)

    # --- RocketMQ's compile-time checks ---

    def as_boolean(self, node: Node, at: Token) -> BooleanNode:
        if isinstance(node, BooleanNode):
            return node
        if isinstance(node, Property):
            return BooleanCast(node)
        raise self.error(f"Expression will not result in a boolean value: {_describe(node)}", at)

    def check_equal_operand(self, node: Node, at: Token) -> None:
        if isinstance(node, BooleanConstant) and node.value is None:
            raise self.error("'NULL' cannot be compared (use IS NULL)", at)

    def check_less_than_operand(self, node: Node, at: Token) -> None:
        if isinstance(node, Constant) and type_name(node.value) in ("Integer", "Long", "Double"):
            return
        if isinstance(node, Constant | BooleanConstant | BooleanNode):
            raise self.error(f"Value {_describe(node)} cannot be compared by >, >=, <, <= (numbers only)", at)


def _extend(operands: list[BooleanNode], chain: type[And] | type[Or], node: BooleanNode) -> None:
    """Adds ``node`` to a chain of its kind, a parenthesised chain of the same kind by its operands (``a OR (b OR
    c)`` is ``a OR b OR c``, evaluated in the same order)."""
    if isinstance(node, chain):
        operands.extend(node.operands)
    else:
        operands.append(node)


def _describe(node: Node) -> str:
    return str(node) if isinstance(node, Constant | BooleanConstant | Property) else type(node).__name__
