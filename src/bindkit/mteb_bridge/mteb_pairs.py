"""bindkit's image-text pair benchmarks as mteb 2.x ``Compositionality`` tasks.

Needs ``pip install 'bindkit[mteb]'``. The tasks share :mod:`bindkit.mteb_bridge.mteb_tasks`'
metadata (``mteb_metadata``), data loading (``load_dataset``: nothing downloads, every task
builds its mteb dataset from bindkit's own files in ``load_data``) and ``register``.

- ColorSwap and BiVLC (two captions, two images per item) → ``Compositionality``
  (:class:`~mteb.abstasks.AbsTaskImageTextPairClassification`), task names ``BindkitColorSwap``
  / ``BindkitBiVLC``. Main score ``group_score`` = bindkit's (Winoground's text, image and group
  scores with strict comparisons, images as queries and captions as documents); mteb's own
  ``accuracy`` / ``text_acc`` / ``image_acc`` use ``argmax``, which gives a tie to the first
  index, so a tie counts right for the first image or caption.
- CLEVR-binding, PUG:SPAR and PUG:SPARE (one image, its caption and a hard negative) →
  ``Compositionality`` with one image and two captions per item, task names
  ``BindkitCLEVRBinding`` / ``BindkitPUGSPAR-<subset>`` / ``BindkitPUGSPARE`` (the scored
  subset). Main score ``accuracy`` = bindkit's (the caption above the negative under the task's
  tie rule); mteb's own ``accuracy`` for this shape asks the negative caption's closest image to
  be a second image there is none of, so it is always 0 and is replaced; ``text_acc`` (argmax,
  a tie counts for the caption) stays mteb's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset as HFDataset
from datasets import Image as HFImage
from mteb.abstasks.image.image_text_pair_classification import (
    AbsTaskImageTextPairClassification,
)

from bindkit.errors import BindkitError
from bindkit.mteb_bridge.mteb_tasks import SPLIT, load_dataset, mteb_metadata
from bindkit.tasks.base import Dataset, get_task


class _Pairs(AbsTaskImageTextPairClassification):  # type: ignore[misc]
    """Winoground-style items: columns image_0, image_1, caption_0, caption_1."""

    images_column_names = ("image_0", "image_1")
    texts_column_names = ("caption_0", "caption_1")
    _dataset: Dataset
    _subset: str
    data_loaded: bool

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        from bindkit.tasks.pairs._parquet import images_of

        items = self._dataset.payload[self._subset]
        where = f"{self._dataset.source} ({self._subset})"
        columns = {
            "image_0": images_of(items, 0, where),
            "image_1": images_of(items, 1, where),
            "caption_0": [x.caption_0 for x in items],
            "caption_1": [x.caption_1 for x in items],
        }
        table = HFDataset.from_dict(columns)
        self.dataset = {"default": {SPLIT: table.cast_column("image_0", HFImage())}}
        self.dataset["default"][SPLIT] = self.dataset["default"][SPLIT].cast_column(
            "image_1", HFImage()
        )
        self.data_loaded = True

    def _compute_metrics(
        self, scores: list[Any], num_images_per_sample: int, num_texts_per_sample: int
    ) -> dict[str, float]:
        counts = (num_images_per_sample, num_texts_per_sample)
        metrics = dict(super()._compute_metrics(scores, *counts))
        return metrics | winoground_scores([np.asarray(s, dtype=np.float64) for s in scores])


def winoground_scores(scores: Sequence[np.ndarray]) -> dict[str, float]:
    """bindkit's strict text / image / group scores from mteb's per-item (image x caption)
    similarity matrices: s(c_j, i_k) = ``m[k, j]``."""
    text = [m[0, 0] > m[0, 1] and m[1, 1] > m[1, 0] for m in scores]
    image = [m[0, 0] > m[1, 0] and m[1, 1] > m[0, 1] for m in scores]
    group = [t and i for t, i in zip(text, image, strict=True)]
    return {
        "text_score": float(np.mean(text)),
        "image_score": float(np.mean(image)),
        "group_score": float(np.mean(group)),
    }


PAIR_TASKS = {"colorswap": "BindkitColorSwap", "bivlc": "BindkitBiVLC"}


def pair_task(task: str, data: str | Path, *, subset: str = "test") -> Any:
    """ColorSwap or BiVLC (bindkit's readers of the Hub's parquet files) as an mteb
    ``Compositionality`` task on one split (default: the scored test split)."""
    if task not in PAIR_TASKS:
        raise BindkitError(f"mteb pair tasks: {task!r}; use one of {', '.join(PAIR_TASKS)}")
    bindkit_task = get_task(task)
    dataset = load_dataset(bindkit_task, data)
    if subset not in dataset.subsets:
        raise BindkitError(
            f"mteb {task}: {dataset.source} has no split {subset!r} ({', '.join(dataset.subsets)})"
        )
    name = PAIR_TASKS[task] + ("" if subset == "test" else f"-{subset}")
    meta = mteb_metadata(
        bindkit_task.metadata,
        dataset,
        name=name,
        kind="Compositionality",
        pairing="it",
        main_score="group_score",
    )
    attrs = {"metadata": meta, "_dataset": dataset, "_subset": subset}
    cls: type[_Pairs] = type(name, (_Pairs,), attrs)
    return cls()


class _Binding(AbsTaskImageTextPairClassification):  # type: ignore[misc]
    """One image, its caption and a hard negative: columns image, positive, negative."""

    images_column_names = "image"
    texts_column_names = ("positive", "negative")
    _dataset: Dataset
    _subset: str
    _task: Any  # the bindkit BindingTask
    data_loaded: bool

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        from bindkit.tasks.base import EvalContext

        items, _ = self._task.binding_items(self._dataset, self._subset, EvalContext())
        pictures = [getattr(x.image, "path", x.image) for x in items]
        columns = {
            "image": [str(p) if isinstance(p, Path) else p for p in pictures],
            "positive": [x.positive for x in items],
            "negative": [x.negative for x in items],
        }
        table = HFDataset.from_dict(columns).cast_column("image", HFImage())
        self.dataset = {"default": {SPLIT: table}}
        self.data_loaded = True

    def _compute_metrics(
        self, scores: list[Any], num_images_per_sample: int, num_texts_per_sample: int
    ) -> dict[str, float]:
        from bindkit.metrics.pairwise import beats

        counts = (num_images_per_sample, num_texts_per_sample)
        metrics = dict(super()._compute_metrics(scores, *counts))
        matrices = [np.asarray(s, dtype=np.float64) for s in scores]
        ties = self._task.metadata.tie_rule(self._subset)
        credit = beats(
            np.array([m[0, 0] for m in matrices]), np.array([m[0, 1] for m in matrices]), ties
        )
        return metrics | {"accuracy": float(credit.mean())}


BINDING_TASKS = {
    "clevr_binding": "BindkitCLEVRBinding",
    "pug_spar": "BindkitPUGSPAR",
    "pug_spare": "BindkitPUGSPARE",
}


def binding_tasks(task: str, data: str | Path) -> list[Any]:
    """CLEVR-binding, PUG:SPAR or PUG:SPARE as mteb ``Compositionality`` tasks, one per subset the
    benchmark reports (its ``default_subsets``: CLEVR-binding's and PUG:SPARE's test split,
    PUG:SPAR's two texture pairs, named ``-<subset>``)."""
    if task not in BINDING_TASKS:
        raise BindkitError(f"mteb binding tasks: {task!r}; use one of {', '.join(BINDING_TASKS)}")
    bindkit_task = get_task(task)
    dataset = load_dataset(bindkit_task, data)
    subsets = bindkit_task.default_subsets(dataset)
    out = []
    for subset in subsets:
        name = BINDING_TASKS[task] + ("" if len(subsets) == 1 else f"-{subset}")
        meta = mteb_metadata(
            bindkit_task.metadata,
            dataset,
            name=name,
            kind="Compositionality",
            pairing="it",
            main_score="accuracy",
        )
        attrs = {"metadata": meta, "_dataset": dataset, "_subset": subset, "_task": bindkit_task}
        cls: type[_Binding] = type(name, (_Binding,), attrs)
        out.append(cls())
    return out
