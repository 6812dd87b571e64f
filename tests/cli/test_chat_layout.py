"""``acplink chat``'s local tables on a narrow terminal (pyte, 60 columns): ids kept whole,
descriptions wrapped (nothing cut), and ``/sessions`` in pages of 20."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from cliutil import Cli
from termscreen import SHAPES_AGENT, Term, squash, start

from acplink.agent import AgentSession
from acplink.cli.chat_commands import LOCAL_COMMANDS
from acplink.demo.agent import DemoStore


def _after(t: Term, command: str) -> list[str]:
    """The lines printed after the last input line ``command`` (up to the next prompt)."""
    lines = t.lines()
    at = max(i for i, line in enumerate(lines) if line.endswith(f"> {command}"))
    rest = lines[at + 1:]
    end = next((i for i, line in enumerate(rest) if re.match(r"^\w*> ?", line)), len(rest))
    return rest[:end]


def test_mode_and_help_keep_ids_whole_and_wrap_descriptions(cli: Cli, terms: list[Term]) -> None:
    t = start(terms, cli, 60, 20, *SHAPES_AGENT)
    t.send("/mode")
    t.prompt(2)
    rows = _after(t, "/mode")
    for mode_id, name in (("default", "Default"), ("acceptEdits", "Accept Edits"), ("plan", "Plan"),
                          ("bypassPermissions", "Bypass")):
        assert any(re.search(rf"\b{mode_id}\s+{name}\b", row) for row in rows), rows
    assert "Asks before edits" in squash("\n".join(rows))
    t.send("/help")
    t.prompt(3)
    shown = squash("\n".join(_after(t, "/help")))
    for name, args, desc in LOCAL_COMMANDS:  # every command whole, every description whole
        assert f"/{name} {args}".strip() in shown and desc in shown, (name, shown)
    assert "Review the pending changes." in shown and "…" not in shown
    assert all(len(line) <= 60 for line in t.lines())
    t.send("/quit")
    assert t.finish() == 0


def _store(cli: Cli, n: int) -> list[str]:
    """``n`` sessions in the demo's store for the chat's folder, the most recent first."""
    root = Path(cli.env["ACPLINK_DEMO_STORE"])
    store = DemoStore(root)
    ids = []
    try:
        for i in range(n):
            sid = f"sess_{i:032d}"
            store[sid] = AgentSession(sid, str(cli.workdir), title=f"old session number {i}")
            del store[sid]
            ids.append(sid)
    finally:
        store.close()
    db = sqlite3.connect(root / "sessions.sqlite3")  # (their times: one hour apart, in November)
    db.executemany("UPDATE sessions SET updated=? WHERE id=?",
                   [(f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00Z", sid) for i, sid in enumerate(ids)])
    db.commit()
    db.close()
    return ids[::-1]


def test_sessions_are_listed_20_at_a_time(cli: Cli, terms: list[Term]) -> None:
    recent = _store(cli, 45)
    t = start(terms, cli, 60, 20)
    t.send("/sessions")
    t.prompt(2)
    page = _after(t, "/sessions")
    numbers = [int(m.group(1)) for row in page if (m := re.match(r"^(\d+)\s+sess_", row))]
    assert numbers == list(range(1, 21)), page  # the "#" column, kept at 60 columns
    shown = squash("\n".join(page))
    assert shown.count("sess_") == 20 and "* this session" in shown  # the new session is the most recent
    assert recent[0] in shown and recent[18] in shown and recent[19] not in shown  # whole ids
    assert "26 more: /sessions more" in shown
    t.send("/sessions more")
    t.prompt(3)
    page = _after(t, "/sessions more")
    numbers = [int(m.group(1)) for row in page if (m := re.match(r"^(\d+)\s+sess_", row))]
    assert numbers == list(range(21, 41)), page
    assert "6 more: /sessions more" in squash("\n".join(page))
    t.send("/resume 22")  # numbers go on from page to page
    t.wait(rf"resumed session {recent[20]}")
    t.send("/quit")
    assert t.finish() == 0


WRAPPED = ("The demo agent reads this file through the client and shows it as the tool\n"
           "call's output; these lines were wrapped by an editor at seventy columns, as\n"
           "README files often are, and a terminal of sixty columns must not show each\n"
           "one as a long line followed by a stub of two or three words left over.\n")


def test_a_markdown_file_is_reflowed_and_folded_by_its_lines(cli: Cli, terms: list[Term]) -> None:
    (cli.workdir / "short.md").write_text("# Short\n\n" + "".join(WRAPPED.splitlines(keepends=True)[:3])
                                          + "```\nx = 1\n```\n")  # 8 lines: not folded
    (cli.workdir / "long.md").write_text("# Long\n\n" + WRAPPED + "\n```python\nx = 1\ny = 2\n```\n\nThe end.\n")
    t = start(terms, cli, 60, 20)
    t.send("read short.md")
    t.prompt(2)
    out = _after(t, "read short.md")
    assert not any("more lines" in line for line in out), out  # 8 source lines, however many rows
    assert "x = 1" in squash("\n".join(out))
    rows = [line.strip() for line in out  # (the paragraph: the tool output is indented)
            if line.startswith("    ") and line.strip() and not any(w in line for w in ("Short", "x = 1", "/tmp/"))]
    assert rows and all(len(row) >= 40 for row in rows[:-1]), rows  # reflowed: no stubs
    t.send("read long.md")
    t.prompt(3)
    out = _after(t, "read long.md")
    shown = squash("\n".join(out))
    assert "… 8 more lines (/expand 1 shows them)" in shown  # 13 source lines, the first 5 shown
    assert "seventy columns, as README files often are" in shown and "x = 1" not in shown
    t.send("/expand")
    t.prompt(4)
    assert "y = 2" in squash("\n".join(_after(t, "/expand"))) and "The end." in t.text()
    t.send("/quit")
    assert t.finish() == 0
