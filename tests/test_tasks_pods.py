"""PODS retrieval against a verbatim copy of the official scoring (ssundaram21/personalized-rep,
downstream/retrieval.py), run once per object as the official pipeline does, on a fixture in the
published pods.zip layout (pods_info.json, train/<object>/, test/<object>/)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _fakes import TableEmbedder
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.metrics.pods import hit_at, ndcg, reciprocal_rank
from bindkit.tasks.base import EvalContext
from bindkit.tasks.instance.pods import PODS


# -- the official code, verbatim (retrieval()'s print dropped) ---------------------------------
def _official(train_embeds, train_labels, test_embeds, test_labels, test_paths, retrieval_cls):  # type: ignore[no-untyped-def]
    import torch
    import torch.nn.functional as F

    def ndcg_score(ranked_labels, retrieval_cls):  # type: ignore[no-untyped-def]
        relevance_scores = (ranked_labels == retrieval_cls).float()

        # DCG calculation
        dcg = torch.sum(
            relevance_scores
            / torch.log2(torch.arange(2, relevance_scores.size(0) + 2, dtype=torch.float32))
        )

        # IDCG calculation
        ideal_relevance_scores = torch.sort(relevance_scores, descending=True).values
        idcg = torch.sum(
            ideal_relevance_scores
            / torch.log2(torch.arange(2, ideal_relevance_scores.size(0) + 2, dtype=torch.float32))
        )

        # NDCG calculation
        ndcg = (dcg / idcg) if idcg > 0 else torch.tensor(0)
        return ndcg.item()

    def top_k_accuracy(ranked_labels, retrieval_cls, k):  # type: ignore[no-untyped-def]
        top_k_labels = ranked_labels[:k]
        return float(retrieval_cls in top_k_labels)

    def mean_reciprocal_rank(ranked_labels, retrieval_cls):  # type: ignore[no-untyped-def]
        rank_position = (ranked_labels == retrieval_cls).nonzero(as_tuple=True)[0][0].item() + 1
        return 1.0 / rank_position

    retrieval_embeds = torch.from_numpy(train_embeds)
    retrieval_labels = torch.from_numpy(train_labels)

    query_embeds = torch.from_numpy(test_embeds)
    query_labels = torch.from_numpy(test_labels)
    query_mask = torch.isin(query_labels, torch.Tensor([retrieval_cls]))
    query_embeds = query_embeds[query_mask]
    query_labels = query_labels[query_mask]
    query_paths = test_paths[query_mask]  # noqa: F841 (verbatim)

    ndcg_scores = []
    top_k_accuracies = []
    mrr_scores = []
    for i in range(query_labels.shape[0]):
        # Get a similarity matrix with size (test_embed_stack.shape[0], train_embed_stack.shape[0])
        sim = F.cosine_similarity(query_embeds[i, :], retrieval_embeds, dim=-1)
        ranked_indices = torch.argsort(sim, descending=True)
        ranked_retrieval_labels = retrieval_labels[ranked_indices]

        # Calculate NDCG, top-k accuracy, and MRR for this query
        ndcg_scores.append(ndcg_score(ranked_retrieval_labels, retrieval_cls))
        top_k_accuracies.append(top_k_accuracy(ranked_retrieval_labels, retrieval_cls, 10))
        mrr_scores.append(mean_reciprocal_rank(ranked_retrieval_labels, retrieval_cls))

    average_ndcg = sum(ndcg_scores) / len(ndcg_scores)
    average_top_k_accuracy = sum(top_k_accuracies) / len(top_k_accuracies)
    average_mrr = sum(mrr_scores) / len(mrr_scores)

    avg_results = {"NDCG": average_ndcg, "MRR": average_mrr, "top-10 acc": average_top_k_accuracy}
    all_results = {
        "avg_retrieval": avg_results,
        "mrrs_retrieval": mrr_scores,
        "ndcgs_retrieval": ndcg_scores,
        "topks_retrieval": top_k_accuracies,
    }
    return all_results


# -- the metric by hand -------------------------------------------------------------------------
def test_scores_by_hand() -> None:
    ranked = np.array([[0, 1, 0, 1], [1, 0, 0, 0], [0, 0, 0, 0]], bool)
    # row 0: DCG 1/log2(3) + 1/log2(5), ideal 1 + 1/log2(3)
    expected = (1 / np.log2(3) + 1 / np.log2(5)) / (1 + 1 / np.log2(3))
    assert ndcg(ranked).tolist() == pytest.approx([expected, 1.0, 0.0])
    assert reciprocal_rank(ranked).tolist() == [0.5, 1.0, 0.0]
    assert hit_at(ranked, 1).tolist() == [0.0, 1.0, 0.0]
    assert hit_at(ranked, 2).tolist() == [1.0, 1.0, 0.0]


# -- the fixture --------------------------------------------------------------------------------
CLASSES = {"mugs_red": "test", "mugs_blue": "test", "bottles_tall": "val", "shoes_old": "test"}


def _write_pods(root: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    info = {
        "classes": list(CLASSES),
        "class_to_idx": {c: str(i) for i, c in enumerate(CLASSES)},
        "class_to_sc": {c: c.split("_")[0] for c in CLASSES},
        "class_to_split": CLASSES,
    }
    root.mkdir(parents=True)
    (root / "pods_info.json").write_text(json.dumps(info))
    for n, name in enumerate(CLASSES):
        for split, count in (("train", 3), ("test", 3 + n)):
            folder = root / split / name
            folder.mkdir(parents=True)
            for i in range(count):
                ext = "png" if i == 1 else "jpg"  # the official glob takes both
                pil.new("RGB", (4, 4), (n * 40, i * 30, 9)).save(folder / f"{i}.{ext}", "PNG")


class PathEmbedder(TableEmbedder):
    """A fixed random vector per image path (split/object/file: the files are named 0.jpg, ...
    in every folder), pulled towards its object's direction so retrieval is neither perfect nor
    random."""

    def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        out = []
        for image in images:
            parts = Path(image.path).parts[-3:]
            seed = int(hashlib.sha256("/".join(parts).encode()).hexdigest()[:8], 16)
            noise = np.random.default_rng(seed).standard_normal(self.dim)
            centre = np.random.default_rng(list(CLASSES).index(parts[1])).standard_normal(self.dim)
            v = centre + 1.2 * noise
            out.append(v / np.linalg.norm(v))
        return np.stack(out).astype(np.float32)


def _official_means(root: Path, subset: str) -> tuple[dict[str, float], list[float]]:
    """The official pipeline once per object of the class split, then the mean over objects."""
    model = PathEmbedder(dim=6)
    to_idx = {c: i for i, c in enumerate(CLASSES)}
    from bindkit.tasks.instance.pods import images_of

    train = [(c, p) for c in CLASSES for p in images_of(root / "train" / c)]
    test = [(c, p) for c in CLASSES for p in images_of(root / "test" / c)]
    x = model.embed_images([type("R", (), {"path": p}) for _, p in train])
    q = model.embed_images([type("R", (), {"path": p}) for _, p in test])
    train_labels = np.array([to_idx[c] for c, _ in train])
    test_labels = np.array([to_idx[c] for c, _ in test])
    runs = [
        _official(x, train_labels, q, test_labels, np.array([str(p) for _, p in test]), to_idx[c])
        for c in CLASSES
        if CLASSES[c] == subset
    ]
    keys = {"ndcg": "NDCG", "mrr": "MRR", "top10_acc": "top-10 acc"}
    means = {k: float(np.mean([r["avg_retrieval"][v] for r in runs])) for k, v in keys.items()}
    return means, [v for r in runs for v in r["ndcgs_retrieval"]]


def test_pods_equals_the_official_code(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    root = tmp_path / "pods"
    _write_pods(root)
    (record,) = evaluate(
        [PathEmbedder(dim=6)],
        task="pods",
        data=root,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        report=False,
    )
    assert record["subset"] == "test" and record["pairing"] == "ii"  # the test objects by default
    expected, _ = _official_means(root, "test")
    assert record["scores"] == pytest.approx(expected, abs=1e-6)
    assert 0 < record["scores"]["ndcg"] < 1
    # 3 test objects with 3, 4 and 6 photos; the database is every object's 3 reference views
    assert record["counts"] == {"objects": 3, "queries": 13, "references": 12}


def test_pods_val_split_and_per_query(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    root = tmp_path / "pods"
    _write_pods(root)
    task = PODS()
    result = task.evaluate(PathEmbedder(dim=6), task.load(root), "val", "ii", EvalContext())
    assert result is not None
    expected, per_query = _official_means(root, "val")
    assert result["scores"] == pytest.approx(expected, abs=1e-6)
    per = result["per_query"]
    assert per["metric"] == "ndcg" and per["values"] == pytest.approx(per_query, abs=1e-6)
    assert per["ids"] == ["test/bottles_tall/0.jpg", "test/bottles_tall/1.png"] + [
        f"test/bottles_tall/{i}.jpg" for i in range(2, 5)
    ]
    assert all(len(top) == 5 and top[0].startswith("train/") for top in per["top"])


def test_missing_pods_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"pods_info\.json: not found; .*pods\.zip"):
        PODS().load(tmp_path)
    root = tmp_path / "pods"
    _write_pods(root)
    for f in (root / "train" / "shoes_old").iterdir():
        f.unlink()
    with pytest.raises(DataFormatError, match=r"train/shoes_old: no reference images"):
        PODS().load(root)
    info: dict[str, Any] = json.loads((root / "pods_info.json").read_text())
    info["class_to_split"]["mugs_red"] = "holdout"
    (root / "pods_info.json").write_text(json.dumps(info))
    with pytest.raises(DataFormatError, match="no val/test split"):
        PODS().load(root)
    with pytest.raises(BindkitError, match=r"--data .*: not found"):
        evaluate([PathEmbedder()], task="pods", data=tmp_path / "nope", verbose=False)


def _glob_listing(folder: Path) -> list[str]:
    """The images of one object folder as ``glob.glob`` finds them (``util/data_util.py``'s
    patterns: the folder and one below, each extension): names starting with a dot are not
    matched by its wildcards."""
    import glob

    from bindkit.tasks.instance.pods import EXTENSIONS

    found = {
        p
        for ext in EXTENSIONS
        for pattern in (f"*.{ext}", f"*/*.{ext}")
        for p in glob.glob(str(folder / pattern))
    }
    return sorted(found)


def test_hidden_files_are_skipped_as_glob_glob_skips_them(tmp_path: Path) -> None:
    """D1: ``.x.jpg``, macOS ``._0.jpg`` resource forks and hidden folders are not images of the
    object, as the official glob.glob lists them; pathlib's glob would take them."""
    pytest.importorskip("torch")
    from bindkit.tasks.instance.pods import images_of

    root = tmp_path / "pods"
    _write_pods(root)
    clean, _ = _official_means(root, "test")
    pil = pytest.importorskip("PIL.Image")
    for split in ("train", "test"):
        folder = root / split / "mugs_red"
        for name in (".hidden.jpg", "._0.jpg", ".cache/1.jpg", "sub/.x.png"):
            (folder / name).parent.mkdir(exist_ok=True)
            pil.new("RGB", (4, 4), (250, 250, 250)).save(folder / name, "PNG")
        assert [str(p) for p in images_of(folder)] == _glob_listing(folder)
        assert not any(part.startswith(".") for p in images_of(folder) for part in p.parts[-2:])
    task = PODS()
    result = task.evaluate(PathEmbedder(dim=6), task.load(root), "test", "ii", EvalContext())
    assert result is not None
    expected, _ = _official_means(root, "test")
    assert result["scores"] == pytest.approx(expected, abs=1e-6)
    assert result["scores"] == pytest.approx(clean, abs=1e-6)  # the fixture without them
    assert result["counts"]["references"] == 12


def test_an_object_without_test_photos_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "pods"
    _write_pods(root)
    for f in (root / "test" / "mugs_blue").iterdir():
        f.unlink()
    (root / "test" / "mugs_blue" / "._0.jpg").write_bytes(b"")  # a hidden file is no photo
    with pytest.raises(DataFormatError, match=r"test/mugs_blue: no test photos of 'mugs_blue'"):
        PODS().load(root)
