"""Reading a conductor's trace: ``acplink inspect`` shows its hops, ``acplink devtools import``
stores each hop as a connection. The traces come from a real chain over pipes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from proxy_raw import PROBE, PY, RawClient, conduct

from acplink.errors import MethodNotFound

ACPLINK = [PY, "-m", "acplink"]


@pytest.fixture
async def chain_trace(tmp_path: Path) -> Path:
    """A trace of client → passthrough → probe agent: initialize, an echo, an unknown method."""
    path = tmp_path / "chain.jsons"
    async with RawClient(conduct("acplink:passthrough", agent=PROBE, extra=("--trace", str(path)))) as c:
        await c.initialize()
        await c.call("_probe/echo", {"sessionId": "s-1", "x": 1})
        with pytest.raises(MethodNotFound):
            await c.call("_nobody/knows", {})
    return path


def test_inspect_shows_the_hops(chain_trace: Path) -> None:
    events = [json.loads(line) for line in chain_trace.read_text().splitlines()]
    proc = subprocess.run([*ACPLINK, "inspect", str(chain_trace)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(events) + 1 and lines[-1] == f"{len(events)} hop messages, 2 error answers"
    shown = [" ".join(line.split()[1:]) for line in lines[:-1]]  # (without the time)
    ids = {(e["from"], e["type"], e.get("method")): e["id"] for e in events if e["type"] == "request"}
    first = ids[("client", "request", "proxy/initialize")]
    assert shown[0] == f"client → proxy:0 request #{first} proxy/initialize"
    echo = ids[("proxy:0", "request", "_probe/echo")]
    assert f"proxy:0 → agent request #{echo} _probe/echo session s-1" in shown
    assert f"agent → proxy:0 response #{echo} _probe/echo session s-1" in shown  # (from its request)
    unknown = ids[("client", "request", "_nobody/knows")]
    assert (f"proxy:0 → client response #{unknown} _nobody/knows error -32601 Method not found: _nobody/knows"
            in shown)


def test_inspect_json_lists_the_hops(chain_trace: Path) -> None:
    proc = subprocess.run([*ACPLINK, "inspect", "--json", str(chain_trace)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    hops = json.loads(proc.stdout)["hops"]
    errors = [h for h in hops if h["error"]]
    assert [(h["from"], h["to"], h["method"]) for h in errors] == [("agent", "proxy:0", "_nobody/knows"),
                                                                   ("proxy:0", "client", "_nobody/knows")]
    assert {h["from"] for h in hops} == {"client", "proxy:0", "agent"}


def test_devtools_import_stores_a_connection_per_hop(chain_trace: Path, tmp_path: Path) -> None:
    from acplink.devtools.importer import import_trace
    from acplink.devtools.store import Store

    events = [json.loads(line) for line in chain_trace.read_text().splitlines()]
    store = Store(tmp_path / "d.sqlite")
    try:
        res = import_trace(store, chain_trace)
        assert [hop for hop, _, _ in res.hops] == ["client ↔ proxy:0", "proxy:0 ↔ agent"]
        assert res.messages == len(events) and res.bad_lines == []
        for hop, conn, count in res.hops:
            row = store.connection(conn)
            assert row is not None and row.source == f"import chain.jsons ({hop})" and row.messages == count
            failed = store.rows(conn, "error = 1", columns="method")  # the unknown method's -32601
            assert [r["method"] for r in failed] == ["_nobody/knows"]
            upstream = hop.split(" ↔ ")[0]
            wanted = [e for e in events if upstream in (e["from"], e["to"]) and hop.split(" ↔ ")[1] in
                      (e["from"], e["to"])]
            stored = store.rows(conn, columns="dir, method")
            assert [r["dir"] for r in stored] == ["c2a" if e["from"] == upstream else "a2c" for e in wanted]
            assert "_probe/echo" in {r["method"] for r in stored}
    finally:
        store.close()


def test_devtools_import_cli_names_each_hop(chain_trace: Path, tmp_path: Path) -> None:
    proc = subprocess.run([*ACPLINK, "devtools", "--db", str(tmp_path / "d.sqlite"), "import", str(chain_trace)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(": hop ")[1].split(": ")[0] for line in lines] == ["client ↔ proxy:0", "proxy:0 ↔ agent"]
    assert all(line.endswith(f"imported as connection #{n}") for n, line in enumerate(lines, 1))
