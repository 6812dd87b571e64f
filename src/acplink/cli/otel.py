"""``--otel`` (and ``serve --metrics``): turn on OpenTelemetry's SDK for one command.

``--otel`` exports traces and metrics with OTLP over HTTP (protobuf), configured by the
standard ``OTEL_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*``, ``OTEL_METRIC_EXPORT_INTERVAL``,
...). Nothing is ever written to stdout (it may be the ACP stream): the ``OTEL_*_EXPORTER``
variables that could choose the console exporter are not read. A command adds the option with
:func:`add_otel_option`; ``main`` starts the SDK before the command runs and flushes it after
(:func:`telemetry`), so a new command needs nothing more (``acplink conduct`` included).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from .._extras import require

__all__ = ["OTEL_MODULES", "add_otel_option", "telemetry"]

#: what ``--otel`` imports: the SDK and the OTLP/HTTP exporter (``pip install 'acplink[otlp]'``)
OTEL_MODULES = ("opentelemetry", "opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")

OTEL_HELP = ("export traces and metrics with OTLP/HTTP, configured by the standard OTEL_* variables "
             "(OTEL_EXPORTER_OTLP_ENDPOINT, default http://localhost:4318; OTEL_SERVICE_NAME; ...); "
             "needs acplink[otlp]")


def add_otel_option(p: argparse.ArgumentParser) -> None:
    """Add ``--otel`` to a command (``main`` does the rest: see :func:`telemetry`)."""
    p.add_argument("--otel", action="store_true", help=OTEL_HELP)


def _service_name(args: argparse.Namespace) -> str:
    return f"acplink {args.command}" if getattr(args, "command", None) else "acplink"


@contextlib.contextmanager
def telemetry(args: argparse.Namespace) -> Iterator[None]:
    """The SDK, for as long as the command runs, when it asked for it (``--otel``, ``--metrics``)."""
    otel = bool(getattr(args, "otel", False))
    metrics_port = getattr(args, "metrics", None)
    if not otel and metrics_port is None:
        yield
        return
    require("--otel" if otel else "--metrics", "otlp",
            *(OTEL_MODULES if otel else OTEL_MODULES[:2]))
    providers = _start(_service_name(args), otel=otel, metrics_port=metrics_port,
                       metrics_host=getattr(args, "metrics_host", "127.0.0.1"))
    try:
        yield
    finally:
        for provider in providers:
            with contextlib.suppress(Exception):  # (an unreachable collector: nothing to do about it now)
                provider.shutdown()


def _start(service: str, *, otel: bool, metrics_port: int | None, metrics_host: str) -> list[Any]:
    """Set the global tracer and meter providers; returns them (to shut down at the end)."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    attrs = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: service}
    resource = Resource.create(attrs)
    readers: list[MetricReader] = []
    providers: list[Any] = []
    if otel:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(tracer_provider)
        providers.append(tracer_provider)
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    if metrics_port is not None:
        from .prometheus import PrometheusEndpoint

        endpoint = PrometheusEndpoint(metrics_port, metrics_host)
        readers.append(endpoint)
        shown = f"[{metrics_host}]" if ":" in metrics_host else metrics_host
        print(f"acplink: metrics (Prometheus) at http://{shown}:{endpoint.port}/metrics", file=sys.stderr, flush=True)
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    metrics.set_meter_provider(meter_provider)
    providers.insert(0, meter_provider)  # (shut down last: the spans go first)
    providers.reverse()
    return providers
