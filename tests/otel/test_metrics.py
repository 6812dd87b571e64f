"""Metrics: ``acplink serve --metrics PORT`` answers a Prometheus scrape with what it relayed
(request counts and latency by method, sessions, connections, bytes), and the text format
itself; ``--otel`` exports the same instruments with OTLP (see test_trace_end_to_end.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from receiver import stop

pytest.importorskip("opentelemetry.sdk")

ACPLINK = [sys.executable, "-m", "acplink"]


def _scrape(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.headers["Content-Type"], resp.read().decode()


def _sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample ``name`` whose labels include ``labels``."""
    for line in text.splitlines():
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)", line)
        if m is None or m.group(1) != name:
            continue
        got = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        if all(got.get(k) == v for k, v in labels.items()):
            return float(m.group(3))
    return None


def test_serve_metrics_scrape(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["ACPLINK_DEMO_STORE"] = str(tmp_path / "store")
    serve = subprocess.Popen([*ACPLINK, "serve", "--port", "0", "--http", "--metrics", "0"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert serve.stdout is not None and serve.stderr is not None
        first = serve.stderr.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/metrics)", first)
        assert m is not None, first
        metrics_url = m.group(1)
        url = serve.stdout.readline().split()[-1]
        kind, before = _scrape(metrics_url)
        assert kind.startswith("text/plain; version=0.0.4")
        assert _sample(before, "rpc_server_duration_milliseconds_count", rpc_method="session/prompt") is None
        for text in ("hello", "hello again"):
            proc = subprocess.run([*ACPLINK, "prompt", "--url", url, text], capture_output=True, text=True,
                                  env=env, cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
            assert proc.returncode == 0, proc.stderr
        _, after = _scrape(metrics_url)
        assert "# TYPE rpc_server_duration_milliseconds histogram" in after
        assert _sample(after, "rpc_server_duration_milliseconds_count", rpc_method="session/prompt",
                       acp_side="serve") == 2
        assert _sample(after, "rpc_server_duration_milliseconds_count", rpc_method="initialize") == 2
        assert _sample(after, "rpc_server_duration_milliseconds_bucket", rpc_method="session/prompt", le="+Inf") == 2
        total = _sample(after, "rpc_server_duration_milliseconds_sum", rpc_method="session/prompt")
        assert total is not None and total > 0
        assert "# TYPE acp_bytes_sent_bytes counter" in after
        sent = _sample(after, "acp_bytes_sent_bytes_total", acp_side="serve")
        received = _sample(after, "acp_bytes_received_bytes_total", acp_side="serve")
        assert sent is not None and received is not None and sent > received > 0  # (the replies are longer)
        # two connections, each opened a session; the clients are gone: none is open now
        assert _sample(after, "acp_sessions_active", acp_side="serve") == 0
        assert _sample(after, "acp_connections_active", acp_side="serve") == 0
    finally:
        stop(serve)
