from __future__ import annotations

import os

# huggingface_hub reads HF_HUB_OFFLINE once, when it is imported (during collection, before any
# fixture runs): set it first, so no test can reach the network
os.environ["HF_HUB_OFFLINE"] = "1"

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bindkit.saber.build import generate_saber
from bindkit.saber.vocab import (
    Vocabulary,
    builtin_vocabulary_dir,
    load_vocabulary,
)


@pytest.fixture(autouse=True, scope="session")
def _isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test touches the user's cache; no progress bars in test output; no hub access."""
    patch = pytest.MonkeyPatch()
    patch.setenv("BINDKIT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    patch.setenv("BINDKIT_PROGRESS", "0")
    patch.setenv("HF_HUB_OFFLINE", "1")
    yield
    patch.undo()


@pytest.fixture
def float32_exact() -> Iterator[None]:
    """Exact float32 on every device: no TF32 in matmuls or cuDNN convolutions (on by default
    for convolutions, e.g. the Qwen-VL patch embedding), so batched and one-by-one results
    agree to float32 rounding on a GPU as on a CPU. Tests also load models with
    ``dtype="float32"`` (bfloat16 is the CUDA default)."""
    torch = pytest.importorskip("torch")
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.fixture(scope="session")
def tiny_qwen2_vl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from tiny_models import build_qwen2_vl

    return build_qwen2_vl(tmp_path_factory.mktemp("qwen2-vl"))


@pytest.fixture(scope="session")
def tiny_qwen2_5_vl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from tiny_models import build_qwen2_5_vl

    return build_qwen2_5_vl(tmp_path_factory.mktemp("qwen2.5-vl"))


@pytest.fixture(scope="session")
def tiny_qwen3_vl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from tiny_models import build_qwen3_vl

    return build_qwen3_vl(tmp_path_factory.mktemp("qwen3-vl"))


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


@pytest.fixture
def cell(tmp_path: Path, base: Path) -> Iterator[Any]:
    """A reliability-matrix row's own directory (``tests/_matrix.py``); ``base`` is each matrix
    file's module fixture of shared inputs. Undo actions (unmount, chattr) run afterwards."""
    from _matrix import Cell

    made = Cell(tmp_path / "cell", base)
    made.dir.mkdir()
    yield made
    for undo in reversed(made.undo):
        undo()
