"""``acplink replay``: a recorded session served back to a client, offline; mismatches are one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from acplink.cli.main import main
from acplink.testing import FakeAgent, assert_tool_call, assert_turn, parse_speed
from acplink.tools.trace import read_trace

_SCRIPT = Path(sys.executable).parent / "acplink"
ACPLINK = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "acplink"]
GUARD = 60  # hang guard only


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A demo-agent session recorded by ``acplink record`` under ``acplink prompt`` (real processes)."""
    where = tmp_path_factory.mktemp("recorded")
    trace = where / "demo.jsonl"
    out = subprocess.run([*ACPLINK, "prompt", "--protocol", "1", "hello replay", "--", *ACPLINK, "record", "--out", str(trace),
                          "--", *ACPLINK, "demo-agent"], cwd=where, capture_output=True, text=True, timeout=GUARD)
    assert out.returncode == 0, out.stderr
    assert "hello replay" in out.stdout
    return trace, out.stdout


def test_a_recorded_session_replays_to_the_same_client(recorded: tuple[Path, str], tmp_path: Path) -> None:
    trace, reply = recorded
    # another directory: the session's cwd differs from the recorded one (mapped)
    out = subprocess.run([*ACPLINK, "prompt", "hello replay", "--", *ACPLINK, "replay", "--speed", "instant",
                          str(trace)], cwd=tmp_path, capture_output=True, text=True, timeout=GUARD)
    assert (out.returncode, out.stdout) == (0, reply), out.stderr
    assert "acplink replay" not in out.stderr


def test_a_client_that_does_not_match_gets_one_line_and_an_error(recorded: tuple[Path, str]) -> None:
    trace, _ = recorded
    lines = [{"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": 1}},
             {"jsonrpc": "2.0", "id": 8, "method": "session/list", "params": {}}]
    out = subprocess.run([*ACPLINK, "replay", "--speed", "20", str(trace)],
                         input=b"".join(orjson.dumps(m) + b"\n" for m in lines), capture_output=True, timeout=GUARD)
    replies = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert replies[0]["id"] == 7 and replies[0]["result"]["agentInfo"]["name"] == "acplink-demo"
    assert replies[1]["id"] == 8 and replies[1]["error"]["code"] == -32603
    err = out.stderr.decode().strip()
    assert err == ("acplink replay: message 2 (trace message 3) does not match the trace: "
                   "expected a 'session/new' request, got a 'session/list' request")
    assert out.returncode == 1
    assert err.split(": ", 1)[1] in replies[1]["error"]["message"]


def test_bad_traces_and_speeds_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type":"header"}\n')
    for args, expected in ((["missing.jsonl"], "cannot read the trace 'missing.jsonl': No such file or directory"),
                           ([str(empty)], "the trace holds no messages to replay"),
                           (["--speed", "fast", str(empty)],
                            "speed must be 'real', 'instant' or a positive number, not 'fast'")):
        assert main(["replay", *args]) == 2
        assert capsys.readouterr().err == f"acplink: error: {expected}\n"


def test_speed_values() -> None:
    assert (parse_speed("real"), parse_speed("instant"), parse_speed("4")) == (1.0, None, 4.0)
    with pytest.raises(Exception, match="positive"):
        parse_speed("0")


async def test_fake_agent_from_trace_serves_an_in_memory_client(recorded: tuple[Path, str], acp_pair) -> None:
    trace, reply = recorded
    agent = FakeAgent.from_trace(trace)
    pair = await acp_pair(agent)  # another cwd and client ids: mapped onto the recorded ones
    turn = await pair.client.turn(pair.session, "anything")
    assert_turn(turn, text=reply.rstrip("\n"))
    recorded_sid = next(r["msg"]["result"]["sessionId"] for r in read_trace(trace)
                        if r.get("method") == "session/new" and r["dir"] == "a2c")
    assert pair.session.session_id == recorded_sid
    assert agent.mismatch is None


async def test_fake_agent_from_trace_reports_the_first_mismatch(recorded: tuple[Path, str], acp_client_factory) -> None:
    trace, _ = recorded
    agent = FakeAgent.from_trace(trace)
    client = await acp_client_factory(agent)
    with pytest.raises(Exception, match="expected a 'session/new' request, got a 'session/list' request"):
        await client.list_sessions()
    assert agent.mismatch is not None and agent.mismatch.startswith("message 2 (trace message 3)")


def _synthetic_trace() -> list[dict[str, object]]:
    """A recorded ``session/load`` of session ``rec-1`` in ``/recorded``; the agent's reply names
    both, and comes 10 s after the request."""
    def msg(direction: str, mono: float, body: dict[str, object]) -> dict[str, object]:
        return {"type": "message", "dir": direction, "mono": mono, "msg": {"jsonrpc": "2.0", **body}}
    return [
        msg("c2a", 0.0, {"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        msg("a2c", 0.0, {"id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}}),
        msg("c2a", 1.0, {"id": 1, "method": "session/load",
                         "params": {"sessionId": "rec-1", "cwd": "/recorded", "mcpServers": []}}),
        msg("a2c", 11.0, {"method": "session/update", "params": {"sessionId": "rec-1", "update": {
            "sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "status": "completed",
            "locations": [{"path": "/recorded/a.txt"}]}}}),
        msg("a2c", 11.0, {"id": 1, "result": {}}),
    ]


async def test_session_ids_and_cwd_are_mapped_to_the_clients(acp_client_factory, tmp_path: Path) -> None:
    agent = FakeAgent.from_trace(_synthetic_trace())
    client = await acp_client_factory(agent)
    session = await client.load_session("live-9", cwd=tmp_path)
    call = assert_tool_call(client, tool_call_id="c1", status="completed")
    assert call["locations"] == [{"path": str(tmp_path / "a.txt")}]
    assert client.seen[0].params["sessionId"] == session.session_id == "live-9"
    assert agent.mismatch is None


async def test_recorded_delays_follow_the_speed(acp_client_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args: object) -> None:
        if delay:
            slept.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    for speed, expected in ((None, []), (1.0, [10.0]), (4.0, [2.5])):
        slept.clear()
        client = await acp_client_factory(FakeAgent.from_trace(_synthetic_trace(), speed=speed))
        await client.load_session("rec-1", cwd="/tmp")
        assert slept == expected


def _permission_trace() -> list[dict[str, object]]:
    """A recorded turn whose client allowed the agent's permission request, then saw the tool
    call complete with the file's content."""
    def msg(direction: str, body: dict[str, object]) -> dict[str, object]:
        return {"type": "message", "dir": direction, "mono": 0.0, "msg": {"jsonrpc": "2.0", **body}}
    options = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
               {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]
    return [
        msg("c2a", {"id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        msg("a2c", {"id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}}}),
        msg("c2a", {"id": 1, "method": "session/new", "params": {"cwd": "/recorded", "mcpServers": []}}),
        msg("a2c", {"id": 1, "result": {"sessionId": "s1"}}),
        msg("c2a", {"id": 2, "method": "session/prompt",
                    "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "read secret"}]}}),
        msg("a2c", {"id": 0, "method": "session/request_permission", "params": {
            "sessionId": "s1", "options": options,
            "toolCall": {"toolCallId": "c1", "title": "Read secret", "status": "pending"}}}),
        msg("c2a", {"id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}, "_meta": {"x": 1}}}),
        msg("a2c", {"method": "session/update", "params": {"sessionId": "s1", "update": {
            "sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "RECORDED SECRET"}}]}}}),
        msg("a2c", {"id": 2, "result": {"stopReason": "end_turn"}}),
    ]


def _answer_permission(option: str) -> bytes:
    lines = [{"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {"protocolVersion": 1}},
             {"jsonrpc": "2.0", "id": 11, "method": "session/new", "params": {"cwd": "/live", "mcpServers": []}},
             {"jsonrpc": "2.0", "id": 12, "method": "session/prompt",
              "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "read secret"}]}},
             {"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": option}}}]
    return b"".join(orjson.dumps(m) + b"\n" for m in lines)


def test_a_client_answering_differently_is_the_first_divergence_and_exit_1(tmp_path: Path) -> None:
    trace = tmp_path / "perm.jsonl"
    trace.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in _permission_trace()))
    # the same answer (its _meta aside) plays the whole recording
    same = subprocess.run([*ACPLINK, "replay", "--speed", "instant", str(trace)], input=_answer_permission("allow"),
                          capture_output=True, timeout=GUARD)
    assert same.returncode == 0 and same.stderr == b"" and b"RECORDED SECRET" in same.stdout
    out = subprocess.run([*ACPLINK, "replay", "--speed", "instant", str(trace)], input=_answer_permission("reject"),
                         capture_output=True, timeout=GUARD)
    err = out.stderr.decode().strip()
    assert err == ("acplink replay: message 4 (trace message 7): the client's answer to 'session/request_permission' "
                   "(request id 0) differs from the recording at result.outcome.optionId: "
                   'expected "allow", got "reject" (--lenient to play on)')
    assert out.returncode == 1
    replies = [orjson.loads(line) for line in out.stdout.splitlines()]
    assert b"RECORDED SECRET" not in out.stdout and not any(r.get("result", {}).get("stopReason") for r in replies)
    # the open prompt gets an error naming the divergence: the client never believes it completed
    assert replies[-1]["id"] == 12 and replies[-1]["error"]["code"] == -32603
    assert "optionId" in replies[-1]["error"]["message"]
    lenient = subprocess.run([*ACPLINK, "replay", "--lenient", "--speed", "instant", str(trace)],
                             input=_answer_permission("reject"), capture_output=True, timeout=GUARD)
    assert lenient.returncode == 0 and b"RECORDED SECRET" in lenient.stdout
    assert lenient.stderr.decode().strip().endswith('expected "allow", got "reject" (--lenient: the recording plays on)')


def test_first_difference_names_the_path() -> None:
    from acplink.testing.replay import first_difference

    assert first_difference({"a": [1, {"b": 2}], "_meta": 1}, {"a": [1, {"b": 2}]}) is None
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": "2"}]}) == ("a[1].b", 2, "2")
    assert first_difference({"a": 1}, {"a": 1, "c": 3}) == ("c", "(missing)", 3)
    assert first_difference([1], [1, 2]) == (" (length)", 1, 2)
    assert first_difference({"code": 1}, {"code": True}) == ("code", 1, True)


def test_a_replayed_prompt_whose_user_denies_what_the_recording_allowed_fails(tmp_path: Path) -> None:
    """End to end: `acplink prompt --allow` recorded against the demo agent writing a file; the
    replay under `--deny` ends with the divergence on stderr and a non-zero exit, and the file
    the recording wrote is neither written nor reported as written."""
    rec, live = tmp_path / "rec", tmp_path / "live"
    rec.mkdir()
    live.mkdir()
    trace = tmp_path / "write.jsonl"
    made = subprocess.run([*ACPLINK, "prompt", "--protocol", "1", "--allow", "write notes.txt hi", "--",
                           *ACPLINK, "record", "--out", str(trace), "--", *ACPLINK, "demo-agent"],
                          cwd=rec, capture_output=True, text=True, timeout=GUARD)
    assert made.returncode == 0 and (rec / "notes.txt").exists(), made.stderr
    denied = subprocess.run([*ACPLINK, "prompt", "--protocol", "1", "--deny", "write notes.txt hi", "--",
                             *ACPLINK, "replay", "--speed", "instant", str(trace)],
                            cwd=live, capture_output=True, text=True, timeout=GUARD)
    assert denied.returncode != 0
    assert "the client's answer to 'session/request_permission'" in denied.stderr
    assert re.search(r"at result\.outcome\.optionId: expected \"[^\"]+\", got \"[^\"]+\"", denied.stderr)
    assert not (live / "notes.txt").exists()
