"""Who may talk to the server: the bearer token, the Origin allow-list and the Host check."""

from __future__ import annotations

import hmac
from collections.abc import Iterable

__all__ = ["LOOPBACK_HOSTS", "AccessPolicy", "Refusal", "is_loopback"]

#: the Host names a loopback-only server answers to (anything else is DNS rebinding)
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    """Whether a bind address (or Host name) stays on this machine."""
    import ipaddress

    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Refusal:
    """An HTTP answer that refuses a request (before any ACP traffic)."""

    __slots__ = ("headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        self.status = status
        self.reason = reason
        self.headers = list(headers)


def _host_name(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:7331
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


class AccessPolicy:
    """``token``: every request needs ``Authorization: Bearer <token>`` (compared in constant
    time). ``allow_origins``: a request that carries ``Origin`` must name one of them.
    ``allowed_hosts``: when set, the ``Host`` header must name one of them (a loopback bind
    sets the loopback names, which stops DNS rebinding)."""

    def __init__(self, *, token: str | None = None, allow_origins: Iterable[str] = (),
                 allowed_hosts: Iterable[str] | None = None) -> None:
        self._token = token.encode() if token else None
        self.allow_origins = frozenset(o.rstrip("/") for o in allow_origins)
        self.allowed_hosts = (frozenset(h.lower().strip("[]") for h in allowed_hosts)
                              if allowed_hosts is not None else None)

    @property
    def needs_token(self) -> bool:
        return self._token is not None

    def check(self, headers: dict[str, str]) -> Refusal | None:
        """``headers``: lower-case names. The first rule the request breaks, or None."""
        if self.allowed_hosts is not None:
            host = headers.get("host")
            if host is None or _host_name(host) not in self.allowed_hosts:
                return Refusal(403, "Forbidden: Host not allowed")
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.allow_origins:
            return Refusal(403, "Forbidden: Origin not allowed")
        if self._token is not None:
            auth = headers.get("authorization", "")
            scheme, _, given = auth.partition(" ")
            ok = scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token)
            if not ok:
                return Refusal(401, "Unauthorized: a valid bearer token is required",
                               [("www-authenticate", 'Bearer realm="acplink"')])
        return None
