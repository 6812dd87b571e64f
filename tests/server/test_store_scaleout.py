"""Several instances sharing a ``PostgresStore``: two ``acplink serve --app`` instances (the
app in process, tests/agent/store_agent.py, its store the test's PostgreSQL database) behind
HAProxy. A session started on one is listed, loaded and continued on the other; the instance a
client was on is killed, the client connects again (lands on the other), ``session/load``
shows the whole conversation and the next prompt works."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from acplink import AcpError, connect

from .helpers import BOUND, env_without_token, serve
from .test_scaleout import HAPROXY, haproxy

pytestmark = pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (scripts/test.sh installs "
                                                        "Debian's package when run as root)")

AGENTS = str(Path(__file__).resolve().parent.parent / "agent")


async def _text(session: Any, prompt: str) -> str:
    return await session.prompt(prompt).text()


async def _connect_again(url: str) -> Any:
    """Connect through HAProxy until an instance answers (the dead one refuses)."""
    async with asyncio.timeout(BOUND * 3):
        while True:
            try:
                return await connect(url)
            except (AcpError, OSError):
                await asyncio.sleep(0.2)


async def test_two_instances_share_sessions_and_survive_one_killed(tmp_path: Path, pg_dsn: str) -> None:
    env = {**env_without_token(), "ACPLINK_TEST_STORE": pg_dsn,
           "PYTHONPATH": os.pathsep.join(filter(None, [AGENTS, os.environ.get("PYTHONPATH")]))}
    async with serve("--ws", "--app", "store_agent:app_from_env", agent=(), env=env) as one, \
            serve("--ws", "--app", "store_agent:app_from_env", agent=(), env=env) as two:
        # (HAProxy reads the http URL's address: the same port serves ws here)
        one.urls.setdefault("http", one.urls["ws"].replace("ws://", "http://", 1))
        two.urls.setdefault("http", two.urls["ws"].replace("ws://", "http://", 1))
        instances = {one.proc.pid: one, two.proc.pid: two}
        async with haproxy(tmp_path, one, two) as http_url:
            url = "ws" + http_url.removeprefix("http")
            # started on one instance...
            async with connect(url) as a:
                session = await a.new_session(cwd=tmp_path)
                first = int(await _text(session, "pid"))
                assert first in instances  # (the app runs in the serve process)
                assert await _text(session, "hello") == "turn 2: hello"
                sid = session.session_id
            # ...listed, loaded and continued on the other (round robin)
            b = await connect(url)
            try:
                assert sid in [x.session_id for x in await b.list_sessions()]
                loaded = await b.load_session(sid, cwd=tmp_path)
                assert [m.text for m in loaded.state.messages if m.role == "user"] == ["pid", "hello"]
                second = int(await _text(loaded, "pid"))
                assert second in instances and second != first
                assert await _text(loaded, "again") == "turn 4: again"
                # the instance B is on dies (SIGKILL), holding the session
                instances[second].proc.kill()
                await instances[second].proc.wait()
            finally:
                await b.aclose()
            c = await _connect_again(url)
            try:
                reloaded = await c.load_session(sid, cwd=tmp_path)  # (its holder is gone: taken at once)
                users = [m.text for m in reloaded.state.messages if m.role == "user"]
                assert users == ["pid", "hello", "pid", "again"]
                assert "turn 4: again" in reloaded.state.agent_text
                assert int(await _text(reloaded, "pid")) == first
                assert await _text(reloaded, "last") == "turn 6: last"
            finally:
                await c.aclose()
