"""Every loss of ``bindkit.train.losses`` on hand-computed cases: its value and its gradient."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from bindkit.train.losses import (  # noqa: E402
    AttentionMarginLoss,
    ClusterInfoNCELoss,
    DistillationLoss,
    TripletHingeLoss,
    TripletInfoNCELoss,
    cluster_infonce,
)


def close(got: torch.Tensor, expected: list[list[float]]) -> None:
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64))


def leaf(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64, requires_grad=True)


def test_hinge_value_and_gradient_by_hand() -> None:
    # row 0: cos(q, p) = 0.6, cos(q, n) = 0.8 → 0.05 − 0.6 + 0.8 = 0.25 (active)
    # row 1: cos(q, p) = 1, cos(q, n) = 0 → 0.05 − 1 + 0 < 0 (inactive)
    q = leaf([[1.0, 0.0], [0.0, 1.0]])
    p = leaf([[0.6, 0.8], [0.0, 1.0]])
    n = leaf([[0.8, 0.6], [1.0, 0.0]])
    loss = TripletHingeLoss()(q, p, n)  # default margin 0.05
    assert float(loss.detach()) == pytest.approx(0.25 / 2)
    loss.backward()
    # d/dq of (γ − q·p + q·n)/2 is (n − p)/2 on the active row, 0 on the other; d/dp = −q/2
    close(q.grad, [[0.1, -0.1], [0.0, 0.0]])
    close(p.grad, [[-0.5, 0.0], [0.0, 0.0]])
    close(n.grad, [[0.5, 0.0], [0.0, 0.0]])


def test_hinge_share_of_a_global_batch() -> None:
    q, p, n = leaf([[1.0, 0.0]]), leaf([[0.6, 0.8]]), leaf([[0.8, 0.6]])
    # one of three global rows: its sum over 3
    assert float(TripletHingeLoss(0.1)(q, p, n, global_rows=3).detach()) == pytest.approx(0.1)


def nll(q: list[list[float]], d: list[list[float]], i: int, js: list[int], t: float) -> float:
    sims = [sum(a * b for a, b in zip(q[i], d[j], strict=True)) / t for j in range(len(d))]
    return -sims[i] + math.log(sum(math.exp(sims[j]) for j in js))


Q = [[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]
D = [[0.96, 0.28], [0.8, 0.6], [0.28, 0.96]]


def test_triplet_infonce_value_and_gradient_by_hand() -> None:
    # candidates of every query: the 3 positives, then the 3 negatives; target: its own positive
    t = 0.5
    negatives = [[0.0, 1.0], [1.0, 0.0], [0.6, 0.8]]
    candidates = D + negatives
    expected = sum(nll(Q, candidates, i, list(range(6)), t) for i in range(3)) / 3
    q, p, n = leaf(Q), leaf(D), leaf(negatives)
    loss = TripletInfoNCELoss(t)(q, p, n)
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-12)
    loss.backward()
    # ∂L/∂q_i = (Σ_j softmax_ij c_j − p_i) / (τ n); ∂L/∂n_j = Σ_i softmax_i(3+j) q_i / (τ n)
    soft = []
    for i in range(3):
        sims = [sum(a * b for a, b in zip(Q[i], c, strict=True)) / t for c in candidates]
        z = sum(math.exp(s) for s in sims)
        soft.append([math.exp(s) / z for s in sims])
        want = [
            (sum(soft[i][j] * candidates[j][k] for j in range(6)) - D[i][k]) / (t * 3)
            for k in (0, 1)
        ]
        assert q.grad[i].tolist() == pytest.approx(want, rel=1e-9)
    for j in range(3):
        want = [sum(soft[i][3 + j] * Q[i][k] for i in range(3)) / (t * 3) for k in (0, 1)]
        assert n.grad[j].tolist() == pytest.approx(want, rel=1e-9)


def test_cluster_infonce_value_at_the_default_temperature() -> None:
    groups = torch.tensor([0, 0, 1])  # pairs 0 and 1 share a cluster; pair 2 is alone
    expected = (nll(Q, D, 0, [0, 1], 0.02) + nll(Q, D, 1, [0, 1], 0.02) + 0.0) / 3
    q, d = leaf(Q), leaf(D)
    assert float(ClusterInfoNCELoss()(q, d, groups)) == pytest.approx(expected, rel=1e-9)
    assert float(cluster_infonce(q, d, groups)) == pytest.approx(expected, rel=1e-9)
    in_batch = sum(nll(Q, D, i, [0, 1, 2], 0.02) for i in range(3)) / 3
    assert float(ClusterInfoNCELoss(in_batch=True)(q, d, groups)) == pytest.approx(in_batch)


def test_cluster_infonce_gradient_by_hand() -> None:
    t = 0.5
    groups = torch.tensor([0, 0, 0])
    q, d = leaf(Q), leaf(D)
    ClusterInfoNCELoss(t)(q, d, groups).backward()
    # ∂L/∂q_i = (Σ_j softmax_ij d_j − d_i) / (τ n)
    for i in range(3):
        sims = [sum(a * b for a, b in zip(Q[i], D[j], strict=True)) / t for j in range(3)]
        z = sum(math.exp(s) for s in sims)
        soft = [math.exp(s) / z for s in sims]
        expected = [(sum(soft[j] * D[j][k] for j in range(3)) - D[i][k]) / (t * 3) for k in (0, 1)]
        assert q.grad[i].tolist() == pytest.approx(expected, rel=1e-9)


def test_cluster_infonce_rejects_a_bad_temperature() -> None:
    with pytest.raises(ValueError, match="temperature"):
        ClusterInfoNCELoss(temperature=float("nan"))


def test_distillation_value_and_gradient_by_hand() -> None:
    student = leaf([[1.0, 0.0], [0.6, 0.8]])
    teacher = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    loss = DistillationLoss(weight=2.0)(student, teacher)
    assert float(loss.detach()) == pytest.approx(2.0 * (0.0 + 0.4) / 2)
    loss.backward()
    # ∂/∂s_i of w·mean(1 − s_i·t_i) is −w·t_i/n
    close(student.grad, [[-1.0, 0.0], [-1.0, 0.0]])


def test_attention_margin_loss_value_and_gradient_by_hand() -> None:
    margins = leaf([[0.0, 0.3], [0.05, -0.1]])  # (layers, objects)
    loss = AttentionMarginLoss(tau=0.1, weight=0.5)(margins)
    assert float(loss.detach()) == pytest.approx(0.5 * (0.1 + 0.0 + 0.05 + 0.2) / 4)
    loss.backward()
    # −λ/N where the margin is under τ, 0 where it is above
    close(margins.grad, [[-0.125, 0.0], [-0.125, -0.125]])
    assert float(AttentionMarginLoss()(torch.zeros(2, 0))) == 0.0  # no objects: no penalty


def test_relational_distillation_by_hand() -> None:
    """Three sentences: the student keeps cos(0,1) and moves s2; only the pairs with 2 count."""
    from bindkit.train.losses import relational_distillation

    teacher = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    student = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    # teacher cosines: (0,1)=0, (0,2)=0.6, (1,2)=0.8; student: 0, 0, 1
    gaps = [0.0, -0.6, -0.2]
    expected = 2 * sum(g * g for g in gaps) / 6  # each pair twice, over the 6 ordered pairs
    assert float(relational_distillation(student, teacher)) == pytest.approx(expected)
    assert float(relational_distillation(teacher, teacher)) == 0.0
    # one sentence has no pair: no loss, but a tensor in the graph
    one = torch.tensor([[1.0, 0.0]], requires_grad=True)
    assert float(relational_distillation(one, teacher[:1])) == 0.0


def test_distillation_loss_adds_the_relational_term_with_its_weight() -> None:
    from bindkit.train.losses import distillation, relational_distillation

    teacher = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    student = torch.nn.functional.normalize(torch.tensor([[1.0, 0.2], [0.1, 1.0], [0.0, 1.0]]))
    both = DistillationLoss(weight=2.0, relational=5.0)(student, teacher)
    expected = 2.0 * distillation(student, teacher) + 5.0 * relational_distillation(
        student, teacher
    )
    assert float(both) == pytest.approx(float(expected))
    assert float(DistillationLoss(weight=2.0)(student, teacher)) == pytest.approx(
        2.0 * float(distillation(student, teacher))
    )


def test_ensemble_targets_by_hand() -> None:
    from bindkit.train.losses import ensemble_targets

    # row 0 owns (1, 0) and (0, 1): mean (0.5, 0.5), normalised (1/√2, 1/√2); row 1 owns (0.6, 0.8)
    members = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=torch.float64)
    got = ensemble_targets(members, torch.tensor([0, 1, 0]), 2)
    half = 1 / math.sqrt(2)
    close(got, [[half, half], [0.6, 0.8]])
