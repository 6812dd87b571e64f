"""What the peer is told when one of our request handlers fails.

A :class:`~acplink.errors.RequestError` the handler raised is the answer as it is. Anything
else is logged on this side and answered ``-32603`` with no traceback and no local paths
(``debug=True`` sends the details).
"""

from __future__ import annotations

import logging

from ..errors import (
    AcpError,
    CapabilityError,
    InternalError,
    MessageTooLarge,
    ProtocolError,
    RequestError,
    RequestTimeout,
    UsageError,
)

__all__ = ["failure_answer"]

log = logging.getLogger("acplink.rpc")


def failure_answer(exc: Exception, method: str, name: str, debug: bool, closed: bool) -> RequestError:
    """The error answered for a ``method`` handler that raised ``exc`` (called while it is
    handled: the log shows its traceback). ``name``: the connection's, for the log and the
    hint; ``closed``: the connection is closing (an AcpError met there is not logged)."""
    if isinstance(exc, RequestError):
        return exc
    if isinstance(exc, UsageError):
        # the handler misused acplink (e.g. returned the wrong type): a bug its author
        # must see, on this side's stderr and in the answer
        log.error("%s: the %s handler misused acplink: %s", name, method, exc, exc_info=debug)
        return InternalError(f"Internal error: UsageError: {exc}",
                             {"error": "UsageError", "message": str(exc), "method": method})
    hint = f" (details in the {name}'s log; debug=True sends them)"
    if isinstance(exc, AcpError):
        if not closed:  # (a handler that met the closing connection: nothing to say)
            log.warning("%s: the %s handler failed: %s: %s", name, method, type(exc).__name__, exc, exc_info=debug)
        return InternalError(str(exc) if debug else _public(exc) + hint)
    log.exception("%s: handler for %s raised", name, method)
    return InternalError(f"Internal error: {type(exc).__name__}: {exc}" if debug else "Internal error" + hint)


def _public(exc: BaseException) -> str:
    """An error message fit for the peer: no traceback, no local paths. The messages of the
    errors that carry neither (sizes, method and capability names) are kept."""
    if isinstance(exc, (MessageTooLarge, CapabilityError, ProtocolError, RequestTimeout)):
        return f"Internal error: {type(exc).__name__}: {exc}"
    return f"Internal error: {type(exc).__name__}"
