"""The C accelerators, pocketmq.common._speedups, pocketmq.remoting._speedups and pocketmq.storage._speedups
(everything else is in pyproject.toml).

Optional, as aiokafka's are: where they do not compile, the install is pure Python (the same behaviour, slower);
`POCKETMQ_NO_EXTENSIONS=1` chooses the Python where they are built. Each source's SHA-256 is compiled in, so a module
built from an older source is not used (pocketmq/common/accelerator.py compares the two).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

ROOT = Path(__file__).resolve().parent
SOURCES = {"pocketmq.common._speedups": "pocketmq/common/_speedups.c",
           "pocketmq.remoting._speedups": "pocketmq/remoting/_speedups.c",
           "pocketmq.storage._speedups": "pocketmq/storage/_speedups.c"}


def extension(name: str, source: str) -> Extension:
    digest = hashlib.sha256((ROOT / source).read_bytes()).hexdigest()
    return Extension(
        name,
        [source],
        define_macros=[("POCKETMQ_SOURCE_HASH", f'"{digest}"')],
        extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
        optional=True,
    )


setup(ext_modules=[extension(name, source) for name, source in SOURCES.items()])
