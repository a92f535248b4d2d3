"""`pocketmq updateSubGroup` with RocketMQ 5's -o (consumeMessageOrderly) and -p (groupRetryPolicy), the options the
README gives the 5.x SDKs' FIFO groups and retries: it prints what 5.5.0's mqadmin prints for the same command
against the same pocketmq cluster, 5.x's SubscriptionGroupConfig line, which shows what the options set (4.9.x's
line, without them, has neither field)."""

from __future__ import annotations

import pytest

from pocketmq.cli import main as pocketmq_main
from pocketmq.embedded import ThreadedCluster

from .sides import CLUSTER, SLOW_OK, SUFFIX, Mqadmin


@pytest.mark.parametrize("options", [
    ("-o", "true"),
    ("-o", "false", "-r", "3"),
    ("-p", '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":12000}}'),
    ("-o", "true", "-p", '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000]}}'),
    ("-p", '{"type":"CUSTOMIZED"}'),
])
def test_update_sub_group_5_options_print_as_5x_mqadmin(
    options: tuple[str, ...], pocket: ThreadedCluster, mqadmin5: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("updateSubGroup", "-c", CLUSTER, "-g", f"MqaFifoGroup{SUFFIX}", *options)
    theirs = mqadmin5.run(pocket.namesrv_addr, *args)
    capsys.readouterr()
    assert pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]]) == 0
    mine = capsys.readouterr().out
    assert mine.splitlines() == theirs.splitlines()
    assert (f"consumeMessageOrderly={options[1]}," if options[0] == "-o" else "groupRetryPolicy=") in mine
