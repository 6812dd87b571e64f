"""No module outside ``protocol/`` (and the generated ``schema/``) knows which protocol versions
exist: none imports a versioned protocol module (``protocol.v1``, ``protocol.v2``, ``schema.v2``,
the versioned objects ``V1`` / ``V2``) or compares a version number, and none is named after a
version (``v2_checks.py``, ``client/v2/``). Everything that changes between versions is asked of
the protocol object in use (docs/design.md, "The protocol object").
"""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "acplink"

#: an import of a versioned protocol module or object
IMPORT = re.compile(
    r"^\s*(?:from\s+[.\w]*(?:protocol\.v\d+|schema\.v\d+|client\.v\d+|_v\d+_\w+)\b"
    r"|from\s+[.\w]*protocol\s+import\s+[^#\n]*\b(?:V\d+|v\d+)\b"
    r"|from\s+[.\w]*schema\s+import\s+[^#\n]*\bv\d+\b"
    r"|import\s+[.\w]*(?:protocol|schema)\.v\d+)",
    re.M)
#: a comparison with a version number (``selected == 2``, ``version >= 2``, ``2 in protocols``)
COMPARE = re.compile(
    r"\b\w*(?:version|protocol|selected)\w*(?:\.\w+)*\s*(?:==|!=|>=|<=|<|>)\s*\d+\b"
    r"|\b\d+\s+(?:not\s+)?in\s+[\w.]*(?:protocols|versions)\b")

#: a file or folder named after a version (``v2``, ``v2_checks``, ``analysis_v2``, ``_v2_wire``)
VERSIONED_NAME = re.compile(r"(?:^|_)v\d+(?:_|$)", re.I)

#: what is allowed outside protocol/ and schema/, and why (nothing, today)
EXEMPT: dict[str, str] = {}


def offences(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("protocol/", "schema/")) or rel in EXEMPT:
            continue
        text = path.read_text()
        hits = [f"named after a version: {rel}" for part in (*path.relative_to(root).parent.parts, path.stem)
                if VERSIONED_NAME.search(part)][:1]
        hits += [m.group(0).strip() for m in IMPORT.finditer(text)]
        for line in text.splitlines():
            code = line.split("#", 1)[0]
            if '"""' in line or code.strip().startswith(("'", '"')):
                continue
            hits += [m.group(0) for m in COMPARE.finditer(code)]
        if hits:
            found[rel] = hits
    return found


def test_no_module_outside_protocol_knows_a_version() -> None:
    found = offences(SRC)
    assert not found, "version-specific code outside protocol/ and schema/:\n" + "\n".join(
        f"  {rel}: {hits}" for rel, hits in found.items())


def test_the_scan_finds_what_it_forbids(tmp_path: Path) -> None:
    pkg = tmp_path / "agent"
    pkg.mkdir()
    (pkg / "a.py").write_text("from ..protocol.v2 import Method\n")
    (pkg / "b.py").write_text("from ..protocol import V1, get_protocol\n")
    (pkg / "c.py").write_text("def f(conn):\n    if conn.protocol_version == 2:\n        pass\n")
    (pkg / "d.py").write_text("def f(app):\n    return 2 in app.protocols\n")
    (pkg / "e.py").write_text("from ..schema import v2 as m\n")
    (pkg / "f.py").write_text("from ..protocol import get_protocol\nx = len(y) == 2  # fine\n")
    (pkg / "v2_checks.py").write_text("")
    (pkg / "analysis_v2.py").write_text("")
    (pkg / "uv2.py").write_text("")  # (fine: not a version)
    (pkg / "v2").mkdir()
    (pkg / "v2" / "link.py").write_text("")
    for allowed in ("protocol/v2", "schema/v2"):
        (tmp_path / allowed).mkdir(parents=True)
        (tmp_path / allowed / "requirements.py").write_text("from ..v2 import x\n")
    (tmp_path / "protocol" / "v1_requirements.py").write_text("")
    assert sorted(offences(tmp_path)) == ["agent/a.py", "agent/analysis_v2.py", "agent/b.py", "agent/c.py",
                                          "agent/d.py", "agent/e.py", "agent/v2/link.py", "agent/v2_checks.py"]
