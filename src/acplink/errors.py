"""The one exception tree of acplink.

Every error acplink raises is an :class:`AcpError`. Errors that travel on the wire are
:class:`RequestError` subclasses, one per JSON-RPC / ACP error code, so ``except
MethodNotFound`` works on both sides and ``RequestError.from_wire`` picks the right class.
Users never need to catch a bare ``Exception`` or a pydantic error.

The tree (every public error; ``acplink.X`` for each name; the wire code where there is one)::

    AcpError
    ├── UsageError                  the API or the command line used wrongly (exit 2 in the CLI)
    │   └── MissingDependency       (also an ImportError) a feature whose extra is not installed
    ├── ProtocolError               the peer broke the protocol (a bad initialize answer, ...)
    │   └── PeerOutputNotJson       (also a TransportError) the peer's output is not JSON-RPC
    ├── CapabilityError             a method the peer did not advertise
    ├── TransportError              the byte stream failed
    │   ├── ConnectionClosed        the connection is closed: pending and new calls fail
    │   │   ├── AuthRejected        a remote server refused the credentials (401/403)
    │   │   ├── StreamResumeFailed  a dropped stream could not be resumed (409: what it missed is gone)
    │   │   └── RecoveryFailed      a crashed local agent was not restarted again (a crash loop)
    │   ├── PeerOutputNotJson
    │   └── MessageTooLarge         a message over the size limit (either direction)
    ├── RequestTimeout              (also a TimeoutError) no answer in time; the request was cancelled
    ├── StoreError                  a session store's file is corrupt, foreign or from a newer acplink
    ├── McpError                    an inner MCP error in MCP-over-ACP (``code``, ``message``, ``data``)
    ├── RegistryError               the agent registry: a registry, agent, download or archive refused
    └── RequestError                an error answer: ``code``, ``message``, ``data``
        ├── ParseError              -32700
        ├── InvalidRequest          -32600
        ├── MethodNotFound          -32601
        ├── InvalidParams           -32602
        │   └── SchemaValidationError   a message that fails the schema (path and reason)
        ├── InternalError           -32603
        ├── AuthRequired            -32000 (with the agent's ``auth_methods``)
        ├── ResourceNotFound        -32002
        └── RequestCancelled        -32800

A code without a class of its own is a plain :class:`RequestError` with that ``code``.
(``tests/test_errors_tree.py`` checks that this drawing and the classes agree.)
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AcpError",
    "AuthRequired",
    "CapabilityError",
    "ConnectionClosed",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "McpError",
    "MessageTooLarge",
    "MethodNotFound",
    "MissingDependency",
    "ParseError",
    "PeerOutputNotJson",
    "ProtocolError",
    "RecoveryFailed",
    "RegistryError",
    "RequestCancelled",
    "RequestError",
    "RequestTimeout",
    "ResourceNotFound",
    "SchemaValidationError",
    "StoreError",
    "StreamResumeFailed",
    "TransportError",
    "UsageError",
]


class AcpError(Exception):
    """Root of every acplink error."""

    #: the message for a command-line user when it differs from ``str(error)``: where the
    #: message advises a Python argument (``token=``), this names the ``acplink`` flag
    #: (``--token``) instead. The CLI shows it; library users get ``str(error)``.
    cli_message: str | None = None


class UsageError(AcpError):
    """The acplink API was used wrongly (a bug in the calling code, not in the peer)."""


class MissingDependency(UsageError, ImportError):
    """A feature whose optional dependencies (an extra of the ``acplink`` package) are not
    installed: ``acplink chat`` without ``acplink[cli]``, a ``ws://`` URL without
    ``acplink[remote]``. ``extra`` names the extra, ``modules`` the modules found missing;
    the message is one line ending with the ``pip install`` command that fixes it."""

    def __init__(self, what: str, extra: str, modules: tuple[str, ...]) -> None:
        self.what = what
        self.extra = extra
        self.modules = modules
        super().__init__(f"{what} needs the {extra!r} extra (not installed: {', '.join(modules)}): "
                         f"pip install 'acplink[{extra}]'")
        self.name = modules[0] if modules else None

    def __reduce__(self) -> tuple[type[MissingDependency], tuple[str, str, tuple[str, ...]]]:
        return type(self), (self.what, self.extra, self.modules)  # (pickles: the arguments, not the message)


class StoreError(AcpError):
    """A session store cannot be used: its file is corrupt, foreign or from a newer acplink
    (the message names the file; nothing in it was changed)."""


class ProtocolError(AcpError):
    """The peer broke the protocol (e.g. answered with an option that was not offered)."""


class CapabilityError(AcpError):
    """A method was called that the peer did not advertise (or we did not). ``capability``:
    ``"client:fs.readTextFile"`` style (side and path), when known."""

    def __init__(self, message: str, *, capability: str | None = None, cli_message: str | None = None) -> None:
        super().__init__(message)
        self.capability = capability
        self.cli_message = cli_message


class TransportError(AcpError):
    """The byte stream to the peer failed."""


class ConnectionClosed(TransportError):
    """The connection is closed; pending and new calls fail with this."""


class StreamResumeFailed(ConnectionClosed):
    """A remote stream dropped and the server refused to resume it (HTTP 409, WebSocket
    ``stream/resume_failed``: what was missed is beyond its retention, or the connection is
    gone): the connection is closed; reopen the session on a new one with ``session/resume``
    or ``session/load``."""


class RecoveryFailed(ConnectionClosed):
    """``connect(cmd, recover=True)`` gave up restarting the agent (it crashed too often: a
    crash loop, or its output is not ACP): the connection is closed. The message says why."""


class PeerOutputNotJson(TransportError, ProtocolError):
    """The peer's output is not JSON-RPC (e.g. 1,000 lines that are not JSON, and no valid
    message among them): the connection gave up on it and is closed."""


class MessageTooLarge(TransportError):
    """A message exceeded the configured size limit."""

    def __init__(self, size: int, limit: int, direction: str = "outgoing") -> None:
        super().__init__(f"{direction} message of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit
        self.direction = direction


class RequestTimeout(AcpError, TimeoutError):
    """An outbound request got no response in time (``$/cancel_request`` was sent)."""


class McpError(AcpError):
    """An MCP error inside MCP-over-ACP (the inner protocol's, not the ACP connection's): a
    provider's handler raises it to answer ``mcp/message`` with the carrier
    ``{"error": {code, message, data?}}``; a caller gets it back as a value. ``code`` is an
    MCP (JSON-RPC) error code, e.g. -32602 for bad tool arguments."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        """The inner error object: ``{"code", "message", "data"?}``."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out

    def __repr__(self) -> str:
        return f"McpError({self.code}, {self.message!r})"


class RegistryError(AcpError):
    """The ACP agent registry (``acplink.registry``) could not give an agent's command line:
    the registry is not JSON or fails its schema, the agent is unknown or has no distribution
    for this platform, a download failed, an archive's digest does not match (nothing was
    unpacked) or the archive is unsafe (a path out of its folder, a link out of it, a
    decompression bomb), or the registry is wanted offline and none is cached. One line."""


class RequestError(AcpError):
    """A JSON-RPC error response, received from the peer or to be sent to it."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"
    _by_code: ClassVar[dict[int, type[RequestError]]] = {}

    def __init__(self, message: str | None = None, data: Any = None, *, code: int | None = None,
                 auth_methods: list[Any] | None = None) -> None:
        self.message = message if message is not None else self.default_message
        self.data = data
        #: ``Error.authMethods`` (seed extension: a top-level member of the error object)
        self.wire_auth_methods = auth_methods
        if code is not None:
            self.code = code  # type: ignore[misc]
        super().__init__(self.message)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "code" in cls.__dict__:
            RequestError._by_code.setdefault(cls.code, cls)

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    @property
    def auth_methods(self) -> list[Any] | None:
        """``Error.authMethods`` (seed extension), when present (also accepted inside ``data``)."""
        if self.wire_auth_methods is not None:
            return self.wire_auth_methods
        if isinstance(self.data, dict):
            methods = self.data.get("authMethods")
            return methods if isinstance(methods, list) else None
        return None

    def to_wire(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        if self.wire_auth_methods is not None:
            err["authMethods"] = [m.model_dump(mode="json", by_alias=True, exclude_unset=True)
                                  if hasattr(m, "model_dump") else m for m in self.wire_auth_methods]
        return err

    @classmethod
    def from_wire(cls, error: Any) -> RequestError:
        """Build the matching subclass from a wire ``error`` object (tolerates junk)."""
        if not isinstance(error, dict):
            return InternalError(f"malformed error object: {error!r}"[:500])
        code = error.get("code")
        message = error.get("message")
        if not isinstance(message, str):
            message = str(message)
        data = error.get("data")
        if not isinstance(code, int) or isinstance(code, bool):
            return InternalError(message, data)
        methods = error.get("authMethods")
        auth = [m for m in methods if isinstance(m, dict)] if isinstance(methods, list) else None
        klass = RequestError._by_code.get(code)
        if klass is None:
            return RequestError(message, data, code=code, auth_methods=auth)
        return klass(message, data, auth_methods=auth)


class ParseError(RequestError):
    code = -32700
    default_message = "Parse error"


class InvalidRequest(RequestError):
    code = -32600
    default_message = "Invalid request"


class MethodNotFound(RequestError):
    code = -32601
    default_message = "Method not found"


class InvalidParams(RequestError):
    code = -32602
    default_message = "Invalid params"


class InternalError(RequestError):
    code = -32603
    default_message = "Internal error"


class AuthRequired(RequestError):
    code = -32000
    default_message = "Authentication required"


class ResourceNotFound(RequestError):
    code = -32002
    default_message = "Resource not found"


class RequestCancelled(RequestError):
    code = -32800
    default_message = "Request cancelled"


class SchemaValidationError(InvalidParams):
    """A value did not match its ACP type. ``errors`` lists each problem with its JSON path."""

    def __init__(self, type_name: str, errors: list[dict[str, Any]]) -> None:
        self.type_name = type_name
        self.errors = errors
        first = errors[0] if errors else {"path": "", "message": "invalid"}
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        where = first["path"] or "<root>"
        super().__init__(f"invalid {type_name} at {where}: {first['message']}{more}",
                         {"type": type_name, "errors": errors[:20]})
