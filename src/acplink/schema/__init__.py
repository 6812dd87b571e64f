"""Typed models for every ACP type, generated from the official JSON Schema.

Every schema definition of ACP v1 is available here under its schema name (``PromptRequest``,
``SessionNotification``, ``ContentBlock``, ...). Attributes are snake_case; the wire is
camelCase; ``_meta`` is the attribute ``meta``. See ``docs/schema.md``.

This namespace is ACP v1 (the same as ``acplink.schema.v1``). The v2 draft's models and method
table are in ``acplink.schema.v2`` (imported only when used).
"""

from typing import TYPE_CHECKING, Any

from ._base import STRICT, AcpModel, UnknownVariant
from ._parse import dump, dump_json, parse, parse_json
from ._table import MethodInfo, MethodTable
from .v1 import METHODS, STABILITY, agent_methods, client_methods, method_info
from .v1 import _generated as _generated
from .v1._generated import __all__ as _generated_all

__all__ = [
    "METHODS",
    "STABILITY",
    "STRICT",
    "AcpModel",
    "MethodInfo",
    "MethodTable",
    "UnknownVariant",
    "agent_methods",
    "client_methods",
    "dump",
    "dump_json",
    "method_info",
    "parse",
    "parse_json",
    *_generated_all,
]

if TYPE_CHECKING:
    from .v1._generated import *  # noqa: F403
else:

    def __getattr__(name: str) -> Any:
        # models are built on first use (see _generated.py); this keeps `import acplink` cheap
        if name in _generated._ORDER:
            return _generated._get(name)
        if name == "v2":  # the v2 draft is imported on first use only
            import importlib

            return importlib.import_module(".v2", __name__)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        # the models are not module attributes until first use: list them for completion
        return sorted(set(globals()) | set(__all__))
