"""The client's record-decoding C accelerator, ``pocketmq.common._speedups`` (``_speedups.c``: codec's common-record
loop), or None (pocketmq/common/accelerator.py says when it is used)."""

from __future__ import annotations

from pathlib import Path

from pocketmq.common.accelerator import load_speedups

__all__ = ["speedups"]

speedups = load_speedups(__package__, Path(__file__).parent)
