"""v2 diffs carry a ``git_patch`` (acplink.protocol.v2.patch): a v1 diff becomes ``changes`` and
a patch with the whole file as context, which ``git apply`` accepts and which reads back as the
same old and new texts; a patch from elsewhere (a few lines of context) reads back as its hunks."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from acplink.client.state import SessionState
from acplink.protocol.v2.agent_codec import update_to_v2
from acplink.protocol.v2.client_codec import as_v1
from acplink.protocol.v2.client_state import V2SessionState
from acplink.protocol.v2.patch import git_patch, texts_of, v1_diff, v2_diff
from acplink.schema import parse
from acplink.schema import v2 as m

CASES = [
    (None, "hi\n"),  # a new file
    (None, ""),  # a new empty file
    ("x\ny\n", "x\nz\n"),
    ("x\ny", "x\ny\n"),  # only the last newline differs
    ("a\nb\n", "a\nb"),
    ("a\nb\nc\n", ""),
    ("", "one\n"),
    ("same\n", "same\n"),  # unchanged: still reads back
    ("a\r\nb\r\n", "a\r\nc\r\n"),  # a \r stays in its line
    ("line\u2028with a separator\n", "line\u2028changed\n"),  # (only \n ends a line)
    ("\n\n", "\n"),
    ("x", "y"),
]


@pytest.mark.parametrize(("old", "new"), CASES)
def test_round_trip(old: str | None, new: str) -> None:
    patch = git_patch("/work/some file.txt", old, new)
    assert patch.startswith("diff --git /work/some file.txt /work/some file.txt\n")
    assert texts_of(patch) == [("/work/some file.txt", old, new)]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize(("old", "new"), [c for c in CASES if c[0] is not None and c[0] != c[1]])
def test_git_applies_it(tmp_path: Path, old: str, new: str) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(old.encode())
    (tmp_path / "p.patch").write_text(git_patch(str(target), old, new), newline="")
    done = subprocess.run(["git", "apply", "--unsafe-paths", "-p0", "p.patch"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == new.encode()


def test_a_patch_with_little_context_reads_back_as_its_hunks() -> None:
    patch = ("diff --git /r/a.py /r/a.py\n--- /r/a.py\n+++ /r/a.py\n@@ -10,3 +10,3 @@\n ctx1\n-old\n+new\n ctx2\n"
             "@@ -40,2 +40,2 @@\n-x\n+y\n z\n")
    assert texts_of(patch) == [("/r/a.py", "ctx1\nold\nctx2\nx\nz\n", "ctx1\nnew\nctx2\ny\nz\n")]


def test_v2_diff_and_back() -> None:
    item = {"type": "diff", "path": "/r/a.txt", "oldText": "a\n", "newText": "b\n"}
    v2 = v2_diff(item)
    assert v2["changes"] == [{"operation": "modify", "path": "/r/a.txt"}]
    assert v2["patch"]["format"] == "git_patch"
    assert v1_diff(v2) == [item]
    # without a patch, v1 cannot have the texts: a text naming the change instead
    assert v1_diff({"type": "diff", "changes": [{"operation": "delete", "path": "/r/x"}]}) == [
        {"type": "content", "content": {"type": "text", "text": "(diff: delete /r/x)"}}]


def test_a_tool_calls_diff_through_both_codecs() -> None:
    """The agent codec's update reaches a v2 client, whose v1 view has v1's diff back."""
    v1_update = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Write a.txt", "kind": "edit",
                 "status": "pending", "content": [{"type": "diff", "path": "/r/a.txt", "oldText": "1\n2\n",
                                                   "newText": "1\nTWO\n"}]}
    wire = update_to_v2(v1_update, message_id=lambda _k: "m", cancellable=lambda _t: False, modes=[])
    assert wire is not None and "patch" in wire["content"][0]
    update = parse(m.SessionUpdate, wire)
    state = V2SessionState("s")
    state.apply(update)
    [view] = as_v1(update, state, SessionState())
    [diff] = view.content
    assert (diff.path, diff.old_text, diff.new_text) == ("/r/a.txt", "1\n2\n", "1\nTWO\n")
