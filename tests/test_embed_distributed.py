"""Multi-process embedding: two CPU processes launched like accelerate/torchrun would."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("accelerate")
pytest.importorskip("torch")

WORKER = """
import json, os, sys
import numpy as np
from bindkit.embed import load_embedder
out = sys.argv[1]
texts = [f"text {i % 37} about a striped cube" for i in range(120)]
model = load_embedder("bow", cache=False)
vectors = model.embed_texts(texts)
rank = os.environ["RANK"]
np.save(f"{out}/vectors{rank}.npy", vectors)
with open(f"{out}/stats{rank}.json", "w") as handle:
    json.dump(model.stats, handle)
import torch.distributed as dist
if dist.is_initialized():
    dist.destroy_process_group()  # a clean exit: gloo aborts when torn down implicitly
"""


def test_two_processes_split_the_work_and_agree(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    # CPU processes and gloo even on a GPU machine: two ranks cannot share one GPU under nccl
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    with socket.socket() as probe:  # a free port for the rendezvous
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    command += ["--master_addr", "127.0.0.1", "--master_port", str(port)]
    result = subprocess.run(
        [*command, str(script), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    from bindkit.embed import load_embedder

    texts = [f"text {i % 37} about a striped cube" for i in range(120)]
    reference = load_embedder("bow", cache=False).embed_texts(texts)
    stats = [json.loads((tmp_path / f"stats{r}.json").read_text()) for r in (0, 1)]
    for rank in (0, 1):
        np.testing.assert_array_equal(np.load(tmp_path / f"vectors{rank}.npy"), reference)
    assert sorted(s["embedded"] for s in stats) == [18, 19]  # 37 unique texts split in two
