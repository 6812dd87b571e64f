"""Who may talk to the server: the bearer tokens, the Origin allow-list and the Host check;
and whom a request speaks for (its principal: the token it came with)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

__all__ = ["LOOPBACK_HOSTS", "PRINCIPAL_KEY", "AccessPolicy", "Refusal", "is_loopback", "principal_of_token"]

#: where the server puts a request's principal in its header map (:func:`~.asgi.header_map`):
#: a name no HTTP header can have (names never begin with ``:``), so a client cannot set it
PRINCIPAL_KEY = ":acplink-principal"


def principal_of_token(token: str) -> str:
    """The principal a bearer token identifies: ``token:`` and a stable id derived from the
    token (PBKDF2-SHA256, so the id, which the session store keeps, does not give the token
    away; the same on every instance and across restarts). Never the token itself."""
    digest = hashlib.pbkdf2_hmac("sha256", token.encode(), b"acplink-principal", 50_000, dklen=12)
    return "token:" + digest.hex()

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
    time); several tokens (a list): any of them, each identifying its own principal (whose
    stored sessions are its own: docs/sessions.md). ``allow_origins``: a request that carries ``Origin`` must name one of them.
    ``allowed_hosts``: when set, the ``Host`` header must name one of them (a loopback bind
    sets the loopback names, which stops DNS rebinding)."""

    def __init__(self, *, token: str | Iterable[str] | None = None, allow_origins: Iterable[str] = (),
                 allowed_hosts: Iterable[str] | None = None) -> None:
        tokens = [token] if isinstance(token, str) else list(token or ())
        #: each token (bytes) and the principal it identifies
        self._tokens = [(t.encode(), principal_of_token(t)) for t in dict.fromkeys(tokens) if t]
        self._token = self._tokens[0][0] if self._tokens else None
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
        if self._token is not None and self.principal(headers) is None:
            return Refusal(401, "Unauthorized: a valid bearer token is required",
                           [("www-authenticate", 'Bearer realm="acplink"')])
        return None

    def principal(self, headers: dict[str, str]) -> str | None:
        """The principal of the request's bearer token (None: no token is required, or it
        carries none of them). Every token is compared, in constant time."""
        if not self._tokens:
            return None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        raw = given.strip().encode()
        found = None
        for token, principal in self._tokens:
            if hmac.compare_digest(raw, token) and found is None:
                found = principal
        return found
