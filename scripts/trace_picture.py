#!/usr/bin/env python3
"""The picture of a trace in docs/tracing.md: the spans one prompt turn exports, as a waterfall.

Runs what tests/otel/test_trace_end_to_end.py runs (``acplink prompt --otel --mcp tools=...
mcp`` against ``acplink demo-agent --otel``, both exporting with OTLP/HTTP to the tests' own
receiver on loopback), draws the spans of the turn's trace as an SVG waterfall (one row per
span, indented under its parent, coloured by process, the span kind and duration on the right)
and saves it as a PNG with Playwright driving Debian's Chromium (never downloaded; no network):

    .venv/bin/python scripts/trace_picture.py [--out docs/images/tracing/trace.png]
"""

from __future__ import annotations

import argparse
import html
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "otel"))

from receiver import OtlpReceiver, Span  # noqa: E402 (the tests' OTLP receiver)

CHROMIUM = "/usr/bin/chromium"
OUT = ROOT / "docs" / "images" / "tracing" / "trace.png"
WIDTH = 1280
ROW = 22
LEFT = 430  # where the timeline starts (the names are left of it)
COLOURS = {"acplink prompt": "#3b7dd8", "acplink demo-agent": "#d8823b"}


def record() -> list[Span]:
    """The spans of one traced prompt turn with an MCP-over-ACP call."""
    tools = f"tools={sys.executable} {ROOT / 'tests' / 'mcp' / 'mcp_tools_server.py'}"
    with OtlpReceiver() as rx, tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(rx.env(), ACPLINK_DEMO_STORE=str(Path(tmp) / "store"))
        acplink = [sys.executable, "-m", "acplink"]
        subprocess.run([*acplink, "prompt", "--otel", "--mcp", tools, 'mcp echo {"text": "hi"}', "--",
                        *acplink, "demo-agent", "--otel"], env=env, cwd=tmp, check=True, timeout=120,
                       capture_output=True, stdin=subprocess.DEVNULL)

        def turn(r: OtlpReceiver) -> list[Span]:
            return [s for s in r.spans() if s.name == "session/prompt" and s.kind == "CLIENT"]

        if not rx.wait_for(lambda r: bool(turn(r)) and any(s.kind == "SERVER" and s.name == "mcp/message"
                                                             for s in r.spans())):
            raise SystemExit("the spans did not arrive")
        trace_id = turn(rx)[0].trace_id
        return [s for s in rx.spans() if s.trace_id == trace_id]


def _ordered(spans: list[Span]) -> list[tuple[int, Span]]:
    """Depth-first, children by start time: (depth, span)."""
    children: dict[str, list[Span]] = {}
    ids = {s.span_id for s in spans}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else "", []).append(s)
    out: list[tuple[int, Span]] = []

    def walk(parent: str, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda s: s.start_ns):
            out.append((depth, s))
            walk(s.span_id, depth + 1)

    walk("", 0)
    return out


def svg(spans: list[Span]) -> str:
    """The waterfall of ``spans`` (one trace) as an SVG document."""
    rows = _ordered(spans)
    start = min(s.start_ns for s in spans)
    total = max(s.end_ns for s in spans) - start or 1
    span_w = WIDTH - LEFT - 150
    height = 70 + ROW * len(rows) + 30
    trace_id = spans[0].trace_id
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
             f'font-family="DejaVu Sans, sans-serif" font-size="12">',
             f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
             f'<text x="12" y="24" font-size="15" font-weight="bold">trace {trace_id}: one prompt turn, '
             f'{len(spans)} spans, {total / 1e6:.1f} ms</text>']
    x = 12
    for service, colour in COLOURS.items():
        parts.append(f'<rect x="{x}" y="36" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{x + 18}" y="46">{html.escape(service)}</text>')
        x += 200
    for i, (depth, s) in enumerate(rows):
        y = 62 + i * ROW
        colour = COLOURS.get(s.service, "#888888")
        if i % 2:
            parts.append(f'<rect x="0" y="{y - 3}" width="{WIDTH}" height="{ROW}" fill="#f4f6f8"/>')
        label = s.name
        kind = s.attributes.get("acp.update.kind")
        if kind:
            label += f" ({kind})"
        parts.append(f'<text x="{12 + depth * 14}" y="{y + 12}">{html.escape(label)}</text>')
        x0 = LEFT + (s.start_ns - start) / total * span_w
        w = max(2.0, (s.end_ns - s.start_ns) / total * span_w)
        parts.append(f'<rect x="{x0:.1f}" y="{y}" width="{w:.1f}" height="{ROW - 8}" rx="2" fill="{colour}"/>')
        parts.append(f'<text x="{WIDTH - 140}" y="{y + 12}" fill="#444">{s.kind.lower()} '
                     f'{(s.end_ns - s.start_ns) / 1e6:.2f} ms</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def save_png(document: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 400})
            page.set_content(f'<html><body style="margin:0">{document}</body></html>')
            page.locator("svg").screenshot(path=str(out))
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    save_png(svg(record()), args.out)
    print(args.out)


if __name__ == "__main__":
    main()
