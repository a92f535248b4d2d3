"""The layer rules of docs/architecture.md, read from the code's own imports.

Every ``import`` and ``from ... import`` anywhere in a module counts (inside functions and ``TYPE_CHECKING``
blocks too), relative imports resolved: a rule about what a layer may know holds for the source text, not
only for what one code path happens to load. What a process actually loads is tested by looking at
``sys.modules`` in tests/test_import_boundaries.py.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = ("pocketmq", "pyspark_pocketmq")

# A module's layer: the pocketmq sub-package it sits in; pocketmq's own modules are the composition.
LAYERS = ("common", "storage", "remoting", "namesrv", "broker", "client", "proxy", "composition", "spark")
IO = frozenset({"asyncio", "socket", "selectors", "ssl", "uvloop"})
# remoting's thin asyncio shell; every other remoting module (codecs, headers, bodies, framing, the spin policy,
# access control's acl package, and any module added later) is the sans-IO core: bytes in, commands out, in the
# style of h11.
REMOTING_SHELL = frozenset(
    f"pocketmq.remoting.{name}"
    for name in ("channel", "local_channel", "transport", "server", "client", "busy_poll", "tasks", "event_loop")
)


@dataclass(frozen=True)
class Rule:
    forbidden_layers: frozenset[str]
    forbidden_modules: frozenset[str] = frozenset()


RULES: Mapping[str, Rule] = {
    "common": Rule(frozenset({"storage", "remoting", "namesrv", "broker", "client", "proxy", "composition", "spark"}),
                   IO),
    "storage": Rule(frozenset({"remoting", "namesrv", "broker", "client", "proxy", "composition", "spark"}), IO),
    "remoting": Rule(frozenset({"storage", "namesrv", "broker", "client", "proxy", "composition", "spark"})),
    "namesrv": Rule(frozenset({"storage", "broker", "client", "proxy", "composition", "spark"})),
    "broker": Rule(frozenset({"namesrv", "client", "proxy", "composition", "spark"})),
    "client": Rule(frozenset({"storage", "namesrv", "broker", "proxy", "composition", "spark"})),
    # RocketMQ 5's gRPC endpoint: the broker's and name server's own requests through remoting and the client's
    # remoting API, as RocketMQ's proxy in cluster mode; never a broker, name server or store of its own.
    "proxy": Rule(frozenset({"storage", "namesrv", "broker", "composition", "spark"})),
    "composition": Rule(frozenset({"spark"})),
    # What Spark's Python workers import: the client alone (its tests start clusters through pocketmq.embedded).
    "spark": Rule(frozenset({"storage", "namesrv", "broker", "proxy", "composition"})),
}
SANS_IO_CORE = Rule(frozenset(), IO)


def in_remoting_core(module: str) -> bool:
    return layer_of(module) == "remoting" and module not in REMOTING_SHELL


def layer_of(module: str) -> str | None:
    """The layer of a pocketmq or pyspark_pocketmq module, None for anything else (stdlib, third party)."""
    parts = module.split(".")
    if parts[0] == "pyspark_pocketmq":
        return "spark"
    if parts[0] != "pocketmq":
        return None
    if len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return "composition"


def imports_of(source: str, module: str, is_package: bool) -> set[str]:
    """The absolute names a module's source imports. ``from a import b`` gives ``a.b`` when that may be a
    module and ``a`` as well, so a rule on either catches it."""
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if node.module is not None or not node.level:
                names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def project_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """Module name → the names it imports, for every module of the two top-level packages."""
    result = {}
    for top in TOP_LEVEL:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            is_package = rel.name == "__init__"
            module = ".".join(rel.parent.parts if is_package else rel.parts)
            result[module] = imports_of(path.read_text(encoding="utf-8"), module, is_package)
    return result


def _matches(name: str, prefixes: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def find_cycle(edges: Mapping[str, set[str]]) -> list[str] | None:
    """One cycle of a directed graph as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def check_layers(imports: Mapping[str, set[str]]) -> list[str]:
    """Every broken rule, one line each: the importing module, what it imports, and which rule says no."""
    violations = []
    edges: dict[str, set[str]] = {}
    for module, names in sorted(imports.items()):
        layer = layer_of(module)
        if layer is None:
            continue
        rules = [("layer " + layer, RULES[layer])]
        if in_remoting_core(module):
            rules.append(("remoting's sans-IO core", SANS_IO_CORE))
        for name in sorted(names):
            target = layer_of(name)
            if target is not None and target != layer:
                edges.setdefault(layer, set()).add(target)
            for label, rule in rules:
                if target in rule.forbidden_layers or _matches(name, rule.forbidden_modules):
                    violations.append(f"{module} imports {name} ({label} must not)")
    cycle = find_cycle(edges)
    if cycle:
        violations.append("import cycle between layers: " + " -> ".join(cycle))
    return violations


def test_the_code_keeps_the_layer_rules():
    imports = project_imports()
    assert len(imports) > 100  # the walk found the code
    assert check_layers(imports) == []


def test_the_asyncio_shell_modules_exist_and_the_core_is_the_rest():
    # A renamed shell module would be held to the sans-IO rule (and fail it loudly); a stale name here would
    # hide that the list no longer says which modules may touch asyncio.
    for module in REMOTING_SHELL:
        assert (ROOT / module.replace(".", "/")).with_suffix(".py").is_file(), module
    core = {m for m in project_imports() if in_remoting_core(m)}
    assert {"pocketmq.remoting.codec", "pocketmq.remoting.framing", "pocketmq.remoting.acl.signer"} <= core


def test_a_synthetic_violation_of_each_rule_is_reported():
    imports = {
        "pocketmq.storage.fake": {"asyncio", "pocketmq.common.codec"},
        "pocketmq.common.fake": {"pocketmq.storage.commit_log"},
        "pocketmq.client.fake": {"pocketmq.broker.broker_controller"},
        "pocketmq.remoting.codec": {"socket"},
        "pocketmq.remoting.channel": {"asyncio"},  # the shell may
        "pocketmq.proxy.fake": {"pocketmq.storage.commit_log", "pocketmq.client.mq_client_api"},
        "pyspark_pocketmq.fake": {"pocketmq.embedded", "pocketmq.client"},
    }
    assert check_layers(imports) == [
        "pocketmq.client.fake imports pocketmq.broker.broker_controller (layer client must not)",
        "pocketmq.common.fake imports pocketmq.storage.commit_log (layer common must not)",
        "pocketmq.proxy.fake imports pocketmq.storage.commit_log (layer proxy must not)",
        "pocketmq.remoting.codec imports socket (remoting's sans-IO core must not)",
        "pocketmq.storage.fake imports asyncio (layer storage must not)",
        "pyspark_pocketmq.fake imports pocketmq.embedded (layer spark must not)",
        "import cycle between layers: common -> storage -> common",
    ]


def test_find_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}}) is None


def test_imports_are_read_everywhere_and_relative_ones_resolved():
    source = """
import asyncio.events
from . import sibling
from .. import storage
from ..broker.x import y
from ...outside import z

def later():
    from pocketmq.namesrv import processor

if False:
    import socket
"""
    names = imports_of(source, "pocketmq.client.mod", is_package=False)
    assert {"asyncio.events", "pocketmq.client.sibling", "pocketmq.storage", "pocketmq.broker.x"} <= names
    assert {"pocketmq.namesrv.processor", "socket", "outside.z"} <= names
    # A package's own relative imports start at the package itself.
    assert imports_of("from .codec import x", "pocketmq.common", is_package=True) >= {"pocketmq.common.codec"}
