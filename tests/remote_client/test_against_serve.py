"""acplink's remote client against ``acplink serve -- acplink demo-agent``, over both
transports: the library, ``prompt --url`` and ``chat --url``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acplink import connect, schema

SCHEMES = pytest.mark.parametrize("scheme", ["ws", "http"])


def _load_bench_server() -> Any:
    """The benchmark's server runner (benchmarks/remote.py): one place starts ``acplink serve``
    and reads the URLs it prints."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "remote.py"
    spec = importlib.util.spec_from_file_location("_bench_remote", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Server


Server = _load_bench_server()


@pytest.fixture(scope="module")
def serve() -> Iterator[Any]:
    server = Server([sys.executable, "-m", "acplink", "serve", "--port", "0", "--",
                     sys.executable, "-m", "acplink", "demo-agent"])
    try:
        yield server
    finally:
        server.stop()


@SCHEMES
async def test_library(scheme: str, serve: Any, tmp_path: Path) -> None:
    async with connect(serve.urls[scheme]) as client:
        assert client.agent_info is not None and client.agent_info.name
        session = await client.new_session(tmp_path)
        turn = session.prompt("hello")
        texts = [u.content.text async for u in turn if isinstance(u, schema.AgentMessageChunk)]
        assert "".join(texts) == "You said: hello" and turn.stop_reason == "end_turn"
        again = await client.new_session(tmp_path)  # a second session on the same connection
        assert (await again.prompt("two")).stop_reason == "end_turn"
        assert again.state.agent_text == "You said: two"


@SCHEMES
def test_prompt_reads_a_file_through_serve_with_no_protocol_flag(scheme: str, serve: Any, tmp_path: Path) -> None:
    # v1 by default: the demo agent reads the client's file (on v2 it could not: no fs methods)
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    done = subprocess.run([sys.executable, "-m", "acplink", "prompt", "--url", serve.urls[scheme], "--remote-fs",
                           "--cwd", str(tmp_path), "read notes.txt"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "notes.txt has 2 lines" in done.stdout and "ACP v2" not in done.stdout, done.stdout


@SCHEMES
def test_prompt_and_chat(scheme: str, serve: Any) -> None:
    done = subprocess.run([sys.executable, "-m", "acplink", "prompt", "--url", serve.urls[scheme], "hello"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "You said: hello\n"), done.stderr
    done = subprocess.run([sys.executable, "-m", "acplink", "chat", "--url", serve.urls[scheme]],
                          input="one\ntwo\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "You said: one" in done.stdout and "You said: two" in done.stdout
