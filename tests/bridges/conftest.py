from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _own_demo_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo agent behind the bridge keeps its sessions in the test's folder, not in the
    user's state directory (which another acplink, of a newer store schema, may have written)."""
    monkeypatch.setenv("ACPLINK_DEMO_STORE", str(tmp_path / "demo-store"))
