"""Alignment and modality gap of image–caption pairs, per prompt layout (seed 002, Table I).

Definitions (embeddings L2-normalised, as every bindkit embedder returns them):

- alignment: the mean cosine similarity of matched (image, caption) pairs;
- modality gap: the Euclidean distance between the centroid of the image embeddings and the
  centroid of the caption embeddings, ``‖mean(x_img) − mean(x_txt)‖₂`` (Liang et al., "Mind the
  Gap: Understanding the Modality Gap in Multi-modal Contrastive Representation Learning",
  NeurIPS 2022).

For an ``mllm:`` spec each prompt layout (``+layout=none|user|system|hierarchical``) is measured
separately; other specs are measured once. A 2-D projection (UMAP when ``umap-learn`` is
installed, else PCA) of both modalities is plotted, one panel per layout.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.embed.protocol import Role
from bindkit.errors import BindkitError, DataFormatError

SCHEMA = "bindkit.modality_gap/1"


def alignment(images: np.ndarray, captions: np.ndarray) -> float:
    """Mean cosine of matched rows (both inputs L2-normalised)."""
    return float(np.mean(np.einsum("nd,nd->n", images, captions)))


def modality_gap(images: np.ndarray, captions: np.ndarray) -> float:
    """Distance between the two modality centroids (Liang et al. 2022)."""
    return float(np.linalg.norm(images.mean(axis=0) - captions.mean(axis=0)))


def project_2d(vectors: np.ndarray, seed: int = 0) -> tuple[np.ndarray, str]:
    """2-D coordinates of ``vectors`` and the method used (``umap`` or ``pca``)."""
    try:
        import umap
    except ImportError:
        centred = vectors - vectors.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        return centred @ vt[:2].T, "pca"
    reducer = umap.UMAP(n_components=2, random_state=seed, n_neighbors=min(15, len(vectors) - 1))
    return np.asarray(reducer.fit_transform(vectors)), "umap"


def read_image_captions(path: str | Path) -> list[tuple[str, str]]:
    """(image path, caption) rows from JSONL ``{"image": PATH, "caption": TEXT}``."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataFormatError(f"--pairs {path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"--pairs {path}: not UTF-8 text (byte {exc.start}); pass a JSONL file of "
            '{"image", "caption"} rows'
        ) from None
    pairs = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise DataFormatError(f"{where}: each line must be a JSON object")
        image, caption = row.get("image"), row.get("caption")
        if not isinstance(image, str) or not isinstance(caption, str) or not caption.strip():
            raise DataFormatError(f"{where}: each row needs an 'image' path and a 'caption' text")
        file = Path(image) if Path(image).is_absolute() else path.parent / image
        if not file.is_file():
            raise DataFormatError(f"{where}: image {image!r} not found (looked for {file})")
        pairs.append((str(file), caption))
    if len(pairs) < 2:
        raise DataFormatError(f"--pairs {path}: needs at least 2 image–caption rows")
    return pairs


def layout_specs(spec: str, layouts: Sequence[str] | None = None) -> dict[str, str]:
    """Layout name → spec to load. Only ``mllm:`` specs without a ``+layout=`` get several."""
    from bindkit.embed.prompts import LAYOUTS

    if not spec.startswith("mllm:") or "+layout=" in spec:
        if layouts:
            raise BindkitError(
                f"--layouts applies to mllm: specs without +layout=; {spec!r} has one prompt"
            )
        return {"default": spec}
    names = list(layouts) if layouts else list(LAYOUTS)
    unknown = [n for n in names if n not in LAYOUTS]
    if unknown:
        raise BindkitError(f"--layouts {','.join(unknown)}: use names from {', '.join(LAYOUTS)}")
    return {name: f"{spec}+layout={name}" for name in names}


def analyze_modality_gap(
    model: str,
    pairs: str | Path,
    out: str | Path,
    *,
    layouts: Sequence[str] | None = None,
    image_role: Role = "document",
    caption_role: Role = "query",
    instruction: str | None = None,
    cache: bool = True,
) -> dict[str, Any]:
    """Measure alignment and gap per layout; write ``modality_gap.json`` and ``.png`` in ``out``.

    Args:
        model: a model spec that embeds images and texts.
        pairs: JSONL ``{"image", "caption"}`` rows.
        out: output directory (locked while writing).
        layouts: for ``mllm:`` specs, the layouts to compare (default: all).
        image_role, caption_role: the retrieval side of each modality (it decides which layout
            parts apply, e.g. the hierarchical user instruction goes to queries only).
        instruction: the user-level instruction given to both sides (layouts decide where it
            appears; without one, ``hierarchical`` equals ``system``).
        cache: use the embedding cache.

    Returns:
        The record written to ``modality_gap.json``.
    """
    from bindkit import __version__
    from bindkit._io import atomic_write_text, sha256_file
    from bindkit._lock import directory_lock
    from bindkit.embed.registry import load_embedder

    rows = read_image_captions(pairs)
    out = Path(out)
    specs = layout_specs(model, layouts)
    results: dict[str, dict[str, Any]] = {}
    points: dict[str, tuple[np.ndarray, str]] = {}
    with directory_lock(out, "bindkit analyze modality-gap"):
        for name, spec in specs.items():
            embedder = load_embedder(spec, cache=cache)
            if "image" not in embedder.modalities:
                raise BindkitError(f"--model {model}: this model cannot embed images")
            images = embedder.embed_images(
                [r[0] for r in rows], role=image_role, instruction=instruction
            )
            captions = embedder.embed_texts(
                [r[1] for r in rows], role=caption_role, instruction=instruction
            )
            coords, method = project_2d(np.concatenate([images, captions]))
            points[name] = (coords, method)
            results[name] = {
                "spec": spec,
                "model_fingerprint": embedder.fingerprint,
                "alignment": alignment(images, captions),
                "modality_gap": modality_gap(images, captions),
                "projection": method,
            }
        record = {
            "schema": SCHEMA,
            "provenance": {
                "bindkit_version": __version__,
                "model": model,
                "pairs": str(pairs),
                "pairs_sha256": sha256_file(Path(pairs)),
                "n_pairs": len(rows),
                "image_role": image_role,
                "caption_role": caption_role,
                "instruction": instruction,
                "definitions": {
                    "alignment": "mean cosine of matched image-caption pairs",
                    "modality_gap": "L2 distance between image and caption centroids "
                    "(Liang et al., NeurIPS 2022)",
                },
            },
            "layouts": results,
        }
        atomic_write_text(out / "modality_gap.json", json.dumps(record, indent=2) + "\n")
        _plot(points, len(rows), out / "modality_gap.png")
    return record


def format_table(record: dict[str, Any]) -> str:
    lines = [f"{'layout':<14} {'alignment':>9} {'gap':>7}"]
    for name, r in record["layouts"].items():
        lines.append(f"{name:<14} {r['alignment']:>9.3f} {r['modality_gap']:>7.3f}")
    return "\n".join(lines)


def _plot(points: dict[str, tuple[np.ndarray, str]], n: int, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return

    from bindkit._io import atomic_write_figure

    fig, axes = plt.subplots(1, len(points), figsize=(3.6 * len(points), 3.6), squeeze=False)
    for ax, (name, (coords, method)) in zip(axes[0], points.items(), strict=True):
        ax.scatter(coords[:n, 0], coords[:n, 1], s=8, label="image")
        ax.scatter(coords[n:, 0], coords[n:, 1], s=8, label="caption")
        ax.set_title(f"{name} ({method})", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0][0].legend(loc="best", fontsize=8)
    fig.tight_layout()
    atomic_write_figure(fig, path, dpi=110)
