"""The redaction proxy over real pipes: a client → ``acplink conduct`` → redact proxy → demo agent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from proxy_raw import DEMO, PY, conduct

from acplink import PermissionPolicy, connect, schema

SECRET = "sk-live-0123456789"
REDACTED = re.compile(r"\[redacted: (\d+) bytes\]")


@pytest.mark.parametrize("proxy", ["acplink:redact", f"{PY} -m acplink proxy redact"])
async def test_the_agents_text_reaches_the_editor_redacted(proxy: str, tmp_path: Path) -> None:
    async with connect(conduct(proxy, agent=DEMO), env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt(f"hello {SECRET}")
        chunks = [u.content.text async for u in turn if isinstance(u, schema.AgentMessageChunk)]
    assert turn.stop_reason == "end_turn"  # (kinds and ids are kept: the turn works as before)
    assert chunks and all(REDACTED.fullmatch(c) for c in chunks)
    assert SECRET not in "".join(chunks)
    said = f"You said: hello {SECRET}"  # what the agent sent, in pieces, each replaced by its size
    assert sum(int(REDACTED.fullmatch(c).group(1)) for c in chunks) == len(said)  # type: ignore[union-attr]


async def test_a_permission_request_is_redacted_and_the_write_is_not(tmp_path: Path) -> None:
    asked: list[schema.RequestPermissionRequest] = []

    async def ask(request: schema.RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow"

    async with connect(conduct("acplink:redact", agent=DEMO), env={"ACPLINK_DEMO_STORE": str(tmp_path)},
                       permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt(f"write a.txt {SECRET}")
    [request] = asked
    assert request.tool_call.title == "Write a.txt" and request.tool_call.kind == "edit"
    [diff] = [c for c in request.tool_call.content or () if isinstance(c, schema.Diff)]
    assert diff.path == str(tmp_path / "a.txt")  # (paths are kept, text is not)
    assert diff.new_text == f"[redacted: {len(SECRET) + 1} bytes]"
    assert (tmp_path / "a.txt").read_text() == f"{SECRET}\n"  # fs/write_text_file passes unchanged


async def test_a_v2_chain_is_redacted_too(tmp_path: Path) -> None:
    async with connect(conduct("acplink:redact", agent=DEMO), env={"ACPLINK_DEMO_STORE": str(tmp_path)},
                       protocol=2) as client:
        assert client.protocol_version == 2
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt(f"hello {SECRET}")
        text = await turn.text()
    assert turn.stop_reason == "end_turn"
    sizes = [int(n) for n in REDACTED.findall(text)]
    assert REDACTED.sub("", text) == "" and sum(sizes) == len(f"You said: hello {SECRET}")
