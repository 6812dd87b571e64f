"""The ACP kind and title the adapters give a framework's tool call, from its name and arguments."""

from __future__ import annotations

import pytest

from acplink.adapters._common import json_safe, tool_kind, tool_title


@pytest.mark.parametrize(("name", "kind"), [
    ("read_file", "read"), ("readFile", "read"), ("list_dir", "read"), ("write_file", "edit"),
    ("applyPatch", "edit"), ("delete_note", "delete"), ("rm", "delete"), ("rename_file", "move"),
    ("grep", "search"), ("web_search", "search"), ("run_shell", "execute"), ("bash", "execute"),
    ("fetch_url", "fetch"), ("think", "think"), ("word_count", "other"), ("", "other"),
])
def test_the_kind_comes_from_the_words_of_the_name(name: str, kind: str) -> None:
    assert tool_kind(name) == kind


def test_the_title_names_the_path_or_the_first_short_argument() -> None:
    assert tool_title("read_file", {"limit": 3, "path": "src/a.py"}) == "read_file src/a.py"
    assert tool_title("run", {"command": "ls -la"}) == "run ls -la"
    assert tool_title("word_count", {"text": "x" * 80}) == "word_count " + "x" * 60 + "…"
    assert tool_title("noop", {}) == "noop"
    assert tool_title("flag", {"on": True}) == "flag"


def test_raw_values_become_json() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert json_safe({"a": [1, "b"]}) == {"a": [1, "b"]}
    assert json_safe({"t": Thing(), "n": (1, 2)}) == {"t": "a thing", "n": [1, 2]}
