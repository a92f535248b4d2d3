"""The protocol's message classes (``apache.rocketmq.v2``), built from the descriptors Apache publishes.

Apache RocketMQ's Python SDK (PyPI ``rocketmq-python-client``) ships protoc's output for Apache's
``definition.proto`` and ``service.proto``: each ``*_pb2.py`` module holds the compiled ``FileDescriptorProto``
as one bytes literal. No package on PyPI ships the ``.proto`` files themselves, and importing the SDK's modules is
not clean for a server: ``rocketmq/__init__.py`` loads the whole SDK (OpenTelemetry included, some 470 modules and
0.4 s) and creates ``~/logs/rocketmq_python/`` with a logging configuration of its own. So the descriptors are read
out of the installed files with ``ast`` (nothing of the SDK is imported or executed) and the classes are built in a
descriptor pool of pocketmq's own: a test process that also imports the SDK (the pytest fixture's users) gets no
"duplicate symbol" clash in protobuf's default pool.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from google.protobuf import descriptor_pool, duration_pb2, message_factory, timestamp_pb2
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

DISTRIBUTION = "rocketmq-python-client"
PACKAGE = "apache.rocketmq.v2"
SERVICE = f"{PACKAGE}.MessagingService"
# In dependency order: service.proto imports definition.proto; under the SDK's import package, ``rocketmq``.
_FILES = ("grpc_protocol/definition_pb2.py", "grpc_protocol/service_pb2.py")


class ProtocolUnavailable(RuntimeError):
    """The SDK's descriptors could not be found or read."""


def serialized_descriptor(source: str) -> bytes:
    """The bytes given to ``AddSerializedFile`` in a protoc-generated module's source."""
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "AddSerializedFile" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes)):
            return node.args[0].value
    raise ProtocolUnavailable("no AddSerializedFile(b'...') in the module")


def _read(path: str) -> bytes:
    # (find_spec of a top-level package finds its folders without running its __init__; importlib.metadata would
    # find them too, at the price of loading the email and zipfile packages into the server)
    spec = importlib.util.find_spec("rocketmq")
    folders = [Path(f) for f in (spec.submodule_search_locations or [])] if spec is not None else []
    if not folders:
        raise ProtocolUnavailable(f"the gRPC endpoint needs {DISTRIBUTION} (pip install {DISTRIBUTION})")
    file = next((f / path for f in folders if (f / path).is_file()), folders[0] / path)
    try:
        return serialized_descriptor(file.read_text(encoding="utf-8"))
    except OSError as e:
        raise ProtocolUnavailable(f"{DISTRIBUTION} has no rocketmq/{path}: {e}") from e


@cache
def load() -> SimpleNamespace:
    """Every message class and enum of ``apache.rocketmq.v2`` by its short name (``pb.Settings``,
    ``pb.Code.OK``), plus ``pool``."""
    pool = descriptor_pool.DescriptorPool()
    for dep in (timestamp_pb2, duration_pb2):
        pool.AddSerializedFile(dep.DESCRIPTOR.serialized_pb)
    names = []
    for path in _FILES:
        names.append(pool.AddSerializedFile(_read(path)).name)
    classes = message_factory.GetMessageClassesForFiles(names, pool)
    ns: dict[str, Any] = {"pool": pool}
    for full_name, cls in classes.items():
        if full_name.startswith(PACKAGE + "."):
            ns[full_name[len(PACKAGE) + 1:].replace(".", "_")] = cls
    for name in names:
        for enum_name, enum in pool.FindFileByName(name).enum_types_by_name.items():
            ns[enum_name] = EnumTypeWrapper(enum)
    for wkt in ("Timestamp", "Duration"):
        ns[wkt] = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"google.protobuf.{wkt}"))
    return SimpleNamespace(**ns)
