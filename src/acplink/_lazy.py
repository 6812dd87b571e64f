"""Names a package imports on first use (PEP 562 ``__getattr__``), so that ``import acplink``
and a stdio agent's start stay cheap while ``from acplink.transports import
SubprocessTransport`` works as usual."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, table: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: ``table`` maps a name to the module that defines it
    (relative to ``package``; ``"."``: the name is a subpackage of its own). A name is imported
    when first asked for, then kept in ``namespace`` (the package's ``globals()``)."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = (importlib.import_module(f"{package}.{name}") if module == "."
                 else getattr(importlib.import_module(module, package), name))
        namespace[name] = value
        return value

    return __getattr__
