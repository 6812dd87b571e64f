"""The probe agent of ``acplink check-client``: a raw stdio ACP agent that the client under test
launches. Within the first prompt turn it exercises the client (every update kind, a tool call,
a permission request, fs and terminal calls when advertised, ``$/cancel_request``, unknown
methods, update kinds, fields and ``_meta``) and writes what it saw, one JSON object a line, to
the report file given by ``--report``: ``launched``, ``record`` (each message), ``outcome``
(requirement, status, detail) and ``done``.

    python -m acplink.conformance.client_probe --report FILE [--timeout S]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import shutil
import sys
import tempfile
import time
import uuid
from typing import Any, BinaryIO

import orjson

from .._tasks import TaskSet
from ..protocol.messages import message_kind
from ..tools.validate import validate_message

__all__ = ["main"]

META = {"acplink.dev/probe": {"nested": [1, 2]}}
OPTIONS = [{"optionId": "probe-allow", "name": "Allow", "kind": "allow_once"},
           {"optionId": "probe-reject", "name": "Reject", "kind": "reject_once"}]


class ProbeAgent:
    def __init__(self, report: BinaryIO, timeout: float) -> None:
        self.report = report
        self.timeout = timeout
        self.t0 = time.monotonic()
        self.out = sys.stdout.buffer
        self.ids = itertools.count(1)
        self.pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]] = {}
        self.methods: dict[Any, str] = {}  # id of a request we sent → its method (to validate answers)
        self.caps: dict[str, Any] = {}
        self.sessions: dict[str, str] = {}  # session id → cwd
        self.turn: asyncio.Future[None] | None = None
        self.tasks = TaskSet("acplink-check-client-probe")  # (the turn; cancelled when stdin closes)
        self.judged: set[str] = set()
        self.finished = False
        self.received = 0  # messages from the client

    # -- report ----------------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        self.report.write(orjson.dumps(event) + b"\n")
        self.report.flush()

    def outcome(self, req: str, status: str, detail: str) -> None:
        if status != "pass" or req not in self.judged:
            self.emit({"event": "outcome", "requirement": req, "status": status, "detail": detail})
        self.judged.add(req)

    def record(self, direction: str, msg: Any) -> None:
        self.emit({"event": "record", "dir": direction, "t": round(time.monotonic() - self.t0, 3), "msg": msg})

    # -- wire ------------------------------------------------------------------------------------

    def send(self, msg: dict[str, Any]) -> None:
        self.record("a2c", msg)
        self.out.write(orjson.dumps(msg) + b"\n")
        self.out.flush()

    def reply(self, rid: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def notify_update(self, sid: str, update: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})

    async def call(self, method: str, params: dict[str, Any], *, then: Any = None) -> dict[str, Any] | None:
        """A request to the client; its whole response, or None when none came within the bound.
        ``then`` (a message) is sent right after the request."""
        rid = next(self.ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[rid] = (method, fut)
        self.methods[rid] = method
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if then is not None:
            self.send({**then, "params": {**then["params"], "requestId": rid}})
        try:
            return await asyncio.wait_for(fut, self.timeout)
        except TimeoutError:
            return None
        finally:
            self.pending.pop(rid, None)

    def incoming(self, line: bytes) -> None:
        self.received += 1
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            self.record("c2a", {"raw": line[:200].decode("utf-8", "replace")})
            self.outcome("CLIENT-002", "fail", f"the client sent a line that is not JSON: {line[:80]!r}")
            return
        self.record("c2a", msg)
        kind = message_kind(msg) if isinstance(msg, dict) else "invalid"
        answered = self.methods.get(msg.get("id")) if kind == "response" else None
        for v in validate_message(msg, answered)[:3]:
            if not v.get("strict_only"):
                self.outcome("CLIENT-002", "fail", f"{(msg.get('method') or answered or 'message')}: "
                             f"{v.get('path')}: {v.get('message')}")
        if not isinstance(msg, dict):
            return
        if kind == "response":
            entry = self.pending.get(msg.get("id"))  # type: ignore[arg-type]
            if entry is not None and not entry[1].done():
                entry[1].set_result(msg)
            return
        method = msg.get("method")
        params: dict[str, Any] = msg["params"] if isinstance(msg.get("params"), dict) else {}
        if kind == "notification":
            return  # session/cancel: this probe's turns do not wait on anything cancellable
        rid = msg.get("id")
        if method == "initialize":
            self.on_initialize(rid, params)
        elif method == "session/new":
            sid = f"probe-{uuid.uuid4().hex[:8]}"
            self.sessions[sid] = str(params.get("cwd") or os.getcwd())
            self.reply(rid, {"sessionId": sid, "_meta": META, "acplinkProbeUnknownField": {"x": 1}})
        elif method == "session/prompt":
            self.on_prompt(rid, params)
        elif method == "authenticate":
            self.reply(rid, {})
        else:
            self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})

    def on_initialize(self, rid: Any, params: dict[str, Any]) -> None:
        caps = params.get("clientCapabilities")
        self.caps = caps if isinstance(caps, dict) else {}
        if isinstance(params.get("protocolVersion"), int) and isinstance(caps, dict):
            self.outcome("CLIENT-001", "pass", f"protocolVersion {params['protocolVersion']}, capabilities "
                         f"{orjson.dumps(caps).decode()[:200]}")
        else:
            self.outcome("CLIENT-001", "fail", f"initialize params lack an integer protocolVersion or "
                         f"clientCapabilities: {orjson.dumps(params).decode()[:200]}")
        self.reply(rid, {"protocolVersion": 1, "agentCapabilities": {"loadSession": False, "promptCapabilities": {
            "image": False, "audio": False, "embeddedContext": False}, "_meta": META},
            "authMethods": [], "agentInfo": {"name": "acplink-check-client-probe", "version": "1"}})

    def on_prompt(self, rid: Any, params: dict[str, Any]) -> None:
        sid = params.get("sessionId")
        if sid not in self.sessions:
            self.outcome("CLIENT-003", "fail", f"session/prompt names session {sid!r}, which no session/new returned")
            self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown session"}})
            return
        self.outcome("CLIENT-003", "pass", "the prompt names the session session/new returned")
        kinds = sorted({str(b.get("type")) for b in params.get("prompt") or [] if isinstance(b, dict)})
        unadvertised = [k for k in kinds if k in ("image", "audio", "resource")]
        if unadvertised:
            self.outcome("CLIENT-013", "fail", f"the prompt carries {', '.join(unadvertised)} block(s), which the "
                         "agent did not advertise (promptCapabilities all false)")
        else:
            self.outcome("CLIENT-013", "pass", f"prompt block types: {', '.join(kinds) or 'none'}")
        if self.turn is None:
            self.turn = self.tasks.spawn(self.exercise(rid, str(sid)))
        else:  # later turns: a plain answer
            self.notify_update(str(sid), {"sessionUpdate": "agent_message_chunk",
                                          "content": {"type": "text", "text": "again"}})
            self.reply(rid, {"stopReason": "end_turn"})

    # -- the turn --------------------------------------------------------------------------------

    async def alive(self) -> str | None:
        """None when the client still answers a request (an unknown `_` one); else why not."""
        resp = await self.call("_acplink/probe_ping", {})
        return None if resp is not None else f"the client answered nothing within {self.timeout:g} s"

    async def exercise(self, rid: Any, sid: str) -> None:
        try:
            await self._exercise(sid)
        finally:
            self.reply(rid, {"stopReason": "end_turn", "_meta": META})
            self.outcome("CLIENT-002", "pass", f"no schema violation in the client's {self.received} messages")
            self.finished = True
            self.emit({"event": "done"})

    async def _exercise(self, sid: str) -> None:
        text = {"type": "text", "text": "acplink check-client probe"}
        tool = "probe-tool-1"
        updates: list[dict[str, Any]] = [
            {"sessionUpdate": "agent_thought_chunk", "content": {**text, "text": "thinking"}},
            {"sessionUpdate": "agent_message_chunk", "content": {**text, "_meta": META}, "_meta": META},
            {"sessionUpdate": "plan", "entries": [{"content": "probe the client", "priority": "high",
                                                   "status": "in_progress"}]},
            {"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "probe", "description": "a command of the probe"}]},
            {"sessionUpdate": "tool_call", "toolCallId": tool, "title": "Probe tool", "kind": "read",
             "status": "pending"},
            {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "in_progress"},
            {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "completed",
             "content": [{"type": "content", "content": {**text, "text": "tool output"}}]},
            {"sessionUpdate": "session_info_update", "title": "acplink probe"},
            {"sessionUpdate": "user_message_chunk", "content": {**text, "text": "(echo)"}},
        ]
        for update in updates:
            self.notify_update(sid, update)
        why = await self.alive()
        kinds = ", ".join(str(u["sessionUpdate"]) for u in updates)
        self.outcome("CLIENT-004", "fail" if why else "pass",
                     f"after the update kinds {kinds}: {why}" if why else f"kept working after {kinds}")
        self.notify_update(sid, {"sessionUpdate": "acplink_probe_unknown_kind", "acplinkField": 1, "_meta": META})
        self.send({"jsonrpc": "2.0", "method": "_acplink/probe_notice", "params": {"x": 1}})
        why = await self.alive()
        self.outcome("CLIENT-005", "fail" if why else "pass",
                     f"after an unknown update kind, unknown fields and _meta: {why}" if why else
                     "kept working after an unknown update kind, unknown fields, _meta and a `_` notification")
        await self.permission(sid, tool)
        await self.unknown_methods()
        await self.cancel_request(sid)
        await self.fs(sid)
        await self.terminal(sid)

    async def permission(self, sid: str, tool: str) -> None:
        resp = await self.call("session/request_permission", {
            "sessionId": sid, "options": OPTIONS, "_meta": META,
            "toolCall": {"toolCallId": tool, "title": "Probe tool", "kind": "edit", "status": "pending"}})
        if resp is None:
            self.outcome("CLIENT-006", "fail", f"a permission request got no answer within {self.timeout:g} s")
            return
        outcome = (resp.get("result") or {}).get("outcome") if isinstance(resp.get("result"), dict) else None
        offered = [o["optionId"] for o in OPTIONS]
        if "error" in resp:
            self.outcome("CLIENT-006", "fail", f"a permission request was answered with an error: {resp['error']}")
        elif not isinstance(outcome, dict) or outcome.get("outcome") not in ("selected", "cancelled"):
            self.outcome("CLIENT-006", "fail", f"invalid permission answer: {orjson.dumps(resp).decode()[:200]}")
        elif outcome["outcome"] == "selected" and outcome.get("optionId") not in offered:
            self.outcome("CLIENT-006", "fail", f"the client selected option {outcome.get('optionId')!r}, which was "
                         f"not offered ({', '.join(offered)})")
        else:
            self.outcome("CLIENT-006", "pass", f"answered {orjson.dumps(outcome).decode()}")

    async def unknown_methods(self) -> None:
        resp = await self.call("acplink/probe_unknown", {"x": 1})
        code = resp.get("error", {}).get("code") if resp and isinstance(resp.get("error"), dict) else None
        if resp is None:
            self.outcome("CLIENT-012", "fail", f"an unknown method got no answer within {self.timeout:g} s")
        elif code != -32601:
            self.outcome("CLIENT-012", "fail", f"an unknown method was answered {orjson.dumps(resp).decode()[:200]}, "
                         "not error -32601")
        else:
            self.outcome("CLIENT-012", "pass", "answered -32601")

    async def cancel_request(self, sid: str) -> None:
        resp = await self.call("session/request_permission", {
            "sessionId": sid, "options": OPTIONS,
            "toolCall": {"toolCallId": "probe-tool-2", "title": "Cancelled probe", "status": "pending"}},
            then={"jsonrpc": "2.0", "method": "$/cancel_request", "params": {}})
        if resp is None:
            self.outcome("CLIENT-011", "fail", f"a request the agent cancelled with $/cancel_request got no answer "
                         f"within {self.timeout:g} s (a result or error -32800 is expected)")
        else:
            self.outcome("CLIENT-011", "pass", f"answered: {orjson.dumps(resp.get('result') or resp.get('error')).decode()[:120]}")

    async def read_outside(self, sid: str, cwd: str) -> None:
        """CLIENT-009: reads of a file outside the session's directory, named plainly and through
        ``..`` from the cwd, must be refused; the file is the probe's own (a fresh temporary one)."""
        real_cwd = os.path.realpath(cwd)
        folder = tempfile.mkdtemp(prefix="acplink-probe-outside-")
        try:
            secret = os.path.join(folder, "outside.txt")
            if os.path.commonpath([real_cwd, os.path.realpath(secret)]) == real_cwd:
                self.outcome("CLIENT-009", "skipped", f"the session cwd {cwd} holds the temporary folder: no path "
                             "outside it to try")
                return
            marker = f"acplink probe outside {uuid.uuid4().hex}"
            with open(secret, "w", encoding="utf-8") as f:
                f.write(marker + "\n")
            served: list[str] = []
            silent: list[str] = []
            for path in (secret, os.path.join(cwd, os.path.relpath(secret, cwd))):
                resp = await self.call("fs/read_text_file", {"sessionId": sid, "path": path})
                result = resp.get("result") if resp else None
                if resp is None:
                    silent.append(path)
                elif isinstance(result, dict) and marker in str(result.get("content")):
                    served.append(path)
            if served:
                self.outcome("CLIENT-009", "fail", f"served {' and '.join(served)}, outside the session's directory "
                             f"{cwd} (a security problem: an agent can read any file the user can)")
            elif silent:
                self.outcome("CLIENT-009", "skipped", f"a read of {silent[0]} (outside the session's directory) got "
                             f"no answer within {self.timeout:g} s")
            else:
                self.outcome("CLIENT-009", "pass", f"reads of {secret} (outside the session's directory {cwd}), "
                             "plain and through `..`, were refused")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    async def fs(self, sid: str) -> None:
        fs: dict[str, Any] = self.caps["fs"] if isinstance(self.caps.get("fs"), dict) else {}
        cwd = self.sessions[sid]
        name = os.path.join(cwd, f".acplink-probe-{uuid.uuid4().hex[:8]}.txt")
        content = "acplink probe line 1\nline 2 ✓\n"
        if fs.get("readTextFile"):
            try:
                with open(name, "w", encoding="utf-8") as f:
                    f.write(content)
                resp = await self.call("fs/read_text_file", {"sessionId": sid, "path": name})
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(name)
            got = (resp.get("result") or {}).get("content") if resp and isinstance(resp.get("result"), dict) else None
            if got == content:
                self.outcome("CLIENT-007", "pass", f"read {name} exactly")
            else:
                self.outcome("CLIENT-007", "fail", f"fs/read_text_file of {name} answered "
                             f"{orjson.dumps(resp).decode()[:200] if resp else 'nothing'}, not the file's content")
            await self.read_outside(sid, cwd)
        else:
            self.outcome("CLIENT-007", "skipped", "fs.readTextFile not advertised")
            self.outcome("CLIENT-009", "skipped", "fs.readTextFile not advertised")
        if fs.get("writeTextFile"):
            try:
                resp = await self.call("fs/write_text_file", {"sessionId": sid, "path": name, "content": content})
                try:
                    with open(name, encoding="utf-8") as f:
                        written: str | None = f.read()
                except OSError:
                    written = None
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(name)
            if resp is not None and "result" in resp and written == content:
                self.outcome("CLIENT-008", "pass", f"wrote {name}")
            else:
                self.outcome("CLIENT-008", "fail", f"fs/write_text_file of {name}: answered "
                             f"{orjson.dumps(resp).decode()[:160] if resp else 'nothing'}; the file "
                             f"{'holds ' + repr(written[:60]) if written is not None else 'does not exist'}")
        else:
            self.outcome("CLIENT-008", "skipped", "fs.writeTextFile not advertised")

    async def terminal(self, sid: str) -> None:
        if self.caps.get("terminal") is not True:
            self.outcome("CLIENT-010", "skipped", "terminal not advertised")
            return
        steps: list[str] = []
        made = await self.call("terminal/create", {"sessionId": sid, "command": "echo", "args": ["acplink-probe"]})
        tid = (made.get("result") or {}).get("terminalId") if made and isinstance(made.get("result"), dict) else None
        if not isinstance(tid, str):
            self.outcome("CLIENT-010", "fail", f"terminal/create answered {orjson.dumps(made).decode()[:200] if made else 'nothing'}")
            return
        ref = {"sessionId": sid, "terminalId": tid}
        waited = await self.call("terminal/wait_for_exit", ref)
        steps.append(f"wait_for_exit → {orjson.dumps(waited.get('result') if waited else None).decode()[:80]}")
        output = await self.call("terminal/output", ref)
        text = (output.get("result") or {}).get("output") if output and isinstance(output.get("result"), dict) else None
        released = await self.call("terminal/release", ref)
        if waited is None or "error" in waited or not isinstance(text, str) or "acplink-probe" not in text \
                or released is None or "error" in released:
            self.outcome("CLIENT-010", "fail", f"terminal {tid}: {'; '.join(steps)}; output "
                         f"{orjson.dumps(output).decode()[:160] if output else 'none'}; release "
                         f"{orjson.dumps(released).decode()[:80] if released else 'not answered'}")
        else:
            self.outcome("CLIENT-010", "pass", f"create, wait_for_exit, output ({text.strip()!r}), release")

    # -- main loop -------------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        self.emit({"event": "launched", "pid": os.getpid(), "argv": sys.argv})
        try:
            while line := await reader.readline():
                if line.strip():
                    self.incoming(line)
        finally:
            self.emit({"event": "stdin-closed"})
            await self.tasks.aclose()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="acplink-check-client-probe")
    ap.add_argument("--report", required=True)
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args(argv)
    with open(args.report, "ab") as report:
        with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
            asyncio.run(ProbeAgent(report, args.timeout).run())


if __name__ == "__main__":
    main()
