"""Root keys a message's schema does not declare (SCHEMA-003): ACP lets implementations add data
only under ``_meta``. Our models accept extra keys (forward compatibility), so this looks at the
declared fields of the params or result type of the method itself."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..rpc.messages import message_kind
from ..schema.registry import method_info as _v1_method_info

__all__ = ["undeclared_root_keys"]


def _declared(tp: Any) -> set[str] | None:
    if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
        return None  # a union or a root model: its variants decide, not judged here
    return {f.alias or name for name, f in tp.model_fields.items()} | {"_meta"}


def undeclared_root_keys(msg: dict[str, Any], answered: str | None = None, version: int = 1) -> list[str]:
    """The root keys of ``msg``'s params (a request or notification) or result (a response to
    a request for method ``answered``) that its schema type does not declare, in the schema of
    ``version`` (the ACP version the connection agreed on; 2: the v2 draft's)."""
    if version >= 2:
        from ..schema import v2

        method_info = v2.method_info
    else:
        method_info = _v1_method_info
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
