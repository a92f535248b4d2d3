"""The compiled expression tree: each node evaluates to a Java value (see java_values) or None (SQL's
unknown), exactly as RocketMQ's filter expressions (ActiveMQ's selector classes) do."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .java_values import JavaLong, Value, compare, java_equals, parse_double

Properties = Mapping[str, str]


class Node:
    """Any expression."""

    __slots__ = ()

    def evaluate(self, props: Properties) -> Value:
        raise NotImplementedError


class BooleanNode(Node):
    """An expression RocketMQ types as a BooleanExpression: usable with AND/OR/NOT and as the whole filter."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Constant(Node):
    """A string or number literal."""

    value: Value

    def evaluate(self, props: Properties) -> Value:
        return self.value

    def __str__(self) -> str:
        v = self.value
        if v is None:
            return "NULL"
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        return str(int(v)) if isinstance(v, JavaLong) else str(v)


@dataclass(frozen=True, slots=True)
class BooleanConstant(BooleanNode):
    """TRUE, FALSE and NULL: constants that are also boolean expressions."""

    value: bool | None

    def evaluate(self, props: Properties) -> Value:
        return self.value

    def __str__(self) -> str:
        return "NULL" if self.value is None else ("TRUE" if self.value else "FALSE")


@dataclass(frozen=True, slots=True)
class Property(Node):
    """A message property by name: its value, or unknown when the message has none."""

    name: str

    def evaluate(self, props: Properties) -> Value:
        return props.get(self.name)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class BooleanCast(BooleanNode):
    """A bare property used as a condition: true only for a Boolean value, which a string property never
    is, so it is FALSE when present and unknown when missing."""

    operand: Node

    def evaluate(self, props: Properties) -> Value:
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return v if isinstance(v, bool) else False


@dataclass(frozen=True, slots=True)
class Negate(Node):
    """Unary minus: of a number; unknown for anything else."""

    operand: Node

    def evaluate(self, props: Properties) -> Value:
        v = self.operand.evaluate(props)
        if isinstance(v, bool) or not isinstance(v, int | float):
            return None  # only numbers negate; strings and booleans give null
        if isinstance(v, JavaLong):
            return JavaLong(-v)
        return -v


@dataclass(frozen=True, slots=True)
class Not(BooleanNode):
    """NOT: unknown stays unknown."""

    operand: Node

    def evaluate(self, props: Properties) -> Value:
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return not v


@dataclass(frozen=True, slots=True)
class And(BooleanNode):
    """A chain ``a AND b AND ...`` as one node, so long generated filters do not nest deeply. Evaluated left to
    right with the same short-circuits as RocketMQ's nested binary ANDs: the first FALSE decides."""

    operands: tuple[BooleanNode, ...]

    def evaluate(self, props: Properties) -> Value:
        unknown = False
        for operand in self.operands:
            v = operand.evaluate(props)
            if v is False:
                return False
            if v is None:
                unknown = True
        return None if unknown else True


@dataclass(frozen=True, slots=True)
class Or(BooleanNode):
    """A chain ``a OR b OR ...``: the first TRUE decides."""

    operands: tuple[BooleanNode, ...]

    def evaluate(self, props: Properties) -> Value:
        unknown = False
        for operand in self.operands:
            v = operand.evaluate(props)
            if v is True:
                return True
            if v is None:
                unknown = True
        return None if unknown else False


def depth(node: Node) -> int:
    """How deeply the tree nests (iteratively: a tree too deep to evaluate must not overflow here either)."""
    deepest = 0
    stack: list[tuple[Node, int]] = [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        for child in _children(n):
            stack.append((child, d + 1))
    return deepest


def _children(n: Node) -> tuple[Node, ...]:
    if isinstance(n, And | Or):
        return n.operands
    if isinstance(n, Equal | Relation):
        return (n.left, n.right)
    if isinstance(n, BooleanCast | Negate | Not | StringMatch):
        return (n.operand,)
    if isinstance(n, In):
        return (n.prop,)
    return ()


@dataclass(frozen=True, slots=True)
class Equal(BooleanNode):
    """``=`` and IS NULL: unknown when only the left side is null, false when only the right one is."""

    left: Node
    right: Node

    def evaluate(self, props: Properties) -> Value:
        lv = self.left.evaluate(props)
        rv = self.right.evaluate(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None or java_equals(lv, rv):
            return True
        return compare(lv, rv) == 0


_RELATIONS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


@dataclass(frozen=True, slots=True)
class Relation(BooleanNode):
    """``>``, ``>=``, ``<``, ``<=``: numbers only; two strings (two properties) are both read as doubles."""

    op: str
    left: Node
    right: Node

    def evaluate(self, props: Properties) -> Value:
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            c = compare(parse_double(lv), parse_double(rv))
        else:
            c = compare(lv, rv)
        return _RELATIONS[self.op](c)


@dataclass(frozen=True, slots=True)
class In(BooleanNode):
    """IN and NOT IN of a string list: unknown when the property is missing or not a string."""

    prop: Property
    values: frozenset[str]
    negated: bool

    def evaluate(self, props: Properties) -> Value:
        v = self.prop.evaluate(props)
        if not isinstance(v, str):
            return None
        return (v in self.values) != self.negated


@dataclass(frozen=True, slots=True)
class StringMatch(BooleanNode):
    """CONTAINS / STARTSWITH / ENDSWITH and their NOT forms (RocketMQ 5.x): false, never unknown, when the
    value is missing, not a string, or the search string is empty."""

    op: str  # "CONTAINS", "STARTSWITH" or "ENDSWITH"
    operand: Node
    search: str
    negated: bool

    def evaluate(self, props: Properties) -> Value:
        if not self.search:
            return False
        v = self.operand.evaluate(props)
        if not isinstance(v, str):
            return False
        if self.op == "CONTAINS":
            hit = self.search in v
        elif self.op == "STARTSWITH":
            hit = v.startswith(self.search)
        else:
            hit = v.endswith(self.search)
        return hit != self.negated
