"""The devtools web app without a browser: the token and Origin guard, the pages over a
recording, a 50 MB message, pagination, findings, export, an agent failing to start."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from dtutil import bad_prompt_trace, message, record_demo, write_trace
from starlette.testclient import TestClient

from acplink.devtools.html import DETAIL_LIMIT, diff_html
from acplink.devtools.importer import import_trace
from acplink.devtools.server import Guard, build_app
from acplink.devtools.store import Store
from acplink.devtools.views import PAGE

TOKEN = "secret-token"
ORIGIN = "http://testserver"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    st = Store(tmp_path / "d.sqlite")
    yield st
    st.close()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    guard = Guard(build_app(store), TOKEN)
    guard.origins = {ORIGIN}
    with TestClient(guard, base_url=ORIGIN) as c:
        yield c


def test_the_token_is_required_and_a_foreign_origin_is_refused(client: TestClient) -> None:
    assert client.get("/").status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    assert client.get("/static/devtools.js").status_code == 403
    first = client.get(f"/?token={TOKEN}")
    assert first.status_code == 200 and "Sessions" in first.text
    assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
    assert client.get("/connect").status_code == 200  # the cookie now
    foreign = client.get("/", headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403 and "Origin" in foreign.text
    post = client.post("/connect/start", content=b'{"command": "true"}', headers={"Origin": "http://evil.example"})
    assert post.status_code == 403
    assert client.get("/", headers={"Origin": ORIGIN}).status_code == 200


def test_pages_over_a_demo_recording(client: TestClient, store: Store, tmp_path: Path) -> None:
    conn = record_demo(store.path, ["hello", "plan one; two", "write f.txt hi"], tmp_path)
    client.get(f"/?token={TOKEN}")
    listing = client.get("/").text
    assert f'href="/c/{conn}"' in listing and "acplink demo agent 0.1.0" in listing
    assert "acplink demo agent" not in client.get("/partial/sessions?q=no-such-thing").text
    timeline = client.get(f"/c/{conn}").text
    assert "session/prompt" in timeline and 'data-seq="1"' in timeline
    filtered = client.get(f"/c/{conn}/rows?method=session/prompt").text
    assert filtered.count("<tr") == 6 and "session/update" not in filtered
    prompt_seq = store.rows(conn, "method = 'session/prompt' AND kind = 'request'")[0]["seq"]
    detail = client.get(f"/c/{conn}/m/{prompt_seq}").text
    assert "Schema validation: valid" in detail and "Response #" in detail and "stopReason" in detail
    talk = client.get(f"/c/{conn}/conversation").text
    assert "You said: hello" in talk and 'class="plan"' in talk and 'class="diff"' in talk
    assert "+hi" in talk and "stop reason: <b>end_turn</b>" in talk
    fall = client.get(f"/c/{conn}/waterfall").text
    assert fall.count('class="wrow"') >= 5 and "session/prompt" in fall
    assert "No findings" in client.get(f"/c/{conn}/findings").text
    lines = client.get(f"/c/{conn}/export.jsonl").content.splitlines()
    assert orjson.loads(lines[0])["type"] == "header"
    assert len(lines) - 1 == store.connection(conn).messages  # type: ignore[union-attr]


def test_a_schema_error_is_shown_in_the_detail_and_the_findings(client: TestClient, store: Store,
                                                                tmp_path: Path) -> None:
    res = import_trace(store, bad_prompt_trace(tmp_path / "bad.jsonl"))
    client.get(f"/?token={TOKEN}")
    detail = client.get(f"/c/{res.conn}/m/5").text
    assert "Schema validation: errors" in detail and "<code>$.params.prompt</code>" in detail
    assert "No response recorded" in detail
    findings = client.get(f"/c/{res.conn}/findings").text
    assert f"/c/{res.conn}?at=5" in findings and "unanswered" in findings
    assert "errors only" in client.get(f"/c/{res.conn}").text
    errors_only = client.get(f"/c/{res.conn}/rows?errors=1").text
    assert errors_only.count("<tr") == 1 and 'data-seq="5"' in errors_only


def test_a_50_mb_message_is_shown_truncated_with_a_download_link(client: TestClient, store: Store,
                                                                 tmp_path: Path) -> None:
    big = {"jsonrpc": "2.0", "method": "_big", "params": {"blob": "x" * (50 * 1024 * 1024)}}
    res = import_trace(store, write_trace(tmp_path / "big.jsonl", [message(1, "a2c", big)]))
    client.get(f"/?token={TOKEN}")
    detail = client.get(f"/c/{res.conn}/m/1")
    assert "Truncated: showing the first 256.0 KB of 50.0 MB" in detail.text
    assert f'href="/c/{res.conn}/m/1/raw"' in detail.text
    assert len(detail.content) < DETAIL_LIMIT * 2
    raw = client.get(f"/c/{res.conn}/m/1/raw")
    assert len(raw.content) > 50 * 1024 * 1024 and orjson.loads(raw.content)["method"] == "_big"


def test_the_timeline_is_paginated(client: TestClient, store: Store, tmp_path: Path) -> None:
    note = {"jsonrpc": "2.0", "method": "_tick", "params": {}}
    res = import_trace(store, write_trace(tmp_path / "many.jsonl",
                                          [message(n, "a2c", note) for n in range(1, PAGE * 2 + 51)]))
    client.get(f"/?token={TOKEN}")
    page = client.get(f"/c/{res.conn}").text
    assert page.count('<tr class="msg') == PAGE and f'data-last="{PAGE}"' in page
    second = client.get(f"/c/{res.conn}/rows?after={PAGE}")
    assert second.headers["x-last"] == str(PAGE * 2) and second.text.count("<tr") == PAGE
    third = client.get(f"/c/{res.conn}/rows?after={PAGE * 2}")
    assert "x-last" not in third.headers and third.text.count("<tr") == 50


def test_an_agent_failing_to_start_reports_its_error_and_stderr(client: TestClient) -> None:
    client.get(f"/?token={TOKEN}")
    cmd = f"{sys.executable} -c \"import sys; print('no api key set', file=sys.stderr); sys.exit(3)\""
    got = client.post("/connect/start", content=orjson.dumps({"command": cmd}),
                      headers={"content-type": "application/json"}).json()
    assert got["error"].endswith("exited with code 3 before answering initialize"), got["error"]
    assert got["stderr"] == ["no api key set"]
    assert client.get("/").status_code == 200  # the UI keeps working
    bad = client.post("/connect/start", content=b'{"command": ""}').json()
    assert bad["error"] == "no agent command given"


def test_a_diff_names_an_absolute_path_as_git_does() -> None:
    html = diff_html("/tmp/work/f.txt", "old\n", "new\n")
    assert "--- a/tmp/work/f.txt" in html and "+++ b/tmp/work/f.txt" in html and "//" not in html
    created = diff_html("src/x.py", None, "x = 1\n")
    assert "--- /dev/null" in created and "+++ b/src/x.py" in created
