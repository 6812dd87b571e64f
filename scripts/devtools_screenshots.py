#!/usr/bin/env python3
"""Screenshots of every `acplink devtools` view, for docs/devtools.md.

Builds a demo database in a temporary folder (two recordings of the demo agent: a plan, a file
written after a permission question, then another turn for Diff; an imported trace with a
schema error), serves it with ``acplink devtools -- <the demo agent>`` (so Connect has a chat),
runs a live recording meanwhile, and saves one PNG per view with Playwright driving Debian's
Chromium (never downloaded), 1280x800, squeezed with pngquant/optipng when they are installed:

    .venv/bin/python scripts/devtools_screenshots.py [--out docs/images/devtools]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "devtools"))

from dtutil import ACPLINK, Devtools, demo_db, env  # noqa: E402 (the tests' demo database)

CHROMIUM = "/usr/bin/chromium"
OUT = ROOT / "docs" / "images" / "devtools"
#: the views, in the order of docs/devtools.md: each is saved as NAME.png
VIEWS = ("sessions", "live", "timeline-filter", "message-detail", "conversation", "waterfall", "diff",
         "findings", "connect-chat", "connect-failed")
WAIT = 60_000  # ms: bounds against hangs
DEMO = ["acplink", "demo-agent"]  # (found on PATH: main() puts this Python's scripts first)
FAILING = "sh -c 'echo \"error: ANTHROPIC_API_KEY is not set\" >&2; exit 2'"


def build(root: Path) -> dict[str, Any]:
    """The demo database in ``root`` (see :func:`dtutil.demo_db`)."""
    return demo_db(root)


class _Recorder:
    """``acplink record --db`` in front of the demo agent, fed by hand: a live recording."""

    def __init__(self, db: Path, cwd: Path) -> None:
        self.proc = subprocess.Popen([*ACPLINK, "record", "--db", str(db), "--", *DEMO], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env())

    def send(self, method: str, msg_id: int, params: dict[str, Any]) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        msg = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        self.proc.stdout.readline()  # its answer, passed through

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        self.proc.stdout.close()


def capture(demo: dict[str, Any], out: Path) -> list[Path]:
    """Serve ``demo`` and save every view in ``out``; the files written."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    server = Devtools(demo["db"], demo["work"], ["--", *DEMO])
    recorder: _Recorder | None = None
    try:
        base = server.base
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.set_default_timeout(WAIT)

                def shot(name: str, full: bool = False) -> None:
                    path = out / f"{name}.png"
                    page.screenshot(path=str(path), full_page=full)
                    saved.append(path)

                # Connect first: the agent started with devtools, a conversation with a plan and a permission
                page.goto(server.url)
                page.locator("#chat-status", has_text="Connected to").wait_for()
                for n, text in enumerate(("hello", "plan read the issue; write the code; run the tests",
                                          "write notes.txt hello from the browser")):
                    page.fill("#prompt input[name=text]", text)
                    page.press("#prompt input[name=text]", "Enter")
                    if text.startswith("write"):
                        page.locator("#chat-log .permission button", has_text="Allow").first.click()
                    page.locator("#chat-log .stop").nth(n).wait_for()
                shot("connect-chat", full=True)
                page.fill("#connect input[name=command]", FAILING)
                page.click("#connect button")
                page.locator("#connect-error").wait_for()
                shot("connect-failed")

                recorder = _Recorder(demo["db"], demo["work"])
                recorder.send("initialize", 1, {"protocolVersion": 1})
                page.goto(base + "/")
                page.locator("#sessions tbody tr", has_text="live").nth(1).wait_for()  # (and the Connect chat)
                shot("sessions")
                live = page.locator("#sessions tbody tr", has_text="live").first.get_attribute("data-conn")
                page.goto(f"{base}/c/{live}")
                page.locator('#timeline tr[data-seq="2"]').wait_for()
                recorder.send("session/new", 2, {"cwd": str(demo["work"]), "mcpServers": []})
                page.locator('#timeline tr.new[data-seq="4"]').wait_for()
                page.click('#timeline tr[data-seq="4"]')
                page.locator("#detail pre.json").first.wait_for()
                shot("live")

                page.goto(f'{base}/c/{demo["one"]}?method=session%2Fprompt')
                page.click("#timeline tbody tr.msg >> nth=2")
                page.locator("#detail pre.json").first.wait_for()
                shot("timeline-filter")
                page.goto(f'{base}/c/{demo["bad"]}')
                page.click('#timeline tr[data-seq="5"]')
                page.locator("#detail .violations").wait_for()
                shot("message-detail")
                page.goto(f'{base}/c/{demo["one"]}/conversation')
                shot("conversation", full=True)
                page.goto(f'{base}/c/{demo["one"]}/waterfall')
                shot("waterfall")
                page.goto(f'{base}/diff?a={demo["one"]}&b={demo["two"]}')
                shot("diff")
                page.goto(f'{base}/c/{demo["bad"]}/findings')
                shot("findings")
            finally:
                browser.close()
    finally:
        if recorder is not None:
            recorder.close()
        server.stop()
    return saved


def optimise(paths: list[Path]) -> None:
    """Smaller PNGs: a 256-colour palette (pngquant), then lossless recompression (optipng)."""
    for path in paths:
        if shutil.which("pngquant"):
            subprocess.run(["pngquant", "--force", "--skip-if-larger", "--quality", "70-95", "--output", str(path),
                            str(path)], check=False)
        if shutil.which("optipng"):
            subprocess.run(["optipng", "-quiet", "-o2", str(path)], check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder for the PNGs (default {OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"devtools_screenshots: {CHROMIUM} is absent (install Debian's chromium package)", file=sys.stderr)
        return 2
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with tempfile.TemporaryDirectory(prefix="acplink-shots-") as tmp:
        saved = capture(build(Path(tmp)), args.out)
    optimise(saved)
    total = 0
    for path in saved:
        size = path.stat().st_size
        total += size
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {size // 1024} KB")
    print(f"{len(saved)} screenshots, {total // 1024} KB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
