"""ReceiptHandle.decode's refusals, word for word as RocketMQ's proxy gives them (its Java exception's text)."""

from __future__ import annotations

import pytest

from pocketmq.proxy.proxy_exception import GrpcProxyException
from pocketmq.proxy.receipt_handle import decode


@pytest.mark.parametrize("text, size", [("", 1), ("   ", 0), ("a", 1), ("0 1 2", 3), ("0 1 2 ", 3)])
def test_a_handle_of_too_few_fields_counts_them_as_java_s_split_does(text: str, size: int) -> None:
    # String.split(" ") gives [""] for "" (no separator: the text itself), and drops trailing empty strings.
    with pytest.raises(GrpcProxyException) as e:
        decode(text)
    assert e.value.message == f"Parse failed, dataList size {size}. IllegalArgumentException"
