"""Smallest valid values of the generated models, built from their fields (for tests that must
call every method of the table with valid params and answer it with a valid result)."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from acplink.errors import SchemaValidationError
from acplink.schema import dump, parse


def minimal(tp: Any, depth: int = 0) -> Any:
    """A small wire value (JSON-ready) that ``tp`` accepts."""
    for candidate in _candidates(tp, depth):
        try:
            parse(tp, candidate)
        except SchemaValidationError:
            continue
        return candidate
    raise AssertionError(f"no minimal value for {tp!r}")


def _candidates(tp: Any, depth: int) -> list[Any]:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _candidates(typing.get_args(tp)[0], depth)
    if origin in (typing.Union, types.UnionType):
        out: list[Any] = []
        for arg in typing.get_args(tp):
            if arg is not type(None):
                out.extend(_candidates(arg, depth))
        return out
    if origin is typing.Literal:
        return list(typing.get_args(tp))
    if origin in (list, tuple):
        return [[]]
    if origin is dict:
        return [{}]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if depth > 6:
            return [{}]
        body: dict[str, Any] = {}
        tags = getattr(tp, "__acp_tag_fields__", ())
        for name, info in tp.model_fields.items():
            if name in tags and not info.is_required():
                body[info.alias or name] = info.default  # a variant's tag: the union needs it
            elif info.is_required():
                body[info.alias or name] = _first(info.annotation, depth + 1)
        return [body]
    return {str: ["x"], int: [0], float: [0.0], bool: [False], type(None): [None]}.get(tp, [{}, "x", 0])


def _first(tp: Any, depth: int) -> Any:
    for candidate in _candidates(tp, depth):
        try:
            parse(tp, candidate)
        except (SchemaValidationError, Exception):
            continue
        return candidate
    return _candidates(tp, depth)[0]


def wire(value: Any) -> Any:
    return dump(value)
