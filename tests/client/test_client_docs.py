"""Every Python block of docs/client.md is true: the examples run as written against a real cluster (the address
swapped in), the fragment runs as the body of an async function, and the signatures are the code's own (names,
order, keyword-only marks and the literal defaults, read with inspect)."""

from __future__ import annotations

import ast
import asyncio
import enum
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from pocketmq import client, embedded

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"
DOC_ADDR = "127.0.0.1:9876"


FRAGMENT_ADDR = "rocketmq-namesrv:9876"
# A signature line: `[await ]Name(params)[ -> result]`, several on one line joined by " / ".
SIGNATURE = re.compile(r"^(?:await )?([\w.]+)\((.*)\)(?:\s*->\s*[\w.\[\]]+)?$", re.S)


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def runnable_examples() -> list[str]:
    return [b for b in python_blocks() if DOC_ADDR in b]


def fragments() -> list[str]:
    return [b for b in python_blocks() if FRAGMENT_ADDR in b]


def signatures() -> list[str]:
    """The blocks that show how to call something rather than a program: one call per line (or per " / ")."""
    return [b for b in python_blocks() if b not in runnable_examples() and b not in fragments()]


def signature_calls(block: str) -> list[tuple[str, str]]:
    """(callable, parameter text) of each call a signature block shows; its lines continue inside parentheses."""
    calls, text = [], ""
    for line in block.splitlines():
        text = f"{text} {line.strip()}" if text else line.strip()
        if text.count("(") == text.count(")"):
            for one in text.split(" / "):
                match = SIGNATURE.match(one.strip())
                assert match, one
                calls.append((match.group(1), match.group(2)))
            text = ""
    assert not text, text
    return calls


def documented_parameters(text: str) -> list[tuple[str, str | None]]:
    """("name", "default text" or None) of each parameter; "*" and "**name" as they stand."""
    out, depth, current = [], 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            name, _, default = current.strip().partition("=")
            out.append((name.strip(), default.strip() or None))
            current = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        current += ch
    return out


def actual_parameters(target: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for p in inspect.signature(target).parameters.values():
        if p.name == "self":
            continue
        if p.kind is p.KEYWORD_ONLY and not any(n == "*" for n, _ in out):
            out.append(("*", None))
        out.append((("**" if p.kind is p.VAR_KEYWORD else "") + p.name, p.default))
    return out


def resolve(name: str) -> Any:
    """`Producer` -> Producer.__init__; `producer.request` -> Producer.request (an instance named for its class)."""
    owner, _, attr = name.partition(".")
    cls = getattr(client, owner[0].upper() + owner[1:])
    return getattr(cls, attr) if attr else cls.__init__


def test_the_doc_has_runnable_examples() -> None:
    assert len(runnable_examples()) == 8
    assert len(fragments()) == 1
    # Whatever is neither is a signature block: every line of it parses as calls (checked below).
    assert sum(len(signature_calls(b)) for b in signatures()) == 9


@pytest.mark.parametrize("index", range(6))
def test_doc_signature_is_the_codes(index: int) -> None:
    for name, text in signature_calls(signatures()[index]):
        actual = actual_parameters(resolve(name))
        documented = documented_parameters(text)
        assert [n for n, _ in documented] == [n for n, _ in actual], name
        for (param, shown), (_, default) in zip(documented, actual, strict=True):
            if shown is None or default is inspect.Parameter.empty:
                assert shown is None or default is not inspect.Parameter.empty, (name, param)
                continue
            try:
                literal = ast.literal_eval(shown)
            except (ValueError, SyntaxError):  # a name (DEFAULT_RETRY_RESPONSE_CODES) or a size ("4 MiB")
                if shown.endswith(" MiB"):
                    assert default == int(shown[:-4]) << 20, (name, param)
                else:
                    # a constant of the module that defines the callable
                    assert vars(inspect.getmodule(resolve(name)))[shown] == default, (name, param)
                continue
            assert (default.value if isinstance(default, enum.Enum) else default) == literal, (name, param)


def test_doc_fragment_runs_as_the_body_of_an_async_function(tmp_path: Any) -> None:
    """`protocol="rocketmq"` against pocketmq's own broker, which answers RocketMQ's native frames too."""
    [fragment] = fragments()
    with embedded.ThreadedCluster(tmp_path) as cluster:
        code = compile(fragment.replace(FRAGMENT_ADDR, cluster.namesrv_addr), "client.md fragment", "exec",
                       flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        asyncio.run(eval(code, {"Producer": client.Producer, "Message": client.Message}))
        with client.SyncPullConsumer("doc-fragment", cluster.namesrv_addr) as consumer:
            [mq] = [q for q in consumer.fetch_subscribe_message_queues("TopicTest")
                    if consumer.max_offset(q) > 0]
            assert consumer.pull(mq, "*", 0, 32).msg_found_list[0].body == b"hello"


@pytest.mark.parametrize("index", range(8))
def test_doc_example_runs(index: int, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code = runnable_examples()[index]
    with embedded.ThreadedCluster(tmp_path) as cluster:
        exec(compile(code.replace(DOC_ADDR, cluster.namesrv_addr), f"client.md example {index}", "exec"), {})
    out = capsys.readouterr().out
    if index == 0:
        assert "SendStatus.SEND_OK" in out
        assert "created ['o-1'] b'order 1'" in out
    if index == 2:  # the lite pull consumer
        assert "[b'payment 0', b'payment 1', b'payment 2']" in out
    if index == 3:  # the push consumer
        assert "[b'order 0', b'order 1', b'order 2']" in out
    if index == 4:  # the simple consumer
        assert "[b'order 0', b'order 1', b'order 2']" in out
    if index == 5:  # request-reply
        assert "b'price of apples: 42'" in out
    if index == 6:  # message trace
        assert "['Pub', 'SubAfter', 'SubBefore']" in out
    if index == 7:  # the transactional producer
        assert "SendStatus.SEND_OK LocalTransactionState.COMMIT_MESSAGE" in out
        assert "[b'order 7 paid']" in out
