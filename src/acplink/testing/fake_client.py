"""``FakeClient``: a scripted editor for testing agents.

It answers permission requests by rule, serves a virtual file system (or the real one, confined
to the session's roots) and fake terminals, and records every message the agent sent it.
:meth:`FakeClient.turn` runs one prompt turn and returns a :class:`TurnRecord` for the
assertion helpers (:func:`assert_turn`, :func:`assert_updates_in_order`, :func:`assert_tool_call`).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..client.client import Client
from ..client.permissions import PermissionPolicy, PermissionRule
from ..client.session import Session
from ..connection.base import Router
from ..errors import ResourceNotFound, UsageError
from ..protocol import Protocol
from ..schema import _generated as s
from ..transports.base import Transport

__all__ = ["FakeClient", "FakeCommand", "Seen", "TurnRecord"]


@dataclass
class FakeCommand:
    """What a fake terminal prints and how it exits."""

    output: str = ""
    exit_code: int = 0


@dataclass
class Seen:
    """One message the agent sent to the client: its method and params (wire JSON)."""

    method: str
    params: dict[str, Any]


@dataclass
class TurnRecord:
    """One prompt turn as the client saw it."""

    session: Session
    response: s.PromptResponse
    updates: list[Any] = field(default_factory=list)

    @property
    def stop_reason(self) -> str:
        return str(self.response.stop_reason)

    @property
    def text(self) -> str:
        """The agent's reply: the text of its message chunks, joined."""
        return "".join(getattr(u.content, "text", "") for u in self.updates
                       if getattr(u, "session_update", None) == "agent_message_chunk")


def _wire(params: Any) -> dict[str, Any]:
    if hasattr(params, "model_dump"):
        out: dict[str, Any] = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        return out
    return dict(params) if isinstance(params, dict) else {"value": params}


def _policy(permissions: PermissionPolicy | Iterable[PermissionRule] | str) -> PermissionPolicy:
    if isinstance(permissions, PermissionPolicy):
        return permissions
    if isinstance(permissions, str):
        if permissions not in ("allow", "deny"):
            raise UsageError(f"permissions must be 'allow', 'deny', rules or a PermissionPolicy, not {permissions!r}")
        return PermissionPolicy.allow_all() if permissions == "allow" else PermissionPolicy()
    return PermissionPolicy(rules=permissions, remember=False)


class FakeClient(Client):
    """A :class:`Client` for tests (see the module doc).

    ``files``: a virtual file system (path → text; relative paths are relative to the
    session's cwd); ``None`` serves the real files under the session's roots. ``permissions``:
    ``"allow"``, ``"deny"`` (default), a list of :class:`PermissionRule` or a
    :class:`PermissionPolicy`. ``commands``: fake terminals (command → :class:`FakeCommand`
    or its output); ``None`` runs real terminal processes.
    """

    def __init__(self, transport: Transport, *, files: Mapping[str, str] | None = None,
                 permissions: PermissionPolicy | Iterable[PermissionRule] | str = "deny",
                 commands: Mapping[str, FakeCommand | str] | None = None, **client_kw: Any) -> None:
        self.files: dict[str, str] | None = dict(files) if files is not None else None
        self.commands: dict[str, FakeCommand] | None = None if commands is None else {
            k: v if isinstance(v, FakeCommand) else FakeCommand(v) for k, v in commands.items()}
        #: every message the agent sent, in order
        self.seen: list[Seen] = []
        #: every ``session/update`` (the update models), in order
        self.updates: list[Any] = []
        self._update_sessions: list[tuple[str, Any]] = []
        self._terminals: dict[str, tuple[str, FakeCommand]] = {}
        client_kw.setdefault("terminal", commands is None)
        super().__init__(transport, permission=_policy(permissions), **client_kw)

    # -- what the agent did ----------------------------------------------------------------------

    def calls(self, method: str) -> list[dict[str, Any]]:
        """The params of every ``method`` message the agent sent."""
        return [m.params for m in self.seen if m.method == method]

    async def turn(self, session: Session, prompt: str | list[Any], **fields: Any) -> TurnRecord:
        """Run one prompt turn to its end; its updates and response."""
        start = len(self.updates)
        response = await session.prompt(prompt, **fields)
        mine = [u for sid, u in self._update_sessions[start:] if sid == session.session_id]
        return TurnRecord(session, response, mine)

    # -- the handlers ----------------------------------------------------------------------------

    def _router(self, protocol: Protocol) -> Router:
        r = super()._router(protocol)
        mine: dict[str, Callable[[Any], Awaitable[Any]]] = {}
        if self.files is not None:
            mine.update(read_text_file=self._read, write_text_file=self._write)
        if self.commands is not None:
            mine.update(create_terminal=self._create, terminal_output=self._output,
                        wait_for_terminal_exit=self._wait, kill_terminal=self._kill, release_terminal=self._release)
        for name, handler in mine.items():
            if protocol.has(name):
                r.add_request(protocol.wire(name), handler, replace=True)
        update = protocol.wire("session_update")
        for table in (r.requests, r.notifications):
            for name, served in list(table.items()):
                table[name] = self._recorded(name, served, name == update)
        return r

    def client_capabilities(self) -> s.ClientCapabilities:
        caps = super().client_capabilities()
        if self.commands is not None:
            caps = caps.model_copy(update={"terminal": True})
        return caps

    def _recorded(self, method: str, handler: Callable[[Any], Awaitable[Any]],
                  is_update: bool) -> Callable[[Any], Awaitable[Any]]:
        async def handle(params: Any) -> Any:
            self.seen.append(Seen(method, _wire(params)))
            if is_update:
                self.updates.append(params.update)
                self._update_sessions.append((params.session_id, params.update))
            return await handler(params)
        return handle

    def _file_key(self, session_id: str, path: str) -> str:
        assert self.files is not None
        if path in self.files:
            return path
        sess = self.sessions.get(session_id)
        if sess is not None:
            rel = os.path.relpath(path, sess.cwd)
            if rel in self.files or not rel.startswith(".."):
                return rel
        return path

    async def _read(self, p: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        assert self.files is not None
        key = self._file_key(p.session_id, p.path)
        if key not in self.files:
            raise ResourceNotFound(f"no such file: {p.path}")
        text = self.files[key]
        if p.line is not None or p.limit is not None:
            lines = text.splitlines(keepends=True)
            first = max((p.line or 1) - 1, 0)
            text = "".join(lines[first:first + p.limit if p.limit is not None else None])
        return s.ReadTextFileResponse(content=text)

    async def _write(self, p: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        assert self.files is not None
        self.files[self._file_key(p.session_id, p.path)] = p.content
        return s.WriteTextFileResponse()

    def _terminal(self, terminal_id: str) -> FakeCommand:
        entry = self._terminals.get(terminal_id)
        if entry is None:
            raise ResourceNotFound(f"unknown terminal {terminal_id!r}")
        return entry[1]

    async def _create(self, p: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        assert self.commands is not None
        line = " ".join([p.command, *(p.args or [])])
        cmd = self.commands.get(line) or self.commands.get(p.command) or FakeCommand(
            f"{p.command}: command not found\n", 127)
        tid = f"term-{len(self._terminals) + 1}"
        self._terminals[tid] = (line, cmd)
        return s.CreateTerminalResponse(terminal_id=tid)

    async def _output(self, p: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        cmd = self._terminal(p.terminal_id)
        return s.TerminalOutputResponse(output=cmd.output, truncated=False,
                                        exit_status=s.TerminalExitStatus(exit_code=cmd.exit_code))

    async def _wait(self, p: s.WaitForTerminalExitRequest) -> s.WaitForTerminalExitResponse:
        return s.WaitForTerminalExitResponse(exit_code=self._terminal(p.terminal_id).exit_code)

    async def _kill(self, p: s.KillTerminalRequest) -> s.KillTerminalResponse:
        self._terminal(p.terminal_id)
        return s.KillTerminalResponse()

    async def _release(self, p: s.ReleaseTerminalRequest) -> s.ReleaseTerminalResponse:
        self._terminal(p.terminal_id)
        del self._terminals[p.terminal_id]
        return s.ReleaseTerminalResponse()
