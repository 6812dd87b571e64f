"""The checker's client: one freshly spawned agent, a typed connection, a raw-bytes channel,
and the transcript of everything that crossed the wire (for evidence and trace analysis)."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..connection.base import Router
from ..connection.client_side import ClientSideConnection
from ..errors import AcpError
from ..protocol.base import Protocol
from ..protocol.requirements import RequirementSet, requirement_set
from ..protocol.state import default_protocol, protocol_of_version
from ..schema import _generated as s
from ..tools.record import recording_transport
from ..transports.recording import RecordingTransport
from ..transports.subprocess import SubprocessTransport

__all__ = ["CheckAbort", "Options", "Outcome", "Probe"]


@dataclass
class Options:
    """What ``acplink check`` was asked to do."""

    command: list[str]
    timeout: float = 15.0  # bound of each request, and of session setup
    startup_timeout: float = 60.0  # bound of initialize (a fresh agent process may start slowly)
    cancel_bound: float = 5.0  # a cancelled turn must end within this
    shutdown_bound: float = 3.0  # the agent must exit within this after stdin closes
    settle: float = 0.3  # how long to watch for late updates after a response
    cancel_prompt: str = "Count slowly from 1 to 100, one number per line. Do not use any tools."
    auth_method: str | None = None
    allow_logout: bool = False  # run the logout check (it may end the user's login)
    strict: bool = False
    debug: bool = False
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: the ACP version checked: 1, or 2 (the v2 draft's requirements: the protocol's requirement set)
    protocol: int = 1

    @property
    def init_timeout(self) -> float:
        """How long an ``initialize`` may take: the start-up bound, never below the request one."""
        return max(self.timeout, self.startup_timeout)


@dataclass
class Outcome:
    requirement: str
    status: str  # "pass" | "fail" | "skipped" | "error" (the check's setup failed)
    detail: str
    check: str = ""


class CheckAbort(Exception):
    """The check cannot go on (its setup failed); not-yet-reported requirements are skipped."""


_ids = itertools.count(1)

#: records kept of the agent's lines that are not JSON (memory stays bounded whatever it prints)
MAX_RAW_RECORDS = 1000


class Probe:
    """One agent process for one check."""

    def __init__(self, opts: Options, check: str) -> None:
        self.opts = opts
        self.check = check
        self.records: list[dict[str, Any]] = []
        self.outcomes: list[Outcome] = []
        self.t0 = time.monotonic()
        self._changed = asyncio.Event()
        self.permission_handler: Callable[[s.RequestPermissionRequest], Any] | None = None
        self.permissions: list[dict[str, Any]] = []
        self.transport: SubprocessTransport | None = None
        self.tap: RecordingTransport | None = None
        self.conn: ClientSideConnection | None = None
        self.init: s.InitializeResponse | None = None
        self.client_capabilities: dict[str, Any] = {}
        #: lines from the agent that were not JSON (only the first MAX_RAW_RECORDS are kept)
        self.raw_lines = 0
        #: the protocol checked (``opts.protocol``): the checks ask it for wire names, models, turn rules
        self.protocol: Protocol = protocol_of_version(opts.protocol) or default_protocol()
        #: the check's roles → requirement ids (its row of the check table)
        self.roles: Mapping[str, str] = {}

    @property
    def rules(self) -> RequirementSet:
        """The requirement set of the protocol checked (its data: ``facts``, ``initialize``)."""
        return requirement_set(self.protocol.requirement_set)

    # -- outcomes ------------------------------------------------------------------------------

    def report(self, req: str, status: str, detail: str) -> None:
        """An outcome for requirement ``req``, or for the requirement the check table maps the
        role ``req`` to (a role the table does not map is not judged by this requirement set)."""
        if req in self.roles:
            req = self.roles[req]
        elif req.isidentifier():
            return
        self.outcomes.append(Outcome(req, status, detail, self.check))

    def ok(self, req: str, detail: str = "") -> None:
        self.report(req, "pass", detail)

    def fail(self, req: str, detail: str) -> None:
        self.report(req, "fail", detail)

    def skip(self, req: str, detail: str) -> None:
        self.report(req, "skipped", detail)

    def reported(self, req: str) -> bool:
        req = self.roles.get(req, req)
        return any(o.requirement == req for o in self.outcomes)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        router = Router()

        async def permission(params: s.RequestPermissionRequest) -> Any:
            self.permissions.append({"params": params, "mono": time.monotonic()})
            if self.permission_handler is not None:
                return await self.permission_handler(params)
            reject = next((o for o in params.options if str(o.kind).startswith("reject")), None)
            if reject is not None:
                return {"outcome": {"outcome": "selected", "optionId": reject.option_id}}
            return {"outcome": {"outcome": "cancelled"}}

        router.add_request("session/request_permission", permission)
        self.transport = SubprocessTransport(self.opts.command, stderr="capture", cwd=self.opts.cwd,
                                             env=self.opts.env, close_timeout=self.opts.shutdown_bound,
                                             term_timeout=1.0)
        self.tap = recording_transport(self.transport, None, listeners=[self._on_record],
                                      header={"check": self.check, "command": self.opts.command})
        self.conn = ClientSideConnection(self.tap, router)
        await self.conn.start()

    def _on_record(self, rec: dict[str, Any]) -> None:
        if "raw" in rec:  # a line that is not JSON: the first ones are evidence enough
            self.raw_lines += 1
            if self.raw_lines > MAX_RAW_RECORDS:
                return
        self.records.append(rec)
        self._changed.set()

    async def aclose(self) -> float:
        """Close stdin and run the shutdown ladder; returns how long the agent took to exit."""
        t = time.monotonic()
        if self.conn is not None and not self.conn.closed:
            self.records.append({"type": "note", "text": "the checker closed the agent's stdin", "mono": t})
        if self.conn is not None:
            await self.conn.aclose()
        return time.monotonic() - t

    @property
    def alive(self) -> bool:
        return self.transport is not None and self.transport.returncode is None and not (
            self.conn is not None and self.conn.closed)

    def died(self) -> str:
        """A description of how the agent went away (exit code, stderr tail)."""
        code = self.transport.returncode if self.transport is not None else None
        tail = self.transport.stderr_tail[-5:] if self.transport is not None else []
        out = "the agent closed the connection" + (f" (exit code {code})" if code is not None else "")
        if tail:
            out += "; stderr: " + " | ".join(tail)
        return out

    # -- traffic -------------------------------------------------------------------------------

    async def initialize(self, version: int = 1, meta: dict[str, Any] | None = None,
                         capabilities: dict[str, Any] | None = None) -> s.InitializeResponse:
        assert self.conn is not None
        caps = dict(capabilities or {})
        self.client_capabilities = caps
        params: dict[str, Any] = {"protocolVersion": version, "clientCapabilities": caps,
                                  "clientInfo": {"name": "acplink-check", "version": "1"}}
        if meta is not None:
            params["_meta"] = meta
        self.init = await self.conn.call("initialize", s.InitializeRequest.model_validate(params),
                                         timeout=self.opts.init_timeout)
        return self.init

    async def setup(self, *, caps: dict[str, Any] | None = None) -> str:
        """initialize (+ authenticate) + session/new; the session id. Raises CheckAbort."""
        try:
            await self.initialize(capabilities=caps)
        except (AcpError, OSError) as exc:
            raise CheckAbort(f"initialize failed: {exc}") from None
        if self.opts.auth_method:
            try:
                await self.raw_call("authenticate", {"methodId": self.opts.auth_method})
            except AcpError as exc:
                raise CheckAbort(f"authenticate failed: {exc}") from None
        return await self.new_session()

    async def new_session(self) -> str:
        resp = await self.request("session/new", {"cwd": self.workdir, "mcpServers": []})
        if resp is None:
            raise CheckAbort(f"session/new got no response within {self.opts.timeout} s")
        if "error" in resp:
            raise CheckAbort(f"session/new failed: {resp['error']}")
        sid = resp.get("result", {}).get("sessionId") if isinstance(resp.get("result"), dict) else None
        if not isinstance(sid, str):
            raise CheckAbort(f"session/new returned no sessionId: {_short(resp)}")
        return sid

    @property
    def workdir(self) -> str:
        return os.path.abspath(self.opts.cwd or os.getcwd())

    def send_raw(self, data: bytes | dict[str, Any] | list[Any]) -> None:
        """Write exact bytes (or one JSON message) to the agent, bypassing the connection."""
        assert self.tap is not None
        if not isinstance(data, bytes):
            data = orjson.dumps(data) + b"\n"
        self.tap.write(data)

    async def request(self, method: str, params: Any = None, *, rid: Any = None, timeout: float | None = None,
                      meta: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Send a request on the raw channel; its whole response, or None on timeout / exit."""
        rid = f"chk-{next(_ids)}" if rid is None else rid
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        if meta is not None:
            msg["_meta"] = meta
        mark = len(self.records)
        self.send_raw(msg)
        rec = await self.wait_for(lambda r: r.get("dir") == "a2c" and r.get("kind") == "response"
                                  and r.get("id") == rid and type(r.get("id")) is type(rid),
                                  timeout if timeout is not None else
                                  self.opts.init_timeout if method == "initialize" else self.opts.timeout,
                                  start=mark)
        return rec["msg"] if rec is not None else None

    async def raw_call(self, method: str, params: Any) -> Any:
        """A request whose error becomes an AcpError; the result."""
        resp = await self.request(method, params)
        if resp is None:
            raise AcpError(f"{method}: no response within {self.opts.timeout} s")
        if "error" in resp:
            raise AcpError(f"{method}: error {_short(resp['error'])}")
        return resp.get("result")

    def notify(self, method: str, params: Any) -> None:
        self.send_raw({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_for(self, pred: Callable[[dict[str, Any]], bool], timeout: float,
                       start: int = 0) -> dict[str, Any] | None:
        """The first record from ``start`` matching ``pred``; None on timeout or agent exit."""
        deadline = time.monotonic() + timeout
        i = start
        while True:
            while i < len(self.records):
                rec = self.records[i]
                i += 1
                if rec.get("type") == "message" and pred(rec):
                    return rec
            if self.conn is not None and self.conn.closed and i >= len(self.records):
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), min(left, 0.25))
            except TimeoutError:
                pass

    async def still_alive(self) -> str | None:
        """None when the agent still answers a request; else why not."""
        resp = await self.request("_acplink/ping_unknown", {}, timeout=min(self.opts.timeout, 5.0))
        if resp is not None:
            return None
        if not self.alive:
            return self.died()
        return "the agent stopped answering (an unknown `_` request got no response)"

    def updates(self, session_id: str | None = None, start: int = 0) -> list[dict[str, Any]]:
        out = []
        for rec in self.records[start:]:
            msg = rec.get("msg")
            if rec.get("dir") == "a2c" and rec.get("method") == "session/update" and isinstance(msg, dict):
                params = msg.get("params") or {}
                if session_id is None or params.get("sessionId") == session_id:
                    out.append(rec)
        return out

    def answered_method(self, msg: dict[str, Any]) -> str | None:
        """The method of the request this agent response answers (None if not a response)."""
        if "method" in msg or "id" not in msg:
            return None
        rid = msg["id"]
        for rec in reversed(self.records):
            sent = rec.get("msg")
            if (rec.get("dir") == "c2a" and isinstance(sent, dict) and isinstance(sent.get("method"), str)
                    and sent.get("id") == rid and type(sent.get("id")) is type(rid)):
                return str(sent["method"])
        return None

    def transcript(self, limit: int = 60, width: int = 400) -> list[str]:
        """The check's traffic, one line per message (for failure evidence)."""
        lines = []
        for rec in self.records:
            if rec.get("type") == "note":
                lines.append(f"+{rec['mono'] - self.t0:7.3f}s → ({rec['text']})")
            if rec.get("type") == "exit":
                lines.append(f"+{rec.get('mono', self.t0) - self.t0:7.3f}s   (the agent exited, code {rec.get('code')})")
            if rec.get("type") == "eof":
                lines.append(f"+{rec['mono'] - self.t0:7.3f}s {'→' if rec['dir'] == 'c2a' else '←'} (end of stream)")
            if rec.get("type") != "message":
                continue
            arrow = "→" if rec.get("dir") == "c2a" else "←"
            body = rec.get("raw") if "msg" not in rec else orjson.dumps(rec["msg"]).decode()
            body = str(body)
            if len(body) > width:
                body = body[:width] + f"… ({rec.get('size')} bytes)"
            lines.append(f"+{rec['mono'] - self.t0:7.3f}s {arrow} {body}")
        if len(lines) > limit:
            lines = [*lines[: limit // 3], f"… {len(lines) - limit} lines omitted …", *lines[-(2 * limit) // 3:]]
        if self.transport is not None and self.transport.stderr_tail:
            lines.append("agent stderr (last lines):")
            lines.extend(f"  | {line}" for line in self.transport.stderr_tail[-10:])
        return lines


def _short(obj: Any, n: int = 300) -> str:
    text = orjson.dumps(obj, default=str).decode()
    return text if len(text) <= n else text[:n] + "…"


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def prompt_params(session_id: str, blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": list(blocks)}
