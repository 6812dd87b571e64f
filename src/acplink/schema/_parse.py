"""Parse and dump ACP values, with errors as :class:`acplink.errors.SchemaValidationError`."""

from __future__ import annotations

import sys
from functools import cache, lru_cache
from typing import Any, TypeVar, overload

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..errors import SchemaValidationError
from ._base import STRICT, AcpModel, serialization_error

__all__ = ["dump", "dump_json", "json_path", "parse", "parse_json", "prepare"]

T = TypeVar("T")


@cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def json_path(loc: tuple[Any, ...]) -> str:
    """Render a pydantic location as a JSON path, naming the tag each tagged union dispatched on:
    ``$.update[sessionUpdate=tool_call].content[0][type=diff].path``."""
    out = "$"
    union: str | None = None  # the "tagged-union[A,B,...]" marker just seen
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not isinstance(part, str):
            continue
        elif part.startswith("tagged-union["):
            union = part
            continue
        elif union is not None:
            out += f"[{_tag_label(tuple(union[len('tagged-union['):-1].split(',')), part)}]"
        elif part.startswith(("function-", "union[", "nullable[", "list[", "dict[", "default[")):
            continue
        elif part[:1].isupper() and _is_model_name(part):
            # a member of a left-to-right union (an untagged, "other" or unknown variant)
            label = _class_tag(part)
            if label:
                out += f"[{label}]"
        elif "=" in part:
            out += f"[{part}]"  # the tag a tagged union dispatched on
        else:
            out += f".{part}"
        union = None
    return out


#: the generated models modules of every protocol version, for error paths
_VERSIONS = ("acplink.schema.v1._generated", "acplink.schema.v2._generated")


def _loaded_models() -> list[Any]:
    """The models modules of the versions in use (a version not imported yet has no values)."""
    return [m for m in (sys.modules.get(name) for name in _VERSIONS) if m is not None]


def _generated_class(cls_name: str) -> Any:
    for models in _loaded_models():
        if cls_name in models._ORDER:
            return getattr(models, cls_name)
    return None


@lru_cache(maxsize=4096)
def _is_model_name(name: str) -> bool:
    return isinstance(_generated_class(name), type)


def _tag_fields(cls_name: str) -> list[tuple[str, Any]]:
    """(wire name, literal value) of each tag a generated class carries."""
    cls = _generated_class(cls_name)
    out = []
    for attr in getattr(cls, "__acp_tag_fields__", ()):
        info = cls.model_fields.get(attr)
        if info is not None and isinstance(info.default, str):
            out.append((info.alias or attr, info.default))
    return out


@lru_cache(maxsize=4096)
def _tag_label(members: tuple[str, ...], value: str) -> str:
    for cls_name in members:
        for key, tag in _tag_fields(cls_name):
            if tag == value:
                return f"{key}={value}"
    return value


@lru_cache(maxsize=4096)
def _class_tag(cls_name: str) -> str:
    if _is_fallback(cls_name):
        return ""
    tags = _tag_fields(cls_name)
    return f"{tags[0][0]}={tags[0][1]}" if len(tags) == 1 else ""


def _is_fallback(cls_name: str) -> bool:
    from ._base import FallbackVariant

    cls = _generated_class(cls_name)
    return isinstance(cls, type) and issubclass(cls, FallbackVariant)


@lru_cache(maxsize=len(_VERSIONS))
def _alias_names(models: Any) -> dict[int, str]:
    """Schema names of one version's generated aliases that are not classes (tagged unions, ...)."""
    names: dict[int, str] = {}
    for name in models.__all__:
        value = getattr(models, name)
        if not isinstance(value, type):
            names.setdefault(id(value), name)
    return names


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    # ``Annotated[Union[...], Discriminator(...)]`` has no name of its own: use the schema name
    for models in _loaded_models():
        name = _alias_names(models).get(id(tp))
        if name:
            return name
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
    # strict mode is also pydantic's strict mode: no "5" -> 5 or "true" -> True coercions,
    # which the schema does not allow either
    strict_types = True if strict else None
    try:
        validate = _VALIDATORS.get(tp)
        if validate is None:
            validate = _validator_of(tp)
        return validate(data, strict=strict_types, context=ctx)
    except ValidationError as exc:
        raise to_schema_error(tp, exc, name) from None
    except RecursionError:
        raise SchemaValidationError(name or _type_name(tp),
                                    [{"path": "$", "message": "value nested too deeply", "type": "recursion"}]) from None


#: type -> its validate function (a model's own, or a cached TypeAdapter's): the hot path of
#: every typed message, so no issubclass (slow on pydantic's metaclass) per call
_VALIDATORS: dict[Any, Any] = {}


def _validator_of(tp: Any) -> Any:
    validate: Any
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        # the core validator itself (builds a deferred model): model_validate would add a
        # Python-level call with keyword handling to every message
        validate = tp.__pydantic_validator__.validate_python
    else:
        validate = _adapter(tp).validate_python
    try:
        _VALIDATORS[tp] = validate
    except TypeError:  # an unhashable type expression: no caching
        pass
    return validate


def prepare(tp: Any) -> None:
    """Build ``tp``'s validator and serializer now (models are built lazily, on first use:
    a connection prepares the types it is about to need while it is idle)."""
    if _VALIDATORS.get(tp) is None:
        _validator_of(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        tp.__pydantic_serializer__.to_json  # noqa: B018  (the attribute access builds it)


def parse_json(tp: Any, data: bytes | str, *, strict: bool = False) -> Any:
    """Parse JSON text and validate it into ``tp``."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SchemaValidationError(_type_name(tp), [{"path": "$", "message": f"invalid JSON: {exc}", "type": "json"}]) from None
    return parse(tp, raw, strict=strict)


def dump(value: Any) -> Any:
    """The wire form (camelCase, unset fields omitted) of a model, list, dict or scalar."""
    if isinstance(value, AcpModel):
        return value.to_wire()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    return value


def dump_json(value: Any) -> bytes:
    """The wire JSON of a value."""
    if isinstance(value, AcpModel):
        return value.to_json()
    if isinstance(value, BaseModel):
        return value.__pydantic_serializer__.to_json(value, by_alias=True, exclude_unset=True)
    try:
        return orjson.dumps(dump(value))
    except (orjson.JSONEncodeError, RecursionError) as exc:
        raise serialization_error(_type_name(type(value)), exc) from None
