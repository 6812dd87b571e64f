"""scripts/devtools_screenshots.py: its demo database has what the views need, and every
screenshot docs/devtools.md shows is committed (one per view, small PNGs)."""

from __future__ import annotations

import importlib.util
import re
import struct
from pathlib import Path
from types import ModuleType

from acplink.devtools.store import Store

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "devtools.md"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("devtools_screenshots", ROOT / "scripts" / "devtools_screenshots.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_view_has_a_committed_screenshot_in_the_docs() -> None:
    shots = script()
    images = re.findall(r"!\[[^\]]*\]\((images/devtools/[^)]+\.png)\)", DOC.read_text())
    assert sorted(Path(i).stem for i in images) == sorted(shots.VIEWS)
    total = 0
    for image in images:
        data = (DOC.parent / image).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", image
        width, height = struct.unpack(">II", data[16:24])  # (the IHDR chunk)
        assert width == 1280 and 500 <= height <= 2000, (image, width, height)
        total += len(data)
    assert total < 1_500_000


def test_the_demo_database_has_what_each_view_shows(tmp_path: Path) -> None:
    demo = script().build(tmp_path)
    store = Store(demo["db"])
    try:
        one = store.rows(demo["one"], "")
        methods = {r["method"] for r in one}
        assert {"session/request_permission", "fs/write_text_file"} <= methods  # permission, diff
        updates = b"".join(bytes(r["body"]) for r in one if r["method"] == "session/update")
        assert b'"plan"' in updates and b'"diff"' in updates
        assert store.connection(demo["two"]).turns == 3  # type: ignore[union-attr]  # (Diff's other side)
        bad = store.rows(demo["bad"], "violations IS NOT NULL")
        assert [r["seq"] for r in bad] == [5]  # the schema error
    finally:
        store.close()
