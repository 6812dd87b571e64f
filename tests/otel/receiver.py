"""An OTLP/HTTP receiver for the tests: a loopback HTTP server (a thread) that takes
``POST /v1/traces`` and ``POST /v1/metrics`` in protobuf, decodes them with
``opentelemetry-proto`` and keeps what it got: the spans (with their service) and the names of
the metrics, for the test to look at."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

KINDS = {1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    return getattr(v, which) if which is not None else None


def _service(resource: Any) -> str:
    return next((str(_value(a.value)) for a in resource.attributes if a.key == "service.name"), "")


@dataclass
class Span:
    service: str
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    start_ns: int
    end_ns: int


@dataclass
class Received:
    spans: list[Span] = field(default_factory=list)
    #: (service, metric name) -> the data points' attributes and values (as dicts)
    metrics: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    requests: int = 0


class OtlpReceiver:
    """``with OtlpReceiver() as rx: ... rx.endpoint ...``; ``rx.wait_for(pred)``."""

    def __init__(self) -> None:
        self.got = Received()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/v1/traces":
                    receiver._traces(body)
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    receiver._metrics(body)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver")

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    def env(self) -> dict[str, str]:
        """The OTEL_* variables that point an SDK here (and export soon)."""
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200",
                "OTEL_METRIC_EXPORT_INTERVAL": "500"}

    def _traces(self, body: bytes) -> None:
        req = ExportTraceServiceRequest.FromString(body)
        with self._lock:
            self.got.requests += 1
            for rs in req.resource_spans:
                service = _service(rs.resource)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.got.spans.append(Span(
                            service=service, name=s.name, kind=KINDS.get(s.kind, str(s.kind)),
                            trace_id=s.trace_id.hex(), span_id=s.span_id.hex(), parent_id=s.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            events=[(e.name, {a.key: _value(a.value) for a in e.attributes}) for e in s.events],
                            status_code=s.status.code, start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano))

    def _metrics(self, body: bytes) -> None:
        with self._lock:
            self.got.requests += 1
            for rm in ExportMetricsServiceRequest.FromString(body).resource_metrics:
                service = _service(rm.resource)
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        which = m.WhichOneof("data")
                        points = getattr(m, which).data_points if which else []
                        out = self.got.metrics.setdefault((service, m.name), [])
                        for p in points:
                            attrs = {a.key: _value(a.value) for a in p.attributes}
                            value = p.count if which in ("histogram",) else (
                                p.as_int if p.WhichOneof("value") == "as_int" else p.as_double)
                            out.append({"attributes": attrs, "value": value})

    def spans(self) -> list[Span]:
        with self._lock:
            return list(self.got.spans)

    def wait_for(self, pred: Any, timeout: float = 30.0) -> bool:
        """Wait until ``pred(self)`` holds (the exporters send in batches, on their own time)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self):
                return True
            time.sleep(0.05)
        return bool(pred(self))


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a server the test started (SIGTERM: it stops its agents, which flush their spans)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
