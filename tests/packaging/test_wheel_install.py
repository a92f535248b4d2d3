"""pocketmq as a user meets it: the wheel installed into a fresh virtualenv, beside a project of their own.

The user's project has its own ``storage``, ``client`` and ``broker`` packages, the generic names pocketmq
must not take, and tests of its own besides one that uses the ``pocketmq_cluster`` fixture. Both ways of
starting pytest are run: ``python -m pytest`` puts the project's folder first on ``sys.path`` (where a
top-level ``storage`` of pocketmq's would have broken the plugin's imports), the ``pytest`` script does not
(where it would have shadowed the user's package).

One virtualenv per session: building the wheel and installing it with its dependencies takes a few
seconds with pip's cache (pip fetches from the package index what the cache lacks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 600  # seconds; a cold pip cache downloads pytest, msgpack, uvloop, aiofiles, setuptools
RUN_TIMEOUT = 120

USER_FILES = {
    "storage/__init__.py": "from .constants import PREFIX\n\n\ndef save(name):\n    return PREFIX + name\n",
    "storage/constants.py": 'PREFIX = "saved:"\n',
    "client/__init__.py": 'def connect():\n    return "the user\'s client"\n',
    "broker/__init__.py": 'NAME = "the user\'s broker"\n',
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "tests/__init__.py": "",
    "tests/test_own.py": """
        from pathlib import Path

        import broker
        import client
        import storage

        HERE = Path(__file__).resolve().parent.parent


        def test_storage_is_the_users():
            assert storage.save("x") == "saved:x"
            assert Path(storage.__file__).resolve().parent == HERE / "storage"


        def test_client_and_broker_are_the_users():
            assert client.connect() == "the user's client"
            assert broker.NAME == "the user's broker"
        """,
    "tests/test_with_pocketmq.py": """
        import sys
        from pathlib import Path

        import pocketmq
        from pocketmq.client import Message, SyncProducer, SyncPullConsumer
        from pocketmq.client.message import PullStatus


        def test_pocketmq_comes_from_the_wheel():
            assert Path(pocketmq.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())


        def test_the_c_accelerators_come_from_the_wheel():
            import os

            from pocketmq.common.speedups import speedups as common_speedups
            from pocketmq.remoting.speedups import speedups as remoting_speedups
            from pocketmq.storage.speedups import speedups as storage_speedups

            for speedups in (common_speedups, remoting_speedups, storage_speedups):
                if os.environ.get("POCKETMQ_NO_EXTENSIONS") == "1":
                    assert speedups is None
                else:
                    assert Path(speedups.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())


        def test_send_and_pull_with_the_fixture(pocketmq_cluster):
            with SyncProducer("user-producer", pocketmq_cluster.namesrv_addr) as producer:
                sent = producer.send(Message("UserTopic", b"hello from the user"))
            assert pocketmq_cluster.wait_dispatched()
            with SyncPullConsumer("user-consumer", pocketmq_cluster.namesrv_addr) as consumer:
                result = consumer.pull(sent.message_queue, "*", sent.queue_offset)
            assert result.pull_status is PullStatus.FOUND
            assert [m.body for m in result.msg_found_list] == [b"hello from the user"]
        """,
}
USER_TESTS = [
    "tests/test_own.py::test_storage_is_the_users",
    "tests/test_own.py::test_client_and_broker_are_the_users",
    "tests/test_with_pocketmq.py::test_pocketmq_comes_from_the_wheel",
    "tests/test_with_pocketmq.py::test_the_c_accelerators_come_from_the_wheel",
    "tests/test_with_pocketmq.py::test_send_and_pull_with_the_fixture",
]


def clean_env() -> dict[str, str]:
    """This suite's environment without what would point the user's interpreter at the repository."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_XDIST_WORKER")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources.
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "NOTICE"):
        shutil.copy(ROOT / name, src / name)
    for package in ("pocketmq", "pyspark_pocketmq"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(src)], src, INSTALL_TIMEOUT)
    (built,) = dist.glob("pocketmq-*.whl")
    return built


@pytest.fixture(scope="module")
def user_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv")
    # Installed by this suite's pip (--python): the venv's own, bundled by ensurepip, is older and took three
    # times as long; and not byte-compiled ahead (--no-compile: the modules a test imports are compiled as it
    # imports them), which took half of what was left.
    venv.create(env_dir, with_pip=False, clear=True)
    python = env_dir / "bin" / "python"
    run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-compile", str(wheel),
         "pytest", "pytest-asyncio"],
        env_dir,
        INSTALL_TIMEOUT,
    )
    return env_dir


@pytest.fixture(scope="module")
def user_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("user_project")
    for name, text in USER_FILES.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return project


def test_the_wheel_holds_one_namespace_types_and_license(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"pocketmq", "pyspark_pocketmq"}
    assert {"pocketmq/py.typed", "pyspark_pocketmq/py.typed"} <= set(names)
    licenses = {name.rsplit("/", 1)[-1] for name in names if ".dist-info/licenses/" in name}
    assert licenses == {"LICENSE", "NOTICE"}
    # The C accelerators, compiled by the wheel's build (the copy holds no built one), and its type stub.
    for package in ("common", "remoting", "storage"):
        assert [n for n in names if n.startswith(f"pocketmq/{package}/_speedups.") and n.endswith(".so")], names
        assert f"pocketmq/{package}/_speedups.pyi" in names


@pytest.mark.parametrize("command", [["python", "-m", "pytest"], ["pytest"]], ids=["python -m pytest", "pytest"])
def test_the_users_tests_and_the_fixture_pass(user_venv: Path, user_project: Path, command: list[str]):
    exe = [str(user_venv / "bin" / command[0]), *command[1:]]
    proc = run([*exe, "-v", "-p", "no:cacheprovider"], user_project, RUN_TIMEOUT)
    passed = {line.split(" PASSED")[0] for line in proc.stdout.splitlines() if " PASSED" in line}
    assert passed == set(USER_TESTS), proc.stdout
    assert f"{len(USER_TESTS)} passed" in proc.stdout
