"""``acplink serve`` as a process: URLs, token, Host check, the non-loopback refusal, stopping
on SIGINT/SIGTERM with clients connected, and lazy imports."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from .helpers import ACPLINK, BOUND, INIT, Remote, env_without_token, pid_alive, serve, wait_gone


def test_a_non_loopback_bind_needs_a_token() -> None:
    r = subprocess.run([*ACPLINK, "serve", "--host", "0.0.0.0", "--port", "0"], capture_output=True,
                       text=True, timeout=60, env=env_without_token())
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--token" in r.stderr and "--insecure-no-auth" in r.stderr


@pytest.mark.parametrize(("bind", "shown"), [("0.0.0.0", "127.0.0.1"), ("::", "[::1]")], ids=["ipv4", "ipv6"])
async def test_a_wildcard_bind_prints_a_url_one_can_connect_to_and_warns_without_auth(bind: str, shown: str) -> None:
    async with serve("--insecure-no-auth", "--host", bind) as served, httpx.AsyncClient(timeout=BOUND) as client:
        port = served.urls["ws"].rsplit(":", 1)[1].split("/")[0]
        assert served.urls == {"ws": f"ws://{shown}:{port}/acp", "http": f"http://{shown}:{port}/acp"}
        assert (await Remote(client, served.urls["http"]).initialize()).status_code == 200  # it connects
        for _ in range(100):  # (stderr is read as it comes)
            if "warning" in served.log:
                break
            await asyncio.sleep(0.05)
        warning = next(line for line in served.log.splitlines() if "warning" in line)
        assert "no authentication" in warning and "not loopback" in warning and "--token" in warning, warning
        assert f":{port}/acp" in next(line for line in served.log.splitlines() if "every address" in line)
        served.proc.terminate()


async def test_a_token_or_loopback_gives_no_warning() -> None:
    env = {**env_without_token(), "ACPLINK_TOKEN": "tok"}
    async with serve("--host", "0.0.0.0", env=env) as served:
        assert served.urls["ws"].startswith("ws://127.0.0.1:")
        served.proc.terminate()
        await served.proc.wait()
    async with serve() as loop_served:
        loop_served.proc.terminate()
        await loop_served.proc.wait()
    await asyncio.sleep(0.2)
    assert "warning" not in served.log and "warning" not in loop_served.log, served.log + loop_served.log


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_serve_both_transports_then_stop_with_clients_connected(sig: signal.Signals) -> None:
    env = {**env_without_token(), "ACPLINK_TOKEN": "tok"}
    auth = {"authorization": "Bearer tok"}
    async with serve(env=env) as served, httpx.AsyncClient(timeout=BOUND) as client:
        assert served.urls["http"].endswith("/acp") and served.urls["ws"].startswith("ws://127.0.0.1:")
        remote = Remote(client, served.urls["http"])
        assert (await remote.initialize()).status_code == 401
        assert (await remote.initialize(**auth)).status_code == 200
        assert (await remote.initialize(**auth, host="attacker.example")).status_code == 403
        async with remote.stream() as _, connect(served.urls["ws"], additional_headers=auth) as ws:
            # (the stream's GET carries no token: refused, so open one with it)
            assert _.response.status_code == 401
            async with client.stream("GET", remote.url, headers={
                    **remote.headers(), **auth, "accept": "text/event-stream"}) as sse:
                assert sse.status_code == 200
                await ws.send(json.dumps(INIT))
                ws_pid = json.loads(await ws.recv())["result"]["_meta"]["pid"]
                assert pid_alive(remote.pid) and pid_alive(ws_pid)
                served.proc.send_signal(sig)
                async with asyncio.timeout(8):  # a hang guard; `serve` promises 5 s
                    assert [line async for line in sse.aiter_lines() if line.startswith("data:")] == []
                    with pytest.raises(ConnectionClosed):
                        while True:
                            await ws.recv()
                    assert ws.close_code == 1001
                    assert await served.proc.wait() == 0
        assert await wait_gone(remote.pid, 1) and await wait_gone(ws_pid, 1)
    log = served.log
    assert log.count(" opened (") == 2 and log.count(" closed (") == 2, log
    assert "server shutting down" in log
    assert re.search(r"connection [0-9a-f-]{36} agent: got \{", log)  # the agents' stderr, tagged


async def test_ws_only_and_http_only() -> None:
    async with serve("--ws") as served, httpx.AsyncClient(timeout=BOUND) as client:
        assert list(served.urls) == ["ws"]
        r = await client.post(served.urls["ws"].replace("ws://", "http://"), json=INIT)
        assert r.status_code == 426
        served.proc.terminate()
    async with serve("--http") as served, httpx.AsyncClient(timeout=BOUND) as client:
        assert list(served.urls) == ["http"]
        assert (await Remote(client, served.urls["http"]).initialize()).status_code == 200
        served.proc.terminate()


def test_stdio_commands_do_not_import_the_server_libraries() -> None:
    code = ("import sys; from acplink.cli.main import build_parser; build_parser(); import acplink.server; "
            "assert 'acplink.cli.serve' in sys.modules and 'acplink.server.app' in sys.modules; "
            "print([m for m in ('uvicorn', 'websockets', 'starlette', 'httpx', 'h11', 'hypercorn') "
            "if m in sys.modules])")
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert r.stdout.strip() == "[]", r.stdout + r.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "acplink.server.connection" in imported
    assert not {name for name in imported if name.split(".")[0] in ("uvicorn", "websockets", "starlette")}


async def test_a_refused_token_names_the_flag_on_the_command_line_and_the_argument_in_python() -> None:
    from acplink import connect
    from acplink.transports._remote import AuthRejected

    env = {**env_without_token(), "ACPLINK_TOKEN": "tok"}
    async with serve(env=env) as served:
        for url in served.urls.values():
            proc = await asyncio.create_subprocess_exec(
                *ACPLINK, "prompt", "--url", url, "hi", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=env_without_token())
            _, err = await asyncio.wait_for(proc.communicate(), 60)
            line = err.decode()
            assert proc.returncode == 1 and "401 Unauthorized" in line, line
            assert "pass --token or set ACPLINK_TOKEN" in line and "token=" not in line, line
            with pytest.raises(AuthRejected) as info:  # the library keeps the Python wording
                async with connect(url):
                    pass
            assert "pass token=" in str(info.value) and "--token" not in str(info.value)
        served.proc.terminate()


async def test_an_agent_that_dies_before_initialize_is_said_so() -> None:
    async with serve(agent=["sh", "-c", "echo 'no key' >&2; exit 3"]) as served:
        async with connect(served.urls["ws"]) as ws:
            await ws.send(json.dumps(INIT))
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 30)
        assert ws.close_code == 1011 and ws.close_reason == "the agent closed its output before answering initialize"
        served.proc.terminate()
