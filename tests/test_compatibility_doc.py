"""docs/compatibility.md is written from the suite: each row's status is proven by the tests it names.

A row is ``| feature | status | proof |``. The proofs are test ids (``path::function``, or
``path::Class::method``); this test fails when

- a status is not one of STATUSES, or a row that claims behaviour names no proof;
- a named test does not exist (renamed or deleted: the row no longer has a proof);
- a row claims "same as Apache" and its test never starts Apache RocketMQ (it must run the same scenario against
  both servers; the test's signature or body names one of the Apache fixtures, ApacheRocketMQ or ApacheNamesrv, or a
  fixture of its module or of its folder's conftest.py that starts one);
- a test module of the parity folders is named by no row (a proof that the table does not show).

The named tests run in the same `make test`: a row whose proof fails fails the run.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "compatibility.md"
STATUSES = {"same as Apache", "tested", "differs", "not supported"}
# Where the tests that prove the table live: every test module here must be named by a row.
PARITY_DIRS = ("tests/apache", "tests/native_clients", "tests/java_client", "tests/java_sdk")
APACHE_MARKERS = ("apache_rocketmq", "ApacheRocketMQ", "ApacheNamesrv", "apache_server", "both_servers")
ROW = re.compile(r"^\|(?P<feature>[^|]+)\|(?P<status>[^|]+)\|(?P<proof>[^|]*)\|\s*$")
PROOF = re.compile(r"`([^`]+::[^`]+)`")


def rows() -> list[tuple[str, str, list[str]]]:
    out = []
    in_table = False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = ROW.match(line)
        if not m:
            in_table = False
            continue
        feature, status, proof = (m.group(g).strip() for g in ("feature", "status", "proof"))
        if feature == "feature" and status == "status":
            in_table = True
            continue
        if in_table and not set(feature) <= set("-: "):
            out.append((feature, status, PROOF.findall(proof)))
    return out


@cache
def definitions(path: str) -> dict[str, ast.AST]:
    """``name`` and ``Class::name`` of every function and class defined at a module's top two levels."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}::{inner.name}"] = inner
    return found


def resolve(test_id: str) -> ast.AST | None:
    path, _, name = test_id.partition("::")
    if not (ROOT / path).is_file():
        return None
    return definitions(path).get(name.split("[")[0])


def test_the_table_has_rows() -> None:
    assert len(rows()) >= 10


def test_every_status_is_known_and_every_claim_has_a_proof() -> None:
    bad = [(f, s) for f, s, _ in rows() if s not in STATUSES]
    assert not bad, f"unknown statuses (use one of {sorted(STATUSES)}): {bad}"
    unproven = [f for f, s, proofs in rows() if s != "not supported" and not proofs]
    assert not unproven, f"rows with no test named: {unproven}"


def test_every_named_test_exists() -> None:
    missing = sorted({p for _, _, proofs in rows() for p in proofs if resolve(p) is None})
    assert not missing, f"docs/compatibility.md names tests that do not exist: {missing}"


def test_same_as_apache_rows_run_against_apache_rocketmq() -> None:
    def starts_apache(test_id: str) -> bool:
        node = resolve(test_id)
        path = test_id.partition("::")[0]
        text = ast.unparse(node) if node is not None else ""
        module = (ROOT / path).read_text(encoding="utf-8")
        # A package whose modules share their servers has the fixtures in its conftest.py.
        conftest = ROOT / path.rpartition("/")[0] / "conftest.py"
        if conftest.is_file():
            module += conftest.read_text(encoding="utf-8")
        # A fixture of the module that parametrizes over both servers counts: the test names it.
        return any(m in text for m in APACHE_MARKERS) or (
            "apache" in module and any(f"def {m}" in module and m in text for m in _fixture_names(module))
        )

    wrong = [p for _, s, proofs in rows() if s == "same as Apache" for p in proofs if not starts_apache(p)]
    assert not wrong, f"'same as Apache' rows whose tests never start Apache RocketMQ: {wrong}"


def _fixture_names(module: str) -> list[str]:
    return re.findall(r"@pytest\.fixture[^\n]*\n(?:@[^\n]*\n)*(?:async )?def (\w+)", module)


def test_every_parity_module_is_in_the_table() -> None:
    named = {p.partition("::")[0] for _, _, proofs in rows() for p in proofs}
    modules = {
        str(path.relative_to(ROOT))
        for d in PARITY_DIRS
        for path in (ROOT / d).rglob("test_*.py")
    }
    left_out = sorted(modules - named)
    assert not left_out, f"parity test modules docs/compatibility.md does not name: {left_out}"
