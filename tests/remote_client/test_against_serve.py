"""acplink's remote client against ``acplink serve -- acplink demo-agent``, over both
transports: the library, ``prompt --url`` and ``chat --url``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acplink import connect, schema

SCHEMES = pytest.mark.parametrize("scheme", ["ws", "http"])


class _Serve:
    def __init__(self, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acplink", "serve", "--port", "0", *extra, "--",
             sys.executable, "-m", "acplink", "demo-agent"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        assert self.proc.stdout is not None
        self.urls = {}
        for _ in range(2):
            url = self.proc.stdout.readline().strip()
            assert "://" in url, f"acplink serve printed {url!r}"
            self.urls[url.split("://")[0]] = url

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def serve() -> Iterator[_Serve]:
    server = _Serve()
    try:
        yield server
    finally:
        server.stop()


@SCHEMES
async def test_library(scheme: str, serve: _Serve, tmp_path: Path) -> None:
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
def test_prompt_and_chat(scheme: str, serve: _Serve) -> None:
    done = subprocess.run([sys.executable, "-m", "acplink", "prompt", "--url", serve.urls[scheme], "hello"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "You said: hello\n"), done.stderr
    done = subprocess.run([sys.executable, "-m", "acplink", "chat", "--url", serve.urls[scheme]],
                          input="one\ntwo\n", capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "You said: one" in done.stdout and "You said: two" in done.stdout
