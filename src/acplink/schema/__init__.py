"""Typed models for every ACP type, generated from the official JSON Schema.

Every schema definition is available here under its schema name (``PromptRequest``,
``SessionNotification``, ``ContentBlock``, ...). Attributes are snake_case; the wire is
camelCase; ``_meta`` is the attribute ``meta``. See ``docs/schema.md``.
"""

from typing import TYPE_CHECKING, Any

from . import _generated
from ._base import STRICT, AcpModel, UnknownVariant
from ._generated import STABILITY
from ._generated import __all__ as _generated_all
from .parse import dump, dump_json, parse, parse_json
from .registry import METHODS, MethodInfo, agent_methods, client_methods, method_info

__all__ = [
    "METHODS",
    "STABILITY",
    "STRICT",
    "AcpModel",
    "MethodInfo",
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
    from ._generated import *  # noqa: F403
else:

    def __getattr__(name: str) -> Any:
        # models are built on first use (see _generated.py); this keeps `import acplink` cheap
        if name in _generated._ORDER:
            return _generated._get(name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        # the models are not module attributes until first use: list them for completion
        return sorted(set(globals()) | set(__all__))
