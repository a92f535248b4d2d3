"""The C accelerator, ``pocketmq.remoting._speedups`` (``_speedups.c``), or None: chosen once, at import.

The C is used when it was built (``pip install -e .``, ``make``; ``setup.py`` builds it) and the environment does
not set ``POCKETMQ_NO_EXTENSIONS=1``; otherwise the Python, which is the reference in any case: each C function
does only the common case of a Python function and answers None for the rest, which the Python then reads (see
the C file's head for which). A module built from another version of the C source (its SHA-256 is compiled in)
is not used, with a warning, so a stale build never runs silently.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from types import ModuleType

DISABLE_ENV = "POCKETMQ_NO_EXTENSIONS"


def _load() -> ModuleType | None:
    if os.environ.get(DISABLE_ENV) == "1":
        return None
    try:
        from . import _speedups
    except ImportError:
        return None
    source = Path(__file__).with_name("_speedups.c")  # (a wheel ships the module without its source)
    if source.is_file() and hashlib.sha256(source.read_bytes()).hexdigest() != _speedups.SOURCE_HASH:
        warnings.warn(
            f"{_speedups.__file__} was built from another version of {source.name}: not used "
            "(rebuild it with `make` or `pip install -e .`)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return _speedups


speedups = _load()
