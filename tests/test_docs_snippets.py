"""Every example and every Python snippet of README.md and docs/*.md type-checks (mypy
--strict without the pydantic plugin, pyright strict) and runs. The conventions for
snippets that are fragments are in ``tests/doc_snippets.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from doc_snippets import ROOT, Snippet, snippets
from typecheck import EXAMPLES, WAITS_FOR_RESULTS, have_node, results

from acplink import connect

SNIPPETS = snippets()
BIN = str(Path(sys.executable).parent)


def _env(tmp_path: Path) -> dict[str, str]:
    # the virtualenv's scripts (acplink, python) first; the demo agent's store in the test's folder
    # (HOME too: the MCP SDK starts a stdio server with HOME and PATH only, so the demo agent behind
    # `acplink mcp-server` keeps its sessions under HOME, which must not be the user's)
    return {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""),
            "ACPLINK_DEMO_STORE": str(tmp_path / "demo-store"), "HOME": str(tmp_path / "home")}


def _clean(name: str, hint: str = "") -> None:
    res = results()
    errors = res.errors(name)
    report = [f"{checker} {name}:{line}: {msg}" for checker, found in errors.items() for line, msg in found]
    assert not report, "\n".join(report) + f"\n(the checked file: {res.folder / name}){hint}"


@WAITS_FOR_RESULTS
@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_example_type_checks(path: Path) -> None:
    _clean(path.name)


@WAITS_FOR_RESULTS
@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
def test_snippet_type_checks(snippet: Snippet) -> None:
    _clean(f"{snippet.name}.py", f"\nsnippet at {snippet.where}, setup {snippet.setup!r}; a fragment names its "
           "setup in a comment before its fence: see tests/doc_snippets.py")


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.name)
async def test_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    path = tmp_path / f"{snippet.name}.py"
    path.write_text(snippet.source())
    work = tmp_path / "work"
    work.mkdir()
    if snippet.setup == "agent":
        async with connect([sys.executable, str(path)], env=_env(tmp_path), stderr="capture") as client:
            session = await client.new_session(cwd=work)
            turn = session.prompt(snippet.options.get("prompt", "hello"))
            async for _ in turn:
                pass
            assert turn.stop_reason == "end_turn", f"{snippet.where}: {turn.stop_reason}"
        return
    command = [sys.executable, str(path)]
    if snippet.setup == "pytest":  # (the installed plugin supplies the fixtures)
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)]
    proc = subprocess.run(command, cwd=work, env=_env(tmp_path), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{snippet.where} ({snippet.setup}) failed:\n{proc.stdout}\n{proc.stderr}"


def test_every_page_is_covered() -> None:
    # the pages with Python in them, and a snippet of each setup, so a parsing slip shows
    pages = {s.doc.name for s in SNIPPETS}
    assert {"README.md", "agent.md", "client.md", "cookbook.md", "schema.md"} <= pages
    assert {s.setup for s in SNIPPETS} == {"program", "agent", "app", "prompt", "main", "client", "pytest"}
    fences = sum(p.read_text().count("```python") for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    assert len(SNIPPETS) == fences


@WAITS_FOR_RESULTS
def test_pyright_is_there() -> None:
    if not have_node():
        pytest.skip("node missing: pyright cannot run (the snippets are checked with mypy only)")
    assert results().pyright_ran
