"""``acplink devtools --store STORE``: the Stores page shows what a session store remembers, in
a real browser (Playwright driving Debian's Chromium, as test_devtools_browser.py), read-only:
the store's bytes are the same after the pages were seen. A store that cannot be read stops
devtools at start with one line."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from dtutil import ACPLINK, Devtools, env

from acplink import connect
from acplink.agent.store_sqlite import APPLICATION_ID, SCHEMA_VERSION

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT = 30_000  # ms: a bound against hangs, never a timing assertion
STORE_AGENT = str(Path(__file__).resolve().parent.parent / "agent" / "store_agent.py")


async def _remember(db: Path | str, cwd: Path) -> str:
    async with connect([sys.executable, STORE_AGENT, str(db)]) as client:
        session = await client.new_session(cwd=cwd)
        assert await session.prompt("remember <the> milk").text() == "turn 1: remember <the> milk"
        await session.prompt("title Shopping").text()
        return session.session_id


def _devtools(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*ACPLINK, "devtools", "--no-browser", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cwd, env=env())


def test_a_store_devtools_cannot_read_stops_it_with_one_line(tmp_path: Path) -> None:
    import sqlite3

    newer = tmp_path / "newer.sqlite3"
    db = sqlite3.connect(newer)
    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    proc = _devtools("--db", str(tmp_path / "rec.sqlite"), "--store", str(newer), cwd=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and out == b""
    assert err.decode().strip() == (f"acplink: error: session store {newer}: schema version {SCHEMA_VERSION + 1} was "
                                    f"written by a newer acplink (this one reads versions up to {SCHEMA_VERSION}); "
                                    "nothing was changed")


@contextlib.contextmanager
def _serving(store: str, tmp_path: Path) -> Iterator[str]:
    """``acplink devtools --store STORE`` until the block ends: its URL."""
    devtools = Devtools(tmp_path / "rec.sqlite", tmp_path, ["--store", store])
    try:
        assert devtools.url.startswith("http://127.0.0.1:") and "/?token=" in devtools.url
        yield devtools.url
    finally:
        devtools.stop()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    store = tmp_path / "sessions.sqlite3"
    sid = asyncio.run(_remember(store, tmp_path))
    with _serving(str(store), tmp_path) as url:
        yield {"url": url, "base": url.split("/?")[0], "store": store, "sid": sid}


def test_a_postgres_store_is_shown_too(tmp_path: Path, pg_dsn: str) -> None:
    sid = asyncio.run(_remember(pg_dsn, tmp_path))
    with _serving(pg_dsn, tmp_path) as url:
        base, _, token = url.partition("/?token=")
        with httpx.Client(timeout=30) as http:
            listed = http.get(f"{base}/stores", params={"token": token})
            assert listed.status_code == 200 and f'data-session="{sid}"' in listed.text
            assert "password" not in listed.text and "postgresql://" in listed.text
            shown = http.get(f"{base}/stores/0/s/{sid}", params={"token": token})
            assert shown.status_code == 200 and "remember &lt;the&gt; milk" in shown.text


def test_the_stores_page_shows_the_sessions_and_a_history(served: dict[str, Any]) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is absent (install Debian's chromium package to run the browser tests)")
    sync_api = pytest.importorskip("playwright.sync_api")
    before = hashlib.sha256(served["store"].read_bytes()).hexdigest()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT)
            page.goto(served["url"])  # the token, then its cookie
            page.click("header a:text('Stores')")
            page.wait_for_url("**/stores")
            row = page.locator(f'section.store tr[data-session="{served["sid"]}"]')
            assert row.count() == 1
            cells = row.locator("td").all_inner_texts()
            assert cells[:3] == [served["sid"], "Shopping", "local"] and cells[5] == "2"
            assert "read-only" in page.locator("section.store h3").inner_text()
            row.locator("a").click()
            page.wait_for_url(f'**/stores/0/s/{served["sid"]}')
            entries = page.locator("#history tbody tr")
            texts = [" | ".join(c.strip() for c in t.split("\t")) for t in entries.all_inner_texts()]
            assert texts[:4] == ["1 | user message | remember <the> milk", "1 | agent message | turn 1: remember <the> milk",
                                 "1 | tool call | look [completed]", "1 | end | end_turn"]
            assert "Shopping" in page.locator("table.meta").inner_text()
            page.goto(f'{served["base"]}/stores/0/s/sess_nope')
            assert "no such stored session" in page.content()
        finally:
            browser.close()
    assert hashlib.sha256(served["store"].read_bytes()).hexdigest() == before
