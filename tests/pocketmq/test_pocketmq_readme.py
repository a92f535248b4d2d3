"""Every Python block of the README runs as printed (only the addresses swapped for the test cluster's); the Spark
one runs in tests/spark/test_spark_session.py, beside the one Spark session of the suite."""

from __future__ import annotations

import asyncio
import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
NAMESRV = "127.0.0.1:9876"
GRPC = "127.0.0.1:8081"
# A word each block has and no other block has: the block's name for the tests below.
PUSH = 'PushConsumer("order-handlers"'
SDK5 = "from rocketmq import ClientConfiguration"
MARKERS = ("my-producers", "LitePullConsumer", PUSH, "price-repliers", "payment-service", "traced-producers", SDK5,
           "def test_order_is_published", "local_session")


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def block(marker: str) -> str:
    found = [b for b in python_blocks() if marker in b]
    assert len(found) == 1, (marker, len(found))
    return found[0]


def run_script(code: str, tmp_path: pathlib.Path, name: str, cluster) -> str:
    script = tmp_path / name
    script.write_text(code.replace(NAMESRV, cluster.namesrv_addr))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_every_python_block_is_one_of_the_tested_ones():
    blocks = python_blocks()
    assert [sum(m in b for m in MARKERS) for b in blocks] == [1] * len(blocks)
    assert len(blocks) == len(MARKERS)


def test_readme_python_example_sends_and_consumes(pocketmq_cluster, tmp_path):
    out = run_script(block("my-producers"), tmp_path, "example.py", pocketmq_cluster)
    assert "[('created', ['o-1'], b'order 1')]" in out


def test_readme_push_consumer_example_consumes_what_the_first_example_sent(pocketmq_cluster, tmp_path):
    run_script(block("my-producers"), tmp_path, "send.py", pocketmq_cluster)
    out = run_script(block(PUSH), tmp_path, "push.py", pocketmq_cluster)
    assert "[('created', b'order 1')]" in out


def test_readme_lite_pull_example_polls_what_the_first_example_sent(pocketmq_cluster, tmp_path):
    run_script(block("my-producers"), tmp_path, "send.py", pocketmq_cluster)
    out = run_script(block("LitePullConsumer"), tmp_path, "lite.py", pocketmq_cluster)
    assert "b'order 1'" in out


def test_readme_request_reply_example_gets_the_answer(pocketmq_cluster, tmp_path):
    out = run_script(block("price-repliers"), tmp_path, "request.py", pocketmq_cluster)
    assert out.strip() == "b'42'"


def test_readme_transaction_example_commits(pocketmq_cluster, tmp_path):
    out = run_script(block("payment-service"), tmp_path, "transaction.py", pocketmq_cluster)
    assert out.strip() == "SendStatus.SEND_OK LocalTransactionState.COMMIT_MESSAGE"


def test_readme_trace_example_sends_a_traced_message(pocketmq_cluster, tmp_path):
    """The example prints its message's id; its trace is then looked up as its comment says (queryMsgTraceById's
    lookup)."""
    from pocketmq.admin_cli.trace import query_trace_views
    from pocketmq.client.admin.mq_admin_ext import MQAdminExt

    msg_id = run_script(block("traced-producers"), tmp_path, "trace.py", pocketmq_cluster).strip()

    async def run():
        async with MQAdminExt(pocketmq_cluster.namesrv_addr) as admin:
            for _ in range(500):  # the trace record is sent in the background, then dispatched
                views = await query_trace_views(admin, msg_id)
                if views:
                    return views
                await asyncio.sleep(0.02)
        return []

    views = asyncio.run(run())
    assert [(v.msg_type, v.topic, v.group_name) for v in views] == [("Pub", "Orders", "traced-producers")]


def test_readme_5x_sdk_example_sends_and_receives_through_the_grpc_endpoint(pocketmq_cluster, tmp_path):
    from pocketmq.cli import main

    # As the README says above it: create the topic first.
    assert main(["updateTopic", "-n", pocketmq_cluster.namesrv_addr, "-c", "DefaultCluster", "-t", "orders"]) == 0
    assert pocketmq_cluster.wait_routed("orders")
    script = tmp_path / "sdk5.py"
    script.write_text(block(SDK5).replace(GRPC, pocketmq_cluster.grpc_endpoint))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    sent, received = proc.stdout.splitlines()  # the producer's message id; the simple consumer's message
    assert re.fullmatch(r"[0-9A-F]{34}", sent), proc.stdout  # a 5.x message id: a version byte + 16
    assert received == f"{sent} b'order 1'"


def test_readme_fixture_example_passes_in_a_user_project(tmp_path):
    (tmp_path / "test_readme_user.py").write_text(block("def test_order_is_published"))
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
