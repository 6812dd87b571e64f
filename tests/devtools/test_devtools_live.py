"""The live feed never misses a row: a row committed after a page was rendered but before the
page subscribed to ``/events`` is announced (the race behind the flaky browser live test)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import orjson
from dtutil import message

from acplink.devtools.server import build_app
from acplink.devtools.store import Ingest, Store


async def _first_change(app: Any, query: str) -> dict[str, Any]:
    """Subscribe to ``/events?QUERY`` and return the first change event (the client then leaves)."""
    gone = asyncio.Event()
    got: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    buf = b""

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(msg: dict[str, Any]) -> None:
        nonlocal buf
        if msg["type"] == "http.response.body":
            buf += msg.get("body", b"")
            found = re.search(rb"event: change\ndata: (.*)\n\n", buf)
            if found and not got.done():
                got.set_result(orjson.loads(found.group(1)))
                gone.set()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/events", "raw_path": b"/events", "query_string": query.encode(), "headers": [],
             "server": ("testserver", 80), "client": ("127.0.0.1", 1), "root_path": ""}
    task = asyncio.create_task(app(scope, receive, send))
    try:
        return await asyncio.wait_for(got, 20)  # (a bound against a hang: the feed polls every 0.25 s)
    finally:
        gone.set()
        await asyncio.wait_for(task, 20)


def _page_since(html: str) -> str:
    found = re.search(r'data-since="([^"]*)"', html)
    assert found, "the page carries the state it was rendered with"
    return found.group(1)


def test_a_row_stored_between_the_page_and_its_subscription_is_announced(tmp_path: Path) -> None:
    store = Store(tmp_path / "d.sqlite")
    ingest = Ingest(store, "live")
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        ingest({"type": "header", "wall": 1_700_000_000})
        ingest(message(1, "c2a", init))
        ingest.flush()
        conn = ingest.conn
        assert conn is not None
        from starlette.testclient import TestClient

        app = build_app(store)
        with TestClient(app) as client:
            timeline = client.get(f"/c/{conn}").text
            sessions = client.get("/").text
        # the answer is committed now: after the pages, before their subscriptions
        ingest(message(2, "a2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}))
        ingest.flush()
        event = asyncio.run(_first_change(app, f"since={_page_since(timeline)}"))
        assert event["conns"] == [conn]
        assert asyncio.run(_first_change(app, f"since={_page_since(sessions)}"))["conns"] == [conn]
    finally:
        ingest.close()
        store.close()
