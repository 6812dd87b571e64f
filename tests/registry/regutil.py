"""Helpers for the registry tests: a loopback HTTP server started by the test, registries and
archives built by the test (nothing reaches the internet)."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from acplink.registry import platform_key

HERE = Path(__file__).resolve().parent
SNAPSHOT = HERE / "data" / "registry-2026-02-07.json"


class Served:
    """What the loopback server serves (path → bytes, an ETag per path) and what it was asked."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.etags: dict[str, str] = {}
        self.log: list[tuple[str, int]] = []  # (path, status)
        #: path → the URL it redirects to (302)
        self.redirects: dict[str, str] = {}
        #: path → seconds between 64 KiB chunks of its body (a slow download)
        self.slow: dict[str, float] = {}
        self.base = ""

    def put(self, path: str, data: bytes, etag: str | None = None) -> str:
        self.files[path] = data
        if etag is not None:
            self.etags[path] = etag
        else:
            self.etags.pop(path, None)
        return self.base + path

    def url(self, path: str) -> str:
        return self.base + path

    def statuses(self, path: str) -> list[int]:
        return [status for p, status in self.log if p == path]


@contextmanager
def serve() -> Iterator[Served]:
    served = Served()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path in served.redirects:
                served.log.append((self.path, 302))
                self.send_response(302)
                self.send_header("Location", served.redirects[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = served.files.get(self.path)
            etag = served.etags.get(self.path)
            status = 404 if data is None else 304 if etag is not None and self.headers.get("If-None-Match") == etag \
                else 200
            served.log.append((self.path, status))  # (before the answer: the client may look at once)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                if status == 304:
                    self.send_response(304)
                    self.send_header("ETag", etag)
                    self.end_headers()
                else:
                    self.send_response(200)
                    if etag is not None:
                        self.send_header("ETag", etag)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    pause = served.slow.get(self.path)
                    if pause is None:
                        self.wfile.write(data)
                        return
                    try:
                        for i in range(0, len(data), 1 << 16):
                            self.wfile.write(data[i:i + (1 << 16)])
                            self.wfile.flush()
                            time.sleep(pause)
                    except OSError:  # (the client went away)
                        pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    served.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="loopback registry", daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def agent_entry(agent_id: str, distribution: dict[str, Any], version: str = "1.0.0") -> dict[str, Any]:
    return {"id": agent_id, "name": f"Test {agent_id}", "version": version,
            "description": f"the {agent_id} agent of the tests", "license": "Apache-2.0",
            "authors": ["acplink tests"], "distribution": distribution}


def registry_json(*agents: dict[str, Any]) -> bytes:
    return json.dumps({"version": "1.0.0", "agents": list(agents), "extensions": []}).encode()


def binary(archive_url: str, data: bytes | None, cmd: str = "./run-agent", *, digest: bool = True,
           args: list[str] | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A binary distribution for this platform (sha256 of ``data`` when ``digest``)."""
    target: dict[str, Any] = {"archive": archive_url, "cmd": cmd}
    if digest and data is not None:
        target["sha256"] = hashlib.sha256(data).hexdigest()
    if args:
        target["args"] = args
    if env:
        target["env"] = env
    return {"binary": {platform_key(): target}}


def launcher_script(body: str = "") -> bytes:
    """A shell script that runs acplink's demo agent with this Python (after ``body``)."""
    return f'#!/bin/sh\n{body}\nexec "{sys.executable}" -m acplink.demo "$@"\n'.encode()


def make_zip(members: dict[str, bytes], *, links: dict[str, str] | None = None, mode: int = 0o755) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120000 | 0o777) << 16
            z.writestr(info, target)
    return buf.getvalue()


def make_tar(members: dict[str, bytes], *, compression: str = "gz", links: dict[str, str] | None = None,
             hardlinks: dict[str, str] | None = None, mode: int = 0o755) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=f"w:{compression}") as t:  # type: ignore[call-overload]
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            t.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            t.addfile(info)
        for name, target in (hardlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.LNKTYPE
            info.linkname = target
            t.addfile(info)
    return buf.getvalue()
