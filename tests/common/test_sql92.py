"""RocketMQ's SQL92 filter language: grammar, compile-time checks and Java's evaluation semantics.

Expected values follow RocketMQ's filter classes (SelectorParser.jj, ComparisonExpression, LogicExpression,
UnaryExpression, ConstantExpression): property values are strings, converted to the literal's type for a
comparison; null (a missing property) makes comparisons unknown; only TRUE matches.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common import sql92
from pocketmq.common.sql92 import EvaluationError, SqlParseError, compile_sql92
from pocketmq.common.sql92.java_values import JavaLong, compare, parse_double, parse_int
from pocketmq.common.sql92.nodes import And, Or
from pocketmq.common.sql92.parser import MAX_LENGTH

PROPS = {"a": "5", "b": "hello", "n": "-3", "d": "2.5", "big": "3000000000", "t": "true", "q": "it's", "e": ""}


def ev(expr: str, props: dict[str, str] | None = None):
    return compile_sql92(expr).evaluate(PROPS if props is None else props)


def matches(expr: str, props: dict[str, str] | None = None) -> bool:
    return compile_sql92(expr).matches(PROPS if props is None else props)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # string equality
        ("b = 'hello'", True),
        ("b = 'Hello'", False),
        ("b <> 'hello'", False),
        ("b <> 'x'", True),
        ("q = 'it''s'", True),
        ("'hello' = b", True),
        # numeric properties compared with numeric literals
        ("a = 5", True),
        ("a = 5.0", True),
        ("a = 5L", True),
        ("a > 4", True),
        ("a >= 5", True),
        ("a < 5", False),
        ("a <= 5", True),
        ("n < 0", True),
        ("n = -3", True),
        ("d > 2.0", True),
        ("d < 2.6", True),
        ("d > 2", False),  # Integer literal: Integer.valueOf("2.5") fails, so no match (write 2.0)
        ("a > -10", True),
        ("+a > 4", True),
        # two properties: relational operators read both as doubles
        ("a > d", True),
        ("n < d", True),
        # BETWEEN / NOT BETWEEN (bounds inclusive)
        ("a BETWEEN 5 AND 6", True),
        ("a BETWEEN 1 AND 4", False),
        ("a NOT BETWEEN 1 AND 4", True),
        ("a NOT BETWEEN 5 AND 5", False),
        ("d BETWEEN 2.0 AND 3.0", True),
        ("d BETWEEN 2 AND 3", False),
        # IN / NOT IN: strings only
        ("b IN ('x', 'hello')", True),
        ("b IN ('x', 'y', 'z', 'w', 'v', 'hello')", True),
        ("b NOT IN ('x', 'hello')", False),
        ("a IN ('5')", True),
        # IS NULL / IS NOT NULL never give unknown
        ("zz IS NULL", True),
        ("a IS NULL", False),
        ("a IS NOT NULL", True),
        ("zz IS NOT NULL", False),
        ("e IS NULL", False),  # an empty value is present
        # booleans
        ("TRUE", True),
        ("FALSE", False),
        ("t = TRUE", True),  # the string "true" converts to Boolean
        ("b = FALSE", True),  # Boolean.valueOf("hello") is false
        ("1 = TRUE", False),  # unrelated types compare as "less"
        # logic
        ("a = 5 AND b = 'hello'", True),
        ("a = 5 AND b = 'x'", False),
        ("a = 6 OR b = 'hello'", True),
        ("NOT (a = 6)", True),
        ("(a = 6 OR a = 5) AND NOT (b = 'x')", True),
        # keywords and comments
        ("a = 5 and B is null", True),
        ("a = 5 -- trailing comment\n", True),
        ("a = 5 -- trailing comment\r", True),
        ("a = --5", True),  # no line end after "--": two minus signs, not a comment (LINE_COMMENT needs one)
        ("a <> --5", False),
        ("a = - -5", True),
        ("a = /* inline */ 5", True),
        ("a = 5 -- comment\n AND b = 'hello'", True),
        # CONTAINS / STARTSWITH / ENDSWITH (RocketMQ 5.x)
        ("b CONTAINS 'ell'", True),
        ("b NOT CONTAINS 'ell'", False),
        ("b STARTSWITH 'he'", True),
        ("b ENDSWITH 'lo'", True),
        ("b NOT ENDSWITH 'lo'", False),
        ("zz NOT CONTAINS 'x'", False),  # missing: false, not unknown
        ("b CONTAINS ''", False),
    ],
)
def test_evaluation(expr: str, expected: bool) -> None:
    assert matches(expr) is expected


def test_big_property_against_an_integer_literal_fails_as_in_java() -> None:
    # "3000000000" vs an Integer literal goes through Integer.valueOf, which overflows: no match, even though
    # the number is larger. A Long literal (out of int range, or any L literal beyond it) compares fine.
    with pytest.raises(EvaluationError):
        ev("big > 5")
    assert not matches("big > 5")
    assert matches("big > 2999999999")
    assert matches("big = 3000000000")


@pytest.mark.parametrize(
    ("expr", "props"),
    [
        ("a = 5", {}),
        ("a > 5", {}),
        ("a BETWEEN 1 AND 9", {}),
        ("a IN ('x')", {}),
        ("a NOT IN ('x')", {}),
        ("a <> 'x'", {}),
        ("NOT (a = 1)", {}),
        ("a", {}),
        ("NULL", {}),
        ("a = 1 AND TRUE", {}),
        ("a = 1 OR FALSE", {}),
    ],
)
def test_missing_property_is_unknown_and_never_matches(expr: str, props: dict[str, str]) -> None:
    assert ev(expr, props) is None
    assert not matches(expr, props)


def test_three_valued_logic_short_circuits() -> None:
    assert ev("zz = 1 AND FALSE", {}) is False
    assert ev("zz = 1 OR TRUE", {}) is True
    assert ev("FALSE AND zz = 1", {}) is False
    assert ev("TRUE AND zz = 1", {}) is None


def test_unconvertible_values_make_the_whole_expression_fail() -> None:
    # Java throws NumberFormatException inside the evaluation; the broker catches it and drops the message,
    # even when another branch of an OR would have matched.
    assert not matches("b > 1 OR a = 5")
    assert matches("a = 5 OR b > 1")  # ... unless a TRUE short-circuits before the failing comparison
    assert not matches("d = 2")  # Integer.valueOf("2.5") fails
    assert matches("d = 2.5")
    assert not matches("b > d")  # two strings: both must parse as doubles
    assert not matches("TRUE = b")  # Java's ClassCastException (Boolean on the left, String on the right)


def test_bare_property_and_not_precedence_follow_rocketmq() -> None:
    # A property used as a condition is FALSE when present (a string is never a Boolean) ...
    assert ev("a") is False
    assert ev("NOT a") is True
    # ... and NOT binds tighter than '=': NOT a = 5 is (NOT a) = 5, a Boolean against an Integer -> FALSE.
    assert ev("NOT a = 5") is False
    assert ev("NOT (a = 5)") is False
    assert ev("NOT (a = 6)") is True


def test_property_names_are_case_sensitive_keywords_are_not() -> None:
    assert matches("b = 'hello'", {"b": "hello"})
    assert not matches("B = 'hello'", {"b": "hello"})
    assert matches("a BeTwEeN 1 aNd 9 Or FaLsE", {"a": "3"})
    assert matches("$x_1 = 'y'", {"$x_1": "y"})
    assert matches("_ = 'y'", {"_": "y"})


def test_literals() -> None:
    assert matches("a = 2147483648", {"a": "2147483648"})  # a Long literal
    assert matches("a = 9223372036854775807", {"a": "9223372036854775807"})
    assert matches("a = 1.5e3", {"a": "1500"})  # property parsed as a double: Double.valueOf("1500")
    assert matches("a = .5", {"a": "0.5"})
    assert matches("a = 5.", {"a": "5"})
    assert matches("a = 2E2", {"a": "200.0"})
    assert matches("a = 1.0", {"a": " 1.0d "})  # Double.valueOf trims and accepts a type suffix
    assert matches("a = 1", {"a": "+1"})
    assert not matches("a = 1", {"a": " 1"})  # Integer.valueOf does not trim
    assert matches("a = ''", {"a": ""})
    assert matches("a = 'x''''y'", {"a": "x''y"})
    assert matches("a = 'ünï ✓'", {"a": "ünï ✓"})


@pytest.mark.parametrize(
    ("expr", "position", "fragment"),
    [
        ("", 0, "empty expression"),
        ("   ", 3, "empty expression"),
        ("a =", 3, "expected a literal"),
        ("a = 1 b", 6, "unexpected text after a complete expression"),
        ("(a = 1", 6, "expected ')'"),
        ("a = 'abc", 4, "unterminated string literal"),
        ("a = 1 /* x", 6, "unterminated /* comment"),
        ("a # 1", 2, "unexpected character"),
        ("a == 1", 3, "expected a literal"),
        ("a != 1", 2, "unexpected character"),
        ("a > 'x'", 4, "cannot be compared"),
        ("'x' < a", 0, "cannot be compared"),
        ("a > TRUE", 4, "cannot be compared"),
        ("(a = 1) > 2", 0, "cannot be compared"),
        ("a = NULL", 4, "'NULL' cannot be compared"),
        ("TRUE = 1", 5, "cannot be compared with"),
        ("a BETWEEN 5 AND 1", 2, "Illegal values of between"),
        ("a BETWEEN 1", 11, "AND in BETWEEN"),
        ("a IN (1, 2)", 6, "expected a string literal"),
        ("a IN ()", 6, "expected a string literal"),
        ("'a' IN ('a')", 4, "Expected a property for In expression"),
        ("a IS 5", 5, "NULL or NOT NULL"),
        ("5", 0, "will not result in a boolean value"),
        ("'x' AND a = 1", 0, "will not result in a boolean value"),
        ("NOT 5", 4, "will not result in a boolean value"),
        ("a > 0.0", 4, "less than"),  # RocketMQ rejects float literals below Double.MIN_VALUE, zero included
        ("a = 1e400", 4, "greater than"),
        ("a = 9223372036854775808", 4, "out of the long range"),
        ("a CONTAINS b", 11, "expected a string literal"),
        ("a = 1 OR", 8, "expected a literal"),
        ("a = 5 -- no line end", 6, "'--' starts a comment only when a line end follows it"),
        ("a = --", 6, "expected a literal"),
        ("a = 1\nAND b = ", 14, "expected a literal"),
    ],
)
def test_parse_errors_name_the_position(expr: str, position: int, fragment: str) -> None:
    with pytest.raises(SqlParseError) as info:
        compile_sql92(expr)
    assert fragment in str(info.value)
    assert info.value.position == position
    assert info.value.expression == expr


def test_parse_error_line_and_column() -> None:
    with pytest.raises(SqlParseError) as info:
        compile_sql92("a = 1\n  AND b # 2")
    assert (info.value.line, info.value.column) == (2, 9)
    assert "line 2, column 9" in str(info.value)


def test_deep_nesting_is_refused_not_a_crash() -> None:
    with pytest.raises(SqlParseError, match="nested"):
        compile_sql92("(" * 500 + "a = 1" + ")" * 500)
    with pytest.raises(SqlParseError, match="nested"):
        compile_sql92("NOT " * 500 + "a")
    with pytest.raises(SqlParseError, match="levels deep"):
        compile_sql92("a = 'x'" + " = TRUE" * 300)
    # Long flat chains are fine: AND/OR chains are one level, however long.
    long_or = " OR ".join(f"a = {i}" for i in range(3000))
    assert matches(long_or, {"a": "2999"})
    assert not matches(long_or, {"a": "3000"})


def test_compiled_expressions_are_cached() -> None:
    assert compile_sql92("a = 1") is compile_sql92("a = 1")


def test_parse_failures_are_cached_too() -> None:
    # As SelectorParser's PARSE_CACHE: a client that sends the same malformed filter with every pull costs one
    # parse. Each failure is raised anew, with the same reason and position.
    bad = "a = 1 OR b >>> 2 -- cached"
    errors = []
    for _ in range(2):
        with pytest.raises(SqlParseError) as info:
            compile_sql92(bad)
        errors.append(info.value)
        assert sql92._COMPILED.get(bad) == (info.value.reason, info.value.position)
    assert errors[0] is not errors[1] and str(errors[0]) == str(errors[1]) and errors[1].expression == bad


def test_an_expression_longer_than_the_limit_is_refused_before_parsing_and_not_cached() -> None:
    longest = "a = 1" + " " * (MAX_LENGTH - 5)
    assert compile_sql92(longest).matches({"a": "1"})
    for too_long in (longest + " ", "(" * (MAX_LENGTH + 1)):
        with pytest.raises(SqlParseError, match=f"longer than the {MAX_LENGTH} pocketmq accepts") as info:
            compile_sql92(too_long)
        assert info.value.position == MAX_LENGTH
        assert too_long not in sql92._COMPILED


def test_chains_are_one_node_and_keep_their_order() -> None:
    tree = compile_sql92("a = 0 OR (a = 1 OR a = 2) OR a = 3 AND b = 1 AND (b = 2 AND b = 3)").tree
    assert isinstance(tree, Or) and len(tree.operands) == 4
    assert isinstance(tree.operands[3], And) and len(tree.operands[3].operands) == 4
    assert [op.right.value for op in tree.operands[:3]] == [0, 1, 2]  # type: ignore[attr-defined]
    n = 4_000
    tree = compile_sql92(" OR ".join(f"a = {i}" for i in range(n))).tree
    assert isinstance(tree, Or) and len(tree.operands) == n
    tree = compile_sql92(" AND ".join(f"a <> {i}" for i in range(n))).tree
    assert isinstance(tree, And) and len(tree.operands) == n


def test_a_long_equality_chain_is_refused_as_too_deep() -> None:
    with pytest.raises(SqlParseError, match="levels deep") as info:
        compile_sql92("x = 1 OR " + "a" + " = a" * 10_000)
    assert info.value.position == 9  # where the chain starts


def test_java_number_parsing() -> None:
    assert parse_int("-12") == -12
    for bad in ["", "+", "1.0", " 1", "1_000", "0x10", "2147483648", "\U0001d7d3"]:  # (the last: a bold 5)
        with pytest.raises(EvaluationError):
            parse_int(bad)
    # Character.digit takes decimal digits of every script in the BMP (fullwidth, Arabic-Indic); one outside it is
    # two surrogates in Java, neither a digit (Apache 4.9.7 leaves a message whose value is one unmatched).
    assert parse_int("\uff15") == parse_int("\u0665") == 5
    assert parse_double("1e3") == 1000.0
    assert parse_double("-Infinity") == -math.inf
    assert math.isnan(parse_double("NaN"))
    assert parse_double("0x1.8p1") == 3.0
    for bad in ["", "inf", "nan", "1_0", "1e", "abc", "Infinityd"]:
        with pytest.raises(EvaluationError):
            parse_double(bad)
    # Double.compare: NaN above everything, -0.0 below 0.0; Integer/Long compare by value.
    assert compare(math.nan, math.inf) == 1
    assert compare(-0.0, 0.0) == -1
    assert compare(5, JavaLong(5)) == 0


# --- properties ---

ints = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@settings(max_examples=200, deadline=None)
@given(x=ints, n=ints)
def test_relational_operators_agree_with_python(x: int, n: int) -> None:
    props = {"x": str(x)}
    # A negative literal is unary minus applied to a positive one.
    assert matches(f"x > {n}", props) is (x > n)
    assert matches(f"x <= {n}", props) is (x <= n)
    assert matches(f"x = {n}", props) is (x == n)
    assert matches(f"x <> {n}", props) is (x != n)


@settings(max_examples=200, deadline=None)
@given(x=ints, lo=ints, hi=ints)
def test_between_is_inclusive_and_not_between_its_complement(x: int, lo: int, hi: int) -> None:
    lo, hi = min(lo, hi), max(lo, hi)
    props = {"x": str(x)}
    inside = matches(f"x BETWEEN {lo} AND {hi}", props)
    assert inside is (lo <= x <= hi)
    assert matches(f"x NOT BETWEEN {lo} AND {hi}", props) is (not inside)
    assert not matches(f"x BETWEEN {lo} AND {hi}", {})
    assert not matches(f"x NOT BETWEEN {lo} AND {hi}", {})


@settings(max_examples=200, deadline=None)
@given(x=st.floats(allow_nan=False, allow_infinity=False), n=st.floats(min_value=1e-300, max_value=1e300))
def test_double_comparisons(x: float, n: float) -> None:
    props = {"x": repr(x)}
    assert matches(f"x > {n!r}", props) is (x > n)
    assert matches(f"x = {n!r}", props) is (x == n)


@settings(max_examples=200, deadline=None)
@given(value=st.text(), others=st.lists(st.text(), max_size=6))
def test_string_literals_round_trip_and_in_lists(value: str, others: list[str]) -> None:
    def lit(s: str) -> str:
        return "'" + s.replace("'", "''") + "'"

    props = {"p": value}
    assert matches(f"p = {lit(value)}", props)
    if others:
        in_list = ", ".join(lit(o) for o in others)
        assert matches(f"p IN ({in_list})", props) is (value in others)
        assert matches(f"p NOT IN ({in_list})", props) is (value not in others)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab01 .'()=<>-+*/,\nANDORNTISLUBEWCx$_")), max_size=40))
def test_any_input_either_compiles_or_raises_sql_parse_error(text: str) -> None:
    try:
        expr = compile_sql92(text)
    except SqlParseError as e:
        assert 0 <= e.position <= len(text)
        return
    for props in ({}, {"a": "1", "b": "x"}, {"a": "x", "b": "0.5"}):
        assert isinstance(expr.matches(props), bool)
