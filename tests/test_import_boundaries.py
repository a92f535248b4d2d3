"""What a process loads, seen in ``sys.modules`` of a fresh interpreter.

tests/test_architecture.py checks the import statements; this checks the outcome a user meets: the pytest
plugin costs nothing until a fixture is used, an application importing the client loads no storage engine,
and a Spark worker importing the data source loads no broker, name server or storage engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVER_SIDE = ("pocketmq.storage", "pocketmq.broker", "pocketmq.namesrv", "pocketmq.embedded")
LAYERS = (
    "pocketmq.storage",
    "pocketmq.broker",
    "pocketmq.namesrv",
    "pocketmq.client",
    "pocketmq.remoting",
    "pocketmq.common",
    "pocketmq.embedded",
    "pocketmq.runtime",
)
SPARK_MODULES = sorted(
    f"pyspark_pocketmq.{p.stem}" if p.stem != "__init__" else "pyspark_pocketmq"
    for p in (ROOT / "pyspark_pocketmq").glob("*.py")
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def under(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_the_pytest_plugin_loads_no_layer_until_a_fixture_is_used():
    modules = loaded_after("import pocketmq, pocketmq.pytest_plugin")
    assert "pocketmq.pytest_plugin" in modules
    assert under(modules, LAYERS) == []


def test_the_lazy_package_still_offers_the_cluster_classes():
    modules = loaded_after(
        "import pocketmq\n"
        "assert {'EmbeddedCluster', 'ThreadedCluster'} <= set(dir(pocketmq))\n"
        "assert pocketmq.ThreadedCluster.__module__ == 'pocketmq.embedded'\n"
        "from pocketmq import EmbeddedCluster\n"
        "try:\n    pocketmq.NoSuchThing\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit('no error')"
    )
    assert "pocketmq.broker.broker_controller" in modules  # the classes came from the real module


def test_the_client_loads_no_server_side_module():
    modules = loaded_after("from pocketmq.client import *")
    assert "pocketmq.client.producer.producer" in modules
    assert under(modules, SERVER_SIDE) == []


def test_the_client_package_loads_a_room_only_when_one_of_its_names_is_used():
    """`import pocketmq.client` loads no room (the gRPC endpoint imports two of the client's modules, and loads
    nothing else of it), and each public name still comes from its real module."""
    modules = loaded_after(
        "import pocketmq.client\n"
        "import sys\n"
        "assert not [m for m in sys.modules if m.startswith('pocketmq.client.')], sorted(sys.modules)\n"
        "assert {'Producer', 'PushConsumer', 'SyncProducer'} <= set(dir(pocketmq.client))\n"
        "from pocketmq.client import Producer\n"
        "assert Producer.__module__ == 'pocketmq.client.producer.producer'\n"
        "assert 'pocketmq.client.consumer.push_consumer' not in sys.modules\n"
        "try:\n    pocketmq.client.NoSuchThing\nexcept AttributeError:\n    pass\nelse:\n"
        "    raise SystemExit('no error')"
    )
    assert "pocketmq.client.producer.producer" in modules


# One interpreter imports every module of the data source in turn (one interpreter for each took most of the
# module's time). A finder first in sys.meta_path notes, for each forbidden module imported from outside the
# forbidden packages, the modules being executed at that moment (the import chain, outermost first), so each
# test names the modules of the data source that brought one in.
_SPARK_WORKER = """
import importlib, json, sys
forbidden = tuple(json.loads(sys.argv[1]))
chains = {}

class Witness:
    def find_spec(self, name, path=None, target=None):
        if any(name == p or name.startswith(p + ".") for p in forbidden):
            frame, chain = sys._getframe(1), []
            while frame is not None:
                if frame.f_code.co_name == "<module>":
                    chain.append(frame.f_globals.get("__name__"))
                frame = frame.f_back
            if not any(m == p or m.startswith(p + ".") for m in chain for p in forbidden):
                chains[name] = chain[::-1]
        return None

sys.meta_path.insert(0, Witness())
for module in json.loads(sys.argv[2]):
    importlib.import_module(module)
print(json.dumps({"modules": sorted(sys.modules), "chains": chains}))
"""


@pytest.fixture(scope="module")
def spark_worker() -> dict[str, object]:
    pytest.importorskip("pyspark")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    forbidden = json.dumps([*SERVER_SIDE, "pocketmq.runtime"])
    out = subprocess.run([sys.executable, "-c", _SPARK_WORKER, forbidden, json.dumps(SPARK_MODULES)], env=env,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("module", SPARK_MODULES)
def test_a_spark_worker_loads_no_server_side_module(module, spark_worker):
    assert module in spark_worker["modules"]
    assert {name: chain for name, chain in spark_worker["chains"].items() if module in chain} == {}


def test_a_spark_worker_loads_no_server_side_module_at_all(spark_worker):
    """Whatever imported it (the chains say what did)."""
    assert under(set(spark_worker["modules"]), (*SERVER_SIDE, "pocketmq.runtime")) == [], spark_worker["chains"]
