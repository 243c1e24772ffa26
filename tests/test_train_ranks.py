"""The real training loop across two ranks equals one process on the same global batch.

Two CPU processes launched as ``torchrun`` launches them (gloo) run :func:`bindkit.train.trainer.
train` on triplets and on clusters of mixed sizes; the plan deals every global batch out unevenly
(5 triplets: 3 and 2; 3 clusters of 2, 4 and 3 pairs: two clusters and one). One process runs the
same options with the whole global batch per rank. The summed gradients before each optimizer step
(``Run.all_reduce``) and the adapter rank 0 saves must equal the one-process run's.
Before this test, both ranks failed: accelerate's default ``PartialState()`` saw one process on
a machine without CUDA, and every rank took ``--out``'s lock (all but one refused).

The model runs in float64 but its RMSNorm and attention softmax compute in float32
(transformers' Qwen2-VL), so a batch of another shape (padding, matmul blocking) differs by
float32 rounding: about 2e-6 relative in the summed gradients here (1e-15 for triplets). A
missing all-reduce leaves each rank its own part (off by tens of percent), an average halves the
gradient, so ``rtol=1e-4`` separates them. Adam's first steps are sign-like (``g / (|g| + eps)``)
and turn that noise in near-zero entries into larger weight differences (at most 2.4e-5 after two
steps at ``lr`` = 1e-2 here), so the adapters are compared to ``atol`` = 1e-4 (``lr / 100``); a
rank that stepped with another gradient moves entries by up to ``2 * lr``. Clusters run with
GradCache (``chunk_size=2``), triplets without.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("accelerate")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

GLOBAL_TRIPLETS, GLOBAL_CLUSTERS = 6, 4  # per global batch: more than the data holds, so the
# plan makes one batch of 5 triplets (3 clusters) per epoch, split unevenly over two ranks
COLORS = [("red", "blue"), ("striped", "gray"), ("white", "orange"), ("green", "red"),
          ("transparent", "black")]  # fmt: skip
TRIPLETS = [
    {
        "query": f"a {a} cube and a {b} kite",
        "positive": f"A {a} cube sat beside a {b} kite.",
        "negative": f"A {b} cube sat beside a {a} kite.",
    }
    for a, b in COLORS
]
CLUSTER_COLORS = [("red", "blue"), ("white", "orange", "gray"), ("striped", "green", "black")]
CLUSTER_SIZES = [2, 4, 3]
CLUSTERS = [
    {
        "pairs": [
            {"query": f"a {x} cube and a {y} kite", "positive": f"A {x} cube beside a {y} kite."}
            for x in colors
            for y in colors
            if x != y
        ][:size]
    }
    for colors, size in zip(CLUSTER_COLORS, CLUSTER_SIZES, strict=True)
]

WORKER = """
import os, sys
import torch
from bindkit.train import loop, trainer
from bindkit.train.config import ClusterTrainConfig, TrainConfig

model, data, out, triplets_per_rank, clusters_per_rank = sys.argv[1:6]
rank = os.environ.get("RANK", "0")
record = {"grads": {}, "rows": {}}
all_reduce, micro_step = loop.Run.all_reduce, loop.Run.micro_step

def summed(self, trainable):  # the trainer's own all-reduce, then what the optimizer will see
    all_reduce(self, trainable)
    grads = [p.grad.detach().clone() for p in trainable]
    record["grads"].setdefault(self.objective.name, []).append(grads)

def counted(self, batch, micro):
    record["rows"].setdefault(self.objective.name, []).append(len(batch.rows))
    return micro_step(self, batch, micro)

loop.Run.all_reduce, loop.Run.micro_step = summed, counted
common = dict(model=f"mllm:{model}+dtype=float64", lr=1e-2, epochs=2, seed=3, lines=False,
              progress=False, save_every=0, model_dropout=False)
trainer.train(TrainConfig(train=f"{data}/triplets.jsonl", out=f"{out}/triplets",
                          batch_size=int(triplets_per_rank), **common))
trainer.train(ClusterTrainConfig(clusters=f"{data}/clusters.jsonl", out=f"{out}/clusters",
                                 clusters_per_step=int(clusters_per_rank), chunk_size=2,
                                 warmup_steps=0, temperature=0.05, **common))
torch.save(record, f"{out}/record{rank}.pt")
import torch.distributed as dist
if dist.is_initialized():
    dist.destroy_process_group()  # a clean exit: gloo aborts when torn down implicitly
"""


def jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def launch(tmp_path: Path, model: Path, out: Path, world: int) -> None:
    """The worker on ``world`` ranks (torchrun) or as one plain process."""
    script = tmp_path / "worker.py"
    args = [str(script), str(model), str(tmp_path / "data"), str(out)]
    args += [str(GLOBAL_TRIPLETS // world), str(GLOBAL_CLUSTERS // world)]
    if world == 1:
        command = [sys.executable, *args]
    else:
        with socket.socket() as probe:  # a free port for the rendezvous
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(world)]
        command += ["--master_addr", "127.0.0.1", "--master_port", str(port), *args]
    # CPU processes and gloo even on a GPU machine: two ranks cannot share one GPU under nccl
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]


def test_two_ranks_train_as_one_process_on_the_same_global_batch(
    tiny_qwen2_vl: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    (tmp_path / "worker.py").write_text(WORKER)
    (tmp_path / "data").mkdir()
    jsonl(tmp_path / "data" / "triplets.jsonl", TRIPLETS)
    jsonl(tmp_path / "data" / "clusters.jsonl", CLUSTERS)
    ranks, single = tmp_path / "ranks", tmp_path / "single"
    launch(tmp_path, tiny_qwen2_vl, ranks, world=2)
    launch(tmp_path, tiny_qwen2_vl, single, world=1)
    records = [torch.load(ranks / f"record{r}.pt", weights_only=False) for r in (0, 1)]
    alone = torch.load(single / "record0.pt", weights_only=False)
    for kind in ("triplets", "clusters"):
        assert json.loads((ranks / kind / "train.json").read_text())["world"] == 2, kind
        assert json.loads((single / kind / "train.json").read_text())["world"] == 1, kind
        # the ranks really held unequal parts, which together are the one process's batches
        rows = [record["rows"][kind] for record in records]
        assert all(a != b for a, b in zip(*rows, strict=True)), (kind, rows)
        assert [a + b for a, b in zip(*rows, strict=True)] == alone["rows"][kind], kind
        # two optimizer steps; both ranks step with the same summed gradient
        steps, reference = [record["grads"][kind] for record in records], alone["grads"][kind]
        assert len(steps[0]) == len(reference) == 2, kind
        for step, (zero, one, expected) in enumerate(zip(*steps, reference, strict=True)):
            assert any(float(g.abs().max()) > 1e-6 for g in expected), (kind, step)
            for a, b, c in zip(zero, one, expected, strict=True):
                torch.testing.assert_close(a, b, rtol=0, atol=0)
                torch.testing.assert_close(a, c, rtol=1e-4, atol=1e-6, msg=f"{kind} {step}")
        weights = "adapter-raw/adapter_model.safetensors"
        got, want = load_file(ranks / kind / weights), load_file(single / kind / weights)
        assert got.keys() == want.keys() and got, kind
        for name, tensor in want.items():
            assert tensor.dtype == torch.float64, name
            torch.testing.assert_close(got[name], tensor, rtol=0, atol=1e-4, msg=name)
