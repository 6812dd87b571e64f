"""Typed models for every ACP type, generated from the official JSON Schema.

Every schema definition of ACP v1 is available here under its schema name (``PromptRequest``,
``SessionNotification``, ``ContentBlock``, ...). Attributes are snake_case; the wire is
camelCase; ``_meta`` is the attribute ``meta``. See ``docs/schema.md``.

This namespace is ACP v1 (the same as ``acplink.schema.v1``). The v2 draft's models and method
table are in ``acplink.schema.v2`` (imported only when used).
"""

from typing import TYPE_CHECKING

from ._base import STRICT, AcpModel, UnknownVariant
from ._lazy import lazy_models
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

    # models are built on first use (see _generated.py), and the v2 draft is imported on first
    # use only: this keeps `import acplink` cheap
    __getattr__, __dir__ = lazy_models(__name__, _generated, lambda: [*globals(), *__all__], ("v2",))
