"""``acplink prompt --protocol 2`` with the demo agent: ``read``, ``write`` and ``run`` reach the
client's files and terminals through its workspace MCP server (MCP-over-ACP), locally and through
``acplink serve`` + ``--url`` (where, as on v1, the remote agent gets file access and terminals
only with ``--remote-fs`` / ``--remote-terminal``). What is shown is what v1 shows."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ACPLINK = [sys.executable, "-m", "acplink"]


def prompt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPLINK, "prompt", "--cwd", str(cwd), *args], capture_output=True, text=True,
                          timeout=120)


def tool_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("[tool]", "    "))]


@pytest.mark.parametrize("protocol", ["2", "auto"])
def test_read_write_run_locally(tmp_path: Path, protocol: str) -> None:
    (tmp_path / "README.md").write_text("# hi\n\nthere\n")
    done = prompt("--protocol", protocol, "read README.md", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "README.md has 3 lines and 12 characters.\n"), done.stderr
    done = prompt("--protocol", protocol, "--allow", "write out/new.txt two words", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "Wrote 10 characters to out/new.txt.\n"), done.stderr
    assert (tmp_path / "out" / "new.txt").read_text() == "two words\n"
    done = prompt("--protocol", protocol, "--allow", "run seq 3", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "`seq 3` finished with exit code 0 (3 lines of output).\n"), \
        done.stderr
    assert tool_lines(done.stderr)[-4:] == ["[tool] Run seq 3: completed", "    1", "    2", "    3"]


def test_v2_shows_what_v1_shows(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    for command in ("read a.txt", "write b.txt hello", "run seq 2", "run sh -c 'exit 3'"):
        outputs = [prompt("--protocol", version, "--allow", command, cwd=tmp_path) for version in ("1", "2")]
        v1, v2 = ((p.returncode, p.stdout, tool_lines(p.stderr)) for p in outputs)
        assert v1 == v2, (command, outputs[1].stderr)


def test_a_denied_write_is_not_done(tmp_path: Path) -> None:
    done = prompt("--protocol", "2", "write secret.txt nope", cwd=tmp_path)  # (no --allow: the question is denied)
    assert done.stdout == "Permission denied: I did not write secret.txt.\n"
    assert not (tmp_path / "secret.txt").exists()


def test_no_fs_and_no_terminal_leave_the_agent_without_hands(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    done = prompt("--protocol", "2", "--no-fs", "--no-terminal", "read a.txt", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("I could not read a.txt: cannot read through the client: fs/read_text_file "
                                  "does not exist in ACP v2, and the client declared no workspace MCP server")
    assert "Traceback" not in done.stderr


def _server_class() -> Any:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "remote.py"
    spec = importlib.util.spec_from_file_location("_bench_remote_ws", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Server


@pytest.fixture(scope="module")
def serve() -> Iterator[Any]:
    server = _server_class()([*ACPLINK, "serve", "--port", "0", "--", *ACPLINK, "demo-agent"])
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("scheme", ["ws", "http"])
def test_through_serve_the_agent_reaches_the_remote_clients_files(scheme: str, serve: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    url = ["--url", serve.urls[scheme], "--protocol", "2"]
    done = prompt(*url, "--remote-fs", "read notes.txt", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "notes.txt has 2 lines and 8 characters.\n"), done.stderr
    done = prompt(*url, "--remote-fs", "--allow", "write made.txt over there", cwd=tmp_path)
    assert done.stdout == "Wrote 11 characters to made.txt.\n", done.stderr
    assert (tmp_path / "made.txt").read_text() == "over there\n"
    done = prompt(*url, "--remote-terminal", "--allow", "run seq 2", cwd=tmp_path)
    assert done.stdout == "`seq 2` finished with exit code 0 (2 lines of output).\n", done.stderr
    assert tool_lines(done.stderr)[-3:] == ["[tool] Run seq 2: completed", "    1", "    2"]


def test_through_serve_no_access_unless_given(serve: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\n")
    done = prompt("--url", serve.urls["ws"], "--protocol", "2", "read notes.txt", cwd=tmp_path)
    assert done.returncode == 0
    assert "declared no workspace MCP server" in done.stdout
    done = prompt("--url", serve.urls["ws"], "--protocol", "2", "--remote-fs", "--allow", "run seq 2", cwd=tmp_path)
    assert "could not run it" in done.stdout and "no 'run' tool" in done.stdout  # (files, but no terminals)
