"""The lazy attributes of a schema namespace (``acplink.schema``, ``acplink.schema.v1``, ...):
its models are built on first use, so that importing it stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

__all__ = ["lazy_models"]


def lazy_models(module: str, generated: ModuleType, names: Callable[[], Iterable[str]],
                submodules: tuple[str, ...] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the namespace ``module``: a model of ``generated``
    (a version's ``_generated``) is built when first asked for, a package of ``submodules``
    imported; ``names()`` gives the namespace's other names, for completion."""

    def __getattr__(name: str) -> Any:
        if name in generated._ORDER:
            return generated._get(name)
        if name in submodules:
            return importlib.import_module("." + name, module)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        # the models are not module attributes until first use: list them for completion
        return sorted(set(names()))

    return __getattr__, __dir__
