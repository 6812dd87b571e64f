"""HTTP for the registry: ``GET`` with ``If-None-Match`` and a size cap (standard library only),
and the per-user cache folder."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .._version import __version__
from ..errors import RegistryError

__all__ = ["Response", "default_cache_dir", "download", "get", "is_url"]

#: ``$ACPLINK_CACHE_DIR``: the cache folder (registry copies, installed agents)
ENV_CACHE = "ACPLINK_CACHE_DIR"
_CHUNK = 1 << 16


def default_cache_dir() -> Path:
    """``$ACPLINK_CACHE_DIR``, else the platform's per-user cache folder + ``acplink``
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
    ``%LOCALAPPDATA%`` on Windows)."""
    given = os.environ.get(ENV_CACHE)
    if given:
        return Path(given).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "acplink"


def is_url(source: str) -> bool:
    return source.lower().startswith(("http://", "https://"))


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Redirects to http(s) only, and never from https:// down to http://."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        if not is_url(newurl) or (req.full_url.lower().startswith("https://")
                                  and newurl.lower().startswith("http://")):
            raise RegistryError(f"download of {req.full_url} failed: it redirects to {newurl!r} (refused: only "
                                "http(s), never from https to http)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_Redirects())


def _open(url: str, headers: dict[str, str], timeout: float) -> tuple[int, dict[str, str], BinaryIO | None]:
    if not is_url(url):
        raise RegistryError(f"{url!r} is not an http:// or https:// URL")
    request = urllib.request.Request(url, headers={"User-Agent": f"acplink/{__version__}", **headers})
    try:
        reply = _OPENER.open(request, timeout=timeout)  # (the scheme is checked above)
    except urllib.error.HTTPError as exc:
        if exc.code == 304:
            return 304, {k.lower(): v for k, v in exc.headers.items()}, None
        raise RegistryError(f"download of {url} failed: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise RegistryError(f"download of {url} failed: {reason}") from None
    return reply.status, {k.lower(): v for k, v in reply.headers.items()}, reply


def get(url: str, *, etag: str | None = None, max_bytes: int, timeout: float) -> Response:
    """``GET url`` (with ``If-None-Match: etag``); the body, at most ``max_bytes``."""
    status, headers, reply = _open(url, {"If-None-Match": etag} if etag else {}, timeout)
    if reply is None:
        return Response(status, headers=headers)
    with reply:
        body = bytearray()
        try:
            while chunk := reply.read(_CHUNK):
                body += chunk
                if len(body) > max_bytes:
                    raise RegistryError(f"{url} is larger than {max_bytes:,} bytes")
        except (OSError, ValueError) as exc:
            raise RegistryError(f"download of {url} failed: {exc}") from None
    return Response(status, bytes(body), headers)


def download(url: str, dest: Path, *, max_bytes: int, timeout: float, stop: threading.Event | None = None) -> str:
    """Save ``url`` to ``dest`` (at most ``max_bytes``); its sha256, hex. ``stop`` set: the
    download ends (a :class:`RegistryError`) at the next chunk."""
    _, _, reply = _open(url, {}, timeout)
    assert reply is not None  # (no If-None-Match: never a 304)
    digest = hashlib.sha256()
    size = 0
    with reply, open(dest, "wb") as out:
        try:
            while chunk := reply.read(_CHUNK):
                size += len(chunk)
                if stop is not None and stop.is_set():
                    raise RegistryError(f"download of {url} stopped")
                if size > max_bytes:
                    raise RegistryError(f"{url} is larger than {max_bytes:,} bytes")
                digest.update(chunk)
                out.write(chunk)
        except (OSError, ValueError) as exc:
            raise RegistryError(f"download of {url} failed: {exc}") from None
    return digest.hexdigest()
