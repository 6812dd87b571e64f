"""The devtools database: migrations and WAL, a database from a newer acplink, the rows of a
recording (pairs, latency, sessions, agent), JSONL import of damaged traces, `record --db`."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from dtutil import ACPLINK, bad_prompt_trace, record_demo

from acplink import __version__
from acplink.devtools.importer import import_trace
from acplink.devtools.store import SCHEMA_VERSION, DatabaseError, Ingest, Store
from acplink.devtools.views import Filters, sessions_rows, timeline_page


def test_a_new_database_is_migrated_to_the_current_version_in_wal_mode(tmp_path: Path) -> None:
    store = Store(tmp_path / "sub" / "d.sqlite")
    try:
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()
    Store(tmp_path / "sub" / "d.sqlite").close()  # opening again changes nothing


def _newer(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.close()
    return path


def test_a_database_from_a_newer_acplink_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = _newer(tmp_path / "new.sqlite")
    with pytest.raises(DatabaseError, match=r"newer acplink \(schema version \d+; this acplink knows up to 2\)"):
        Store(path)
    out = subprocess.run([*ACPLINK, "devtools", "--db", str(path), "--no-browser"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    assert out.stdout == ""
    assert "written by a newer acplink" in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_file_that_is_not_a_database_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DatabaseError, match="not a usable devtools database"):
        Store(path)


def test_a_recording_has_one_row_per_message_with_pairs_latency_and_sessions(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    conn = record_demo(db, ["hello", "plan a; b"], tmp_path)
    store = Store(db)
    try:
        c = store.connection(conn)
        assert c is not None and c.agent_name == "acplink demo agent" and c.agent_version == "0.1.0"
        assert c.turns == 2 and c.errors == 0 and len(c.sessions) == 1 and c.ended is not None
        prompts = store.rows(conn, "method = 'session/prompt'")
        req, resp = prompts[0], prompts[1]
        assert (req["kind"], resp["kind"]) == ("request", "response")
        assert req["pair"] == resp["seq"] and resp["pair"] == req["seq"]
        assert resp["latency"] is not None and resp["latency"] >= 0
        assert req["session"] == resp["session"] == c.sessions[0]
        assert orjson.loads(req["body"])["params"]["prompt"][0]["text"] == "hello"
        new_resp = store.rows(conn, "method = 'session/new' AND kind = 'response'")[0]
        assert new_resp["session"] == c.sessions[0]  # the session id from the result
        total = store.db.execute("SELECT count(*) FROM messages WHERE conn = ?", (conn,)).fetchone()[0]
        assert c.messages == total > 10
    finally:
        store.close()


def test_v1_and_v2_recordings_name_their_agent_and_client(tmp_path: Path) -> None:
    # recorded through acplink prompt, as a user would: v2 (the draft) and v1 (the default)
    db = tmp_path / "d.sqlite"
    for protocol in ("2", "1"):
        proc = subprocess.run([*ACPLINK, "prompt", "--protocol", protocol, "--cwd", str(tmp_path), "hello", "--",
                               *ACPLINK, "record", "--db", str(db), "--", *ACPLINK, "demo-agent"],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "ACPLINK_DEMO_STORE": str(tmp_path / "store")})
        assert proc.returncode == 0, proc.stderr
    store = Store(db)
    try:
        conns = store.connections()
        assert [(c.agent_name, c.agent_version) for c in conns] == [("acplink demo agent", "0.1.0")] * 2
        assert [(c.agent, c.client) for c in conns] == [("acplink demo agent 0.1.0", f"acplink {__version__}")] * 2
        html = sessions_rows(store)
        assert html.count("<td>acplink demo agent 0.1.0</td>") == 2 and html.count(f"<td>acplink {__version__}</td>") == 2
        assert "<td>?</td>" not in html
        assert len(store.connections("demo agent")) == len(store.connections(f"acplink {__version__}")) == 2
        v2 = conns[1]  # (newest first)
        assert f"agent acplink demo agent 0.1.0 · client acplink {__version__}" in timeline_page(store, v2, Filters())
        # a recording stored by an older acplink (no agent in its row): named from its messages
        store.db.execute("UPDATE connections SET agent_name = NULL, agent_version = NULL")
        again = store.connection(v2.id)
        assert again is not None and again.agent == "acplink demo agent 0.1.0"
    finally:
        store.close()


def test_a_damaged_trace_imports_its_good_lines_and_reports_the_bad_ones(tmp_path: Path) -> None:
    trace = bad_prompt_trace(tmp_path / "t.jsonl")
    lines = trace.read_bytes().splitlines(keepends=True)
    lines.insert(3, b"garbage in the middle\n")
    lines.insert(5, b"[1, 2]\n")
    trace.write_bytes(b"".join(lines))
    store = Store(tmp_path / "d.sqlite")
    try:
        res = import_trace(store, trace)
        assert res.bad_lines == [4, 6, 9] and res.messages == 5
        assert res.conn is not None
        rows = store.rows(res.conn, "")
        assert [r["seq"] for r in rows] == [1, 2, 3, 4, 5]
        assert orjson.loads(rows[4]["violations"])[0]["path"] == "$.params.prompt"
        c = store.connection(res.conn)
        assert c is not None and c.agent_name == "bad-agent"
        assert c.ended == rows[4]["wall"]  # the trace's own end (its duration), not the time of the import
    finally:
        store.close()
    out = subprocess.run([*ACPLINK, "devtools", "--db", str(tmp_path / "d.sqlite"), "import", str(trace),
                          str(tmp_path / "missing.jsonl")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "5 messages imported as connection #2" in out.stdout
    assert "3 bad lines skipped (not trace records): line 4, 6, 9" in out.stderr
    assert "cannot read the trace" in out.stderr and "Traceback" not in out.stderr


def test_record_writes_into_the_database_and_needs_somewhere_to_write(tmp_path: Path) -> None:
    db = tmp_path / "rec.sqlite"
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}},
    ]
    stdin = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    out = subprocess.run([*ACPLINK, "record", "--db", str(db), "--", sys.executable, "-m", "acplink.demo"],
                         input=stdin, capture_output=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count(b"\n") >= 2  # the traffic passed through
    store = Store(db)
    try:
        (c,) = store.connections()
        assert c.source.endswith("-m acplink.demo") and c.exit_code == 0
        assert sorted((r["dir"], r["kind"], r["method"]) for r in store.rows(c.id, "kind != 'notification'")) == [
            ("a2c", "response", "initialize"), ("a2c", "response", "session/new"),
            ("c2a", "request", "initialize"), ("c2a", "request", "session/new")]
    finally:
        store.close()
    none = subprocess.run([*ACPLINK, "record", "--", sys.executable, "-m", "acplink.demo"], capture_output=True,
                          text=True, timeout=60)
    assert none.returncode == 2 and "nowhere to record" in none.stderr


def test_the_cli_does_not_import_the_web_stack_until_devtools_serves() -> None:
    code = ("import sys; from acplink.cli.main import build_parser; build_parser(); "
            "print(sorted(m for m in ('starlette', 'uvicorn', 'sqlite3') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_a_database_error_stops_the_rows_but_never_the_recording(tmp_path: Path) -> None:
    store = Store(tmp_path / "d.sqlite")
    ingest = Ingest(store, "x", batch=1)
    ingest({"type": "header"})
    store.close()  # the database goes away under the recorder
    ingest({"type": "message", "seq": 1, "dir": "c2a", "msg": {"jsonrpc": "2.0", "method": "_x"}})
    ingest.close()
    assert ingest.failed is not None and "closed database" in ingest.failed
