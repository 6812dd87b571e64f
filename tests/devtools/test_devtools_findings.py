"""Findings of a stored recording: a recording validated as it went is not validated again (on a
100k-message session that second pass cost seconds); one stored without validation still is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dtutil import record_demo

import acplink.tools.analysis as analysis
from acplink.devtools.store import Store
from acplink.devtools.views import findings_page


def _count_validations(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = analysis.validate_message

    def counting(msg: Any, *args: Any, **kw: Any) -> Any:
        calls.append(msg)
        return real(msg, *args, **kw)

    monkeypatch.setattr(analysis, "validate_message", counting)
    return calls


def test_findings_use_the_validation_stored_with_the_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "d.sqlite"
    conn = record_demo(db, ["hello", "plan a; b"], tmp_path)
    store = Store(db)
    try:
        c = store.connection(conn)
        assert c is not None and c.header.get("validated") is True and c.messages > 10
        calls = _count_validations(monkeypatch)
        html = findings_page(store, c)
        assert "No findings" in html and calls == []
        # the same recording without the mark (rows of an older acplink, of a trace recorded
        # without validation): validated here
        store.db.execute("UPDATE connections SET header = '{}' WHERE id = ?", (conn,))
        store.db.execute("UPDATE messages SET checked = NULL WHERE conn = ?", (conn,))
        store.db.execute("DELETE FROM views")  # (the findings computed above are kept: not a new row)
        c = store.connection(conn)
        assert c is not None
        assert "No findings" in findings_page(store, c) and len(calls) == c.messages
    finally:
        store.close()


def test_rows_stored_unvalidated_are_validated_once_when_first_analysed(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``acplink record --db`` stores rows first and validates them later (checked = 0): the
    first reader validates them and remembers the result, a schema error included."""
    import acplink.devtools.store as store_module

    db = tmp_path / "d.sqlite"
    conn = record_demo(db, ["hello"], tmp_path)
    store = Store(db)
    try:
        # as the recorder leaves them: unvalidated, and one of them breaks the schema
        store.db.execute("UPDATE messages SET checked = 0, violations = NULL WHERE conn = ?", (conn,))
        store.db.execute("UPDATE messages SET body = json_remove(body, '$.params.prompt') WHERE conn = ? AND "
                         "method = 'session/prompt' AND kind = 'request'", (conn,))
        store.db.execute("DELETE FROM views")
        calls: list[Any] = []
        real = store_module.validate_message
        monkeypatch.setattr(store_module, "validate_message", lambda *a: calls.append(a) or real(*a))
        c = store.connection(conn)
        assert c is not None
        html = findings_page(store, c)
        assert "$.params.prompt" in html and len(calls) == c.messages
        assert store.db.execute("SELECT count(*) FROM messages WHERE conn = ? AND checked = 0", (conn,)).fetchone()[0] == 0
        assert "$.params.prompt" in findings_page(store, c) and len(calls) == c.messages  # remembered
    finally:
        store.close()


def test_a_long_streamed_reply_is_joined_whole() -> None:
    chunks = [f"piece {i} " for i in range(3000)]
    records: list[dict[str, Any]] = [{"type": "header", "mono": 0.0}]
    seq = 0

    def msg(d: str, m: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        records.append({"type": "message", "seq": seq, "dir": d, "mono": seq / 1000, "msg": {"jsonrpc": "2.0", **m},
                        "violations": []})

    msg("c2a", {"id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}})
    msg("a2c", {"id": 1, "result": {"sessionId": "s"}})
    msg("c2a", {"id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}})
    for i, text in enumerate(chunks):
        kind = "agent_thought_chunk" if i == 1500 else "agent_message_chunk"
        msg("a2c", {"method": "session/update", "params": {"sessionId": "s", "update": {
            "sessionUpdate": kind, "content": {"type": "text", "text": text}}}})
    msg("a2c", {"id": 2, "result": {"stopReason": "end_turn"}})
    (turn,) = analysis.analyze(records).sessions["s"].turns
    assert turn.reply == "".join(chunks[:1500] + chunks[1501:])
    assert turn.events == [["prompt", "hi"], ["reply", "".join(chunks[:1500])], ["thought", chunks[1500]],
                           ["reply", "".join(chunks[1501:])]]
