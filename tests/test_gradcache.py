"""Cluster InfoNCE on hand-computed cases, and GradCache == full-batch gradients."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from bindkit.train.gradcache import GradCache, split_batch  # noqa: E402
from bindkit.train.losses import ClusterInfoNCELoss, cluster_infonce, gather_with_grad  # noqa: E402


def test_cluster_infonce_restricts_the_denominator_to_the_cluster() -> None:
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    d = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.6, 0.8]])
    groups = torch.tensor([0, 0, 1, 1])
    t = 0.5
    sims = q @ d.T / t

    def nll(i: int, js: list[int]) -> float:
        return -float(sims[i, i]) + math.log(sum(math.exp(float(sims[i, j])) for j in js))

    expected = (nll(0, [0, 1]) + nll(1, [0, 1]) + nll(2, [2, 3]) + nll(3, [2, 3])) / 4
    assert float(cluster_infonce(q, d, groups, t)) == pytest.approx(expected, rel=1e-5)
    in_batch = sum(nll(i, [0, 1, 2, 3]) for i in range(4)) / 4
    assert float(cluster_infonce(q, d, None, t)) == pytest.approx(in_batch, rel=1e-5)
    loss = ClusterInfoNCELoss(temperature=t)
    assert float(loss(q, d, groups)) == pytest.approx(expected, rel=1e-5)
    assert float(ClusterInfoNCELoss(t, in_batch=True)(q, d, groups)) == pytest.approx(in_batch)


def test_single_process_gather_is_the_identity_and_bad_temperature_fails() -> None:
    x = torch.randn(3, 4, requires_grad=True)
    got, offset = gather_with_grad(x)
    assert got is x and offset == 0
    with pytest.raises(ValueError, match="temperature"):
        ClusterInfoNCELoss(temperature=0)


class Encoder(torch.nn.Module):  # type: ignore[misc]
    """A small encoder with dropout, so GradCache must replay the RNG to match."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(6, 16), torch.nn.Dropout(0.3), torch.nn.Tanh(), torch.nn.Linear(16, 8)
        )

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.nn.functional.normalize(self.net(batch["x"] * batch["scale"]), dim=-1)


def full_and_cached_grads(
    chunk: int,
) -> tuple[list[torch.Tensor], list[torch.Tensor], float, float]:
    torch.manual_seed(0)
    model = Encoder()
    queries = {"x": torch.randn(12, 6), "scale": torch.ones(12, 1)}
    docs = {"x": torch.randn(12, 6), "scale": 2 * torch.ones(12, 1)}
    groups = torch.arange(12) // 4  # three clusters of k+1 = 4

    def loss_fn(q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        return cluster_infonce(q, d, groups, temperature=0.05)

    torch.manual_seed(1)
    full = loss_fn(model(queries), model(docs))
    full.backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()

    torch.manual_seed(1)
    cached = GradCache(chunk_size=chunk).backward([model, model], [queries, docs], loss_fn)
    got = [p.grad.clone() for p in model.parameters()]
    return expected, got, float(full.detach()), float(cached)


@pytest.mark.parametrize("chunk", [1, 5, 12])
def test_gradcache_gives_the_full_batch_gradients(chunk: int) -> None:
    expected, got, full, cached = full_and_cached_grads(chunk)
    assert cached == pytest.approx(full, rel=1e-6)
    for e, g in zip(expected, got, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-6)


def test_no_sync_is_entered_for_every_chunk_but_the_last() -> None:
    import contextlib

    entered = []

    @contextlib.contextmanager
    def no_sync():  # type: ignore[no-untyped-def]
        entered.append(1)
        yield

    model = Encoder()
    batch = {"x": torch.randn(6, 6), "scale": torch.ones(6, 1)}
    GradCache(2, no_sync=no_sync).backward(
        [model, model], [batch, batch], lambda q, d: cluster_infonce(q, d)
    )
    assert len(entered) == 5  # 3 + 3 chunks, the last one syncs


def test_split_batch_and_options() -> None:
    parts = split_batch({"a": torch.arange(5), "b": ["x"] * 5}, 2)
    assert [len(p["a"]) for p in parts] == [2, 2, 1] and parts[2]["b"] == ["x"]
    assert [len(p) for p in split_batch(torch.zeros(3, 2), 2)] == [2, 1]
    with pytest.raises(ValueError, match="chunk_size"):
        GradCache(0)
