"""The registry's schemas: the package's copies are the vendored files, the small validator
reads them and agrees with a full JSON Schema implementation (jsonschema, a test dependency)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from regutil import SNAPSHOT

from acplink.registry import _schema
from acplink.registry._schema import registry_problems

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "schemas" / "registry"
PACKAGED = ROOT / "src" / "acplink" / "registry" / "schemas"


def test_the_packaged_schemas_are_the_vendored_files() -> None:
    names = sorted(p.name for p in VENDORED.glob("*.json"))
    assert names == ["agent.schema.json", "registry.schema.json"]
    assert sorted(p.name for p in PACKAGED.glob("*.json")) == names
    for name in names:
        assert (PACKAGED / name).read_bytes() == (VENDORED / name).read_bytes(), name


def test_every_keyword_of_the_schemas_is_one_the_validator_knows() -> None:
    for name in ("agent.schema.json", "registry.schema.json"):
        _schema._load(name)  # (raises on an unknown keyword)
    with pytest.raises(ValueError, match="does not know"):
        _schema._check_keywords({"properties": {"x": {"oneOf": []}}}, "test")


def _reference(data: Any) -> bool:
    """Whether jsonschema (draft-07, the registry's $ref to agent.schema.json resolved) accepts ``data``."""
    from referencing import Registry, Resource

    agent = json.loads((VENDORED / "agent.schema.json").read_text())
    top = json.loads((VENDORED / "registry.schema.json").read_text())
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in (agent, top)])
    return jsonschema.Draft7Validator(top, registry=registry).is_valid(data)


def _mutations() -> list[tuple[str, Any]]:
    base = json.loads(SNAPSHOT.read_text())
    out: list[tuple[str, Any]] = [("snapshot", base)]

    def mutate(name: str, change: Any) -> None:
        data = copy.deepcopy(base)
        change(data)
        out.append((name, data))

    codex, gemini = base["agents"][0]["id"], base["agents"][1]["id"]
    assert (codex, gemini) == ("codex-acp", "gemini")
    mutate("no extensions", lambda d: d.pop("extensions"))
    mutate("unknown top member", lambda d: d.update(extra=1))
    mutate("version not semver", lambda d: d.update(version="one"))
    mutate("agents not a list", lambda d: d.update(agents={}))
    mutate("id upper case", lambda d: d["agents"][0].update(id="Codex"))
    mutate("empty name", lambda d: d["agents"][0].update(name=""))
    mutate("no description", lambda d: d["agents"][0].pop("description"))
    mutate("unknown distribution", lambda d: d["agents"][0]["distribution"].update(brew={"package": "x"}))
    mutate("empty distribution", lambda d: d["agents"][0].update(distribution={}))
    mutate("unknown platform", lambda d: d["agents"][0]["distribution"]["binary"].update(
        {"plan9-mips": {"archive": "https://x/y.zip", "cmd": "./y"}}))
    mutate("no cmd", lambda d: d["agents"][0]["distribution"]["binary"]["linux-x86_64"].pop("cmd"))
    mutate("bad sha256", lambda d: d["agents"][0]["distribution"]["binary"]["linux-x86_64"].update(sha256="abc"))
    mutate("good sha256", lambda d: d["agents"][0]["distribution"]["binary"]["linux-x86_64"].update(sha256="a" * 64))
    mutate("args not strings", lambda d: d["agents"][1]["distribution"]["npx"].update(args=[1]))
    mutate("env not strings", lambda d: d["agents"][1]["distribution"]["npx"].update(env={"A": 1}))
    mutate("env strings", lambda d: d["agents"][1]["distribution"]["npx"].update(env={"A": "1"}))
    mutate("empty package", lambda d: d["agents"][1]["distribution"]["npx"].update(package=""))
    mutate("uvx", lambda d: d["agents"][1]["distribution"].update(uvx={"package": "p==1", "args": ["acp"]}))
    mutate("boolean name", lambda d: d["agents"][1].update(name=True))
    mutate("website", lambda d: d["agents"][1].update(website="https://example.org"))
    mutate("not an object", lambda d: d["agents"].append(3))
    return out


@pytest.mark.parametrize(("name", "data"), _mutations(), ids=[n for n, _ in _mutations()])
def test_the_validator_agrees_with_jsonschema(name: str, data: Any) -> None:
    problems = registry_problems(data)
    assert (problems == []) == _reference(data), problems


def test_problems_name_the_path() -> None:
    data = json.loads(SNAPSHOT.read_text())
    data["agents"][2]["distribution"]["binary"]["linux-x86_64"]["sha256"] = "nope"
    assert registry_problems(data) == [
        "agents[2].distribution.binary.linux-x86_64.sha256: 'nope' does not match ^[a-fA-F0-9]{64}$"]
