"""RocketMQ's common, once (issue 31): each of its names and rules is declared in one module of pocketmq.common,
and every layer imports it from there.

Read with ``ast``, as tests/test_architecture.py reads imports. A "declaration" is a module-level assignment of a
string literal to a name (``RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"``, a dataclass field's default aside); two
modules declaring the same value is two places to keep in step, which is how ``"%RETRY%"`` came to be spelled in
six. Single characters are left out: separators such as ``"@"`` or ``"\\x01"`` mean different things in different
formats (RocketMQ declares them per class too).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pocketmq", "pyspark_pocketmq")
COMMON = "pocketmq/common/"


@cache
def _modules() -> tuple[tuple[str, ast.Module], ...]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not path.name.endswith("_pb2.py"):
                out.append((rel, ast.parse(path.read_text(encoding="utf-8"))))
    return tuple(out)


def _declared_strings(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            pairs = (zip(target.elts, value.elts, strict=False)
                     if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) else [(target, value)])
            for name, val in pairs:
                if isinstance(name, ast.Name) and isinstance(val, ast.Constant) and isinstance(val.value, str):
                    yield name.id, val.value, node.lineno


@cache
def declarations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for rel, tree in _modules():
        for name, value, line in _declared_strings(tree):
            if len(value) > 1 and name.lstrip("_").isupper():
                found[value].append(f"{rel}:{line} {name}")
    return found


def test_no_string_constant_is_declared_in_two_modules():
    twice = {value: where for value, where in declarations().items() if len({w.split(":")[0] for w in where}) > 1}
    assert twice == {}, "declare it once (RocketMQ's names in pocketmq/common/) and import it"


def test_rocketmq_names_are_spelled_only_in_common():
    """MixAll's and TopicValidator's names (the retry and DLQ prefixes, the system topics and groups) are not
    written out as literals anywhere but pocketmq/common: a startswith("%RETRY%") elsewhere is the rule again."""
    names = {value for value, where in declarations().items()
             if all(w.startswith((COMMON + "mix_all.py", COMMON + "topic_validator.py")) for w in where)}
    assert {"%RETRY%", "%DLQ%", "TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRACE_TOPIC"} <= names
    spelled = []
    for rel, tree in _modules():
        if rel.startswith(COMMON):
            continue
        exported = {id(n) for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                    for n in ast.walk(node.value)}  # (a name in __all__ is a name, not the value)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
                    and id(node) not in exported):
                spelled.append(f"{rel}:{node.lineno} {node.value!r}")
    assert spelled == [], "import the name from pocketmq.common.mix_all / topic_validator"


def test_the_check_sees_a_second_declaration():
    tree = ast.parse('A = "x%RETRY%"\n_B: str = "TAG"\nC, D = "TBW102", 4\nlower = "not a constant"\n')
    assert list(_declared_strings(tree)) == [("A", "x%RETRY%", 1), ("_B", "TAG", 2), ("C", "TBW102", 3),
                                              ("lower", "not a constant", 4)]
