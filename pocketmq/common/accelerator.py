"""The C accelerators' loader: a package's ``_speedups`` module, or None, chosen once, at import.

The C is used when it was built (``pip install -e .``, ``make``; ``setup.py`` builds every one) and the environment
does not set ``POCKETMQ_NO_EXTENSIONS=1``; otherwise the Python, which is the reference in any case: each C function
does only the common case of a Python function and answers None for the rest, which the Python then does (each C
file's head says which). A module built from another version of its C source (its SHA-256 is compiled in) is not
used, with a warning, so a stale build never runs silently.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import warnings
from pathlib import Path
from types import ModuleType

DISABLE_ENV = "POCKETMQ_NO_EXTENSIONS"


def load_speedups(package: str, package_dir: str | Path) -> ModuleType | None:
    """``{package}._speedups`` when it is built from the ``_speedups.c`` in ``package_dir`` and not switched off."""
    if os.environ.get(DISABLE_ENV) == "1":
        return None
    try:
        module = importlib.import_module(f"{package}._speedups")
    except ImportError:
        return None
    source = Path(package_dir) / "_speedups.c"  # (a wheel ships the module without its source)
    if source.is_file() and hashlib.sha256(source.read_bytes()).hexdigest() != module.SOURCE_HASH:
        warnings.warn(
            f"{module.__file__} was built from another version of {source.name}: not used "
            "(rebuild it with `make` or `pip install -e .`)",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return module
