"""The layers import downwards only: schema → rpc → transports → connection → agent/client → cli."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "acplink"

#: package → rank; a module may import only packages of lower or equal rank
RANK = {
    "errors": 0,
    "_version": 0,
    "runtime": 0,
    "_text": 0,
    "_tasks": 0,
    "_lazy": 0,
    "_extras": 0,
    "_listen": 0,  # the listening socket of acplink's servers (standard library only)
    "_record": 0,
    "_mcp_relay": 0,  # the stdio relay: a program of its own, standard library only
    "schema": 1,
    "methods": 1,  # the public home of schema/methods.py's constants
    "protocol": 1.5,  # the protocol object of each version: between schema and rpc
    "mcp": 1.5,  # MCP-over-ACP's shared, I/O-free part (the call a handler gets, the binding)
    "rpc": 2,
    "transports": 3,
    "connection": 4,
    "registry": 4.5,  # the agent registry: an agent id → a command line (client's connect uses it)
    "agent": 5,
    "client": 5,
    "builders": 5,
    "conformance": 6,
    "demo": 6,
    "testing": 6,
    "tools": 6,
    "server": 7,
    "proxy": 7,  # proxy chains: the proxy API and the conductor (beside server/)
    "devtools": 7,
    "bridges": 7.5,  # ACP agents behind other protocols (acplink mcp-server): clients of the client API
    "adapters": 5.5,  # framework adapters (Pydantic AI, LangGraph): AgentApps built on the agent API
    "cli": 8,
}


def _package(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0].removesuffix(".py") if rel.parts else ""


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    pkg_parts = path.relative_to(SRC).parts[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(pkg_parts)[: len(pkg_parts) - node.level + 1]
                target = [*base, *(node.module.split(".") if node.module else [])]
            elif node.module and node.module.startswith("acplink"):
                target = node.module.split(".")[1:]
            else:
                continue
            if target:
                out.append(target[0])
            else:  # `from . import x` at the top level
                out.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("acplink."):
                    out.append(alias.name.split(".")[1])
    return out


MODULES = sorted(p for p in SRC.rglob("*.py") if p.parent != SRC or p.name not in ("__init__.py", "__main__.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down(path: Path) -> None:
    own = _package(path)
    if own not in RANK:
        pytest.skip(f"{own} is not a layered package")
    for target in _imports(path):
        if target in RANK:
            assert RANK[target] <= RANK[own], f"{path.relative_to(SRC)} ({own}) imports the higher layer {target}"


def _has_code(path: Path) -> bool:
    """Whether a module holds more than a docstring and ``from __future__`` imports."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        return True
    return False


def test_every_package_is_ranked_and_none_is_an_empty_stub() -> None:
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in SRC.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    assert packages | modules == set(RANK)
    for pkg in sorted(packages):
        assert any(_has_code(path) for path in (SRC / pkg).rglob("*.py")), f"acplink.{pkg} is an empty package"


def test_entry_points_name_modules_that_exist() -> None:
    import importlib.util
    import tomllib

    project = tomllib.loads((SRC.parent.parent / "pyproject.toml").read_text())["project"]
    groups = {"scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    for group, entries in groups.items():
        for name, target in entries.items():
            module = target.partition(":")[0]
            spec = importlib.util.find_spec(module)
            assert spec is not None and spec.origin is not None, f"{group} entry point {name}: no module {module}"
            assert _has_code(Path(spec.origin)), f"{group} entry point {name}: {module} is empty"
