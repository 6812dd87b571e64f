"""How a protocol version's client side maps onto acplink's own vocabulary (sans-I/O).

acplink's client speaks one vocabulary: v1's models. :class:`~acplink.client.SessionState`
folds v1 ``SessionUpdate`` models, the :class:`~acplink.client.PermissionPolicy` decides v1
permission requests, and the client's capabilities are v1's ``ClientCapabilities``. A version
whose wire speaks it (v1, and versions derived from it) needs nothing more
(``Protocol.client_codec`` is ``None``). Another version supplies a :class:`ClientCodec`: its
own reducer (the session's ``native_state``), the views of its updates in acplink's
vocabulary, and the translation of what the client advertises and answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ClientCodec"]


class ClientCodec:
    """The client side of one version, in acplink's vocabulary (every method is pure)."""

    #: wire methods a v1 agent calls that this version's client has none of: ``{method: hint}``
    #: (the hint ends the ``-32601`` message, e.g. where the role went)
    unsupported: Mapping[str, str] = {}

    def capabilities(self, caps: dict[str, Any]) -> dict[str, Any]:
        """What the client advertises in this version, from its capabilities in acplink's
        vocabulary (v1's ``clientCapabilities`` wire dict)."""
        raise NotImplementedError

    def new_state(self, session_id: str) -> Any:
        """A session's native state: this version's own reducer (``.apply(update)``)."""
        raise NotImplementedError

    def views(self, update: Any, native: Any, state: Any) -> list[Any]:
        """acplink's (v1) updates equivalent to ``update``: none, one or several. ``native``: the
        native state with ``update`` applied; ``state``: the acplink state before them."""
        raise NotImplementedError

    def apply_setup(self, native: Any, response: Any) -> None:
        """The result of a session-opening call (``session/new``, ``resume``, ``fork``)."""
        raise NotImplementedError

    def set_config_options(self, native: Any, options: list[Any]) -> None:
        """The config options a ``session/set_config_option`` answer carries."""
        raise NotImplementedError

    def permission_request(self, params: Any, known: Callable[[str], Any]) -> Any:
        """The v1 ``RequestPermissionRequest`` a permission policy decides, for this version's
        request ``params``; ``known(tool_call_id)``: what the session knows of a tool call."""
        raise NotImplementedError

    def permission_answer(self, answer: Any) -> Any:
        """This version's answer (a wire dict or a model) for the policy's v1 answer."""
        raise NotImplementedError

    def prompt_refusal(self, blocks: list[Any]) -> str | None:
        """Why a prompt of ``blocks`` is refused before it is sent (None: it is not)."""
        return None
