"""v2's diff content, both ways (sans-I/O): a v1 diff (``path``, ``oldText``, ``newText``) as a
v2 ``Diff`` (``changes`` and a ``git_patch`` text), and back.

The patch an acplink agent sends has the whole file as context (one hunk), so a client reading
it back gets the full old and new texts, as v1 carried them. A patch from elsewhere (a few
lines of context, several hunks) reads back as the hunks' lines: the changed part, which is
what v1 agents often send too.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

__all__ = ["git_patch", "texts_of", "v1_diff", "v2_diff"]

_NO_NEWLINE = "\\ No newline at end of file"


def _split(text: str) -> list[str]:
    """``text``'s lines, each with its ``\n`` (the last one may have none; a ``\r`` stays)."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def git_patch(path: str, old: str | None, new: str) -> str:
    """The ``git_patch`` text of one file's change (``old`` None: a new file), with the whole
    file as context. Paths absolute, no ``a/``/``b/`` prefixes, as v2 requires."""
    before, after = _split(old or ""), _split(new)
    out = [f"diff --git {path} {path}\n"]
    if old is None:
        out.append("new file mode 100644\n")
    if before == after:  # (unchanged: the file as context, so that its text still reads back)
        if before:
            out += [f"--- {path}\n", f"+++ {path}\n", f"@@ -1,{len(before)} +1,{len(after)} @@\n"]
            out += [" " + line for line in before]
    else:
        out += difflib.unified_diff(before, after, "/dev/null" if old is None else path, path,
                                    n=max(len(before), len(after)))
    return "".join(line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}\n" for line in out)


def texts_of(patch: str) -> list[tuple[str, str | None, str]]:
    """Each file of a ``git_patch``: (path, old text or None for a new file, new text), from
    its hunks' lines."""
    files: list[tuple[str, str | None, str]] = []
    path: str | None = None
    new_file = False
    old: list[str] = []
    new: list[str] = []
    last: list[list[str]] = []
    in_hunk = False

    def flush() -> None:
        if path is not None:
            files.append((path, None if new_file else "".join(old), "".join(new)))

    for line in patch.split("\n"):
        if line.startswith("diff --git "):
            flush()
            rest = line[len("diff --git "):]
            half = len(rest) // 2
            path = rest[half + 1:] if rest[:half] == rest[half + 1:] else rest.split(" ")[-1]
            new_file, old, new, in_hunk = False, [], [], False
        elif not in_hunk and line.startswith("new file mode"):
            new_file = True
        elif not in_hunk and line.startswith("+++ ") and line[4:] != "/dev/null":
            path = path or line[4:]
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith(" "):
            old.append(line[1:] + "\n")
            new.append(line[1:] + "\n")
            last = [old, new]
        elif in_hunk and line.startswith("-"):
            old.append(line[1:] + "\n")
            last = [old]
        elif in_hunk and line.startswith("+"):
            new.append(line[1:] + "\n")
            last = [new]
        elif in_hunk and line.startswith("\\"):
            for side in last:
                if side:
                    side[-1] = side[-1].removesuffix("\n")
    flush()
    return files


def v2_diff(item: dict[str, Any]) -> dict[str, Any]:
    """A v1 diff content item → v2's (``changes`` and the ``git_patch``)."""
    path, old, new = item.get("path"), item.get("oldText"), item.get("newText")
    out: dict[str, Any] = {"type": "diff",
                           "changes": [{"operation": "modify" if old is not None else "add", "path": path}]}
    if isinstance(path, str) and isinstance(new, str) and (old is None or isinstance(old, str)):
        out["patch"] = {"format": "git_patch", "text": git_patch(path, old, new)}
    if item.get("_meta") is not None:
        out["_meta"] = item["_meta"]
    return out


def v1_diff(item: dict[str, Any]) -> list[dict[str, Any]]:
    """A v2 diff content item → v1 content: a diff per file of its ``git_patch``; without a
    patch, a text naming each change (v1's diff needs the texts)."""
    patch = item.get("patch")
    text = patch.get("text") if isinstance(patch, dict) and patch.get("format") == "git_patch" else None
    if isinstance(text, str):
        diffs = [{"type": "diff", "path": p, "oldText": o, "newText": n} for p, o, n in texts_of(text)]
        if diffs:
            return diffs
    changes = [c for c in item.get("changes") or () if isinstance(c, dict)]
    said = ", ".join(f"{c.get('operation', 'change')} {c.get('path', '?')}" for c in changes) or "a change"
    return [{"type": "content", "content": {"type": "text", "text": f"(diff: {said})"}}]
