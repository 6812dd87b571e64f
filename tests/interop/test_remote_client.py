"""acplink's remote client (``connect(url)``, ``prompt --url``, ``chat --url``) against remote
servers built on the official SDKs, over both transports (``ws://`` and ``http://``):

* the TypeScript SDK 2.4.0 server (``experimental/server`` + ``experimental/node`` + ``ws``):
  ``js/remote_server_ts.mjs``, which sets an affinity cookie and (``--require-cookie``)
  refuses an HTTP request after ``initialize`` that does not send it back;
* the Python SDK 0.12.1 ASGI app under uvicorn: ``peers/py_remote_server.py``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from peerenv import _py_missing, _ts_missing
from remote_peers import PY_SERVER, TS_SERVER, CuttingProxy, PeerServer, running

from acplink import ConnectionClosed, InternalError, PeerLimits, PermissionPolicy, connect, schema
from acplink.transports._remote import AuthRejected, CookieJar

needs_ts = pytest.mark.skipif(_ts_missing() is not None, reason=_ts_missing() or "")
needs_py = pytest.mark.skipif(_py_missing() is not None, reason=_py_missing() or "")
SCHEMES = pytest.mark.parametrize("scheme", ["ws", "http"])
COOKIE = "aff=ts-instance-1"
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def ts_server() -> Iterator[PeerServer]:
    if _ts_missing():
        pytest.skip(_ts_missing() or "")
    with running([*TS_SERVER, "--cookie", COOKIE, "--require-cookie"]) as server:
        yield server


@pytest.fixture(scope="module")
def ts_token_server() -> Iterator[PeerServer]:
    if _ts_missing():
        pytest.skip(_ts_missing() or "")
    with running([*TS_SERVER, "--token", TOKEN]) as server:
        yield server


@pytest.fixture(scope="module")
def py_server() -> Iterator[PeerServer]:
    if _py_missing():
        pytest.skip(_py_missing() or "")
    with running(PY_SERVER) as server:
        yield server


def _texts(updates: list[Any]) -> list[str]:
    return [u.content.text for u in updates if isinstance(u, schema.AgentMessageChunk)]


async def _say(session: Any, text: str) -> tuple[list[str], str]:
    turn = session.prompt(text)
    updates = [u async for u in turn]
    return _texts(updates), str((await turn).stop_reason)


# -- the library ----------------------------------------------------------------------------------


@needs_ts
@SCHEMES
async def test_ts_server_turns(scheme: str, ts_server: PeerServer, tmp_path: Path) -> None:
    """initialize, session/new, a streamed prompt, a permission request (over HTTP: the
    answer must carry the session's header, else the TS server refuses it), an error."""
    async with connect(ts_server.url(scheme), permission=PermissionPolicy.allow_all()) as client:
        assert client.agent_info is not None and client.agent_info.name == "ts-remote-agent"
        assert client.supports("loadSession")
        assert client.transport.connection_id  # type: ignore[attr-defined]
        caps = client.client_capabilities()  # remote: no files, no terminals unless asked
        assert caps.fs is not None and not caps.fs.read_text_file and not caps.terminal
        session = await client.new_session(tmp_path)
        assert await _say(session, "hello") == (["Hello, ", "world"], "end_turn")
        assert await _say(session, "perm") == (["permission:allow"], "end_turn")
        with pytest.raises(InternalError, match="peer failure"):
            await session.prompt("fail")
        assert await _say(session, "still here") == (["still here"], "end_turn")


@needs_ts
@SCHEMES
async def test_ts_server_permission_denied_and_cancel(scheme: str, ts_server: PeerServer, tmp_path: Path) -> None:
    async with connect(ts_server.url(scheme)) as client:  # (default policy: deny)
        session = await client.new_session(tmp_path)
        assert await _say(session, "perm") == (["permission:reject"], "end_turn")
        turn = session.prompt("wait")
        first = await anext(aiter(turn))
        assert isinstance(first, schema.AgentMessageChunk) and first.content.text == "waiting"
        await turn.cancel()
        assert (await asyncio.wait_for(turn.result(), 20)).stop_reason == "cancelled"


@needs_ts
@SCHEMES
async def test_cookie_comes_back_and_session_load_on_a_fresh_connection(
        scheme: str, ts_server: PeerServer, tmp_path: Path) -> None:
    jar = CookieJar()
    async with connect(ts_server.url(scheme), cookies=jar) as client:
        session = await client.new_session(tmp_path)
        assert await _say(session, "remember me") == (["remember me"], "end_turn")
        sid = session.session_id
    assert jar.cookies == {"aff": "ts-instance-1"}  # (a WebSocket: from the 101)
    async with connect(ts_server.url(scheme), cookies=jar) as client:
        loaded = await client.load_session(sid, tmp_path)
        assert [m.text for m in loaded.state.messages if m.role == "user"] == ["remember me"]
        texts, stop = await _say(loaded, "cookies")
        assert stop == "end_turn" and COOKIE in texts[0]


@needs_ts
@SCHEMES
async def test_token(scheme: str, ts_token_server: PeerServer, tmp_path: Path) -> None:
    url = ts_token_server.url(scheme)
    async with connect(url, token=TOKEN) as client:
        session = await client.new_session(tmp_path)
        assert await _say(session, "hello") == (["Hello, ", "world"], "end_turn")
    for token in ("wrong", None):
        with pytest.raises(AuthRejected) as info:
            await connect(url, token=token)
        msg = str(info.value)  # (a library user is told the argument; the CLI, the flag)
        assert "401" in msg and "token=" in msg and "\n" not in msg
        assert "--token" in (info.value.cli_message or "") and "\n" not in (info.value.cli_message or "")


@needs_ts
@SCHEMES
async def test_message_over_the_limit(scheme: str, ts_server: PeerServer, tmp_path: Path) -> None:
    """The engine's size limit applies to a WebSocket frame and to an SSE event: the
    connection ends with a clear error, not a buffer that grows."""
    async with connect(ts_server.url(scheme), limits=PeerLimits(max_message_size=4096)) as client:
        session = await client.new_session(tmp_path)
        assert await _say(session, "big 1000") == (["x" * 1000], "end_turn")
        with pytest.raises(ConnectionClosed, match="over the limit of 4096 bytes"):
            await asyncio.wait_for(session.prompt("big 200000"), 20)


@needs_py
@SCHEMES
async def test_python_sdk_asgi_app(scheme: str, py_server: PeerServer, tmp_path: Path) -> None:
    """The official Python SDK's ASGI app under uvicorn: a full turn with a permission
    request, file access and a terminal (offered explicitly: the agent is remote)."""
    async with connect(py_server.url(scheme), fs=True, terminal=True,
                       permission=PermissionPolicy.allow_all()) as client:
        assert client.agent_info is not None and client.agent_info.name == "py-sdk-agent"
        session = await client.new_session(tmp_path)
        assert await _say(session, "hello") == (["Hello, ", "world"], "end_turn")
        texts, stop = await _say(session, "full")
        assert stop == "end_turn"
        assert "read:written by peer\n" in texts and "term:term-ok:0" in texts
        assert (tmp_path / "interop.txt").read_text() == "written by peer\n"


# -- the command line -----------------------------------------------------------------------------


def _acplink(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acplink", *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout)


@needs_ts
@SCHEMES
def test_prompt_url(scheme: str, ts_server: PeerServer) -> None:
    done = _acplink("prompt", "--url", ts_server.url(scheme), "hello")
    assert (done.returncode, done.stdout) == (0, "Hello, world\n"), done.stderr
    if scheme == "http":  # every POST and GET after initialize sent the cookie back
        done = _acplink("prompt", "--url", ts_server.url(scheme), "cookies")
        assert done.returncode == 0 and COOKIE in done.stdout, done.stderr


@needs_ts
@SCHEMES
def test_prompt_url_token_and_header(scheme: str, ts_token_server: PeerServer) -> None:
    url = ts_token_server.url(scheme)
    done = _acplink("prompt", "--url", url, "--token", TOKEN, "hello")
    assert (done.returncode, done.stdout) == (0, "Hello, world\n"), done.stderr
    if scheme == "http":
        done = _acplink("prompt", "--url", url, "--header", f"Authorization: Bearer {TOKEN}", "hello")
        assert (done.returncode, done.stdout) == (0, "Hello, world\n"), done.stderr
    done = _acplink("prompt", "--url", url, "--token", "nope", "hello")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "401" in done.stderr and "Traceback" not in done.stderr


@needs_ts
@SCHEMES
def test_chat_url(scheme: str, ts_server: PeerServer) -> None:
    done = _acplink("chat", "--url", ts_server.url(scheme), stdin="hello\nperm\n2\n")
    assert done.returncode == 0, done.stderr
    assert "Hello, world" in done.stdout and "permission:reject" in done.stdout


@needs_ts
@SCHEMES
def test_killed_server_ends_prompt(scheme: str) -> None:
    """The server dies mid-turn: ``prompt --url`` exits non-zero with one line (fast:
    within 2 s of the kill where measured; bounded here only against a hang)."""
    with running([*TS_SERVER]) as server:
        proc = subprocess.Popen([sys.executable, "-m", "acplink", "prompt", "--url", server.url(scheme), "wait"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            assert proc.stdout.read(7) == "waiting"
            server.kill()
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 1
    assert err.startswith("acplink: error: ") and "Traceback" not in err


async def _read_until(stream: asyncio.StreamReader, needle: str, seen: list[str]) -> None:
    """Read ``stream`` (into ``seen``) until ``needle`` was output (bounded against a hang)."""
    async with asyncio.timeout(60):
        while needle not in "".join(seen):
            chunk = await stream.read(4096)
            assert chunk, f"end of output before {needle!r}: {''.join(seen)!r}"
            seen.append(chunk.decode(errors="replace"))


@needs_ts
@SCHEMES
async def test_chat_reconnects(scheme: str) -> None:
    """``chat --url --reconnect``: the connection is cut mid-turn; the turn is reported failed
    (not resent); a new connection sends the cookies back, ``initialize``, ``session/load``;
    the chat goes on in the same session."""
    with running([*TS_SERVER, "--cookie", COOKIE]) as server:
        proxy = await CuttingProxy(server.port).start()
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "acplink", "chat", "--reconnect", "--url", f"{scheme}://127.0.0.1:{proxy.port}/acp",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        seen: list[str] = []
        try:
            proc.stdin.write(b"first\nwait\n")
            await _read_until(proc.stdout, "waiting", seen)
            proxy.cut()
            await _read_until(proc.stdout, "reconnected", seen)
            proc.stdin.write(b"cookies\n")
            proc.stdin.close()
            out, err = await asyncio.wait_for(proc.communicate(), 60)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.communicate()
            await proxy.aclose()
    text = "".join(seen) + out.decode()
    assert proc.returncode == 0, err.decode()
    assert "connection lost" in text and "not sent again" in text
    assert text.count("> wait") == 1  # (the chat echoes each prompt it sends: never twice)
    assert f"cookies:{COOKIE}" in text  # the 2nd connection (after the cut) sent the cookie back


@needs_ts
async def test_session_conflict_fails_only_that_session(ts_server: PeerServer, tmp_path: Path) -> None:
    """A 409 on a session's stream (another reader holds it) fails that session's requests,
    and keeps failing them until a ``session/load`` succeeds; the connection and its other
    sessions go on."""
    import httpx

    url = ts_server.url("http")
    async with connect(url) as first:
        sid = (await first.new_session(tmp_path)).session_id
    async with connect(url) as client, httpx.AsyncClient() as raw:
        cid = client.transport.connection_id  # type: ignore[attr-defined]
        headers = {"Accept": "text/event-stream", "Acp-Connection-Id": cid, "Acp-Session-Id": sid,
                   "Cookie": COOKIE}
        async with raw.stream("GET", url, headers=headers) as thief:
            assert thief.status_code == 200
            with pytest.raises(InternalError) as info:
                await client.load_session(sid, tmp_path)
            assert info.value.data["status"] == 409
            other = await client.new_session(tmp_path)  # the connection is fine
            assert await _say(other, "hello") == (["Hello, ", "world"], "end_turn")
        # the other reader is gone: session/load reattaches the session
        for _ in range(50):
            try:
                loaded = await client.load_session(sid, tmp_path)
                break
            except InternalError:  # (the server may not have seen the reader leave yet)
                await asyncio.sleep(0.1)
        assert await _say(loaded, "back") == (["back"], "end_turn")


@needs_ts
async def test_http_connection_is_deleted_on_close_and_its_end_fails_pending_calls(
        ts_server: PeerServer, tmp_path: Path) -> None:
    import httpx

    url = ts_server.url("http")
    async with connect(url) as client:
        cid = client.transport.connection_id  # type: ignore[attr-defined]
    async with httpx.AsyncClient() as raw:  # closing DELETEd it: the server knows it no more
        answer = await raw.post(url, content=b'{"jsonrpc":"2.0","method":"x"}', headers={
            "Content-Type": "application/json", "Acp-Connection-Id": cid, "Cookie": COOKIE})
        assert answer.status_code == 404
        async with connect(url) as client:
            session = await client.new_session(tmp_path)
            turn = session.prompt("wait")
            await anext(aiter(turn))
            # the connection ends under the client (another party DELETEs it): the pending
            # prompt fails with ConnectionClosed at once, not after a timeout
            cid = client.transport.connection_id  # type: ignore[attr-defined]
            gone = await raw.delete(url, headers={"Acp-Connection-Id": cid, "Cookie": COOKIE})
            assert gone.status_code in (200, 202, 204)
            with pytest.raises(ConnectionClosed, match="ended the connection"):
                await asyncio.wait_for(turn.result(), 20)
