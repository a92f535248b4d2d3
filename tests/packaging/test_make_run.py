"""`make run` on a machine without a C compiler (README: "without them pip installs pure Python, which behaves the
same ... `make run` needs nothing else"): the Makefile's run target warns that the accelerators did not build and
starts the pure Python, where it used to stop at the build's import check.

The repository's Makefile runs in a copy of the sources with ``CC=false`` (every compile fails). The copy's
virtualenv stands in for the one `make` creates (pip would take minutes): its ``python`` is this interpreter, its
``pocketmq`` starts ``pocketmq dev`` from the copy on free ports, and its stamp is newer than pyproject.toml, so
`make` goes straight to the accelerators and the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from pocketmq.client import Message, SyncProducer
from pocketmq.client.message import SendStatus

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pocketmq", "pyspark_pocketmq")


def _copy(dest: Path) -> None:
    for name in ("Makefile", "setup.py", "pyproject.toml", "README.md", "LICENSE", "NOTICE"):
        shutil.copy(ROOT / name, dest / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    bin_dir = dest / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "pocketmq").write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -m pocketmq "$@" --namesrv-port 0 --broker-port 0 --no-console '
        "--no-grpc\n")
    for script in bin_dir.iterdir():
        script.chmod(0o755)
    (dest / ".venv" / ".installed").touch()  # (after the copies: newer than pyproject.toml and setup.py)


def test_make_run_without_a_c_compiler_runs_the_pure_python(tmp_path: Path) -> None:
    _copy(tmp_path)
    # (an outer make's flags would reach this one; POCKETMQ_NO_EXTENSIONS would hide what the build did)
    drop = ("PYTHONPATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "POCKETMQ_NO_EXTENSIONS")
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"CC": "false"}
    proc = subprocess.Popen(["make", "run"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C stops it cleanly" in line:
                break
        out = "".join(lines)
        assert "Ctrl-C stops it cleanly" in out, out
        assert ("make run: warning: the C accelerators did not build (see .venv/build-speedups.log); running the "
                "pure Python: the same behaviour, slower") in out
        assert not list(tmp_path.glob("pocketmq/*/_speedups*.so"))
        namesrv = next(line for line in lines if line.startswith("pocketmq dev: name server ")).split()[4].rstrip(",")
        with SyncProducer("make-run-producer", namesrv) as producer:
            assert producer.send(Message("MakeRun", b"pure")).send_status is SendStatus.SEND_OK
    finally:
        with contextlib.suppress(ProcessLookupError):  # (Ctrl-C: make and pocketmq dev, one process group)
            os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
    assert "pocketmq dev: shutting down" in rest
    assert "ModuleNotFoundError" in (tmp_path / ".venv" / "build-speedups.log").read_text()
