#!/usr/bin/env python3
"""Generate ``acplink.schema`` from the official ACP JSON Schemas.

Pipeline: load the inputs → merge them into one set of definitions (each tagged with where it
came from) → parse that into an intermediate model (classes, aliases, methods) → emit Python
source from the intermediate model. Nothing is ever patched in emitted text.

    python tools/gen_schema.py            # write src/acplink/schema/v1/ and src/acplink/schema/v2/
    python tools/gen_schema.py --check    # exit 1 when the committed files differ from a fresh run

One package per protocol version (``schema/<version>/``: ``__init__.py``, ``_generated.py`` and
its ``.pyi``, ``_methods.py``, ``_stubs.py``); over all versions (``_gen_methods.py``): one
constant per method (``schema/methods.py``: ``SESSION_PROMPT = "session/prompt"``, the keys of
every ``_methods.py``) and the typed ``on`` of each side (``agent/_on.py``, ``client/_on.py``).
Inputs (relative to the schema folder: this
repository's ``schemas/`` (vendored, with provenance in ``schemas/README.md``), or
--schema-dir / $ACP_SCHEMA_DIR):

* v1: ``v1/schema.unstable.json`` (the superset), ``v1/schema.json`` (what is stable),
  ``extra/v1-2026-08-nes.unstable.json`` (NES), ``extra/v0.10.3.schema.json`` (legacy model
  selector), and this repo's ``tools/acp_extensions.json`` (documented acplink extensions);
* v2 (draft): ``v2/schema.unstable.json`` (the superset) and ``v2/schema.json`` (what is stable).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import keyword
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if str(Path(__file__).resolve().parent) not in sys.path:  # (its sibling, also when loaded by path)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import _gen_methods

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PKG = ROOT / "src" / "acplink" / "schema"
EXTENSIONS = ROOT / "tools" / "acp_extensions.json"

#: Which capability gates a method: (side that must advertise it, dotted wire path).
#: "agent" paths are read from InitializeResponse.agentCapabilities, "client" paths from
#: InitializeRequest.clientCapabilities. A test checks every path exists in the schema.
CAPABILITIES: dict[str, str] = {
    "fs/read_text_file": "client:fs.readTextFile",
    "fs/write_text_file": "client:fs.writeTextFile",
    "terminal/create": "client:terminal",
    "terminal/output": "client:terminal",
    "terminal/release": "client:terminal",
    "terminal/wait_for_exit": "client:terminal",
    "terminal/kill": "client:terminal",
    "elicitation/create": "client:elicitation",
    "elicitation/complete": "client:elicitation",
    "auth/status_update": "client:auth",
    "session/load": "agent:loadSession",
    "session/list": "agent:sessionCapabilities.list",
    "session/resume": "agent:sessionCapabilities.resume",
    "session/close": "agent:sessionCapabilities.close",
    "session/delete": "agent:sessionCapabilities.delete",
    "session/fork": "agent:sessionCapabilities.fork",
    "session/archive": "agent:sessionCapabilities.archive",
    "session/unarchive": "agent:sessionCapabilities.archive",
    "session/status": "agent:sessionCapabilities.status",
    "session/set_title": "agent:sessionCapabilities.title",
    "logout": "agent:auth.logout",
    "auth/status": "agent:auth.status",
    "providers/list": "agent:providers",
    "providers/set": "agent:providers",
    "providers/disable": "agent:providers",
    "nes/start": "agent:nes",
    "nes/suggest": "agent:nes",
    "nes/close": "agent:nes",
    "nes/accept": "agent:nes",
    "nes/reject": "agent:nes",
    "document/didOpen": "agent:nes",
    "document/didChange": "agent:nes",
    "document/didClose": "agent:nes",
    "document/didSave": "agent:nes",
    "document/didFocus": "agent:nes",
    "mcp/connect": "agent:mcpCapabilities.acp",
    "mcp/message": "agent:mcpCapabilities.acp",
    "mcp/disconnect": "agent:mcpCapabilities.acp",
}

#: The same for the v2 draft: capabilities moved under ``capabilities.session`` / ``.auth`` /
#: ``.elicitation`` (read from InitializeResponse.capabilities / InitializeRequest.capabilities).
CAPABILITIES_V2: dict[str, str] = {
    "elicitation/create": "client:elicitation",
    "elicitation/complete": "client:elicitation",
    "auth/status_update": "client:auth",
    "session/delete": "agent:session.delete",
    "session/fork": "agent:session.fork",
    "session/archive": "agent:session.archive",
    "session/unarchive": "agent:session.archive",
    "session/status": "agent:session.status",
    "session/set_title": "agent:session.title",
    "auth/status": "agent:auth.status",
    "providers/list": "agent:providers",
    "providers/set": "agent:providers",
    "providers/disable": "agent:providers",
    "mcp/message": "agent:session.mcp.acp",
}


@dataclass(frozen=True)
class Version:
    """One protocol version: its inputs (the superset first, then the stable marks, then extra
    definitions), whether acplink's extensions apply, and which capability gates each method."""

    name: str
    number: int
    inputs: tuple[tuple[str, str], ...]  # (file, stability given to definitions first seen in it)
    extensions: bool
    capabilities: dict[str, str]

    @property
    def out(self) -> Path:
        return SCHEMA_PKG / self.name


VERSIONS: tuple[Version, ...] = (
    Version("v1", 1, (("v1/schema.unstable.json", "unstable"), ("v1/schema.json", "stable"),
                      ("extra/v1-2026-08-nes.unstable.json", "nes"), ("extra/v0.10.3.schema.json", "legacy")),
            True, CAPABILITIES),
    Version("v2", 2, (("v2/schema.unstable.json", "unstable"), ("v2/schema.json", "stable")),
            False, CAPABILITIES_V2),
)

#: patch semantics in a field's description: omitted = unchanged, null = cleared, value = replaced
#: public names of variant classes whose generated name, ``<Union><Tag>``, leaks the
#: machinery into the API (``type(update).__name__``, docs); the generated name stays
#: importable as an alias of the public one. SessionUpdate's ``tool_call_update`` variant is
#: ``ToolCallProgress`` (the official Python SDK's name for it), not ``ToolCallUpdate``: both
#: schemas (v1 and v2) already define ``ToolCallUpdate`` — the fields of a tool call update,
#: also the ``toolCall`` of a permission request (which must not carry a ``sessionUpdate``
#: tag) — and that definition is the variant's base class, so ``isinstance(update,
#: ToolCallUpdate)`` holds for every tool call update, next to ``ToolCall`` for the start.
PUBLIC_NAMES: dict[str, str] = {"SessionUpdateToolCallUpdate": "ToolCallProgress"}

PATCH_DOC = re.compile(r"patch semantics|Omission leaves|Omitted leaves|Omission means no\s+change")

SPEC_URL = re.compile(r"https://agentclientprotocol\.com/[^\s)\]]+")
RESERVED = {
    "model_config", "model_fields", "model_computed_fields", "model_extra", "model_fields_set",
    "model_construct", "model_copy", "model_dump_json", "model_json_schema", "model_parametrized_name",
    "model_post_init", "model_rebuild", "model_validate_json", "model_validate_strings", "model_dump", "model_validate", "schema", "json", "dict",
    "copy", "construct", "validate", "fields", "parse_obj", "parse_raw", "from_orm",
    "update_forward_refs", "to_wire", "to_json", "tag", "raw",
}


# --------------------------------------------------------------------------------------------
# Intermediate model
# --------------------------------------------------------------------------------------------


@dataclass
class TypeIR:
    """A type expression: kind is ref | prim | list | dict | literal | union."""

    kind: str
    name: str = ""  # ref target or primitive name
    items: list[TypeIR] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)  # literal values

    def nullable(self) -> bool:
        if self.kind == "prim" and self.name in ("None", "Any"):
            return True
        return self.kind == "union" and any(t.nullable() for t in self.items)


@dataclass
class FieldIR:
    wire: str
    py: str
    type: TypeIR
    required: bool
    default: Any = None
    has_default: bool = False
    lenient_error: bool = False
    lenient_null: bool = False
    skip_invalid: bool = False
    is_tag: bool = False
    patch: bool = False  # unset / null / value mean three different things


@dataclass
class ClassIR:
    name: str
    base: str
    fields: list[FieldIR]
    doc: str
    origin: str  # the schema definition this class stands for, or is part of
    unknown_of: str = ""  # for unknown-variant classes: the union's name
    tag_key: str = ""

    def field(self, wire: str) -> FieldIR | None:
        return next((f for f in self.fields if f.wire == wire), None)


@dataclass
class AliasIR:
    name: str
    doc: str
    type: TypeIR | None = None  # plain alias
    # tagged unions
    tag_key: str = ""
    tag_py: str = ""
    alt_key: str = ""
    members: list[tuple[str, str]] = field(default_factory=list)  # (tag, class name)
    fallback: str = ""  # class for unknown tags
    untagged: str = ""  # class for a missing tag


@dataclass
class MethodIR:
    method: str
    side: str
    kind: str  # request | notification
    params: str
    result: str | None
    stability: str
    capability: str | None


@dataclass
class SchemaIR:
    classes: dict[str, ClassIR] = field(default_factory=dict)
    aliases: dict[str, AliasIR] = field(default_factory=dict)
    methods: list[MethodIR] = field(default_factory=list)
    stability: dict[str, str] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)  # schema def -> generated name
    renamed: dict[str, str] = field(default_factory=dict)  # generated name -> public name (PUBLIC_NAMES)


# --------------------------------------------------------------------------------------------
# Loading and merging
# --------------------------------------------------------------------------------------------


def schema_dir() -> Path:
    env = os.environ.get("ACP_SCHEMA_DIR")
    if env:
        return Path(env)
    return ROOT / "schemas"


def load_inputs(base: Path, version: Version) -> tuple[dict[str, Any], dict[str, str], dict[str, Any], list[tuple[str, str]]]:
    """Merged definitions, the stability of each, the extension patches, and input digests."""
    digests: list[tuple[str, str]] = []
    loaded: dict[str, dict[str, Any]] = {}
    for rel, _ in version.inputs:
        raw = (base / rel).read_bytes()
        digests.append((rel, hashlib.sha256(raw).hexdigest()))
        loaded[rel] = json.loads(raw)["$defs"]
    superset, stable_rel = version.inputs[0][0], version.inputs[1][0]
    defs: dict[str, Any] = copy.deepcopy(loaded[superset])
    stable = loaded[stable_rel]
    stability = {n: ("stable" if n in stable else "unstable") for n in defs}
    for rel, tag in version.inputs[2:]:
        for name, d in loaded[rel].items():
            if name not in defs:
                defs[name] = copy.deepcopy(d)
                stability[name] = tag
            else:
                # properties that newer schemas dropped stay available (e.g. the legacy `models`)
                props = defs[name].get("properties")
                for pname, pschema in d.get("properties", {}).items():
                    if props is not None and pname not in props:
                        props[pname] = copy.deepcopy(pschema)
    if not version.extensions:
        return defs, stability, {}, digests
    ext_raw = EXTENSIONS.read_bytes()
    digests.append(("tools/acp_extensions.json", hashlib.sha256(ext_raw).hexdigest()))
    ext = json.loads(ext_raw)
    for name, d in ext["$defs"].items():
        defs[name] = d
        stability[name] = "extension"
    for name, variants in ext.get("x-add-variants", {}).items():
        key = "oneOf" if "oneOf" in defs[name] else "anyOf"
        defs[name][key].extend(variants)
    for name, props in ext.get("x-add-properties", {}).items():
        defs[name]["properties"].update(props)
    return defs, stability, ext, digests


# --------------------------------------------------------------------------------------------
# Parsing into the intermediate model
# --------------------------------------------------------------------------------------------


def snake(name: str) -> str:
    if name == "_meta":
        return "meta"
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s).lower()
    s = re.sub(r"[^a-z0-9_]", "_", s)
    if keyword.iskeyword(s) or s in RESERVED:
        s += "_"
    return s


def pascal(text: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", text) if p)


def ref_name(s: dict[str, Any]) -> str | None:
    if "$ref" in s:
        return str(s["$ref"]).rsplit("/", 1)[-1]
    all_of = s.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).rsplit("/", 1)[-1]
    return None


def spec_link(s: dict[str, Any]) -> str:
    m = SPEC_URL.search(str(s.get("description", "")))
    return m.group(0) if m else ""


PRIMS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


class Parser:
    def __init__(self, defs: dict[str, Any], stability: dict[str, str], ext: dict[str, Any],
                 capabilities: dict[str, str]) -> None:
        self.defs = defs
        self.capabilities = capabilities
        self.stability = stability
        self.alt_keys: dict[str, str] = ext.get("x-alt-discriminator", {})
        self.ir = SchemaIR(stability=dict(stability))
        #: (new union, inner union, carried fields, outer union) for finish()
        self._pending_carry: list[tuple[str, str, list[FieldIR], str]] = []
        self.refcount: dict[str, int] = {}
        self._count_refs(defs)
        #: which definitions reference each definition
        self.users: dict[str, set[str]] = {}
        for dname, d in defs.items():
            for target in self._refs_in(d):
                self.users.setdefault(target, set()).add(dname)
        #: how many union variants reference each definition (tag goes on the class if one)
        self.variant_uses: dict[str, int] = {}
        for d in defs.values():
            for v in self._variants(d):
                r = ref_name(v)
                if r and "properties" in v:
                    self.variant_uses[r] = self.variant_uses.get(r, 0) + 1
        # which definitions become unions (aliases) rather than classes
        self.union_defs = {n for n, d in defs.items() if self._is_union(d)}

    def _count_refs(self, node: Any) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                n = str(node["$ref"]).rsplit("/", 1)[-1]
                self.refcount[n] = self.refcount.get(n, 0) + 1
            for v in node.values():
                self._count_refs(v)
        elif isinstance(node, list):
            for v in node:
                self._count_refs(v)

    def _refs_in(self, node: Any) -> set[str]:
        found: set[str] = set()
        if isinstance(node, dict):
            if "$ref" in node:
                found.add(str(node["$ref"]).rsplit("/", 1)[-1])
            for v in node.values():
                found |= self._refs_in(v)
        elif isinstance(node, list):
            for v in node:
                found |= self._refs_in(v)
        return found

    @staticmethod
    def _variants(d: dict[str, Any]) -> list[dict[str, Any]]:
        v = d.get("oneOf") or d.get("anyOf") or []
        return list(v)

    def _is_union(self, d: dict[str, Any]) -> bool:
        return bool(self._variants(d))

    # -- type expressions --------------------------------------------------------------------

    def type_of(self, s: dict[str, Any]) -> TypeIR:
        r = ref_name(s)
        if r is not None:
            return TypeIR("ref", r)
        if "const" in s:
            return TypeIR("literal", values=[s["const"]])
        if "enum" in s:
            return TypeIR("literal", values=list(s["enum"]))
        variants = s.get("anyOf") or s.get("oneOf")
        if variants:
            return self._union([self.type_of(v) for v in variants])
        t = s.get("type")
        if isinstance(t, list):
            return self._union([self.type_of({**s, "type": x}) for x in t])
        if t == "array":
            return TypeIR("list", items=[self.type_of(s.get("items", {}))])
        if t == "object":
            ap = s.get("additionalProperties")
            value = self.type_of(ap) if isinstance(ap, dict) else TypeIR("prim", "Any")
            return TypeIR("dict", items=[value])
        if t in PRIMS:
            return TypeIR("prim", PRIMS[t])
        return TypeIR("prim", "Any")

    @staticmethod
    def _union(items: list[TypeIR]) -> TypeIR:
        flat: list[TypeIR] = []
        for t in items:
            for x in t.items if t.kind == "union" else [t]:
                if x not in flat:
                    flat.append(x)
        lits = [x for x in flat if x.kind == "literal"]
        if len(lits) > 1:
            merged = TypeIR("literal", values=[v for x in lits for v in x.values])
            flat = [merged if x is lits[0] else x for x in flat if x not in lits[1:]]
        if any(x.kind == "prim" and x.name == "Any" for x in flat):
            return TypeIR("prim", "Any")
        return flat[0] if len(flat) == 1 else TypeIR("union", items=flat)

    # -- fields --------------------------------------------------------------------------------

    def fields_of(self, props: dict[str, Any], required: list[str]) -> list[FieldIR]:
        out: list[FieldIR] = []
        for wire, ps in props.items():
            t = self.type_of(ps)
            req = wire in required
            f = FieldIR(
                wire=wire,
                py=snake(wire),
                type=t,
                required=req,
                lenient_error=bool(ps.get("x-deserialize-default-on-error")),
                lenient_null=bool(ps.get("x-deserialize-default-on-null")),
                skip_invalid=bool(ps.get("x-deserialize-skip-invalid-items")),
                patch=bool(PATCH_DOC.search(str(ps.get("description", "")))),
            )
            if "default" in ps:
                f.default, f.has_default = ps["default"], True
            elif f.lenient_null and t.kind == "list":
                f.default, f.has_default = [], True
            out.append(f)
        return out

    def tag_field(self, key: str, value: str | None) -> FieldIR:
        t = TypeIR("literal", values=[value]) if value is not None else TypeIR("prim", "str")
        return FieldIR(wire=key, py=snake(key), type=t, required=value is None,
                       default=value, has_default=value is not None, is_tag=True)

    # -- definitions ---------------------------------------------------------------------------

    def run(self) -> SchemaIR:
        for name in sorted(self.defs):  # plain classes and aliases first, then unions over them
            d = self.defs[name]
            self.ir.definitions[name] = name
            if name in self.union_defs:
                continue
            if "properties" in d or d.get("type") == "object":
                props = d.get("properties", {})
                self.ir.classes[name] = ClassIR(
                    name, "AcpModel", self.fields_of(props, d.get("required", [])),
                    self.doc(name, d), name)
            else:
                self.ir.aliases[name] = AliasIR(name, self.doc(name, d), type=self.type_of(d))
        for name in sorted(self.union_defs):
            self.parse_union(name, self.defs[name])
        self.methods()
        return self.ir

    def doc(self, name: str, d: dict[str, Any]) -> str:
        parts = []
        method, side = d.get("x-method"), d.get("x-side")
        if method:
            what = ("request params" if name.endswith("Request") else
                    "result" if name.endswith("Response") else "notification params")
            parts.append(f"`{method}` {what}; handled by the {side} side.")
        else:
            parts.append(f"ACP type `{name}`.")
        parts.append({"stable": "Stable.", "unstable": "Unstable.",
                      "nes": "Unstable (Next Edit Suggestions, schema 2026-08).",
                      "legacy": "Legacy (schema 0.10.3).",
                      "extension": "acplink extension (docs/extensions.md)."}[self.stability[name]])
        link = spec_link(d)
        if link:
            parts.append(f"Spec: {link}")
        return " ".join(parts)

    def parse_union(self, name: str, d: dict[str, Any]) -> None:
        variants = self._variants(d)
        doc = self.doc(name, d)
        base_props = d.get("properties", {})
        if not base_props and not any("properties" in v for v in variants):
            # closed sets of strings / integers, and unions of plain types or references
            self.ir.aliases[name] = AliasIR(name, doc, type=self.type_of({"anyOf": variants}))
            return
        tag_key = (d.get("discriminator") or {}).get("propertyName")
        if not tag_key:
            keys = {k for v in variants for k, ps in v.get("properties", {}).items() if "const" in ps}
            tag_key = keys.pop() if len(keys) == 1 else None
        base_req = d.get("required", [])
        alias = AliasIR(name, doc)
        plain: list[TypeIR] = []
        for v in variants:
            if v == {"type": "null"} or v.get("type") == "null":
                plain.append(TypeIR("prim", "None"))
                continue
            r = ref_name(v)
            own = dict(v.get("properties", {}))
            tag_schema = own.pop(tag_key, None) if tag_key else None
            if tag_schema is None and r and not own and not base_props:
                # a bare reference: a plain member, or the untagged default of a tagged union
                if tag_key:
                    alias.untagged = r
                plain.append(TypeIR("ref", r))
                continue
            if tag_schema is None and not own and not r and not base_props:
                plain.append(self.type_of(v))
                continue
            tag_value = tag_schema.get("const") if tag_schema else None
            label = tag_value or v.get("title") or "variant"
            fields = self.fields_of(base_props, base_req) + self.fields_of(own, v.get("required", []))
            cls_name: str
            if (r and r in self.ir.classes and not base_props and not own and self.variant_uses.get(r, 0) == 1
                    and self.users.get(r) == {name}):
                cls_name = r  # the referenced class is this variant: give it the tag directly
                cls = self.ir.classes[r]
            elif r and r in self.union_defs:
                cls_name = ""  # nested union: push the tag into its classes below
                cls = None
            else:
                if r and self.variant_uses.get(r, 0) > 1 and not base_props:
                    cls_name = pascal(label)
                    if cls_name in self.defs or cls_name in self.ir.classes:
                        cls_name = name + pascal(label)
                else:
                    cls_name = name + pascal(label)
                public = PUBLIC_NAMES.get(cls_name)
                if public is not None:
                    assert public not in self.defs and public not in self.ir.classes, f"{public} is taken"
                    self.ir.renamed[cls_name] = public
                    cls_name = public
                cls = ClassIR(cls_name, r or "AcpModel", fields, f"Variant `{label}` of `{name}`.", name)
                self.ir.classes[cls_name] = cls
            # a variant whose tag must be null (or absent), e.g. IdleStateUpdate's "none": the
            # untagged member of the union, not its "other" fallback
            null_tag = tag_schema is not None and tag_schema.get("type") == "null"
            if tag_key and cls is not None and null_tag:
                cls.fields = [f for f in cls.fields if f.wire != tag_key] + [
                    FieldIR(wire=tag_key, py=snake(tag_key), type=TypeIR("prim", "None"), required=False,
                            default=None, has_default=True)]
            elif tag_key and cls is not None and tag_schema is not None:
                self._set_tag(cls, tag_key, tag_value)
            if tag_key and null_tag:
                alias.untagged = cls_name
                plain.append(TypeIR("ref", cls_name))
            elif tag_key and tag_schema is not None:
                if tag_value is None:
                    alias.fallback = cls_name
                    alias.members.append(("__other__", cls_name))
                elif cls is None and r and base_props:
                    # a variant that is itself a union, under a union with properties of its own
                    # (CreateElicitationRequest's form/url): a union of subclasses carrying them,
                    # built in finish() once the inner union's classes exist
                    carried = name + pascal(tag_value)
                    alias.members.append((tag_value, carried))
                    self._push_tag(r, tag_key, tag_value)
                    self._pending_carry.append((carried, r, self.fields_of(base_props, base_req), name))
                elif cls is None and r:
                    alias.members.append((tag_value, r))
                    self._push_tag(r, tag_key, tag_value)
                else:
                    alias.members.append((tag_value, cls_name))
            elif tag_key and tag_schema is None and cls is not None:
                alias.untagged = cls_name
                plain.append(TypeIR("ref", cls_name))
            else:
                plain.append(TypeIR("ref", cls_name))
        if tag_key:
            alias.tag_key, alias.tag_py = tag_key, snake(tag_key)
            alias.alt_key = self.alt_keys.get(name, "")
            if alias.untagged:
                alias.members.append(("__untagged__", alias.untagged))
            if not alias.fallback:
                unk = "Unknown" + name
                if unk in self.defs:
                    unk = name + "Unknown"
                self.ir.classes[unk] = ClassIR(unk, "UnknownVariant", [],
                                               f"An unknown variant of `{name}`, kept as raw data.",
                                               name, unknown_of=name, tag_key=tag_key)
                alias.fallback = unk
                alias.members.append(("__unknown__", unk))
        else:
            alias.type = self._union(plain)
        self.ir.aliases[name] = alias

    def _set_tag(self, cls: ClassIR, key: str, value: str | None) -> None:
        cls.fields = [f for f in cls.fields if f.wire != key] + [self.tag_field(key, value)]

    def _push_tag(self, union: str, key: str, value: str) -> None:
        """A tagged variant that is itself a union: every class of that union carries the tag."""
        self._pending_push = getattr(self, "_pending_push", [])
        self._pending_push.append((union, key, value))

    def finish(self) -> None:
        for union, key, value in getattr(self, "_pending_push", []):
            for cname, cls in list(self.ir.classes.items()):
                if cls.origin == union and cname != union:
                    extra = self.tag_field(key, value)
                    extra.is_tag = True
                    cls.fields = [f for f in cls.fields if f.wire != key] + [extra]
        for carried, inner, fields, outer in self._pending_carry:
            members = [c for c, cls in list(self.ir.classes.items()) if cls.origin == inner and c != inner]
            subs = []
            for member in sorted(members):
                sub = carried + member.removeprefix(inner)
                self.ir.classes[sub] = ClassIR(sub, member, [FieldIR(**vars(f)) for f in fields],
                                               f"`{member}` as a variant of `{outer}`.", carried)
                subs.append(TypeIR("ref", sub))
            self.ir.aliases[carried] = AliasIR(carried, f"Variant `{carried}` of `{outer}`.",
                                               type=self._union(subs))
            self.ir.stability[carried] = self.stability[outer]

    # -- methods -------------------------------------------------------------------------------

    def methods(self) -> None:
        by_method: dict[str, dict[str, tuple[str, str]]] = {}
        for name, d in self.defs.items():
            if "x-method" not in d:
                continue
            m, side = d["x-method"], d["x-side"]
            kind = ("request" if name.endswith("Request") else
                    "response" if name.endswith("Response") else "notification")
            slot = by_method.setdefault(m, {})
            if kind in slot:
                # a definition the current schema already covers (older name for the same method)
                if self.stability[slot[kind][0]] in ("stable", "unstable", "extension"):
                    continue
            slot[kind] = (name, side)
        for m in sorted(by_method):
            slot = by_method[m]
            if "request" in slot:
                req, side = slot["request"]
                res = slot.get("response", (None, side))[0]
                self.ir.methods.append(MethodIR(m, side, "request", req, res,
                                                self.stability[req], self.capability(m, side)))
            if "notification" in slot:
                note, side = slot["notification"]
                self.ir.methods.append(MethodIR(m, side, "notification", note, None,
                                                self.stability[note], self.capability(m, side)))

    def capability(self, method: str, side: str) -> str | None:
        cap = self.capabilities.get(method)
        if cap is None:
            return None
        # mcp/message is a request handled by the client and a notification handled by the agent
        if method == "mcp/message" and side == "client":
            return None
        return cap


# --------------------------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------------------------


def py_literal(v: Any) -> str:
    return repr(v)


class Emitter:
    def __init__(self, ir: SchemaIR, digests: list[tuple[str, str]]) -> None:
        self.ir = ir
        self.digests = digests
        self.factories: dict[str, str] = {}
        #: names emitted so far (None: no quoting, for modules that do not define the types)
        self.defined: set[str] | None = None
        self.known_names = set(ir.classes) | set(ir.aliases)

    def header(self, what: str, *, future: bool = True) -> list[str]:
        lines = [f'"""{what}', "", "GENERATED by tools/gen_schema.py. Do not edit: change the generator and rerun it.", "", "Inputs:"]
        lines += [f"    {rel}  sha256={digest}" for rel, digest in self.digests]
        lines += ['"""', "", "# ruff: noqa", "# mypy: ignore-errors", ""]
        if future:
            lines += ["from __future__ import annotations", ""]
        return lines

    def name_src(self, name: str) -> str:
        """A reference to a generated name: quoted (a forward reference, resolved when the
        model is first built) only when it is defined further down the module."""
        if self.defined is not None and name in self.known_names and name not in self.defined:
            return repr(name)
        return name

    def type_src(self, t: TypeIR) -> str:
        if t.kind == "ref":
            return self.name_src(t.name)
        if t.kind == "prim":
            return t.name
        if t.kind == "list":
            return f"List[{self.type_src(t.items[0])}]"
        if t.kind == "dict":
            return f"Dict[str, {self.type_src(t.items[0])}]"
        if t.kind == "literal":
            return "Literal[" + ", ".join(py_literal(v) for v in t.values) + "]"
        return "Union[" + ", ".join(self.type_src(x) for x in t.items) + "]"

    def default_src(self, f: FieldIR) -> str:
        """The source of a default value, or of a default factory when it is mutable."""
        v = f.default
        target = f.type
        if target.kind == "union":
            refs = [x for x in target.items if x.kind == "ref"]
            target = refs[0] if refs else target
        if isinstance(v, dict) and target.kind == "ref":
            return f"_model_factory({target.name!r}, {v!r})"
        if isinstance(v, (dict, list)):
            return f"_copy_factory({v!r})"
        return f"_const_factory({v!r})"

    def annotation_src(self, f: FieldIR) -> str:
        """The field's type as users see it (without the validators)."""
        t = self.type_src(f.type)
        if not f.required and not f.has_default and not f.type.nullable():
            t = f"Optional[{t}]"
        return t

    def field_src(self, f: FieldIR, *, with_validators: bool = True) -> str:
        t = self.annotation_src(f)
        validators = []
        if with_validators and (f.lenient_null or f.lenient_error or f.skip_invalid):
            fac = self.default_src(f) if f.has_default else "none_factory"
            if f.skip_invalid:
                validators.append("Lenient.skip_invalid_items()")
            if f.lenient_null:
                validators.append(f"Lenient.default_on_null({fac})")
            if f.lenient_error and not f.required:
                validators.append(f"Lenient.default_on_error({fac})")
        if validators:
            t = f"Annotated[{t}, {', '.join(validators)}]"
        args = []
        if f.required:
            pass
        elif f.has_default and isinstance(f.default, (dict, list)):
            args.append(f"default_factory={self.default_src(f)}")
        elif f.has_default:
            args.append(f"default={py_literal(f.default)}")
        else:
            args.append("default=None")
        if f.py != f.wire:
            args.append(f"alias={f.wire!r}")
        if args == ["default=None"]:
            return f"    {f.py}: {t} = None"
        if not args:
            return f"    {f.py}: {t}"
        if len(args) == 1 and args[0].startswith("default=") and not args[0].startswith("default_factory"):
            return f"    {f.py}: {t} = {args[0][len('default='):]}"
        return f"    {f.py}: {t} = Field({', '.join(args)})"

    def init_src(self, c: ClassIR) -> list[str]:
        """The stub's ``__init__``: keyword-only parameters named as the attributes, and a
        second overload with the wire names (the runtime model accepts both, not mixed).

        Written out because the ``__init__`` that type checkers derive from a pydantic model
        (pyright, and mypy without pydantic's plugin) names its parameters after
        ``Field(alias=...)``: the wire names only, so the documented ``Diff(old_text=...)``
        would fail.
        """
        if c.unknown_of:  # an unknown variant keeps whatever it is given
            return ["    def __init__(self, **data: Any) -> None: ..."]
        fields: dict[str, FieldIR] = {}  # the inherited fields first, as pydantic orders them
        for cls in self.class_chain(c):
            fields.update((f.py, f) for f in cls.fields)

        def signature(names: list[str]) -> list[str]:
            params = [f"{n}: {self.annotation_src(f)}" + ("" if f.required else " = ...")
                      for n, f in zip(names, fields.values(), strict=True)]
            if not params:
                return ["    def __init__(self) -> None: ..."]
            return ["    def __init__(", "        self,", "        *,", *[f"        {p}," for p in params],
                    "    ) -> None: ..."]

        snake_names = list(fields)
        wire_names = [f.wire for f in fields.values()]
        aliased = wire_names != snake_names and all(
            w.isidentifier() and not keyword.iskeyword(w) and w != "self" for w in wire_names)
        if not aliased:
            return signature(snake_names)
        return ["    @overload", *signature(snake_names), "    @overload", *signature(wire_names)]

    def class_chain(self, c: ClassIR) -> list[ClassIR]:
        """The generated classes ``c`` derives from, the farthest first, then ``c``."""
        chain = [c]
        while chain[0].base in self.ir.classes:
            chain.insert(0, self.ir.classes[chain[0].base])
        return chain

    def refs_of(self, t: TypeIR | None) -> list[str]:
        out: list[str] = []
        if t is None:
            return out
        if t.kind == "ref":
            out.append(t.name)
        for x in t.items:
            out.extend(self.refs_of(x))
        return out

    def emission_order(self) -> list[ClassIR | AliasIR]:
        """Classes and aliases in dependency order, so annotations are real objects that
        pydantic need not evaluate from strings (a large part of import time). Only the
        references that close a cycle are left as forward references. A base class always
        comes before its subclasses."""
        done: set[str] = set()
        active: set[str] = set()
        order: list[ClassIR | AliasIR] = []

        def deps(name: str) -> tuple[list[str], list[str]]:
            if name in self.ir.classes:
                c = self.ir.classes[name]
                soft = [r for f in c.fields for r in self.refs_of(f.type)]
                return ([c.base] if c.base in self.ir.classes else []), soft
            a = self.ir.aliases[name]
            soft = self.refs_of(a.type) + [c for _, c in a.members]
            soft += [n for n in (a.untagged, a.fallback) if n]
            return [], soft

        def visit(name: str) -> None:
            if name in done or name in active or name not in self.known_names:
                return
            active.add(name)
            hard, soft = deps(name)
            for d in hard:
                visit(d)
            for d in soft:
                visit(d)
            active.discard(name)
            done.add(name)
            order.append(self.ir.classes[name] if name in self.ir.classes else self.ir.aliases[name])

        for name in sorted(self.known_names):
            visit(name)
        return order

    def alias_src(self, a: AliasIR) -> list[str]:
        out = []
        if a.tag_key:
            out.append(f"{a.name} = {self.tagged_union_src(a)}")
        else:
            assert a.type is not None
            out.append(f"{a.name} = {self.type_src(a.type)}")
        out.append(f'"""{a.doc}"""')
        return out

    def tagged_union_src(self, a: AliasIR) -> str:
        """A tagged union: pydantic's native discriminated union over the tagged classes (fast,
        no Python on the hot path), then, left to right, nested unions, the untagged variant
        and the "other"/unknown fallback (which refuses known tags, so a malformed known
        variant is an error, not an unknown one)."""
        tagged = [self.name_src(c) for t, c in a.members if not t.startswith("__") and c in self.ir.classes]
        # a nested union is chosen by this union's tag too: its own untagged or fallback member
        # has the outer tag only as a defaulted field, so without the check any object (an
        # unknown kind, a malformed known one) could validate as that member
        nested = [f"Annotated[{self.name_src(c)}, BeforeValidator(require_tag({a.tag_key!r}, {t!r}))]"
                  if self._nested_is_loose(c) else self.name_src(c)
                  for t, c in a.members if not t.startswith("__") and c not in self.ir.classes]
        chain: list[str] = []
        if len(tagged) > 1:
            chain.append(f"Annotated[Union[{', '.join(tagged)}], Field(discriminator={a.tag_py!r})]")
        elif tagged:
            # one tagged variant: its tag has a default (for Python construction), so on input
            # the tag must be checked explicitly, or any object would pass as that variant
            (tag,) = [t for t, c in a.members if not t.startswith("__") and c in self.ir.classes]
            chain.append(f"Annotated[{tagged[0]}, BeforeValidator(require_tag({a.tag_key!r}, {tag!r}))]")
        chain.extend(nested)
        if a.untagged:
            chain.append(self.name_src(a.untagged))
        chain.append(self.name_src(a.fallback))
        src = f"Annotated[Union[{', '.join(chain)}], Field(union_mode='left_to_right')]"
        if a.alt_key:
            src = f"Annotated[{src}, BeforeValidator(alt_tag({a.tag_key!r}, {a.alt_key!r}))]"
        return src

    def _nested_is_loose(self, name: str) -> bool:
        """Whether a nested union can take an object without the outer tag: it has a fallback
        (its "other"/unknown member) or an untagged member, whose outer tag is only a default."""
        a = self.ir.aliases.get(name)
        return a is not None and bool(a.tag_key) and bool(a.untagged or a.fallback)

    def node_blocks(self, *, stub: bool = False) -> list[tuple[str, list[str], list[str]]]:
        """(name, source lines defining it, the names it refers to) in emission order; for
        the stub, fields without their validators, and an explicit ``__init__``."""
        fallback_of = {a.fallback: a for a in self.ir.aliases.values() if a.tag_key and a.fallback}
        blocks: list[tuple[str, list[str], list[str]]] = []
        self.defined = set()
        for node in self.emission_order():
            if isinstance(node, AliasIR):
                deps = self.refs_of(node.type) + [c for _, c in node.members]
                deps += [n for n in (node.untagged, node.fallback) if n]
                blocks.append((node.name, self.alias_src(node), deps))
                self.defined.add(node.name)
                continue
            c = node
            tags = tuple(f.py for f in c.fields if f.is_tag)
            bases = [c.base]
            union = fallback_of.get(c.name)
            if union is not None and not c.unknown_of:
                bases.insert(0, "FallbackVariant")
            if tags:
                bases.insert(0, "_TaggedMixin")
            lines = [f"class {c.name}({', '.join(bases)}):", f'    """{c.doc}"""', ""]
            if union is not None:
                known = sorted(t for t, _ in union.members if not t.startswith("__"))
                lines.append(f"    __acp_union__ = {union.name!r}")
                lines.append(f"    __acp_tag_key__ = {union.tag_key!r}")
                lines.append(f"    __acp_known__ = frozenset({known!r})")
            if tags:
                lines.append(f"    __acp_tag_fields__ = {tags!r}")
            patch = tuple(f.py for f in c.fields if f.patch)
            if patch:
                lines.append(f"    __acp_patch_fields__ = {patch!r}")
            # (a class that refers to itself gets a forward reference: its name is bound only after)
            for f in c.fields:
                lines.append(self.field_src(f, with_validators=not stub))
            if stub:
                lines += ["", *self.init_src(c)]
            elif not c.fields and union is None and not tags:
                lines.append("    pass")
            deps = ([c.base] if c.base in self.ir.classes else []) + [r for f in c.fields for r in self.refs_of(f.type)]
            blocks.append((c.name, lines, deps))
            self.defined.add(c.name)
        self.defined = None
        return blocks

    def models_prelude(self, what: str, *, stub: bool = False) -> list[str]:
        # no `from __future__ import annotations`: annotations are real objects (see emission_order)
        lines = self.header(what, future=False)
        lines += [
            f"from typing import Annotated, Any, Dict, List, Literal, Optional, Union{', overload' if stub else ''}",
            "",
            "from pydantic import BeforeValidator, Field",
            "",
            "from .._base import AcpModel, FallbackVariant, Lenient, UnknownVariant, _TaggedMixin, alt_tag, none_factory",
            "from .._base import require_tag",
            "from .._base import const_factory as _const_factory, copy_factory as _copy_factory",
            "",
        ]
        return lines

    def models_trailer(self) -> list[str]:
        lines = ["", "#: Every schema definition name -> 'stable' | 'unstable' | 'nes' | 'legacy' | 'extension'."]
        lines.append("STABILITY: Dict[str, str] = {")
        for name in sorted(self.ir.stability):
            lines.append(f"    {name!r}: {self.ir.stability[name]!r},")
        lines.append("}")
        lines.append("")
        lines.append("__all__ = [")
        for n in sorted(self.known_names | set(self.ir.renamed)):
            lines.append(f"    {n!r},")
        lines.append("]")
        lines.append("")
        return lines

    def renamed_aliases(self) -> list[str]:
        """The generated names of renamed classes (PUBLIC_NAMES), as aliases of the public ones."""
        if not self.ir.renamed:
            return []
        lines = ["", "#: the generated names of classes with a public name (tools/gen_schema.py PUBLIC_NAMES)"]
        lines += [f"{old} = {new}" for old, new in sorted(self.ir.renamed.items())]
        return [*lines, ""]

    def models_stub(self) -> str:
        """The type checkers' (and readers') view: every model as a plain class."""
        lines = self.models_prelude("Typed models for every ACP schema definition (the type checkers' view).",
                                    stub=True)
        lines += ["", "def _model_factory(name: str, value: Dict[str, Any]) -> Any: ...", ""]
        for _, block, _ in self.node_blocks(stub=True):
            lines += ["", *block, ""]
        lines += self.renamed_aliases()
        lines += self.models_trailer()
        return "\n".join(lines)

    def models(self) -> str:
        """The runtime module: each model is defined the first time it (or a model that needs
        it) is used, so importing the schema costs little. `_generated.pyi` is the same
        models as plain classes, for type checkers and readers."""
        lines = self.models_prelude(
            "Typed models for every ACP schema definition, built lazily on first use (see _generated.pyi).")
        lines += ["import gc as _gc", ""]
        blocks = self.node_blocks()
        for name, block, _ in blocks:
            lines += ["", f"def _d_{name}() -> Any:"]
            lines += [("    " + ln) if ln else "" for ln in block]
            if block[0].startswith("class "):
                lines.append(f"    {name}.__qualname__ = {name!r}")
            lines.append(f"    return {name}")
            lines.append("")
        # the generated names of renamed classes: the public class itself, once defined
        renamed = sorted(self.ir.renamed.items())
        for old, new in renamed:
            lines += ["", f"def _d_{old}() -> Any:", f"    return {new}", ""]
        lines.append("")
        lines.append("#: emission order and direct references of every generated name")
        lines.append("_ORDER: Dict[str, int] = {")
        for i, (name, _, _) in enumerate(blocks):
            lines.append(f"    {name!r}: {i},")
        for i, (old, _) in enumerate(renamed, len(blocks)):
            lines.append(f"    {old!r}: {i},")
        lines.append("}")
        lines.append("_DEPS: Dict[str, tuple] = {")
        for name, _, deps in blocks:
            uniq = sorted(set(d for d in deps if d in self.known_names and d != name))
            lines.append(f"    {name!r}: {tuple(uniq)!r},")
        for old, new in renamed:
            lines.append(f"    {old!r}: {(new,)!r},")
        lines.append("}")
        lines += [
            "",
            "",
            "def _get(name: str) -> Any:",
            "    \"\"\"Define ``name`` and everything it refers to (in emission order), once.\"\"\"",
            "    ns = globals()",
            "    if name in ns:",
            "        return ns[name]",
            "    todo, seen = [name], {name}",
            "    while todo:",
            "        for dep in _DEPS[todo.pop()]:",
            "            if dep not in seen and dep not in ns:",
            "                seen.add(dep)",
            "                todo.append(dep)",
            "    # class creation allocates a lot and frees nothing: the cyclic GC only costs here",
            "    paused = _gc.isenabled()",
            "    _gc.disable()",
            "    try:",
            "        for n in sorted(seen, key=_ORDER.__getitem__):",
            "            if n not in ns:",
            "                ns[n] = ns['_d_' + n]()",
            "    finally:",
            "        if paused:",
            "            _gc.enable()",
            "    return ns[name]",
            "",
            "",
            "def __getattr__(name: str) -> Any:",
            "    if name in _ORDER:",
            "        return _get(name)",
            "    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')",
            "",
            "",
            "def _model_factory(name: str, value: Dict[str, Any]) -> Any:",
            "    return lambda: _get(name).model_validate(value)",
            "",
        ]
        lines += self.models_trailer()
        return "\n".join(lines)

    def methods(self) -> str:
        lines = self.header("The ACP method registry: every `x-method` of every input schema.\n\n"
                            "Keyed by the method constants of ``acplink.schema.methods`` (one name per method).")
        lines += ["from .. import methods as _m", ""]
        lines.append("#: (method, side, kind, params type, result type or None, stability, capability or None)")
        lines.append("METHOD_TABLE: tuple[tuple[str, str, str, str, str | None, str, str | None], ...] = (")
        for m in self.ir.methods:
            lines.append(f"    (_m.{_gen_methods.constant(m.method)}, {m.side!r}, {m.kind!r}, {m.params!r}, "
                         f"{m.result!r}, {m.stability!r}, {m.capability!r}),")
        lines.append(")")
        lines.append("")
        return "\n".join(lines)


def stub_name(method: str) -> str:
    """Python name of a method stub: the wire name, snake_cased (`session/prompt` → `session_prompt`)."""
    return snake(re.sub(r"[/$]+", "_", method).strip("_")).rstrip("_")


def stubs(ir: SchemaIR, digests: list[tuple[str, str]]) -> str:
    em = Emitter(ir, digests)
    lines = em.header("Typed call stubs for every ACP method, one mixin per side.")
    lines += [
        "from typing import Any",
        "",
        "from . import _generated as _s",
        "",
        "",
        "class _Caller:",
        "    async def _call(self, method: str, params: Any, fields: dict[str, Any]) -> Any:",
        "        raise NotImplementedError",
        "",
        "    async def _notify(self, method: str, params: Any, fields: dict[str, Any]) -> None:",
        "        raise NotImplementedError",
        "",
    ]
    for cls, sides, who in (("AgentMethods", ("agent", "protocol"), "agent"),
                            ("ClientMethods", ("client", "protocol"), "client")):
        lines += ["", f"class {cls}(_Caller):",
                  f'    """Calls of every method the {who} handles (used by the other side)."""', ""]
        for m in ir.methods:
            if m.side not in sides or m.method == "$/cancel_request":
                continue
            name = stub_name(m.method)
            tag = {"stable": "", "unstable": " Unstable.", "nes": " Unstable (NES).",
                   "legacy": " Legacy.", "extension": " acplink extension."}[m.stability]
            if m.kind == "request":
                ret = f"_s.{m.result}" if m.result else "Any"
                lines.append(f"    async def {name}(self, params: _s.{m.params} | None = None, /, **fields: Any) -> {ret}:")
                lines.append(f'        """Send `{m.method}` and return its typed result.{tag}"""')
                lines.append(f"        return await self._call({m.method!r}, params, fields)")
            else:
                lines.append(f"    async def {name}(self, params: _s.{m.params} | None = None, /, **fields: Any) -> None:")
                lines.append(f'        """Send the `{m.method}` notification.{tag}"""')
                lines.append(f"        await self._notify({m.method!r}, params, fields)")
            lines.append("")
    return "\n".join(lines)


def package_init(ir: SchemaIR, digests: list[tuple[str, str]], version: Version) -> str:
    """The version's package: its models (lazily built), its method table and typed stubs."""
    em = Emitter(ir, digests)
    lines = em.header(f"ACP {version.name}: every schema definition as a model, the method table and the typed "
                      "call stubs.\n\nModels are built on first use (attribute access).", future=False)
    lines += [
        "from typing import TYPE_CHECKING",
        "",
        "from .._lazy import lazy_models",
        "from .._table import MethodInfo, MethodTable",
        "from . import _generated",
        "from ._generated import STABILITY",
        "from ._generated import __all__ as _generated_all",
        "from ._methods import METHOD_TABLE",
        "",
        "#: the protocol version number this package describes",
        "VERSION = " + str(version.number),
        "#: the method table of this version",
        "TABLE = MethodTable(METHOD_TABLE, _generated)",
        "METHODS: tuple[MethodInfo, ...] = TABLE.methods",
        "method_info = TABLE.info",
        "agent_methods = TABLE.agent_methods",
        "client_methods = TABLE.client_methods",
        "",
        "__all__ = [",
        '    "METHODS",',
        '    "STABILITY",',
        '    "TABLE",',
        '    "VERSION",',
        '    "agent_methods",',
        '    "client_methods",',
        '    "method_info",',
        "    *_generated_all,",
        "]",
        "",
        "if TYPE_CHECKING:",
        "    from ._generated import *",
        "else:",
        "    # models are built on first use (see _generated.py)",
        "    __getattr__, __dir__ = lazy_models(__name__, _generated, lambda: [*globals(), *__all__])",
        "",
    ]
    return "\n".join(lines)


def generate(base: Path) -> dict[Path, str]:
    out: dict[Path, str] = {}
    tables: list[tuple[str, list[MethodIR]]] = []
    all_digests: list[tuple[str, str]] = []
    for version in VERSIONS:
        defs, stability, ext, digests = load_inputs(base, version)
        parser = Parser(defs, stability, ext, version.capabilities)
        ir = parser.run()
        parser.finish()
        em = Emitter(ir, digests)
        d = version.out
        out[d / "__init__.py"] = package_init(ir, digests, version)
        out[d / "_generated.py"] = em.models()
        out[d / "_generated.pyi"] = em.models_stub()
        out[d / "_methods.py"] = em.methods()
        out[d / "_stubs.py"] = stubs(ir, digests)
        tables.append((version.name, ir.methods))
        all_digests += [dg for dg in digests if dg not in all_digests]
    # one constant per method (the union of the tables) and the typed `on` of each side
    out.update(_gen_methods.outputs(tables, all_digests))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail when the committed output is stale")
    ap.add_argument("--schema-dir", type=Path, default=None, help="folder of the ACP schemas")
    args = ap.parse_args(argv)
    base = args.schema_dir or schema_dir()
    if not all((base / v.inputs[0][0]).exists() for v in VERSIONS):
        print(f"gen_schema: no schemas at {base} (set --schema-dir or ACP_SCHEMA_DIR)", file=sys.stderr)
        return 2
    outputs = generate(base)
    if args.check:
        stale = [p for p, text in outputs.items() if not p.exists() or p.read_text() != text]
        for p in stale:
            print(f"gen_schema: {p.relative_to(ROOT)} is stale; run python tools/gen_schema.py", file=sys.stderr)
        return 1 if stale else 0
    for p, text in outputs.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        print(f"wrote {p.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
