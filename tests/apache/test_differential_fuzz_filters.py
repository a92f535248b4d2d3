"""test_differential_fuzz_send.py's idea for the filters of a pull: a fixed corpus of messages (tags absent, plain
and odd; user properties whose values are ints, longs, numbers past Java's long, floats, exponents, hex, signs,
boolean texts, quotes, empty and non-ASCII strings, missing on some messages) goes into one queue of Apache
RocketMQ 4.9.7 (enablePropertyFilter=true, as the session's broker runs) and of pocketmq; hypothesis draws SQL92
expressions from 4.9.7's grammar (filter/.../SelectorParser.jj: comparisons of properties and literals of every
type, BETWEEN, IN, IS NULL, AND, OR, NOT, unary signs, parentheses, comments; no LIKE, arithmetic or 5.x's
CONTAINS), malformed ones too, and TAG expressions, pulls the queue from offset 0 to its end with each on both
servers, and asserts the same queue offsets found. Whether 4.9.7 compiles a SQL92 expression is asked of it with
CHECK_CLIENT_CONFIG (its pulls never say: a pull whose own expression does not compile finds every message), and
pocketmq must answer the same code there, and refuse the pull.

A fixed, derandomized set of examples by default; FUZZ_EXAMPLES=n draws n anew each run. The topic and group are
this module's. Cases that differ on purpose (docs/compatibility.md, "Differences") are left out, each with the
reason; pocketmq's length and nesting limits ("SQL92 length", "SQL92 nesting") are never reached by what is drawn,
a few dozen tokens three levels deep."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common.codec import decode_all
from pocketmq.common.sql92 import SqlParseError, compile_sql92
from pocketmq.common.sql92.lexer import tokenize
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import call, request
from .differential_requests import create_group, create_topic, pull, send_v2

RUN = uuid.uuid4().hex[:6]
TOPIC = f"FuzzFilter{RUN}"  # one queue, the corpus in it
GROUP = f"cgFilter{RUN}"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None

# The property values of the corpus, as sent (every property is a string on the wire)
NUMBERS = ["0", "1", "7", "-3", "42", "+5", "007", "-0", "2147483647", "2147483648", "-2147483648",
           "-2147483649", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
           "99999999999999999999", "1.5", "-0.5", "0.0", "1.0", "1e3", "1E-2", "2.5e+1", ".5", "5.", "1.5f", "2d",
           "0x1F", "0x1p3", "NaN", "Infinity", "-Infinity", " 3", "3 ", "1L", "1_000", "\u0661\u0662",
           "\uff11\uff12", "\U0001d7d9", "\u0663.\u0665", "4.9E-324", "1e400", "-1e-400"]
TEXTS = ["true", "false", "TRUE", "True", "abc", "x y", "it's", "''", "'x'", "", " ", "\u00e9", "\u65e5\u672c",
         "null", "NULL", "1,2", "a\tb", "*"]
VALUES = NUMBERS + TEXTS
TAGS = [None, "TagA", "TagB", "TagA", "Aa", "BB", "tag with spaces", " padded ", "a||b", "*", "\u65e5\u672c",
        "x,y", "TAGA", None, "TagB"]  # ("Aa" and "BB": one Java hash code, which is what a broker's tag filter sees)
CORPUS_SIZE = 60
NAMES = ["a", "b", "c", "n", "s"]


def corpus() -> list[dict[str, str]]:
    """The messages' properties, in queue order: each property several types, missing on some messages."""
    out = []
    for i in range(CORPUS_SIZE):
        props = {"a": VALUES[i % len(VALUES)], "KEYS": f"k{i % 7}"}
        if i % 5:
            props["b"] = VALUES[(i * 7 + 3) % len(VALUES)]
        if i % 3 != 1:
            props["c"] = VALUES[(i * 11 + 5) % len(VALUES)]
        if i % 4 != 2:
            props["n"] = NUMBERS[(i * 5 + 1) % len(NUMBERS)]
        if i % 6:
            props["s"] = TEXTS[(i * 5) % len(TEXTS)] if i % 2 else NUMBERS[(i * 3) % len(NUMBERS)]
        tag = TAGS[i % len(TAGS)]
        if tag is not None:
            props["TAGS"] = tag
        out.append(props)
    return out


def kind(value: str | None) -> str:
    """What Java makes of a property value: the types a filter may meet in one property."""
    if value is None:
        return "missing"
    try:
        n = int(value)
        return "int" if -(2**31) <= n < 2**31 else "long" if -(2**63) <= n < 2**63 else "past long"
    except ValueError:
        pass
    try:
        float(value)
        return "float"
    except ValueError:
        return "boolean text" if value.lower() in ("true", "false") else "empty" if not value else "string"


# --- SQL92 expressions, as SelectorParser.jj of 4.9.7 reads them ---
# Property names of the corpus, one no message has, the system ones every side sets alike (never CLUSTER, WAIT,
# MSG_REGION, TRACE_ON, which one side stamps and not the other: docs/compatibility.md, "properties a broker adds"),
# never contains / startswith / endswith (5.x's keywords, which pocketmq's grammar has: docs/compatibility.md,
# "SQL92 CONTAINS ...")
properties = st.sampled_from([*NAMES, *NAMES, "TAGS", "KEYS", "missing", "A", "$x", "_n1"])
ints = st.sampled_from(["0", "1", "3", "7", "42", "2147483647", "2147483648", "9223372036854775807", "5L", "0l",
                        "2147483648L", "9223372036854775808", "99999999999999999999"])
floats = st.sampled_from(["1.5", "0.5", ".5", "5.", "1e3", "1E3", "2.5E-1", "1e+2", "5.e1", "1.0", "3.0E0", "1e308",
                          "1e400", "0.0", "0.", "1e-400", "4.9E-324", "1.7976931348623157E308"])
strings = st.sampled_from(["x", "abc", "1", "1.5", "true", "TRUE", "it''s", "", " ", "\u00e9", "\u65e5\u672c",
                           "TagA", "Aa", "k1", "1e3", "null", "*", "42", "7", "-3"]).map(lambda s: f"'{s}'")
booleans = st.sampled_from(["TRUE", "FALSE", "true", "False", "NULL", "null"])
literals = st.one_of(ints, ints, floats, strings, strings, booleans)
blank = st.sampled_from([" ", " ", " ", "  ", "\t", "\n", " /* c */ ", "/**/", "/***/", "/* * / */", "-- note\n",
                         "--\r"])


@st.composite
def operands(draw: Any, values: st.SearchStrategy[str] = literals) -> str:
    """A unaryExpr: a property or literal, maybe signed or parenthesised."""
    base = draw(values)
    prefix = draw(st.sampled_from(["", "", "", "", "-", "+", "- ", "- -", "-+"]))
    return f"({prefix}{base})" if draw(st.integers(0, 5)) == 5 else f"{prefix}{base}"


@st.composite
def predicates(draw: Any) -> str:
    """A comparison, mostly of a property with a literal (hypothesis's simplest choice comes first)."""
    sp = draw(blank)
    left, right = draw(operands(properties)), draw(operands())
    sides = draw(st.integers(0, 7))
    if sides == 5:
        left, right = right, left
    elif sides == 6:
        right = draw(operands(properties))
    elif sides == 7:
        left = draw(operands(st.one_of(properties, literals)))
    shape = draw(st.integers(0, 9))
    if shape <= 3:
        op = draw(st.sampled_from(["=", "<>", "<", ">", "<=", ">="]))
        return f"{left}{sp}{op}{draw(blank)}{right}"
    if shape == 4:
        between = draw(st.sampled_from(["BETWEEN", "NOT BETWEEN", "between", "not  between"]))
        return f"{left} {between} {right} AND {draw(operands())}"
    if shape == 5:
        in_ = draw(st.sampled_from(["IN", "NOT IN", "in", "not in"]))
        target = left if draw(st.integers(0, 7)) else right
        items = draw(st.lists(strings, min_size=1, max_size=6))
        return f"{target} {in_} ({', '.join(items)})"
    if shape == 6:
        return f"{left} {draw(st.sampled_from(['IS NULL', 'IS NOT NULL', 'is null', 'IS  NOT  NULL']))}"
    if shape == 7:
        return draw(properties)  # a property alone: a boolean cast
    if shape == 8:
        return draw(booleans)
    # Unparenthesised, as the grammar's precedence takes them: an equality of a comparison, IS NULL of one, two
    # relations in a row, NOT before a comparison (``NOT a = 1`` is ``(NOT a) = 1``)
    op = draw(st.sampled_from(["=", "<>", "<", ">=", "BETWEEN 1 AND", "IN ('1', 'x',"]))
    tail = ")" if op.startswith("IN") else ""
    return draw(st.sampled_from([
        f"{left}{sp}={sp}{right} {draw(st.sampled_from(['=', '<>']))} {draw(booleans)}",
        f"{left} {op} {right}{tail} {draw(st.sampled_from(['IS NULL', 'IS NOT NULL']))}",
        f"{left} < {right} {draw(st.sampled_from(['<', '>=', '=']))} {draw(operands())}",
        f"NOT {left} {op} {right}{tail}",
        f"{draw(booleans)} {draw(st.sampled_from(['=', '<>']))} {left} {op} {right}{tail}",
    ]))


def expressions(depth: int = 3) -> st.SearchStrategy[str]:
    if depth == 0:
        return predicates()
    sub = expressions(depth - 1)
    connectors = st.sampled_from([" AND ", " OR ", " and ", " or ", " AND NOT ", " OR NOT ", "\nOR\n"])
    chains = st.lists(st.tuples(connectors, sub), min_size=1, max_size=3)
    return st.one_of(
        predicates(),
        st.tuples(sub, chains).map(lambda t: t[0] + "".join(c + e for c, e in t[1])),
        st.tuples(sub, chains).map(lambda t: f"({t[0]})" + "".join(f"{c}({e})" for c, e in t[1])),
        sub.map(lambda e: f"({e})"),
        st.tuples(st.sampled_from(["NOT ", "not ", "NOT NOT "]), sub).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(st.sampled_from(["NOT ", "NOT NOT "]), sub).map(lambda t: t[0] + t[1]),
    )


# Text that makes an expression malformed; what is only trailing text after a complete expression is left out
# below (4.9.7 ignores it, pocketmq refuses: docs/compatibility.md, "SQL92 text after a complete expression")
BREAKERS = ["(", ")", "=", "AND", "OR", "NOT", "IN ()", "IN (1)", "BETWEEN 1", "IS", "IS NOT", "''", "'", "\"x\"",
            "==", "!=", "#", "a.b", "1 +", ",", "/*", "LIKE 'x'", "+ 1"]


@st.composite
def malformed(draw: Any) -> str:
    text = draw(expressions(2))
    at = draw(st.integers(0, len(text)))
    how = draw(st.integers(0, 2))
    if how == 0:
        return text[:at] + f" {draw(st.sampled_from(BREAKERS))} " + text[at:]
    if how == 1:
        return text[:at]
    return draw(st.sampled_from(WHOLE_MALFORMED))


# Whole expressions each refused by a check of its own (createBetween, checkEqualOperand, asBooleanExpression ...)
WHOLE_MALFORMED = ["", " ", "\t", "()", "NOT", "a =", "= 1", "a IN", "'x' IN ('x')", "1 IN ('1')", "-a IN ('1')",
                   "a BETWEEN 2 AND 1", "a BETWEEN 2 AND 1.5", "a BETWEEN NULL AND 1", "a = NULL", "NULL = a",
                   "TRUE = 1", "1 = TRUE", "'a' > 1", "a > 'x'", "TRUE > 1", "a > b > 1", "1", "'x'", "-a", "1.5",
                   "a BETWEEN 'x' AND 'y'", "NOT 1", "a AND 1", "NOT NOT a", "a = 1.7976931348623159E308",
                   "a = 0.0", "a = 1e-400", "a = 9223372036854775808", "/* a = 1", "a = 'x"]


def trailing_text_only(expression: str) -> bool:
    """Whether 4.9.7 reads a complete expression and ignores what follows, where pocketmq refuses it. JavaCC lexes
    a token at a time, as the parser asks: a character no token starts with is never seen after the token that
    ends 4.9.7's reading, where pocketmq's lexer finds it first."""
    try:
        tokenize(expression)
    except SqlParseError as e:
        return trailing_text_only(expression[:e.position])
    try:
        compile_sql92(expression)
    except SqlParseError as e:
        return e.reason.startswith("unexpected text after a complete expression")
    return False


# --- TAG expressions ---
tag_parts = st.sampled_from(["*", "TagA", "TagB", "TAGA", "Aa", "BB", "tag with spaces", "padded", " padded ",
                             "a", "b", "\u65e5\u672c", "x,y", "", " ", "NoSuch", "TagA|TagB"])
tag_expressions = st.lists(tag_parts, min_size=1, max_size=4).flatmap(
    lambda parts: st.lists(st.sampled_from(["||", " || ", "|| ", "||||"]), min_size=len(parts) - 1,
                           max_size=len(parts) - 1).map(
        lambda seps: parts[0] + "".join(s + p for s, p in zip(seps, parts[1:], strict=True))))

filters = st.one_of(
    st.tuples(st.just("SQL92"), expressions()), st.tuples(st.just("SQL92"), expressions()),
    st.tuples(st.just("SQL92"), expressions()), st.tuples(st.just("SQL92"), malformed()),
    st.tuples(st.just("TAG"), tag_expressions))


def walk(broker: str, expression_type: str, expression: str) -> dict[str, Any]:
    """The queue offsets a pull of the expression finds from offset 0 to the end of the queue (each pull from
    where the last one said to go on), or the refusal."""
    offset, found = 0, []
    for _ in range(CORPUS_SIZE + 1):
        answer = call(broker, pull(TOPIC, offset, 0, expression, expression_type, sys_flag=4, consumerGroup=GROUP),
                      5.0)
        if answer.code not in (C.SUCCESS, C.PULL_NOT_FOUND, C.PULL_RETRY_IMMEDIATELY):
            return {"code": answer.code, "remark": answer.remark}
        if answer.code == C.SUCCESS and answer.raw_body:
            found += [m.queue_offset for m in decode_all(answer.raw_body)]
        next_offset = int(answer.ext.get("nextBeginOffset", offset))
        if next_offset >= CORPUS_SIZE or next_offset <= offset:
            break
        offset = next_offset
    return {"offsets": sorted(found)}


PARSE_FAILED = {"code": C.SUBSCRIPTION_PARSE_FAILED, "remark": "parse the consumer's subscription failed"}


def same_refusal(pocket: dict[str, Any], apache: dict[str, Any]) -> bool:
    """The same code and 4.9.7's remark, which pocketmq's starts with (and may go on to say why)."""
    return "code" in apache and pocket.get("code") == apache["code"] and (pocket["remark"] or "").startswith(
        apache["remark"] or "")


def compiles(broker: str, expression: str) -> dict[str, Any]:
    """CHECK_CLIENT_CONFIG's answer of the expression: whether the broker compiles it."""
    body = {"clientId": f"fuzz{RUN}", "group": GROUP,
            "subscriptionData": {"topic": TOPIC, "subString": expression, "expressionType": "SQL92",
                                 "tagsSet": [], "codeSet": [], "subVersion": 0, "classFilterMode": False}}
    answer = call(broker, request(R.CHECK_CLIENT_CONFIG, None, json.dumps(body).encode()), 5.0)
    return {"code": answer.code}


@pytest.fixture(scope="module")
def servers(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with ThreadedCluster(tmp_path_factory.mktemp("fuzzfilters"), enable_property_filter=True) as pocket:
        sides = {"apache": apache_rocketmq.broker_addr, "pocketmq": pocket.broker_addr}
        for broker in sides.values():
            assert call(broker, create_topic(TOPIC, queues=1)).code == C.SUCCESS
            assert call(broker, create_group(GROUP)).code == C.SUCCESS
            for i, props in enumerate(corpus()):
                answer = call(broker, send_v2(TOPIC, f"m{i}".encode(), props=props))
                assert answer.code == C.SUCCESS and answer.ext["queueOffset"] == str(i), (broker, props, answer)
        for name, broker in sides.items():  # (a send is answered before its consume queue entry is written)
            for _ in range(200):
                if walk(broker, "TAG", "*") == {"offsets": list(range(CORPUS_SIZE))}:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError(f"{name} never listed the corpus")
        yield sides
    call(apache_rocketmq.broker_addr, request(R.DELETE_TOPIC_IN_BROKER, {"topic": TOPIC}))
    call(apache_rocketmq.namesrv_addr, request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": TOPIC}))


def test_the_corpus_gives_each_property_several_types() -> None:
    for name in NAMES:
        kinds = {kind(props.get(name)) for props in corpus()}
        assert len(kinds) >= 4, (name, kinds)
    assert len({props.get("TAGS") for props in corpus()}) >= 10


@settings(max_examples=EXAMPLES or 100, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(filters)
def test_same_messages_filtered_as_apache(servers: dict[str, str], drawn: tuple[str, str]) -> None:
    expression_type, expression = drawn
    if expression_type == "SQL92" and trailing_text_only(expression):
        return
    found = {name: walk(broker, expression_type, expression) for name, broker in servers.items()}
    if expression_type == "SQL92":
        verdicts = {name: compiles(broker, expression) for name, broker in servers.items()}
        assert verdicts["pocketmq"] == verdicts["apache"], (expression, verdicts, found)
        if verdicts["apache"]["code"] != C.SUCCESS:
            # docs/compatibility.md, "a pull whose own SQL92 subscription does not compile": 4.9.7 finds every
            # message (or refuses an empty expression), pocketmq refuses the pull
            assert found["apache"] in ({"offsets": list(range(CORPUS_SIZE))}, PARSE_FAILED), (expression, found)
            if found["apache"] == PARSE_FAILED:
                assert same_refusal(found["pocketmq"], PARSE_FAILED), (expression, found)
            assert found["pocketmq"].get("code") == C.SUBSCRIPTION_PARSE_FAILED, (expression, found)
            return
    assert found["pocketmq"] == found["apache"] or same_refusal(found["pocketmq"], found["apache"]), (
        expression_type, expression, found)
