"""``acplink prompt --agent A --agent B TEXT``: one prompt, several agents (the demo agent and a
TS SDK agent), each in its own working copy, side by side or as JSON; one that cannot start is
reported in its column; every run is recorded and opens in devtools' Diff view (over HTTP)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cliutil import ACPLINK, CRASH_AGENT, JS_DIR, NODE, ROOT, _ts_missing

pytestmark = pytest.mark.timeout(180)

DEMO = shlex.join([sys.executable, "-m", "acplink.demo"])
TS_AGENT = shlex.join([str(NODE), str(JS_DIR / "agent.mjs")])
needs_ts = pytest.mark.skipif(_ts_missing() is not None, reason=str(_ts_missing()))


def _prompt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPLINK, "prompt", *args], cwd=cwd, capture_output=True, text=True, timeout=150)


def _tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# project\n")
    return work


@needs_ts
def test_the_demo_agent_and_a_ts_sdk_agent_side_by_side_as_json(tmp_path: Path) -> None:
    work, db = _tree(tmp_path), tmp_path / "d.sqlite"
    proc = _prompt("--json", "--allow", "--db", str(db), "--agent", DEMO, "--agent", TS_AGENT,
                   "write notes.txt hi", cwd=work)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    demo, ts = out["agents"]
    assert demo["ok"] and demo["reply"] == "Wrote 3 characters to notes.txt."
    assert [(c["title"], c["status"]) for c in demo["toolCalls"]] == [("Write notes.txt", "completed")]
    assert demo["filesChanged"] == [{"path": "notes.txt", "change": "added"}]
    assert ts["ok"] and ts["reply"] == "write notes.txt hi" and ts["filesChanged"] == []
    assert ts["command"] == shlex.split(TS_AGENT) and demo["name"] != ts["name"]
    assert all(a["durationSeconds"] >= 0 for a in out["agents"])
    assert not (work / "notes.txt").exists()  # each ran in a copy, never in the user's tree
    assert sorted(p.name for p in work.iterdir()) == ["README.md"]
    assert out["devtools"]["db"] == str(db)
    a, b = demo["recording"], ts["recording"]
    assert out["devtools"]["diff"] == [f"/diff?a={a}&b={b}"]
    _opens_in_the_diff_view(db, work, a, b)


def _opens_in_the_diff_view(db: Path, cwd: Path, a: int, b: int) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "devtools"))
    try:
        from dtutil import Devtools
    finally:
        sys.path.pop(0)
    tools = Devtools(db, cwd)
    try:
        assert tools.http.get(tools.url).status_code == 200  # (the token's cookie)
        listing = tools.http.get("/").text
        assert "prompt --agent" in listing
        diff = tools.http.get(f"/diff?a={a}&b={b}")
        assert diff.status_code == 200
        page = diff.text
        assert "steps vs" in page and "Wrote 3 characters to notes.txt." in page and "write notes.txt hi" in page
    finally:
        tools.stop()


def test_an_agent_that_cannot_start_is_reported_in_its_column(tmp_path: Path) -> None:
    work = _tree(tmp_path)
    missing = "/nonexistent/agent --acp"
    proc = _prompt("--json", "--db", str(tmp_path / "d.sqlite"), "--agent", DEMO, "--agent", missing,
                   "--agent", shlex.join(CRASH_AGENT), "hello", cwd=work)
    assert proc.returncode == 1
    demo, gone, crashed = json.loads(proc.stdout)["agents"]
    assert demo["ok"] and demo["reply"] == "You said: hello" and demo["error"] is None
    assert not gone["ok"] and "/nonexistent/agent" in gone["error"] and "not found" in gone["error"]
    assert "record" not in gone["error"]  # (the recorder in front of it is not what failed)
    assert not crashed["ok"] and "exited with code 3" in crashed["error"]
    assert "something broke" in crashed["error"]


def test_side_by_side_text_and_the_recordings_named(tmp_path: Path) -> None:
    work, db = _tree(tmp_path), tmp_path / "d.sqlite"
    proc = _prompt("--db", str(db), "--agent", DEMO, "--agent", DEMO, "hello", cwd=work)
    assert proc.returncode == 0, proc.stderr
    header = proc.stdout.splitlines()[0]
    assert "acplink.demo" in header and "#2" in header and "│" in header
    assert proc.stdout.count("You said: hello") == 2 and proc.stdout.count("ok · ") == 2
    assert "files changed: none" in proc.stdout
    assert f"acplink devtools --db {db}" in proc.stderr and "/diff?a=" in proc.stderr


def test_in_place_runs_in_the_users_tree_and_keep_keeps_the_copies(tmp_path: Path) -> None:
    work = _tree(tmp_path)
    proc = _prompt("--json", "--allow", "--in-place", "--no-record", "--agent", DEMO, "--agent", DEMO,
                   "write notes.txt hi", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert (work / "notes.txt").read_text() == "hi\n"
    assert json.loads(proc.stdout)["devtools"] is None
    kept = _prompt("--json", "--allow", "--keep", "--no-record", "--agent", DEMO, "--agent", DEMO,
                   "write other.txt x", cwd=work)
    copies = [Path(a["workdir"]) for a in json.loads(kept.stdout)["agents"]]
    try:
        assert all((c / "other.txt").read_text() == "x\n" and (c / "notes.txt").exists() for c in copies)
        assert not (work / "other.txt").exists()
    finally:
        for c in copies:
            subprocess.run(["rm", "-rf", str(c.parent)], check=False)


def test_one_agent_command_keeps_the_single_agent_meaning(tmp_path: Path) -> None:
    proc = _prompt("--agent", DEMO, "hello", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "You said: hello"


@pytest.mark.parametrize("flags", [["--in-place"], ["--keep"], ["--db", "x.sqlite"], ["--no-record"]])
def test_the_compare_options_need_several_agents(tmp_path: Path, flags: list[str]) -> None:
    proc = _prompt(*flags, "hello", cwd=tmp_path)
    assert proc.returncode == 2 and "for several agents" in proc.stderr


def test_several_agents_do_not_take_url_or_mcp(tmp_path: Path) -> None:
    proc = _prompt("--mcp", "x=python server.py", "--agent", DEMO, "--agent", DEMO, "hello", cwd=tmp_path)
    assert proc.returncode in (2, 1) and "do not go with several --agent" in proc.stderr




@needs_ts
def test_acp_v2_agents_side_by_side(tmp_path: Path) -> None:
    ts_v2 = shlex.join([str(NODE), str(JS_DIR / "v2_agent.mjs")])
    proc = _prompt("--json", "--no-record", "--protocol", "2", "--agent", DEMO, "--agent", ts_v2, "hello",
                   cwd=_tree(tmp_path))
    assert proc.returncode == 0, proc.stderr
    demo, ts = json.loads(proc.stdout)["agents"]
    assert (demo["reply"], ts["reply"]) == ("You said: hello", "Hello, world")
