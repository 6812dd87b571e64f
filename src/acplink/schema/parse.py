"""Parse and dump ACP values, with errors as :class:`acplink.errors.SchemaValidationError`."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, TypeVar, overload

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import SchemaValidationError
from ._base import STRICT

__all__ = ["dump", "dump_json", "json_path", "parse", "parse_json"]

T = TypeVar("T")


@lru_cache(maxsize=None)
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def json_path(loc: tuple[Any, ...]) -> str:
    """Render a pydantic location as a JSON path (``$.update.content.text``)."""
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not isinstance(part, str) or part.startswith(("function-", "tagged-union[")):
            continue
        elif "=" in part:
            out += f"[{part}]"  # the tag a tagged union dispatched on
        else:
            out += f".{part}"
    return out


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)


def to_schema_error(tp: Any, exc: ValidationError, name: str | None = None) -> SchemaValidationError:
    errors = []
    for e in exc.errors(include_url=False, include_input=False)[:50]:
        errors.append({"path": json_path(e["loc"]), "message": e["msg"], "type": e["type"]})
    return SchemaValidationError(name or _type_name(tp), errors)


@overload
def parse(tp: type[T], data: Any, *, strict: bool = ..., name: str | None = ...) -> T: ...
@overload
def parse(tp: Any, data: Any, *, strict: bool = ..., name: str | None = ...) -> Any: ...
def parse(tp: Any, data: Any, *, strict: bool = False, name: str | None = None) -> Any:
    """Validate wire data (camelCase dicts) into ``tp``.

    ``strict=True`` turns the schema's leniency rules off (used by the conformance checker).
    Raises :class:`SchemaValidationError` naming the type and the JSON path.
    """
    ctx = STRICT if strict else None
    try:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp.model_validate(data, context=ctx)
        return _adapter(tp).validate_python(data, context=ctx)
    except ValidationError as exc:
        raise to_schema_error(tp, exc, name) from None
    except RecursionError:
        raise SchemaValidationError(name or _type_name(tp),
                                    [{"path": "$", "message": "value nested too deeply", "type": "recursion"}]) from None


def parse_json(tp: Any, data: bytes | str, *, strict: bool = False) -> Any:
    """Parse JSON text and validate it into ``tp``."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SchemaValidationError(_type_name(tp), [{"path": "$", "message": f"invalid JSON: {exc}", "type": "json"}]) from None
    return parse(tp, raw, strict=strict)


def dump(value: Any) -> Any:
    """The wire form (camelCase, unset fields omitted) of a model, list, dict or scalar."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    return value


def dump_json(value: Any) -> bytes:
    """The wire JSON of a value."""
    if isinstance(value, BaseModel):
        return value.__pydantic_serializer__.to_json(value, by_alias=True, exclude_unset=True)
    return orjson.dumps(dump(value))
