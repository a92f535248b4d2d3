"""The dispatcher's C accelerator, ``pocketmq.storage._speedups`` (``_speedups.c``: the index step), or None
(pocketmq/common/accelerator.py says when it is used)."""

from __future__ import annotations

from pathlib import Path

from pocketmq.common.accelerator import load_speedups

__all__ = ["speedups"]

speedups = load_speedups(__package__, Path(__file__).parent)
