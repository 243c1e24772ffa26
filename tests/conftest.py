from __future__ import annotations

from pathlib import Path

import pytest

from bindkit.saber.build import generate_saber
from bindkit.saber.vocab import Vocabulary, builtin_vocabulary_dir, load_vocabulary


@pytest.fixture(scope="session")
def vocab() -> Vocabulary:
    return load_vocabulary()


@pytest.fixture(scope="session")
def small_saber(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small valid SABER directory (N = 2..5, 4 MCQs per N), shared read-only."""
    out = tmp_path_factory.mktemp("saber") / "small"
    generate_saber(out, seed=7, per_n=4, n_min=2, n_max=5)
    return out


@pytest.fixture
def vocab_copy(tmp_path: Path) -> Path:
    """A writable copy of the packaged vocabulary directory."""
    target = tmp_path / "vocab"
    target.mkdir()
    for path in builtin_vocabulary_dir().iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return target
