"""Validation of a ``registry.json`` against the registry's own JSON Schemas (vendored:
``schemas/registry/``, a copy in this package's ``schemas/``).

The schemas use a small part of JSON Schema draft-07; this module interprets exactly that part
(``type``, ``required``, ``properties``, ``additionalProperties``, ``propertyNames``,
``enum``, ``pattern``, ``minLength``, ``minProperties``, ``items``, ``$ref``), read from the
schema files, so an update of the files is picked up as is. A keyword it does not know makes
loading fail (``tests/registry/test_schema.py`` loads them), rather than being skipped
silently. ``format`` is an annotation here, as in draft-07 by default; the archive URL's
scheme is checked where it is downloaded.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["registry_problems"]

#: keywords that only describe
_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "definitions", "format"})
_CHECKED = frozenset({"type", "required", "properties", "additionalProperties", "propertyNames", "enum",
                      "pattern", "minLength", "minProperties", "items", "$ref"})
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "number": (int, float), "integer": (int,), "null": (type(None),)}
#: at most this many problems are collected (a registry that is all wrong says so in a few)
_MAX_PROBLEMS = 20


@cache
def _load(name: str) -> dict[str, Any]:
    text = resources.files(__package__).joinpath("schemas").joinpath(name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    _check_keywords(schema, name)
    return schema


def _check_keywords(node: Any, where: str) -> None:
    if isinstance(node, dict):
        unknown = set(node) - _ANNOTATIONS - _CHECKED
        if unknown:
            raise ValueError(f"{where}: schema keywords this validator does not know: {sorted(unknown)}")
        for key in ("properties", "definitions"):
            for name, sub in node.get(key, {}).items():
                _check_keywords(sub, f"{where}/{key}/{name}")
        for key in ("additionalProperties", "propertyNames", "items"):
            if isinstance(node.get(key), dict):
                _check_keywords(node[key], f"{where}/{key}")


class _Walk:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, path: str, text: str) -> None:
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(f"{path or '(top)'}: {text}")

    def resolve(self, ref: str, doc: str) -> tuple[dict[str, Any], str]:
        name, _, pointer = ref.partition("#")
        doc = name or doc
        node: Any = _load(doc)
        for part in (p for p in pointer.split("/") if p):
            node = node[part]
        return node, doc

    def check(self, value: Any, schema: dict[str, Any], path: str, doc: str) -> None:
        if "$ref" in schema:
            target, where = self.resolve(schema["$ref"], doc)
            self.check(value, target, path, where)
            return
        wanted = schema.get("type")
        if wanted is not None:
            kinds = _TYPES[wanted]
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                self.fail(path, f"should be {'an' if wanted[0] in 'aeio' else 'a'} {wanted}, not "
                                f"{type(value).__name__ if value is not None else 'null'}")
                return
        if "enum" in schema and value not in schema["enum"]:
            self.fail(path, f"{value!r} is not one of {', '.join(map(repr, schema['enum']))}")
        if isinstance(value, str):
            if len(value) < schema.get("minLength", 0):
                self.fail(path, "should not be empty" if schema["minLength"] == 1 else "is too short")
            if "pattern" in schema and not re.search(schema["pattern"], value):
                self.fail(path, f"{value[:80]!r} does not match {schema['pattern']}")
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                self.check(item, schema["items"], f"{path}[{i}]", doc)
        elif isinstance(value, dict):
            self.check_object(value, schema, path, doc)

    def check_object(self, value: dict[str, Any], schema: dict[str, Any], path: str, doc: str) -> None:
        for key in schema.get("required", ()):
            if key not in value:
                self.fail(path, f"{key!r} is missing")
        if len(value) < schema.get("minProperties", 0):
            self.fail(path, f"should have at least {schema['minProperties']} member(s)")
        props: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        names = schema.get("propertyNames")
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if isinstance(names, dict):
                self.check(key, names, where, doc)
            if key in props:
                self.check(item, props[key], where, doc)
            elif extra is False:
                self.fail(path, f"unknown member {key!r}")
            elif isinstance(extra, dict):
                self.check(item, extra, where, doc)


def registry_problems(data: Any) -> list[str]:
    """What is wrong with ``data`` (a decoded ``registry.json``) against ``registry.schema.json``,
    one line each (path: reason), at most 20; empty when it is valid."""
    walk = _Walk()
    walk.check(data, _load("registry.schema.json"), "", "registry.schema.json")
    return walk.problems


def agent_problems(data: Any) -> list[str]:
    """What is wrong with one agent entry against ``agent.schema.json``."""
    walk = _Walk()
    walk.check(data, _load("agent.schema.json"), "", "agent.schema.json")
    return walk.problems
