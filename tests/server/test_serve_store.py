"""``acplink serve`` (the demo agent by default) keeps its sessions in the demo's SQLite store:
a conversation had through one server is listed and loaded through the next one, after the
first was killed."""

from __future__ import annotations

import signal
from pathlib import Path

from acplink import connect

from .helpers import DEMO, env_without_token, serve


async def test_sessions_survive_the_server(tmp_path: Path) -> None:
    env = {**env_without_token(), "ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    work = tmp_path / "work"
    work.mkdir()
    async with serve(agent=DEMO, env=env) as served:
        async with connect(served.urls["ws"]) as client:
            session = await client.new_session(cwd=work)
            assert await session.prompt("remember the milk").text() == "You said: remember the milk"
            sid = session.session_id
        served.proc.send_signal(signal.SIGKILL)
        await served.proc.wait()
    assert (tmp_path / "store" / "sessions.sqlite3").is_file()
    async with serve(agent=DEMO, env=env) as served, connect(served.urls["http"]) as client:
        listed = await client.list_sessions(cwd=work)
        assert [(x.session_id, x.title) for x in listed] == [(sid, "remember the milk")]
        loaded = await client.load_session(sid, cwd=work)
        assert [(m.role, m.text) for m in loaded.state.messages] == [
            ("user", "remember the milk"), ("agent", "You said: remember the milk")]
        assert await loaded.prompt("and eggs").text() == "You said: and eggs"
