"""pytest imports the test modules by their base name (the test folders are not packages), so
two test files of one name in two folders stop the whole run at collection (``import file
mismatch``). This names them before CI does."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).parent


def test_every_test_module_has_a_name_of_its_own() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if "node_modules" in path.parts or (path.parent / "__init__.py").exists():
            continue
        seen[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"test modules sharing a name (rename one of each): {clashes}"
