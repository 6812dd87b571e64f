"""Whether a new connection reports to OpenTelemetry (and nothing else: no OpenTelemetry import).

A connection is instrumented when the application configured OpenTelemetry before making it:
an SDK's tracer provider or meter provider set as the global one (``acplink ... --otel`` does
that; so does ``opentelemetry-instrument``). Configuring one means importing
``opentelemetry.trace`` or ``opentelemetry.metrics``, so a process that did neither pays one
dictionary lookup per connection, whether the ``otel`` extra is installed or not; with the API
imported but no SDK configured, the providers are the API's no-op ones and the connection is
not instrumented either (its peer's ``telemetry`` stays None: each hook is one attribute test).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..protocol import Protocol
    from ._otel import ConnectionTelemetry

__all__ = ["configured_providers", "telemetry_for"]

#: set False to leave every new connection uninstrumented, whatever is configured
enabled = True


def telemetry_for(side: str, protocol: Protocol) -> ConnectionTelemetry | None:
    """The telemetry of a new connection of ``side`` ("agent", "client" or "proxy"), or None."""
    modules = sys.modules
    if not enabled or ("opentelemetry.trace" not in modules and "opentelemetry.metrics" not in modules):
        return None
    tracer_provider, meter_provider = configured_providers()
    if tracer_provider is None and meter_provider is None:
        return None
    from ._otel import ConnectionTelemetry, instruments

    return ConnectionTelemetry(side, instruments(tracer_provider, meter_provider), protocol)


def configured_providers() -> tuple[object | None, object | None]:
    """The global tracer and meter providers that an SDK set (None for the API's no-op ones,
    and when OpenTelemetry was never imported)."""
    tracer_provider = meter_provider = None
    trace = sys.modules.get("opentelemetry.trace")
    if trace is not None:
        tp = trace.get_tracer_provider()
        if not isinstance(tp, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            tracer_provider = tp
    metrics = sys.modules.get("opentelemetry.metrics")
    if metrics is not None:
        mp = metrics.get_meter_provider()
        if not isinstance(mp, (metrics.NoOpMeterProvider, _proxy_meter_provider(metrics))):
            meter_provider = mp
    return tracer_provider, meter_provider


def _proxy_meter_provider(metrics: object) -> type:
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    return _ProxyMeterProvider
