"""What the remote client transports (WebSocket, streamable HTTP) share: the URL, the
headers every request carries, the cookie jar that outlives a connection, and the one-line
errors for a server that refuses us. No network library is imported here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._extras import require
from ..errors import ConnectionClosed, MessageTooLarge, TransportError, UsageError
from .base import Transport

__all__ = ["AuthRejected", "CookieJar", "RemoteOptions", "advertises_resume", "http_refusal", "is_remote_url", "refused", "remote_description",
           "remote_transport", "require_libraries"]

HEADER_CONNECTION_ID = "Acp-Connection-Id"
HEADER_SESSION_ID = "Acp-Session-Id"
#: the pauses before the tries to resume a dropped stream (with ``reconnect``; a WebSocket
#: adds up to 25 % of jitter)
RESUME_BACKOFF = (0.0, 0.05, 0.2, 0.5, 1.0, 2.0, 4.0)
#: the endpoint path used when a URL names none
DEFAULT_PATH = "/acp"
#: how long closing may take (the DELETE of an HTTP connection, a WebSocket's closing handshake)
CLOSE_TIMEOUT = 2.0
_SCHEMES = ("ws", "wss", "http", "https")


class AuthRejected(ConnectionClosed):
    """The server refused our credentials (HTTP 401 or 403): retrying will not help."""


def too_large(what: str, limit: int) -> MessageTooLarge:
    """The error for ``what`` (a frame, an event) from the server over ``limit`` bytes."""
    err = MessageTooLarge(limit + 1, limit, "incoming")
    err.args = (f"the server sent {what} over the limit of {limit} bytes (max_message_size)",)
    return err


def advertises_resume(answer: dict[str, Any]) -> bool:
    """Whether an ``initialize`` answer advertises resumable streams
    (``agentCapabilities.transport.resumable``)."""
    result = answer.get("result")
    caps = result.get("agentCapabilities") if isinstance(result, dict) else None
    transport = caps.get("transport") if isinstance(caps, dict) else None
    return isinstance(transport, dict) and isinstance(transport.get("resumable"), dict)


def is_remote_url(text: str) -> bool:
    """Whether ``text`` is a URL a remote transport serves (``ws://``, ``wss://``, ``http://``, ``https://``)."""
    head, sep, _ = text.partition("://")
    return bool(sep) and head.lower() in _SCHEMES


def require_libraries(url: str, *, http2: bool = True) -> None:
    """Raise :class:`~acplink.errors.MissingDependency` unless the libraries of the transport
    for ``url`` (the ``remote`` extra) are installed: websockets for ``ws(s)://``; httpx,
    httpx-sse and, for HTTP/2, h2 for ``http(s)://``."""
    if url.lower().startswith(("ws://", "wss://")):
        require("a WebSocket connection (ws://, wss://)", "remote", "websockets")
    else:
        require("a streamable-HTTP connection (http://, https://)", "remote", "httpx", "httpx_sse",
                *(("h2",) if http2 else ()))


def normalize_url(url: str) -> str:
    """The URL with its scheme checked and ``/acp`` as the path when it names none."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in _SCHEMES or not parts.hostname:
        raise UsageError(f"not a remote ACP URL (ws://, wss://, http:// or https://, with a host): {url!r}")
    if parts.username or parts.password:
        err = UsageError("put credentials in token= or a header, not in the URL")
        err.cli_message = "put credentials in --token or a --header, not in the URL"
        raise err
    path = parts.path if parts.path not in ("", "/") else DEFAULT_PATH
    return urlunsplit((parts.scheme.lower(), parts.netloc, path, parts.query, ""))


def remote_description(url: str) -> str:
    """The URL as shown in messages (without its query, which may hold a secret)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class CookieJar:
    """The cookies the server set (``Set-Cookie`` of every response, a WebSocket's 101 too),
    sent back on every request of the connection and of the connections that replace it
    (a load balancer's affinity cookie). Name -> value, as browsers do for one site; the
    attributes (path, expiry) are not interpreted."""

    def __init__(self) -> None:
        self.cookies: dict[str, str] = {}

    def store(self, set_cookie_values: Iterable[str]) -> None:
        for value in set_cookie_values:
            pair = value.split(";", 1)[0]
            name, sep, val = pair.partition("=")
            name = name.strip()
            if sep and name:
                self.cookies[name] = val.strip()

    def header(self, given: str | None = None) -> str | None:
        """The ``Cookie`` header: the stored cookies, then those of ``given`` (the caller's
        own ``Cookie`` header, which wins for a name both have)."""
        merged = dict(self.cookies)
        for part in (given or "").split(";"):
            name, sep, val = part.partition("=")
            if sep and name.strip():
                merged[name.strip()] = val.strip()
        if not merged:
            return None
        return "; ".join(f"{k}={v}" for k, v in merged.items())


class RemoteOptions:
    """What every connection to one remote agent carries: its URL, the caller's headers (a
    bearer ``token`` becomes ``Authorization``) and the cookie jar (kept across reconnects).
    ``reconnect``: a stream that drops is opened again with the cursor of the last message
    it delivered (streamable HTTP: ``Last-Event-ID``; WebSocket: a new socket whose first
    message is ``stream/resume``), so that the server sends what was missed."""

    def __init__(self, url: str, *, headers: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
                 token: str | None = None, cookies: CookieJar | None = None, reconnect: bool = False) -> None:
        self.url = normalize_url(url)
        self.reconnect = reconnect
        items = list(headers.items()) if isinstance(headers, Mapping) else list(headers or ())
        for name, value in items:
            if not name or any(c in name for c in ":\r\n ") or any(c in value for c in "\r\n"):
                raise UsageError(f"not a valid HTTP header: {name!r}: {value!r}")
        self._given_cookie = "; ".join(v for k, v in items if k.lower() == "cookie") or None
        self.headers = [(k, v) for k, v in items if k.lower() != "cookie"]
        if token is not None:
            if not token or any(c in token for c in "\r\n"):
                raise UsageError("the token must be a non-empty single line")
            self.headers = [(k, v) for k, v in self.headers if k.lower() != "authorization"]
            self.headers.append(("Authorization", f"Bearer {token}"))
        self.cookies = cookies if cookies is not None else CookieJar()

    @property
    def websocket(self) -> bool:
        return self.url.startswith(("ws://", "wss://"))

    def request_headers(self) -> list[tuple[str, str]]:
        """The caller's headers and the current cookies, for one request."""
        cookie = self.cookies.header(self._given_cookie)
        return [*self.headers, ("Cookie", cookie)] if cookie else list(self.headers)


#: the advice of a 401 answer for Python callers, and for the command line (the error's cli_message)
_TOKEN_ADVICE = "pass token="
_TOKEN_ADVICE_CLI = "pass --token or set ACPLINK_TOKEN"


def refused(status: int, line: str) -> TransportError:
    """The error for an HTTP refusal described by ``line`` (:func:`http_refusal`): AuthRejected
    for 401 and 403 (retrying will not help), else ConnectionClosed."""
    err: TransportError = AuthRejected(line) if status in (401, 403) else ConnectionClosed(line)
    if _TOKEN_ADVICE in line:
        err.cli_message = line.replace(_TOKEN_ADVICE, _TOKEN_ADVICE_CLI, 1)
    return err


def http_refusal(status: int, reason: str, body: str, what: str, url: str) -> str:
    """One line for an HTTP error answer to ``what`` (e.g. "the WebSocket upgrade")."""
    text = " ".join(body.split())[:200]
    detail = f": {text}" if text else ""
    if status == 401:
        return (f"the server at {url} refused {what}: HTTP 401 Unauthorized (a missing or wrong token: "
                f"{_TOKEN_ADVICE}){detail}")
    if status == 403:
        return f"the server at {url} refused {what}: HTTP 403 Forbidden (not allowed from here){detail}"
    return f"the server at {url} answered {what} with HTTP {status} {reason}{detail}"


def remote_transport(options: RemoteOptions, *, max_message_size: int) -> Transport:
    """The transport for ``options.url``: WebSocket for ``ws(s)://``, streamable HTTP for ``http(s)://``."""
    if options.websocket:
        from .websocket import WebSocketTransport

        return WebSocketTransport(options, max_message_size=max_message_size)
    from .http import HttpTransport

    return HttpTransport(options, max_message_size=max_message_size)
