"""The whole-session views of an ended connection are computed once and kept in the database
(a 100k-message session opens in well under 2 s the second time, and the recorder or the
importer computes them before the first look); a new row makes them stale; a live connection
is never cached."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from dtutil import message, record_demo

import acplink.devtools.compare as compare
import acplink.devtools.conversation as conversation
import acplink.devtools.views as views
import acplink.devtools.waterfall as waterfall
from acplink.devtools.store import Ingest, Store


def _count(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    calls: Counter[str] = Counter()
    for module, name in ((views, "_findings"), (conversation, "_conversation"), (waterfall, "_waterfall"),
                         (compare, "_diff")):
        real = getattr(module, name)

        def counting(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(module, name, counting)
    return calls


def _all_views(store: Store, conn: int, other: int) -> list[str]:
    c = store.connection(conn)
    assert c is not None
    return [views.findings_page(store, c), conversation.conversation_page(store, c, ""),
            waterfall.waterfall_page(store, c),
            compare.diff_page(store, {"a": str(conn), "b": str(other), "sa": "", "sb": ""})]


def test_views_are_computed_once_and_again_after_a_new_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "d.sqlite"
    one = record_demo(db, ["hello", "plan a; b"], tmp_path)
    two = record_demo(db, ["hello"], tmp_path)
    store = Store(db)
    try:
        calls = _count(monkeypatch)
        first = _all_views(store, one, two)
        assert "You said: hello" in first[1] and "2 requests" not in first[2]
        assert _all_views(store, one, two) == first
        assert calls == {"_findings": 1, "_conversation": 1, "_waterfall": 1, "_diff": 1}
        # a row arrives (a recovered spool): every view of the connection is made again
        ingest = Ingest(store, "more", conn=one, skip_through=0)
        ingest(message(1000, "a2c", {"jsonrpc": "2.0", "method": "x/late", "params": {}}))
        ingest.flush()
        again = _all_views(store, one, two)
        assert calls == {"_findings": 2, "_conversation": 2, "_waterfall": 2, "_diff": 2}
        assert again[0] != first[0]  # (the late notification is a finding now)
    finally:
        store.close()


def test_a_live_connection_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "d.sqlite")
    ingest = Ingest(store, "live")
    try:
        ingest({"type": "header", "wall": 1_700_000_000})
        ingest(message(1, "c2a", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}))
        ingest.flush()
        assert ingest.conn is not None
        c = store.connection(ingest.conn)
        assert c is not None and c.ended is None
        calls = _count(monkeypatch)
        views.findings_page(store, c)
        views.findings_page(store, c)
        assert calls["_findings"] == 2
        assert store.db.execute("SELECT count(*) FROM views").fetchone()[0] == 0
    finally:
        ingest.close()
        store.close()


def test_the_server_warms_the_views_of_recordings_in_the_background(tmp_path: Path) -> None:
    import time

    from starlette.testclient import TestClient

    from acplink.devtools.server import build_app

    db = tmp_path / "d.sqlite"
    conn = record_demo(db, ["hello"], tmp_path)
    store = Store(db)
    try:
        store.db.execute("DELETE FROM views")  # (a recording not warmed: recovered, or older)
        store.db.execute("UPDATE messages SET checked = 0 WHERE conn = ?", (conn,))
        with TestClient(build_app(store)):
            deadline = time.monotonic() + 60  # (a bound against a hang, not a timing)
            while time.monotonic() < deadline:
                names = {n for (n,) in store.db.execute("SELECT name FROM views WHERE conn = ?", (conn,))}
                if len(names) >= 3:
                    break
                time.sleep(0.05)
        assert {"findings", "waterfall"} <= names and any(n.startswith("conversation ") for n in names)
        assert store.db.execute("SELECT count(*) FROM messages WHERE checked = 0").fetchone()[0] == 0
    finally:
        store.close()
