"""Root keys a message's schema does not declare (SCHEMA-003): ACP lets implementations add data
only under ``_meta``. Our models accept extra keys (forward compatibility), so this looks at the
declared fields of the params or result type of the method itself."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..protocol.base import Protocol
from ..protocol.messages import message_kind
from ..protocol.state import default_protocol

__all__ = ["undeclared_root_keys"]


def _declared(tp: Any) -> set[str] | None:
    if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
        return None  # a union or a root model: its variants decide, not judged here
    return {f.alias or name for name, f in tp.model_fields.items()} | {"_meta"}


def undeclared_root_keys(msg: dict[str, Any], answered: str | None = None,
                         protocol: Protocol | None = None) -> list[str]:
    """The root keys of ``msg``'s params (a request or notification) or result (a response to
    a request for method ``answered``) that its schema type does not declare, in the schema of
    ``protocol`` (the version the connection agreed on; None: the first version)."""
    method_info = (protocol or default_protocol()).info
    kind = message_kind(msg)
    if kind in ("request", "notification"):
        info = method_info(msg["method"], kind)
        tp, data = (info.params_type, msg.get("params")) if info is not None else (None, None)
    elif kind == "response" and answered is not None:
        info = method_info(answered, "request")
        tp, data = (info.result_type, msg.get("result")) if info is not None else (None, None)
    else:
        return []
    allowed = _declared(tp)
    if allowed is None or not isinstance(data, dict):
        return []
    return sorted(k for k in data if k not in allowed)
