"""The repository is self-contained: the official schemas it generates from are vendored in
``schemas/`` with their provenance, and nothing in the build, the tests or the benchmarks reads
a folder outside the clone."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"


def _provenance() -> dict[str, str]:
    """file → sha256, from the table of schemas/README.md."""
    rows: dict[str, str] = {}
    for line in (SCHEMAS / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `([^`]+\.json)` \|.*\| `([0-9a-f]{64})` \| ([^|]+) \|$", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_every_vendored_schema_has_provenance_and_its_digest_matches() -> None:
    rows = _provenance()
    files = sorted(p.relative_to(SCHEMAS).as_posix() for p in SCHEMAS.rglob("*.json"))
    assert files, "no vendored schemas"
    assert sorted(rows) == files
    for rel, digest in rows.items():
        assert hashlib.sha256((SCHEMAS / rel).read_bytes()).hexdigest() == digest, rel


def test_nothing_reads_a_folder_beside_the_clone() -> None:
    offenders = []
    for folder in ("src", "tools", "tests", "benchmarks", "scripts", "examples", "fuzz", ".ci"):
        for p in (ROOT / folder).rglob("*"):
            if not p.is_file() or "node_modules" in p.parts or p.suffix not in {".py", ".sh", ".mjs", ".js", ".toml", ""}:
                continue
            if p == Path(__file__):
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
            if re.search(r"""(\.\./shared|/work/shared|parent\s*/\s*["']shared["'])""", text):
                offenders.append(p.relative_to(ROOT).as_posix())
    assert offenders == []
