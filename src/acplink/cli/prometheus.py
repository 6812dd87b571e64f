"""``acplink serve --metrics PORT``: the process's metrics in the Prometheus text format.

A metric reader of OpenTelemetry's SDK (:class:`PrometheusEndpoint`) that collects when
scraped: ``GET /metrics`` on its own port answers the text exposition format (version
0.0.4), written here from the SDK's metric data: a counter as ``NAME_total``, an up-down
counter or gauge as a gauge, a histogram as its cumulative ``_bucket{le=...}`` series with
``_sum`` and ``_count``. Names are the OpenTelemetry names with ``.`` as ``_`` and the unit
appended (``rpc.server.duration`` in ms → ``rpc_server_duration_milliseconds``). The listener
is a thread owned by the reader: the meter provider's shutdown stops and joins it.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.sdk.metrics.export import (
    Gauge,
    Histogram,
    MetricReader,
    MetricsData,
    Sum,
)

__all__ = ["CONTENT_TYPE", "PrometheusEndpoint", "render"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_UNITS = {"ms": "milliseconds", "s": "seconds", "By": "bytes"}
_BAD_NAME = re.compile(r"[^a-zA-Z0-9_:]")
_BAD_LABEL = re.compile(r"[^a-zA-Z0-9_]")


def _name(name: str, unit: str) -> str:
    base = _BAD_NAME.sub("_", name)
    suffix = _UNITS.get(unit, "" if not unit or unit.startswith("{") else _BAD_NAME.sub("_", unit))
    if suffix and not base.endswith("_" + suffix):
        base = f"{base}_{suffix}"
    return base if not base[:1].isdigit() else "_" + base


def _value(v: float) -> str:
    if isinstance(v, float):
        if math.isinf(v):
            return "+Inf" if v > 0 else "-Inf"
        if math.isnan(v):
            return "NaN"
        return repr(v)
    return str(v)


def _labels(attributes: Any, extra: Iterable[tuple[str, str]] = ()) -> str:
    pairs = [(_BAD_LABEL.sub("_", str(k)), str(v)) for k, v in (attributes or {}).items()]
    pairs.extend(extra)
    if not pairs:
        return ""
    esc = ",".join(f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34)).replace(chr(10), chr(92) + "n")}"'
                   for k, v in pairs)
    return "{" + esc + "}"


def render(data: MetricsData | None) -> str:
    """``data`` in the Prometheus text format (one block per metric name)."""
    blocks: dict[str, tuple[str, str, list[str]]] = {}  # name -> (type, help, sample lines)
    for rm in data.resource_metrics if data is not None else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                point_data = metric.data
                name = _name(metric.name, metric.unit or "")
                lines: list[str]
                if isinstance(point_data, Sum) and point_data.is_monotonic:
                    kind, lines = "counter", [f"{name}_total{_labels(p.attributes)} {_value(p.value)}"
                                              for p in point_data.data_points]
                elif isinstance(point_data, (Sum, Gauge)):
                    kind, lines = "gauge", [f"{name}{_labels(p.attributes)} {_value(p.value)}"
                                            for p in point_data.data_points]
                elif isinstance(point_data, Histogram):
                    kind, lines = "histogram", []
                    for p in point_data.data_points:
                        running = 0
                        for bound, count in zip([*p.explicit_bounds, math.inf], p.bucket_counts, strict=False):
                            running += count
                            lines.append(f"{name}_bucket{_labels(p.attributes, [('le', _value(float(bound)))])} {running}")
                        lines.append(f"{name}_sum{_labels(p.attributes)} {_value(p.sum)}")
                        lines.append(f"{name}_count{_labels(p.attributes)} {p.count}")
                else:  # (an exponential histogram: not in the text format)
                    continue
                entry = blocks.setdefault(name, (kind, metric.description or metric.name, []))
                entry[2].extend(lines)
    out: list[str] = []
    for name, (kind, text, lines) in blocks.items():
        out.append(f"# HELP {name} {text.replace(chr(92), chr(92) * 2).replace(chr(10), chr(92) + 'n')}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(lines)
    return "\n".join(out) + "\n" if out else ""


class PrometheusEndpoint(MetricReader):
    """A metric reader serving ``GET /metrics`` on ``host:port`` (0: a free port, see :attr:`port`)."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        super().__init__()
        self._latest: MetricsData | None = None
        self._lock = threading.Lock()
        reader = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # (the http.server spelling)
                if self.path.split("?", 1)[0] not in ("/metrics", "/"):
                    self.send_error(404)
                    return
                body = reader.scrape().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # (quiet: no line per scrape)
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, name="acplink-metrics", daemon=True)
        self._thread.start()

    def scrape(self) -> str:
        """Collect now and render."""
        with self._lock:
            self.collect()
            return render(self._latest)

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> None:
        self._latest = metrics_data

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout_millis / 1000)
