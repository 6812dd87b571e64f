"""Everything in the official schemas is in ``acplink.schema``, under the same name, with the
right method table, stability marks and capability paths; the generated files are current."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from schema_support import INPUTS, LEGACY, NES, ROOT, SCHEMA_DIR, STABLE, UNSTABLE, defs_of

import acplink.schema as S
from acplink.schema import METHODS, STABILITY, method_info

# ---------------------------------------------------------------------------------------------
# definitions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", INPUTS)
def test_every_definition_is_exported(rel: str) -> None:
    missing = [n for n in defs_of(rel) if not hasattr(S, n)]
    assert not missing, f"{rel}: not in acplink.schema: {missing}"
    not_all = [n for n in defs_of(rel) if n not in S.__all__]
    assert not not_all, f"{rel}: not in acplink.schema.__all__: {not_all}"


def test_legacy_definitions_available() -> None:
    # v0.10.3's names stay available as models even where the current schema renamed them
    assert isinstance(S.KillTerminalCommandRequest, type)
    assert S.KillTerminalCommandRequest.__name__ == "KillTerminalCommandRequest"
    for name in ("SessionModelState", "SetSessionModelRequest", "SetSessionModelResponse"):
        assert hasattr(S, name)


# ---------------------------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------------------------


def _kind(name: str) -> str:
    if name.endswith("Request"):
        return "request"
    if name.endswith("Response"):
        return "response"
    return "notification"


def expected_methods() -> dict[tuple[str, str], dict[str, Any]]:
    """(method, kind) -> {side, params, result}: the current v1 unstable definition wins, then
    the NES schema, then v0.10.3."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for rel in (UNSTABLE, NES, LEGACY):
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        for name, d in defs_of(rel).items():
            if "x-method" not in d:
                continue
            kind = _kind(name)
            key = (d["x-method"], "request" if kind == "response" else kind)
            slot = seen.setdefault(key, {"side": d["x-side"], "params": None, "result": None})
            slot["result" if kind == "response" else "params"] = name
            if kind != "response":
                slot["side"] = d["x-side"]
        for key, slot in seen.items():
            out.setdefault(key, slot)
    return out


EXPECTED = expected_methods()


def test_expected_table_is_sane() -> None:
    assert ("session/prompt", "request") in EXPECTED
    assert ("session/update", "notification") in EXPECTED
    assert ("nes/start", "request") in EXPECTED
    assert ("session/set_model", "request") in EXPECTED
    assert len(EXPECTED) >= 50


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: f"{k[0]}:{k[1]}")
def test_method_in_registry(key: tuple[str, str]) -> None:
    method, kind = key
    want = EXPECTED[key]
    info = method_info(method, kind)
    assert info is not None, f"{method} ({kind}) missing from the registry"
    assert info.side == want["side"]
    assert info.kind == kind
    assert info.params_name == want["params"]
    assert info.result_name == want["result"]
    assert getattr(S, info.params_name) is info.params_type
    if kind == "request":
        assert info.result_type is getattr(S, want["result"])
    else:
        assert info.result_type is None


def test_registry_has_nothing_else() -> None:
    extra = {(m.method, m.kind) for m in METHODS} - set(EXPECTED)
    assert extra == {("session/stop", "request")}
    assert len({(m.method, m.kind) for m in METHODS}) == len(METHODS), "duplicate registry rows"


def test_current_definition_wins() -> None:
    kill = method_info("terminal/kill")
    assert kill is not None
    assert kill.params_name == "KillTerminalRequest"
    assert kill.result_name == "KillTerminalResponse"
    assert kill.stability == "stable"
    assert "KillTerminalCommandRequest" in defs_of(LEGACY)


def test_session_stop_is_an_extension() -> None:
    stop = method_info("session/stop")
    assert stop is not None
    assert stop.stability == "extension"
    assert stop.side == "agent"
    assert (stop.params_name, stop.result_name) == ("StopSessionRequest", "StopSessionResponse")
    assert STABILITY["StopSessionRequest"] == STABILITY["StopSessionResponse"] == "extension"


# ---------------------------------------------------------------------------------------------
# stability
# ---------------------------------------------------------------------------------------------


def expected_stability(name: str) -> str:
    if name in defs_of(STABLE):
        return "stable"
    if name in defs_of(UNSTABLE):
        return "unstable"
    if name in defs_of(NES):
        return "nes"
    if name in defs_of(LEGACY):
        return "legacy"
    raise KeyError(name)


ALL_DEFS = sorted(set().union(*(defs_of(rel) for rel in INPUTS)))


def test_stability_marks() -> None:
    wrong = {n: (STABILITY.get(n), expected_stability(n)) for n in ALL_DEFS if STABILITY.get(n) != expected_stability(n)}
    assert not wrong, f"(got, want): {wrong}"
    # spot checks of each class
    assert STABILITY["PromptRequest"] == "stable"
    assert STABILITY["ListSessionsResponse"] == "stable"
    assert STABILITY["PlanUpdate"] == "unstable"
    assert STABILITY["StartNesRequest"] == "nes"
    assert STABILITY["SetSessionModelRequest"] == "legacy"
    assert set(STABILITY.values()) == {"stable", "unstable", "nes", "legacy", "extension"}


@pytest.mark.parametrize("info", METHODS, ids=lambda m: f"{m.method}:{m.kind}")
def test_method_stability(info: Any) -> None:
    if info.method == "session/stop":
        assert info.stability == "extension"
    else:
        assert info.stability == expected_stability(info.params_name)
    assert info.stable == (info.stability == "stable")


# ---------------------------------------------------------------------------------------------
# capabilities
# ---------------------------------------------------------------------------------------------


def merged_properties(defs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The properties of ``name`` in any input (later inputs add what earlier ones dropped)."""
    props: dict[str, Any] = {}
    for d in defs:
        if name in d:
            for k, v in d[name].get("properties", {}).items():
                props.setdefault(k, v)
    return props


def _ref_target(schema: dict[str, Any]) -> str | None:
    for s in [schema, *schema.get("allOf", []), *schema.get("anyOf", []), *schema.get("oneOf", [])]:
        if "$ref" in s:
            return str(s["$ref"]).rsplit("/", 1)[-1]
    return None


def capability_exists(path: str) -> bool:
    side, _, dotted = path.partition(":")
    root = {"client": "ClientCapabilities", "agent": "AgentCapabilities"}[side]
    inputs = [defs_of(rel) for rel in (UNSTABLE, NES, LEGACY)]
    current: str | None = root
    for part in dotted.split("."):
        if current is None:
            return False
        props = merged_properties(inputs, current)
        if part not in props:
            return False
        current = _ref_target(props[part])
    return True


def test_capability_lookup_works() -> None:
    assert capability_exists("client:fs.readTextFile")
    assert capability_exists("agent:sessionCapabilities.list")
    assert not capability_exists("client:fs.nope")
    assert not capability_exists("agent:nope")


@pytest.mark.parametrize("info", [m for m in METHODS if m.capability], ids=lambda m: f"{m.method}:{m.kind}")
def test_capability_paths_exist(info: Any) -> None:
    assert info.capability.split(":")[0] in ("client", "agent")
    assert capability_exists(info.capability), info.capability


def test_capability_paths_present() -> None:
    caps = {m.method: m.capability for m in METHODS if m.kind == "request"}
    assert caps["fs/read_text_file"] == "client:fs.readTextFile"
    assert caps["session/list"] == "agent:sessionCapabilities.list"
    assert caps["session/load"] == "agent:loadSession"
    assert caps["initialize"] is None


# ---------------------------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------------------------


def test_generated_files_are_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_schema.py"), "--check", "--schema-dir", str(SCHEMA_DIR)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("_acplink_gen_schema", ROOT / "tools" / "gen_schema.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return mod


def test_generator_is_deterministic() -> None:
    gen = _load_generator()
    try:
        first = gen.generate(SCHEMA_DIR)
        second = gen.generate(SCHEMA_DIR)
    finally:
        sys.modules.pop("_acplink_gen_schema", None)
    assert set(first) == set(second)
    for path in first:
        assert first[path] == second[path], f"{Path(path).name} differs between two runs"
        assert Path(path).read_text() == first[path], f"{Path(path).name} is stale"
