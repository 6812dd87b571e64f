"""Hand-written foundation for the generated ACP models.

Everything here is shared by every generated model:

* ``AcpModel``: the Pydantic base. snake_case attributes, camelCase on the wire (both accepted
  on input), unknown fields kept and written back out, models built lazily on first use.
* the leniency rules of the schema (``x-deserialize-default-on-error``,
  ``x-deserialize-default-on-null`` and ``x-deserialize-skip-invalid-items``), switched off when a
  parse runs in strict mode (``context={"strict": True}``);
* tagged-union dispatch with an explicit unknown-variant fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic.functional_validators import WrapValidator
from pydantic_core import PydanticCustomError, PydanticSerializationError

from ..errors import SchemaValidationError

__all__ = [
    "STRICT",
    "AcpModel",
    "Lenient",
    "FallbackVariant",
    "UnknownVariant",
    "alt_tag",
    "require_tag",
    "is_strict",
]

#: Parse context that turns the schema's leniency rules off: ``Model.model_validate(d, context=STRICT)``.
STRICT: Mapping[str, Any] = {"strict": True}


def is_strict(info: ValidationInfo | None) -> bool:
    """True when the current parse was asked to be strict."""
    ctx = info.context if info is not None else None
    return bool(ctx) and bool(ctx.get("strict"))  # type: ignore[union-attr]


class AcpModel(BaseModel):
    """Base class of every generated ACP model.

    ``__acp_patch_fields__`` names the fields with patch semantics (omitted: unchanged,
    ``null``: cleared, a value: replaced): read ``model_fields_set`` to tell omitted from
    ``null``; ``to_wire`` writes an explicit ``null`` back and omits what was never set.
    """

    __acp_patch_fields__: ClassVar[tuple[str, ...]] = ()

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
        protected_namespaces=(),
        regex_engine="python-re",
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict of this value as it goes on the wire (camelCase, unset omitted)."""
        try:
            return self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        except (PydanticSerializationError, RecursionError) as exc:
            raise serialization_error(type(self).__name__, exc) from None

    def to_json(self) -> bytes:
        """The wire JSON of this value (camelCase, unset omitted)."""
        try:
            return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_unset=True)
        except (PydanticSerializationError, RecursionError) as exc:
            raise serialization_error(type(self).__name__, exc) from None


def serialization_error(type_name: str, exc: BaseException) -> SchemaValidationError:
    """A value that cannot be written as JSON (e.g. nested deeper than the serializer allows)."""
    message = "value nested too deeply" if isinstance(exc, RecursionError) else str(exc)
    return SchemaValidationError(type_name, [{"path": "$", "message": message, "type": "serialization"}])


class _TaggedMixin:
    """Marks the discriminators of a tagged-union variant as set when built in Python.

    ``exclude_unset`` dumps would otherwise drop a tag that was only defaulted. Only Python
    construction pays for this: validation from the wire does not call ``__init__``.
    """

    __acp_tag_fields__: tuple[str, ...] = ()

    def __init__(self, /, **data: Any) -> None:
        super().__init__(**data)
        self.__pydantic_fields_set__.update(self.__acp_tag_fields__)  # type: ignore[attr-defined]

    # tells pydantic this __init__ needs no call during validation (as for BaseModel's own)
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


class FallbackVariant(AcpModel):
    """Base of the variants a tagged union falls back to when no known tag matched: a
    schema "other" variant, or acplink's explicit unknown variant.

    A fallback refuses the union's known tags, so a malformed known variant is reported as
    the error it is instead of passing as unknown data.
    """

    __acp_union__: str = ""
    __acp_tag_key__: str = ""
    __acp_known__: frozenset[str] = frozenset()

    @model_validator(mode="wrap")
    @classmethod
    def _refuse_known(cls, value: Any, handler: Callable[[Any], Any], info: ValidationInfo) -> Any:
        if isinstance(value, dict):
            if cls.__acp_tag_key__ not in value:
                # no tag at all: the union's untagged variant (if any) did not validate, and an
                # "other"/unknown variant always carries a tag
                raise PydanticCustomError(
                    "union_tag_not_found", "{union} needs a '{tag_key}'",
                    {"tag_key": cls.__acp_tag_key__, "union": cls.__acp_union__})
            tag = value.get(cls.__acp_tag_key__)
            if isinstance(tag, str) and tag in cls.__acp_known__:
                raise PydanticCustomError(
                    "union_tag_known", "{tag_key} '{tag}' is a known {union} variant that did not validate",
                    {"tag_key": cls.__acp_tag_key__, "tag": tag, "union": cls.__acp_union__})
        return handler(value)

    @property
    def tag(self) -> Any:
        """The discriminator value this variant arrived with."""
        return self.to_wire().get(self.__acp_tag_key__)

    @property
    def raw(self) -> dict[str, Any]:
        """The wire object as received: the tag and every other field, unknown ones included."""
        return self.to_wire()


class UnknownVariant(FallbackVariant):
    """Base of the explicit unknown-variant values of open tagged unions.

    The whole raw object is kept (as extra fields) and written back out unchanged. In strict
    mode a tag that is neither known nor ``_``-prefixed (a custom extension) is rejected.
    """

    @model_validator(mode="wrap")
    @classmethod
    def _check_strict(cls, value: Any, handler: Callable[[Any], Any], info: ValidationInfo) -> Any:
        if is_strict(info) and isinstance(value, dict):
            tag = value.get(cls.__acp_tag_key__)
            if not (isinstance(tag, str) and tag.startswith("_")):
                raise PydanticCustomError(
                    "union_tag_invalid", "unknown {tag_key} '{tag}' for {union} (strict mode)",
                    {"tag_key": cls.__acp_tag_key__, "tag": tag, "union": cls.__acp_union__})
        return handler(value)

    @property
    def tag(self) -> Any:
        """The discriminator value this variant arrived with."""
        extra = self.__pydantic_extra__ or {}
        return extra.get(self.__acp_tag_key__)

    @property
    def raw(self) -> dict[str, Any]:
        """The raw wire object, exactly as received."""
        return dict(self.__pydantic_extra__ or {})


def require_tag(key: str, value: str) -> Callable[[Any], Any]:
    """Before-validator of the only tagged variant of a union: the input must carry its tag."""

    def check(data: Any) -> Any:
        if isinstance(data, dict) and data.get(key) != value:
            raise PydanticCustomError("union_tag_invalid", "{key} is not '{value}'", {"key": key, "value": value})
        return data

    return check


def alt_tag(key: str, alt_key: str) -> Callable[[Any], Any]:
    """Before-validator: accept a union's tag under an older key (e.g. the seed's ``type``)."""

    def copy_tag(value: Any) -> Any:
        if isinstance(value, dict) and key not in value and alt_key in value:
            return {**value, key: value[alt_key]}
        return value

    return copy_tag


class Lenient:
    """Validator factory for the schema's leniency rules on one field."""

    @staticmethod
    def default_on_error(default_factory: Callable[[], Any]) -> WrapValidator:
        """``x-deserialize-default-on-error``: a malformed value becomes the default."""

        def validate(value: Any, handler: Callable[[Any], Any], info: ValidationInfo) -> Any:
            try:
                return handler(value)
            except ValidationError:
                if is_strict(info):
                    raise
                return default_factory()

        return WrapValidator(validate)

    @staticmethod
    def default_on_null(default_factory: Callable[[], Any]) -> WrapValidator:
        """``x-deserialize-default-on-null``: ``null`` becomes the default."""

        def validate(value: Any, handler: Callable[[Any], Any], info: ValidationInfo) -> Any:
            if value is None:
                return default_factory()
            return handler(value)

        return WrapValidator(validate)

    @staticmethod
    def skip_invalid_items() -> WrapValidator:
        """``x-deserialize-skip-invalid-items``: invalid list items are dropped, the rest kept."""

        def validate(value: Any, handler: Callable[[Any], Any], info: ValidationInfo) -> Any:
            try:
                return handler(value)
            except ValidationError:
                if is_strict(info) or not isinstance(value, list):
                    raise
                kept: list[Any] = []
                for item in value:
                    try:
                        kept.extend(handler([item]))
                    except ValidationError:
                        continue
                return kept

        return WrapValidator(validate)


def none_factory() -> None:
    return None


def const_factory(value: Any) -> Callable[[], Any]:
    """A default factory returning an immutable constant."""
    return lambda: value


def copy_factory(value: Any) -> Callable[[], Any]:
    """A default factory returning a fresh copy of a JSON container."""
    import copy

    return lambda: copy.deepcopy(value)
