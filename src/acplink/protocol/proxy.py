"""The proxy envelope of ACP proxy chains, without I/O.

A conductor talks to each proxy of a chain over one connection. On it, plain messages are the
proxy's traffic with its predecessor; its traffic with its successor travels wrapped in
``proxy/successor`` ``{method, params?, _meta?}`` (one request or notification per envelope;
the wrapped result or error comes back unchanged; the envelope's ``_meta`` is hop-local).
``proxy/initialize`` (params and result as ``initialize``) starts a component as a proxy.

Software built on the Rust SDK before 5.0 spells the two methods ``_proxy/initialize`` and
``_proxy/successor``: a :class:`Dialect` is one spelling. This module wraps and unwraps
envelopes and checks them (no ``method``, or ``params`` neither an object nor an array:
``-32602``); the conductor and the proxy API above use it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ..errors import InvalidParams
from ..schema.methods import PROXY_INITIALIZE, PROXY_SUCCESSOR

__all__ = [
    "DIALECTS",
    "LEGACY",
    "MODERN",
    "Dialect",
    "Wrapped",
    "dialect_of",
    "unwrap",
    "wrap",
]


class Dialect(NamedTuple):
    """One spelling of the two proxy methods."""

    initialize: str
    successor: str
    name: str

    def __str__(self) -> str:
        return self.name


#: the spec's names (``x-side: proxy`` in the v1 and v2 unstable schemas)
MODERN = Dialect(PROXY_INITIALIZE, PROXY_SUCCESSOR, "proxy/*")
#: the names of the Rust SDK before 5.0 (and software built on it)
LEGACY = Dialect("_" + PROXY_INITIALIZE, "_" + PROXY_SUCCESSOR, "_proxy/*")
#: the dialects in the order a conductor tries them
DIALECTS = (MODERN, LEGACY)

_BY_METHOD = {m: d for d in DIALECTS for m in (d.initialize, d.successor)}


def dialect_of(method: str) -> Dialect | None:
    """The dialect ``method`` is one of the proxy methods of (``None``: not a proxy method)."""
    return _BY_METHOD.get(method)


class Wrapped(NamedTuple):
    """The message one envelope carries: its method and params (``None``: none), and the
    envelope's own ``_meta`` (hop-local: not part of the wrapped message)."""

    method: str
    params: Any
    meta: Any = None


def wrap(method: str, params: Any = None, meta: Any = None) -> dict[str, Any]:
    """The params of a ``proxy/successor`` envelope carrying ``method`` with ``params``."""
    envelope: dict[str, Any] = {"method": method}
    if params is not None:
        envelope["params"] = params
    if meta is not None:
        envelope["_meta"] = meta
    return envelope


def unwrap(params: Any, *, envelope: str = PROXY_SUCCESSOR) -> Wrapped:
    """The message a ``proxy/successor`` envelope (its ``params``) carries.

    Raises :class:`~acplink.errors.InvalidParams` (``-32602``) naming what is wrong: params
    that are not an object, no string ``method``, ``params`` neither an object nor an array,
    ``_meta`` that is not an object. ``envelope``: the method name the error messages use.
    """
    if not isinstance(params, dict):
        raise InvalidParams(f"{envelope}: the params must be an object {{method, params?, _meta?}}")
    method = params.get("method")
    if not isinstance(method, str) or not method:
        raise InvalidParams(f"{envelope}: the envelope has no method (a string naming the wrapped message)")
    inner = params.get("params")
    if inner is not None and not isinstance(inner, (dict, list)):
        raise InvalidParams(f"{envelope}: the wrapped {method} params must be an object or an array, "
                            f"not {type(inner).__name__}")
    meta = params.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        raise InvalidParams(f"{envelope}: the envelope's _meta must be an object")
    return Wrapped(method, inner, meta)
