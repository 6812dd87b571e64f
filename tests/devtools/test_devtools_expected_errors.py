"""Expected errors: a read of a file that does not exist (an agent looking before it writes a
new file) is informational in ``acplink inspect``, in the Sessions count and in the timeline,
never a red error; the demo agent no longer causes one when it writes a new file, and still
reads an existing file through the client before overwriting it (its diff)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson
from dtutil import ACPLINK, message, record_demo, write_trace

from acplink.devtools.importer import import_trace
from acplink.devtools.store import EXPECTED_ERROR, Store
from acplink.devtools.views import Filters, sessions_rows, timeline_rows
from acplink.tools.analysis import analyze, expected_error


def _rows(db: Path, conn: int, method: str) -> list[dict[str, object]]:
    store = Store(db)
    try:
        return [dict(r) for r in store.rows(conn, "method = ?", [method])]
    finally:
        store.close()


def test_the_demo_writes_a_new_file_without_reading_it_first(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    conn = record_demo(db, ["write new.txt hi there"], tmp_path)
    assert (tmp_path / "new.txt").read_text() == "hi there\n"
    assert _rows(db, conn, "fs/read_text_file") == []  # (it read it before: a not-found error)
    store = Store(db)
    try:
        c = store.connection(conn)
        assert c is not None and c.errors == 0
        assert '<td class="">0</td>' in sessions_rows(store)  # the errors column: no red count
    finally:
        store.close()


def test_the_demo_still_reads_an_existing_file_before_overwriting_it(tmp_path: Path) -> None:
    db = tmp_path / "d.sqlite"
    (tmp_path / "old.txt").write_text("before\n")
    conn = record_demo(db, ["write old.txt after"], tmp_path)
    assert (tmp_path / "old.txt").read_text() == "after\n"
    (read,) = [r for r in _rows(db, conn, "fs/read_text_file") if r["kind"] == "response"]
    assert read["error"] == 0
    calls = [orjson.loads(r["body"]) for r in _rows(db, conn, "session/update")]  # type: ignore[arg-type]
    diffs = [c for m in calls if m["params"]["update"]["sessionUpdate"] == "tool_call"
             for c in m["params"]["update"].get("content") or [] if c.get("type") == "diff"]
    assert diffs and diffs[0]["oldText"] == "before\n" and diffs[0]["newText"] == "after\n"


def _read_missing_trace(path: Path, code: int = -32002, text: str = "file not found: /w/new.txt") -> Path:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities":
                                                                           {"fs": {"readTextFile": True}}}}
    init_r = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}
    read = {"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/w/n"}}
    missing = {"jsonrpc": "2.0", "id": 7, "error": {"code": code, "message": text}}
    write = {"jsonrpc": "2.0", "id": 8, "method": "fs/write_text_file",
             "params": {"sessionId": "s1", "path": "/w/n", "content": "x"}}
    denied = {"jsonrpc": "2.0", "id": 8, "error": {"code": -32603, "message": "disk full"}}
    return write_trace(path, [
        {"type": "header", "format": "acplink-trace", "version": 1, "mono": 1.0, "wall": 1_700_000_000},
        message(1, "c2a", init), message(2, "a2c", init_r), message(3, "a2c", read), message(4, "c2a", missing),
        message(5, "a2c", write), message(6, "c2a", denied)])


def test_a_read_of_a_missing_file_is_informational_and_a_failed_write_an_error(tmp_path: Path) -> None:
    trace = _read_missing_trace(tmp_path / "t.jsonl")
    records = [orjson.loads(line) for line in trace.read_bytes().splitlines()]
    t = analyze(records)
    assert [(e["method"], e["severity"]) for e in t.errors] == [("fs/read_text_file", "info"),
                                                                ("fs/write_text_file", "error")]
    out = subprocess.run([*ACPLINK, "inspect", str(trace)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    errors, expected = out.stdout.index("\nerrors\n"), out.stdout.index("expected errors (informational")
    assert "disk full" in out.stdout[errors:expected] and "file not found" not in out.stdout[errors:expected]
    assert "file not found" in out.stdout[expected:]
    # devtools: one error counted (the write), the read marked informational in the timeline
    store = Store(tmp_path / "d.sqlite")
    try:
        conn = import_trace(store, trace).conn
        c = store.connection(conn)
        assert c is not None and c.errors == 1
        flags = {r["seq"]: r["error"] for r in store.rows(conn, "kind = 'response'")}
        assert flags == {2: 0, 4: EXPECTED_ERROR, 6: 1}
        html, _ = timeline_rows(store, conn, Filters())
        row4 = html[html.index('data-seq="4"'):html.index('data-seq="5"')]
        assert 'class="info"' in row4 and "✖" not in row4 and " bad" not in html[:html.index('data-seq="4"') + 20]
    finally:
        store.close()


def test_only_a_not_found_answer_to_a_read_is_expected() -> None:
    assert expected_error("fs/read_text_file", {"code": -32002, "message": "nope"})
    assert expected_error("fs/read_text_file", {"code": -32603, "message": "ENOENT: no such file or directory"})
    assert not expected_error("fs/read_text_file", {"code": -32603, "message": "permission denied"})
    assert not expected_error("fs/write_text_file", {"code": -32002, "message": "not found"})
    assert not expected_error("session/load", {"code": -32002, "message": "unknown session"})
    assert not expected_error(None, {"code": -32002})
