"""Terminals requested by a real agent process over a pipe: session, cwd, environment, output bounds.

The agent is ``peers/term_agent.py``: it sends ``terminal/create`` exactly as told, so the
client's default handler is what decides.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from termhelpers import PY, TERM_AGENT, TERM_CLIENT, spec

from acplink import Client, Session, TerminalHandler, connect
from acplink.client._termenv import LOADER_ENV, build_env, is_loader_env
from acplink.errors import InvalidParams


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with connect([PY, TERM_AGENT]) as c:
        yield c


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "cwd").mkdir()
    (tmp_path / "extra").mkdir()
    return tmp_path / "cwd", tmp_path / "extra"


async def session_in(client: Client, roots: tuple[Path, Path]) -> Session:
    return await client.new_session(cwd=roots[0], additional_directories=[str(roots[1])])


async def ask(session: Session, prompt: str) -> dict[str, Any]:
    reply = ""
    async for update in session.prompt(prompt):
        reply += getattr(getattr(update, "content", None), "text", "")
    result: dict[str, Any] = json.loads(reply)
    return result


async def test_shell_in_cwd_outside_the_roots_is_refused(client: Client, roots: tuple[Path, Path]) -> None:
    session = await session_in(client, roots)
    for cwd in ("/", str(roots[0].parent), "/tmp"):
        result = await ask(session, spec("/bin/sh", "-c", "pwd", cwd=cwd, then=("wait", "output")))
        assert result["error"]["code"] == -32602, result
        assert result["error"]["data"] == {"reason": "outside_roots"}
    # a symlink inside the roots that leads outside is judged by where it leads
    (roots[0] / "up").symlink_to(roots[0].parent)
    result = await ask(session, spec("pwd", cwd=str(roots[0] / "up")))
    assert result["error"]["data"] == {"reason": "outside_roots"}


async def test_cwd_inside_any_root_is_served(client: Client, roots: tuple[Path, Path]) -> None:
    session = await session_in(client, roots)
    (roots[0] / "sub").mkdir()
    for where in (roots[0], roots[0] / "sub", roots[1]):
        result = await ask(session, spec("pwd", cwd=str(where), then=("wait", "output", "release"), full=True))
        assert result["output"]["output"] == f"{os.path.realpath(where)}\n"


async def test_no_cwd_runs_in_the_session_cwd(client: Client, roots: tuple[Path, Path]) -> None:
    assert os.path.realpath(os.getcwd()) != os.path.realpath(roots[0])
    session = await session_in(client, roots)
    result = await ask(session, spec("pwd", then=("wait", "output", "release"), full=True))
    assert result["output"]["output"] == f"{os.path.realpath(roots[0])}\n", result


async def test_unknown_session_is_refused(client: Client, roots: tuple[Path, Path]) -> None:
    session = await session_in(client, roots)
    result = await ask(session, spec("true", sessionId="sess_nope"))
    assert result["error"]["code"] == -32002
    assert "unknown session" in result["error"]["message"]
    assert client.terminals is not None and client.terminals.terminal_ids == []


async def test_loader_variables_are_refused(client: Client, roots: tuple[Path, Path]) -> None:
    session = await session_in(client, roots)
    for name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "ld_preload", "DYLD_INSERT_LIBRARIES", "BASH_ENV",
                 "PYTHONPATH", "NODE_OPTIONS", "BASH_FUNC_git%%"):
        env = [{"name": "HARMLESS", "value": "1"}, {"name": name, "value": "/tmp/evil.so"}]
        result = await ask(session, spec("/bin/sh", "-c", "echo ran", env=env, then=("wait", "output")))
        assert result["error"]["code"] == -32602, result
        assert result["error"]["data"] == {"reason": "env_refused", "names": [name]}
    for bad in ({"name": "A=B", "value": "1"}, {"name": "", "value": "1"}, {"name": "A", "value": "x\u0000y"}):
        result = await ask(session, spec("true", env=[bad]))
        assert result["error"]["data"]["reason"] == "invalid_env", result
    assert client.terminals is not None and client.terminals.terminal_ids == []


async def test_ordinary_variables_pass(client: Client, roots: tuple[Path, Path]) -> None:
    session = await session_in(client, roots)
    env = [{"name": "PYTHONUNBUFFERED", "value": "1"}, {"name": "MY_LD_PRELOAD_NOTE", "value": "x"}]
    result = await ask(session, spec(PY, "-c", "import os; print(os.environ['MY_LD_PRELOAD_NOTE'])", env=env,
                                     then=("wait", "output", "release"), full=True))
    assert result["output"]["output"] == "x\n"


async def test_the_user_can_allow_loader_variables(roots: tuple[Path, Path]) -> None:
    handler = TerminalHandler(allow_env=["LD_LIBRARY_PATH"])
    async with connect([PY, TERM_AGENT], terminal=handler) as client:
        session = await session_in(client, roots)
        env = [{"name": "LD_LIBRARY_PATH", "value": str(roots[1])}]
        result = await ask(session, spec(PY, "-c", "import os; print(os.environ['LD_LIBRARY_PATH'])", env=env,
                                         then=("wait", "output", "release"), full=True))
        assert result["output"]["output"] == f"{roots[1]}\n"
        result = await ask(session, spec("true", env=[{"name": "LD_PRELOAD", "value": "x"}]))
        assert result["error"]["data"]["names"] == ["LD_PRELOAD"]  # only the allowed name


def test_loader_list() -> None:
    for name in ("LD_BIND_NOW", "DYLD_LIBRARY_PATH", "GLIBC_TUNABLES", "GCONV_PATH", "PERL5OPT", "JAVA_TOOL_OPTIONS"):
        assert is_loader_env(name)
    for name in ("PATH", "HOME", "LANG", "PYTHONUNBUFFERED", "NODE_ENV", "OLD_PWD"):
        assert not is_loader_env(name)
    assert all(n == n.upper() for n in LOADER_ENV)


def test_build_env_allow_forms() -> None:
    entries = [("LD_PRELOAD", "x.so"), ("PYTHONPATH", "/p"), ("A", "1")]
    for allow in (True, ["LD_PRELOAD", "PYTHONPATH"]):
        assert build_env({"HOME": "/h"}, entries, allow) == {"HOME": "/h", "LD_PRELOAD": "x.so", "PYTHONPATH": "/p",
                                                            "A": "1"}
    for allow in (False, (), ["LD_PRELOAD"]):
        with pytest.raises(InvalidParams) as info:
            build_env({}, entries, allow)
        assert info.value.data["names"] == ["LD_PRELOAD", "PYTHONPATH"][1 if allow else 0:]
    assert build_env({"LD_PRELOAD": "mine.so"}, [], False) == {"LD_PRELOAD": "mine.so"}  # the user's own: kept


def test_output_of_600_mb_with_limit_1e11_keeps_the_client_bounded(tmp_path: Path) -> None:
    """The agent asks for outputByteLimit 1e11 and the command writes 600 MB: the client (its
    own process, over real pipes) keeps 1 MiB, and its peak RSS grows by a few MiB at most."""
    writer = "import sys\nb = b'a' * 1_000_000\nfor _ in range(600): sys.stdout.buffer.write(b)"
    prompt = spec(PY, "-c", writer, outputByteLimit=100_000_000_000, then=("wait", "output", "release"))
    done = subprocess.run([PY, TERM_CLIENT, str(tmp_path), prompt], capture_output=True, text=True, timeout=120,
                          check=True)
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    result = json.loads(lines["reply"])
    assert result["exit"] == {"exitCode": 0, "signal": None}
    assert result["output"]["truncated"] is True
    assert result["output"]["length"] == 1 << 20  # the client's cap, not the agent's 1e11
    growth_kib, peak_kib = map(int, lines["rss"].split())
    print(f"client peak RSS {peak_kib} KiB, growth during the 600 MB {growth_kib} KiB")
    assert growth_kib < 64 * 1024
