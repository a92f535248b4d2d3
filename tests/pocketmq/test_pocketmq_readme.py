"""The README's examples run as printed (only the name-server address is swapped for the test cluster's)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_python_example_sends_and_consumes(pocketmq_cluster, tmp_path):
    example = next(b for b in python_blocks() if "asyncio.run(main())" in b)
    script = tmp_path / "example.py"
    script.write_text(example.replace("127.0.0.1:9876", pocketmq_cluster.namesrv_addr))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "[('created', ['o-1'], b'order 1')]" in proc.stdout


def test_readme_push_consumer_example_consumes_what_the_first_example_sent(pocketmq_cluster, tmp_path):
    blocks = python_blocks()
    send = next(b for b in blocks if "asyncio.run(main())" in b)
    push = next(b for b in blocks if "PushConsumer" in b)
    for name, code in (("send.py", send), ("push.py", push)):
        (tmp_path / name).write_text(code.replace("127.0.0.1:9876", pocketmq_cluster.namesrv_addr))
    for name in ("send.py", "push.py"):
        proc = subprocess.run([sys.executable, str(tmp_path / name)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    assert "[('created', b'order 1')]" in proc.stdout


def test_readme_fixture_example_passes_in_a_user_project(tmp_path):
    example = next(b for b in python_blocks() if "def test_" in b)
    (tmp_path / "test_readme_user.py").write_text(example)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_cli_reports_an_unreachable_name_server_in_one_line():
    proc = subprocess.run([sys.executable, "-m", "pocketmq", "send", "-n", "127.0.0.1:1", "-t", "T", "-p", "x"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "pocketmq send:" in proc.stderr


def test_readme_lite_pull_example_polls_what_the_first_example_sent(pocketmq_cluster, tmp_path):
    blocks = python_blocks()
    send = next(b for b in blocks if "asyncio.run(main())" in b)
    lite = next(b for b in blocks if "LitePullConsumer" in b)
    for name, code in (("send.py", send), ("lite.py", lite)):
        (tmp_path / name).write_text(code.replace("127.0.0.1:9876", pocketmq_cluster.namesrv_addr))
    for name in ("send.py", "lite.py"):
        proc = subprocess.run([sys.executable, str(tmp_path / name)], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    assert "b'order 1'" in proc.stdout
