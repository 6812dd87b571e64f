"""CI smoke test of the fuzz harness (fuzz/fuzz_decoder.py): its target on a few hundred seeded
random inputs and on its seed corpus, no atheris needed."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_decoder", ROOT / "fuzz" / "fuzz_decoder.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_decoder"] = module
    spec.loader.exec_module(module)
    return module


def test_seeded_random_inputs(harness: ModuleType) -> None:
    rng = random.Random(20261129)
    for _ in range(400):
        harness.check_input(harness.random_input(rng))


def test_seed_corpus(harness: ModuleType) -> None:
    seeds = sorted((ROOT / "fuzz" / "seeds").iterdir())
    assert len(seeds) >= 8
    for seed in seeds:
        data = seed.read_bytes()
        harness.check_input(data)
        for cut in range(2, len(data), 7):  # every truncation of every seed
            harness.check_input(data[:cut])


def test_the_target_checks_what_it_claims(harness: ModuleType) -> None:
    # a reply the engine produces is checked: a broken one would fail the target
    with pytest.raises(AssertionError):
        harness._check_reply(b'{"jsonrpc":"2.0","id":1}\n')
    engine = harness.new_engine(16)  # LIMITS[16 % 5] == 256; bit 16: fast path on
    assert engine.max_message_size == 256 and engine.fast_methods == ["session/update"]
    assert len(engine.pending) == 3
