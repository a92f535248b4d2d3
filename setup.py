"""The C accelerator, pocketmq.remoting._speedups (everything else is in pyproject.toml).

Optional, as aiokafka's are: where it does not compile, the install is pure Python (the same behaviour, slower);
`POCKETMQ_NO_EXTENSIONS=1` chooses the Python where it is built. The source's SHA-256 is compiled in, so a module
built from an older source is not used (pocketmq/remoting/speedups.py compares the two).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "pocketmq/remoting/_speedups.c"
DIGEST = hashlib.sha256((Path(__file__).resolve().parent / SOURCE).read_bytes()).hexdigest()

setup(
    ext_modules=[
        Extension(
            "pocketmq.remoting._speedups",
            [SOURCE],
            define_macros=[("POCKETMQ_SOURCE_HASH", f'"{DIGEST}"')],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
            optional=True,
        )
    ]
)
