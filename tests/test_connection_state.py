"""A connection's state has one owner, remoting/channel.py's Channel (issue 31), read from the source with ``ast``
as tests/test_architecture.py reads imports.

The transport and the server tell a Channel what happened through its events (read_began / read_ended,
request_started / request_finished, ...) and ask it through read-only questions (idle_for, partial_frame_age, ...):
no module but channel.py reads or writes a private member of a Channel. And remoting's modules import one another
without a cycle (TYPE_CHECKING imports included: channel.py names its endpoint by a Protocol of its own).
"""

from __future__ import annotations

import ast

from tests.test_architecture import ROOT, TOP_LEVEL, find_cycle, project_imports

CHANNEL = ROOT / "pocketmq" / "remoting" / "channel.py"


def channel_private_members() -> set[str]:
    """The private attributes (its __slots__) and private methods of Channel."""
    tree = ast.parse(CHANNEL.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Channel"]
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__slots__" for t in node.targets):
            names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))  # type: ignore[attr-defined]
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def touches(source: str, private: set[str]) -> list[str]:
    """``x._member`` for a private member of Channel, on anything but ``self``/``cls``, with its line."""
    return [f"{node.lineno}: {ast.unparse(node)}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr in private
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def test_only_channel_py_touches_a_channels_private_members():
    private = channel_private_members()
    assert {"_activity", "_partial_since", "_unstarted", "_write_paused", "_flush"} <= private  # the walk found them
    found = {}
    for top in TOP_LEVEL:
        for path in sorted((ROOT / top).rglob("*.py")):
            if path != CHANNEL and (hits := touches(path.read_text(encoding="utf-8"), private)):
                found[path.relative_to(ROOT).as_posix()] = hits
    assert found == {}


def test_a_touch_from_outside_is_found():
    source = "def scan(ch):\n    ch._activity += 1\n    self._activity = 0\n    return ch.idle_for(0.0)\n"
    assert touches(source, {"_activity"}) == ["2: ch._activity"]


def test_remoting_modules_import_one_another_without_a_cycle():
    imports = project_imports()
    remoting = {m for m in imports if m.startswith("pocketmq.remoting.")}
    assert "pocketmq.remoting.channel" in remoting and "pocketmq.remoting.transport" in remoting
    edges = {m: {n for n in imports[m] if n in remoting and n != m} for m in remoting}
    assert find_cycle(edges) is None
