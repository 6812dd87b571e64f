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
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic.functional_validators import WrapValidator
from pydantic_core import PydanticCustomError

__all__ = [
    "STRICT",
    "AcpModel",
    "Lenient",
    "UnknownVariant",
    "is_strict",
    "tag_of",
]

#: Parse context that turns the schema's leniency rules off: ``Model.model_validate(d, context=STRICT)``.
STRICT: Mapping[str, Any] = {"strict": True}


def is_strict(info: ValidationInfo | None) -> bool:
    """True when the current parse was asked to be strict."""
    ctx = info.context if info is not None else None
    return bool(ctx) and bool(ctx.get("strict"))  # type: ignore[union-attr]


class AcpModel(BaseModel):
    """Base class of every generated ACP model."""

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
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_json(self) -> bytes:
        """The wire JSON of this value (camelCase, unset omitted)."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_unset=True)


class _TaggedMixin:
    """Marks the discriminators of a tagged-union variant as set when built in Python.

    ``exclude_unset`` dumps would otherwise drop a tag that was only defaulted.
    """

    __acp_tag_fields__: tuple[str, ...] = ()

    def model_post_init(self, context: Any, /) -> None:
        self.__pydantic_fields_set__.update(self.__acp_tag_fields__)  # type: ignore[attr-defined]


class UnknownVariant(AcpModel):
    """Base of the explicit unknown-variant values of open tagged unions.

    The whole raw object is kept (as extra fields) and written back out unchanged. In strict
    mode a tag that is neither known nor ``_``-prefixed (a custom extension) is rejected.
    """

    __acp_union__: str = ""
    __acp_tag_key__: str = ""

    @model_validator(mode="wrap")
    @classmethod
    def _check_strict(cls, value: Any, handler: Callable[[Any], Any], info: ValidationInfo) -> Any:
        if is_strict(info) and isinstance(value, dict):
            tag = value.get(cls.__acp_tag_key__)
            if not (isinstance(tag, str) and tag.startswith("_")):
                raise PydanticCustomError(
                    "union_tag_invalid",
                    "unknown {tag_key} '{tag}' for {union} (strict mode)",
                    {"tag_key": cls.__acp_tag_key__, "tag": tag, "union": cls.__acp_union__},
                )
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


def tag_of(
    key: str,
    attr: str,
    known: frozenset[str],
    *,
    fallback: str | None = None,
    untagged: str | None = None,
    alt_key: str | None = None,
) -> Callable[[Any], Any]:
    """Build the discriminator function of a tagged union keyed by ``key`` (attribute ``attr``).

    Variants are registered under ``"<key>=<tag>"`` so that error paths name the tag, e.g.
    ``$.update[sessionUpdate=tool_call].content[0]``. Known tags select their variant; any
    other tag selects ``fallback`` (the union's "other" or unknown variant); a missing tag
    selects ``untagged`` (e.g. the stdio MCP server, which has no ``type``). Works on raw
    dicts (input) and on model instances (output).
    """
    ids = {tag: f"{key}={tag}" for tag in known}

    def discriminate(value: Any) -> Any:
        if isinstance(value, dict):
            tag = value.get(key, _MISSING)
            if tag is _MISSING and alt_key is not None:
                tag = value.get(alt_key, _MISSING)
        elif isinstance(value, UnknownVariant):
            return fallback
        else:
            tag = getattr(value, attr, _MISSING)
        if tag is _MISSING:
            return untagged
        if isinstance(tag, str):
            found = ids.get(tag)
            if found is not None:
                return found
        return fallback

    return discriminate


_MISSING: Any = object()


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


def model_factory(namespace: dict[str, Any], name: str, value: dict[str, Any]) -> Callable[[], Any]:
    """A default factory building model ``name`` (looked up lazily) from its wire dict."""
    return lambda: namespace[name].model_validate(value)
