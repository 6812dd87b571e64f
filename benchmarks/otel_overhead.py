#!/usr/bin/env python3
"""What OpenTelemetry's hooks cost per message, counted where the count does not depend on the
machine's load: client and agent in one process over the in-memory transport (no pipes, no
second process whose speed changes the batching), a prompt turn of N ``session/update``
notifications and N ``fs/read_text_file`` requests (of a real file), everything validated as usual.

    valgrind --tool=callgrind --callgrind-out-file=F python benchmarks/otel_overhead.py N [MODE]

MODE: ``plain`` (default: nothing imports OpenTelemetry, as without the extra), ``api`` (the
API imported, no SDK configured), ``sdk`` (an SDK configured: spans batched to an exporter that
drops them, metrics aggregated in memory), ``blocked`` (OpenTelemetry made unimportable first:
the extra not installed). ``benchmarks/otel_overhead.sh`` runs N=500 and N=3000 under callgrind
and prints the difference per message (start-up cancels out).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any


def setup(mode: str) -> None:
    if mode == "blocked":
        for name in ("opentelemetry", "opentelemetry.trace", "opentelemetry.metrics"):
            sys.modules[name] = None  # type: ignore[assignment]
    elif mode == "api":
        import opentelemetry.metrics
        import opentelemetry.trace  # noqa: F401
    elif mode == "sdk":
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        class Drop(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Drop()))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    elif mode != "plain":
        raise SystemExit(f"unknown mode {mode!r}")


async def run(n: int) -> None:
    import tempfile
    from pathlib import Path

    from acplink import AgentApp, PromptContext, connect

    app = AgentApp("overhead", "1.0")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "file.txt"
        path.write_text("x\n")

        @app.prompt
        async def prompt(ctx: PromptContext) -> None:
            for i in range(n):
                await ctx.send_text(f"chunk {i} ")
                await ctx.read_file(str(path))

        async with connect(app) as client:
            session = await client.new_session(tmp)
            count = 0
            async for _ in session.prompt("go"):
                count += 1
            assert count >= n, count


def main() -> None:
    n = int(sys.argv[1])
    setup(sys.argv[2] if len(sys.argv) > 2 else "plain")
    asyncio.run(run(n))


if __name__ == "__main__":
    main()
