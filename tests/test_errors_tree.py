"""The exception tree drawn at the head of ``acplink/errors.py`` is the real one: every public
error class is drawn, under its real base, with its real wire code; nothing drawn is missing."""

from __future__ import annotations

import re

import acplink
from acplink import errors

_ROW = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w+)(?P<rest>.*)$")


def _drawing() -> list[tuple[int, str, str]]:
    doc = errors.__doc__ or ""
    block = doc.split("::", 1)[1].split("\n\n", 2)[1]
    rows = []
    for line in block.splitlines():
        m = _ROW.match(line.strip("\n")[4:])  # (the drawing is indented by 4)
        assert m, line
        rows.append((len(m["indent"]) // 4, m["name"], m["rest"]))
    return rows


def test_every_public_error_is_drawn_under_its_real_base() -> None:
    rows = _drawing()
    parents: list[str] = []
    drawn = set()
    for depth, name, _ in rows:
        parents[depth:] = [name]
        drawn.add(name)
        cls = getattr(acplink, name)
        if depth:
            assert issubclass(cls, getattr(acplink, parents[depth - 1])), (name, parents)
    public = {n for n in dir(acplink) if isinstance(getattr(acplink, n), type)
              and issubclass(getattr(acplink, n), acplink.AcpError)}
    assert public == drawn, (public - drawn, drawn - public)


def test_every_drawn_code_is_the_class_code() -> None:
    for _, name, rest in _drawing():
        code = re.match(r"\s+(-\d+)\b", rest)
        if code:
            assert getattr(acplink, name).code == int(code[1]), name
