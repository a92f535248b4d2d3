"""Every dataclass of pocketmq (and of pyspark_pocketmq, which Spark's workers import) has a docstring of its own.

For a class without one, ``dataclasses`` writes a ``__doc__`` while it makes the class, from the class's
``inspect.signature`` (``ClassName(field: type = default, ...)``). That is work at import for every such class,
and `pocketmq dev` defines enough of them for it to show in its start-up time. A written docstring skips it, and
says what the class is instead of repeating its fields.

Every module is imported, as a start would import it; a dataclass made inside a function is not seen.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import pocketmq
import pyspark_pocketmq


def _modules() -> list[str]:
    return sorted(
        info.name
        for package in (pocketmq, pyspark_pocketmq)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
        if info.name.rpartition(".")[2] != "__main__"  # importing one runs it
    )


def _classes(owner: object, module: str, seen: set[type]):
    """The classes defined in ``module`` found on ``owner`` (a module or a class), nested ones too."""
    for value in vars(owner).values():
        if isinstance(value, type) and value.__module__ == module and value not in seen:
            seen.add(value)
            yield value
            yield from _classes(value, module, seen)


def made_up_doc(cls: type) -> bool:
    """A dataclass whose ``__doc__`` is the one ``dataclasses`` wrote: its name and signature."""
    return dataclasses.is_dataclass(cls) and (cls.__doc__ or "").startswith(f"{cls.__name__}(")


def dataclasses_without_docstring() -> list[str]:
    found = []
    for name in _modules():
        module = importlib.import_module(name)
        found += [f"{name}.{cls.__qualname__}" for cls in _classes(module, name, set()) if made_up_doc(cls)]
    return sorted(found)


def test_every_dataclass_has_a_written_docstring():
    missing = dataclasses_without_docstring()
    assert missing == [], "give these dataclasses a docstring (one line saying what each is):\n" + "\n".join(missing)


def test_the_check_sees_a_dataclass_without_one():
    @dataclasses.dataclass
    class Bare:
        x: int = 0

    @dataclasses.dataclass(slots=True)
    class Written:
        """A written docstring."""

        x: int = 0

    assert made_up_doc(Bare) and not made_up_doc(Written)
