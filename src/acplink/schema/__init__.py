"""Typed models for every ACP type, generated from the official JSON Schema.

Every schema definition is available here under its schema name (``PromptRequest``,
``SessionNotification``, ``ContentBlock``, ...). Attributes are snake_case; the wire is
camelCase; ``_meta`` is the attribute ``meta``. See ``docs/schema.md``.
"""

from ._base import STRICT, AcpModel, UnknownVariant
from ._generated import *  # noqa: F403
from ._generated import STABILITY, __all__ as _generated_all
from .parse import dump, dump_json, parse, parse_json
from .registry import METHODS, MethodInfo, agent_methods, client_methods, method_info

__all__ = [  # noqa: PLE0604
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
