"""A small WebDriver BiDi client for the Firefox tests: Debian's ``firefox-esr`` speaks BiDi
itself (``--remote-debugging-port``), so no driver and no browser download is needed.

:class:`Firefox` starts a headless Firefox on a fresh profile, opens a BiDi session over a
WebSocket (the ``websockets`` package, synchronous client) and offers what the tests use:
navigate (waiting for the load to complete), run a function in the page (its result comes back
as JSON), poll for a DOM condition with a deadline, and real pointer clicks and key presses
(``input.performActions``). :meth:`Firefox.close` ends the browser, its processes and its
profile folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from websockets.exceptions import WebSocketException
from websockets.sync.client import ClientConnection, connect

FIREFOX = "/usr/bin/firefox-esr"
WAIT = 30.0  # s: generous bounds against hangs, never a timing assertion

#: no network but the pages under test: updates, telemetry, remote settings, safe browsing,
#: captive-portal and connectivity checks, DNS over HTTPS and first-run pages all off
PREFS = {
    "app.update.disabledForTesting": True, "app.update.auto": False,
    "browser.shell.checkDefaultBrowser": False, "browser.startup.page": 0,
    "browser.startup.homepage_override.mstone": "ignore", "browser.aboutwelcome.enabled": False,
    "browser.newtabpage.enabled": False, "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False, "browser.safebrowsing.downloads.enabled": False,
    "browser.safebrowsing.blockedURIs.enabled": False, "browser.safebrowsing.provider.mozilla.updateURL": "",
    "browser.search.update": False, "browser.region.network.url": "", "browser.region.update.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False, "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False, "toolkit.telemetry.unified": False, "toolkit.telemetry.server": "",
    "app.normandy.enabled": False, "app.shield.optoutstudies.enabled": False,
    "services.settings.server": "http://127.0.0.1:9/", "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False, "extensions.systemAddon.update.enabled": False,
    "network.captive-portal-service.enabled": False, "network.connectivity-service.enabled": False,
    "network.trr.mode": 5, "network.dns.disablePrefetch": True, "network.prefetch-next": False,
    "network.http.speculative-parallel-limit": 0, "dom.push.connection.enabled": False,
    "media.gmp-manager.url": "", "geo.provider.network.url": "", "identity.fxaccounts.enabled": False,
    "browser.ping-centre.telemetry": False, "browser.tabs.warnOnClose": False,
}
ENTER = "\ue007"  # the WebDriver key value of Enter


class BidiError(AssertionError):
    """A BiDi command failed, or a condition did not hold in time."""


class Firefox:
    """A headless firefox-esr driven over WebDriver BiDi (close it)."""

    def __init__(self, executable: str = FIREFOX, width: int = 1300, height: int = 850) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="acplink-firefox-"))
        (self.profile / "user.js").write_text("".join(
            f"user_pref({orjson.dumps(k).decode()}, {orjson.dumps(v).decode()});\n" for k, v in PREFS.items()))
        self._ids = 0
        self._stack = contextlib.ExitStack()  # (the WebSocket)
        self.ws: ClientConnection | None = None
        try:
            with open(self.profile / "stderr.log", "wb") as log:  # (a file: a pipe nobody reads could fill)
                self.proc = subprocess.Popen(
                    [executable, "--headless", "--no-remote", "--remote-debugging-port=0", "--profile",
                     str(self.profile), "about:blank"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    env={**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1"}, start_new_session=True)
        except OSError:
            shutil.rmtree(self.profile, ignore_errors=True)
            raise
        try:
            self.ws = self._stack.enter_context(connect(self._endpoint() + "/session", max_size=None,
                                                        open_timeout=WAIT))
            self.command("session.new", {"capabilities": {}})
            self.context = self.command("browsingContext.getTree", {})["contexts"][0]["context"]
            self.command("browsingContext.setViewport",
                         {"context": self.context, "viewport": {"width": width, "height": height}})
        except BaseException:
            self.close()
            raise

    def _endpoint(self) -> str:
        """The WebSocket address Firefox announces on stderr once it listens."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            text = (self.profile / "stderr.log").read_text(errors="replace")
            found = re.search(r"WebDriver BiDi listening on (ws://\S+)", text)
            if found:
                return found.group(1)
            if self.proc.poll() is not None:
                raise BidiError(f"firefox-esr exited with code {self.proc.returncode}: {text[-2000:]}")
            time.sleep(0.1)
        raise BidiError("firefox-esr did not open its WebDriver BiDi port")

    def command(self, method: str, params: dict[str, Any]) -> Any:
        """Send one command and return its result (events in between are dropped)."""
        assert self.ws is not None
        self._ids += 1
        self.ws.send(orjson.dumps({"id": self._ids, "method": method, "params": params}).decode())
        deadline = time.monotonic() + WAIT * 2
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BidiError(f"no answer to {method}")
            msg = orjson.loads(self.ws.recv(timeout=left))
            if msg.get("id") != self._ids:
                continue
            if msg.get("type") == "error":
                raise BidiError(f"{method}: {msg.get('error')}: {msg.get('message')}")
            return msg["result"]

    def navigate(self, url: str) -> None:
        self.command("browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"})

    def call(self, function: str, *args: str | int | float | bool) -> Any:
        """Run ``function`` (JavaScript source, may be async) in the page with ``args``; its
        result, through JSON."""
        wrapped = f"async (...args) => JSON.stringify(await ({function})(...args)) ?? 'null'"
        got = self.command("script.callFunction", {
            "functionDeclaration": wrapped, "awaitPromise": True, "target": {"context": self.context},
            "arguments": [_local(a) for a in args], "resultOwnership": "none"})
        if got["type"] == "exception":
            details = got["exceptionDetails"]
            raise BidiError(f"script failed: {details.get('text')} (line {details.get('lineNumber')})")
        return orjson.loads(got["result"]["value"])

    def text(self, selector: str) -> str:
        """The rendered text of the first element matching ``selector`` ('' if none)."""
        return str(self.call("(s) => { const e = document.querySelector(s); return e ? e.innerText : ''; }",
                             selector))

    def count(self, selector: str) -> int:
        return int(self.call("(s) => document.querySelectorAll(s).length", selector))

    def wait_for(self, function: str, *args: str | int | float | bool, timeout: float = WAIT) -> Any:
        """Poll ``function`` in the page until its result is truthy; that result."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = self.call(function, *args)
            except BidiError as exc:  # (a navigation under way destroys the page's realm)
                last = exc
            else:
                if last:
                    return last
            time.sleep(0.1)
        raise BidiError(f"condition not met within {timeout:g} s: {function} {args} (last: {last!r})")

    def wait_text(self, selector: str, text: str) -> None:
        """Wait until an element matching ``selector`` shows ``text``."""
        self.wait_for("(s, t) => [...document.querySelectorAll(s)].some(e => e.innerText.includes(t))",
                      selector, text)

    def _element(self, selector: str) -> dict[str, Any]:
        got = self.command("script.callFunction", {
            "functionDeclaration": "(s) => document.querySelector(s)", "awaitPromise": False,
            "target": {"context": self.context}, "arguments": [_local(selector)]})
        node = got.get("result", {})
        if node.get("type") != "node":
            raise BidiError(f"no element matches {selector!r}")
        return {"sharedId": node["sharedId"]}

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the first element matching ``selector``."""
        self.call("(s) => document.querySelector(s) && document.querySelector(s).scrollIntoView({block: 'center'})",
                  selector)
        origin = {"type": "element", "element": self._element(selector)}
        self._actions([{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "x": 0, "y": 0, "origin": origin},
            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}])

    def type(self, selector: str, text: str) -> None:
        """Click into ``selector`` and type ``text`` key by key (:data:`ENTER` presses Enter)."""
        self.click(selector)
        keys: list[dict[str, Any]] = []
        for ch in text:
            keys += [{"type": "keyDown", "value": ch}, {"type": "keyUp", "value": ch}]
        self._actions([{"type": "key", "id": "keyboard", "actions": keys}])

    def _actions(self, actions: list[dict[str, Any]]) -> None:
        self.command("input.performActions", {"context": self.context, "actions": actions})
        self.command("input.releaseActions", {"context": self.context})

    def close(self) -> None:
        """End the browser (politely, then by signal), its processes and its profile."""
        try:
            if self.ws is not None:
                try:
                    self.command("browser.close", {})
                except (BidiError, OSError, TimeoutError, WebSocketException):  # (it may close first)
                    pass
                self._stack.close()
            try:
                self.proc.wait(WAIT)
            except subprocess.TimeoutExpired:
                pass
        finally:
            try:  # its content processes share its process group
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if self.proc.returncode is None:
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)


def _local(value: str | int | float | bool) -> dict[str, Any]:
    """A BiDi LocalValue of a primitive."""
    if isinstance(value, bool):
        return {"type": "boolean", "value": value}
    if isinstance(value, (int, float)):
        return {"type": "number", "value": value}
    return {"type": "string", "value": value}
