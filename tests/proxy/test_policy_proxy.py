"""The policy proxy over real pipes: a client → ``acplink conduct`` → policy proxy → demo agent."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from proxy_raw import DEMO, PY, conduct

from acplink import PermissionPolicy, connect, schema

ACPLINK = [PY, "-m", "acplink"]


async def _write_through(proxy: str, tmp_path: Path, protocol: int = 1
                         ) -> tuple[list[schema.RequestPermissionRequest], str]:
    """Ask the demo agent behind ``proxy`` to write a.txt; what the editor was asked, the reply."""
    asked: list[schema.RequestPermissionRequest] = []

    async def ask(request: schema.RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow"

    async with connect(conduct(proxy, agent=DEMO), env={"ACPLINK_DEMO_STORE": str(tmp_path)}, protocol=protocol,
                       permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=tmp_path)
        text = await session.prompt("write a.txt by policy").text()
    return asked, text


@pytest.mark.parametrize("protocol", [1, 2])
async def test_an_allow_rule_answers_before_the_editor(protocol: int, tmp_path: Path) -> None:
    asked, text = await _write_through("acplink:policy=deny:execute,allow:edit:Write *", tmp_path, protocol)
    assert asked == []
    assert (tmp_path / "a.txt").read_text() == "by policy\n"
    assert text.startswith("Wrote")


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_deny_rule_answers_before_the_editor(protocol: int, tmp_path: Path) -> None:
    asked, text = await _write_through("acplink:policy=deny:*:Write a.*,allow:edit", tmp_path, protocol)
    assert asked == []
    assert not (tmp_path / "a.txt").exists()
    assert text == "Permission denied: I did not write a.txt."


async def test_no_matching_rule_asks_the_editor(tmp_path: Path) -> None:
    asked, _ = await _write_through("acplink:policy=allow:execute,deny:edit:Write b.txt", tmp_path)
    assert len(asked) == 1 and asked[0].tool_call.title == "Write a.txt"
    assert (tmp_path / "a.txt").read_text() == "by policy\n"


async def test_a_default_decision_answers_what_no_rule_matches(tmp_path: Path) -> None:
    asked, text = await _write_through("acplink:policy=allow:execute,default:deny", tmp_path)
    assert asked == [] and text == "Permission denied: I did not write a.txt."


async def test_acplink_proxy_policy_as_a_command_logs_each_decision(tmp_path: Path) -> None:
    """`acplink proxy policy` as an external component: the editor would allow, the proxy denies
    first and says so on stderr, one line per decision."""
    asked: list[schema.RequestPermissionRequest] = []
    err: list[bytes] = []

    async def ask(request: schema.RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow"

    chain = conduct(f"{PY} -m acplink proxy policy --allow read --deny edit,execute", agent=DEMO)
    async with connect(chain, env={"ACPLINK_DEMO_STORE": str(tmp_path)}, stderr=err.append,
                       permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("write a.txt hi")
        await session.prompt("run echo hi")
    assert asked == [] and not (tmp_path / "a.txt").exists()
    lines = [ln for ln in b"".join(err).decode().splitlines() if ln.startswith("acplink policy:")]
    assert [ln.split(" (")[0] for ln in lines] == ["acplink policy: deny edit 'Write a.txt'",
                                                    "acplink policy: deny execute 'Run echo hi'"]
    assert lines[0].split(" (")[1].startswith(f"rule deny:edit; session {session.session_id}, tool call ")
    assert "rule deny:execute;" in lines[1]


@pytest.mark.parametrize("args, words", [
    (["proxy", "policy", "--allow", "reed"], "policy rule 'reed': unknown tool kind 'reed'"),
    (["proxy", "policy", "--deny", "edit:"], "policy rule 'edit:': an empty title pattern after ':'"),
    (["proxy", "policy"], "give rules: acplink proxy policy --allow RULES"),
    (["conduct", "--proxy", "acplink:policy", "--", "agent"], "acplink:policy needs rules"),
    (["conduct", "--proxy", "acplink:policy=maybe:read", "--", "agent"], "policy item 'maybe:read': write allow:RULE"),
])
def test_bad_rules_are_one_line(args: list[str], words: str) -> None:
    proc = subprocess.run([*ACPLINK, *args], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"acplink: error: {words}")
    assert proc.stderr.count("\n") == 1
