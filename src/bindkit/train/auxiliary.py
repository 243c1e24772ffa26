"""Auxiliary loss terms: added to any objective's loss, each micro-batch.

An auxiliary term is a callable ``term(step) -> scalar tensor`` (:data:`AuxiliaryLoss`) that gets
the micro-batch (:class:`Step`). It runs its own forward passes, so it works with and without
GradCache. Preservation (:class:`PreservationTerm`, distillation to the base model) and the
attention binding loss (:class:`AttentionTerm`) are the two built in; a caller may pass more to
:func:`bindkit.train.trainer.train` (:class:`EnsembleDistillationTerm`, distillation to a prompt
ensemble of the base model, is one: ``bindkit demo finetune --model builtin:tiny-clip``). Each
returns this rank's share of the global term.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError


@dataclass
class Step:
    """What an auxiliary loss receives for one micro-batch.

    ``rows`` holds this rank's records (triplet rows, or cluster pairs; they carry ``query``
    and any binding annotations), ``batches`` the collated inputs of each side when the step ran
    without GradCache (``query``, ``documents``), ``embeddings`` the pooled outputs (triplets:
    ``query``, ``positive``, ``negative``; clusters: ``query``, ``positive``; detached under
    GradCache), ``micro`` the global micro-batch index and ``global_rows`` the rows of all ranks.
    """

    model: Any
    embedder: Any
    rows: list[dict[str, Any]]
    batches: dict[str, Any]
    embeddings: dict[str, Any]
    micro: int = 0
    global_rows: int = field(default=0)


AuxiliaryLoss = Callable[[Step], Any]


def read_sentences(path: str | Path) -> list[str]:
    """Sentences for the preservation term: one per line, or JSONL rows with a ``text`` field
    (triplet rows give their query, positive and negative)."""
    path = Path(path)
    sentences: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BindkitError(
            f"--preserve {path}: not UTF-8 text; give one sentence per line"
        ) from None
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise BindkitError(f"{path}:{lineno}: not valid JSON ({exc})") from None
            texts = [row.get(k) for k in ("text", "query", "positive", "negative")]
            found = [t for t in texts if isinstance(t, str) and t.strip()]
            if not found:
                raise BindkitError(f"{path}:{lineno}: a JSON row needs a 'text' field")
            sentences += found
        else:
            sentences.append(line)
    if not sentences:
        raise BindkitError(f"{path}: no sentences found; give one sentence per line")
    return sentences


class PreservationTerm:
    """Distillation to the base model on ``batch`` preservation sentences per micro-batch
    (:class:`~bindkit.train.losses.DistillationLoss`); the teacher's embeddings are computed
    once, before LoRA is added. Micro-batch m uses sentences ``m·batch …`` (cyclic), so the
    choice depends on the step only and resumes identically."""

    def __init__(
        self,
        embedder: Any,
        sentences: list[str],
        batch: int,
        weight: float,
        relational: float = 0.0,
    ) -> None:
        import torch

        from bindkit.train.losses import DistillationLoss

        self.sentences, self.batch = sentences, batch
        self.loss = DistillationLoss(weight, relational)
        embedder.module.eval()
        self.teacher = torch.from_numpy(embedder.embed_texts(sentences, role="document"))

    def indices(self, micro: int) -> list[int]:
        size, start = len(self.sentences), micro * self.batch
        return [(start + i) % size for i in range(self.batch)]

    def __call__(self, step: Step) -> Any:
        chosen = self.indices(step.micro)
        embedder = step.embedder
        batch = embedder.collate(
            [self.sentences[i] for i in chosen], modality="text", role="document", instruction=None
        )
        student = embedder.forward(batch).float()
        return self.loss(student, self.teacher[chosen].to(student.device))


class AttentionTerm:
    """The attention binding loss (:mod:`bindkit.train.attention_loss`) on each micro-batch's
    queries, whose bindings are read from the rows (or parsed from the synthetic query)."""

    def __init__(self, embedder: Any, tau: float, weight: float) -> None:
        from bindkit.train.attention_loss import AttentionBindingLoss

        self.loss = AttentionBindingLoss(embedder, tau=tau, weight=weight)

    def __call__(self, step: Step) -> Any:
        from bindkit.train.attention_loss import bound_text

        items = [bound_text(row) for row in step.rows]
        batch = step.embedder.collate(
            [item.text for item in items], modality="text", role="query", instruction=None
        )
        _, penalty = self.loss(
            items, batch, role="query", rows=len(step.rows), global_rows=step.global_rows
        )
        return penalty


class EnsembleDistillationTerm(PreservationTerm):
    """Distillation to a *prompt ensemble* of the base model: sentence i's target is the
    normalised mean of the base model's embeddings of its wordings ``members[i]``
    (:func:`~bindkit.train.losses.ensemble_targets`), and ``weight · mean(1 − cos(f(x), t))``
    is added on ``batch`` sentences per micro-batch (cyclic in the micro-batch index, so a
    resumed run picks the same ones). The teacher is computed here, on the embedder as given:
    build the term before the trainer adds LoRA (a separately loaded base embedder will do).
    Sentences are chosen and scored as :class:`PreservationTerm` does; only the targets differ.
    """

    def __init__(  # not the base's: it would embed the sentences themselves
        self,
        teacher: Any,
        sentences: list[str],
        members: list[list[str]],
        batch: int,
        weight: float,
    ) -> None:
        import numpy as np
        import torch

        from bindkit.train.losses import DistillationLoss, ensemble_targets

        if len(members) != len(sentences) or not sentences or not all(members):
            raise BindkitError(
                "ensemble distillation: give one non-empty list of wordings per sentence"
            )
        flat = [text for group in members for text in group]
        owners = torch.from_numpy(
            np.repeat(np.arange(len(members)), [len(group) for group in members])
        )
        unique = list(dict.fromkeys(flat))  # orderings repeat (N = 2 has two): embed once
        where = {text: i for i, text in enumerate(unique)}
        embedded = teacher.embed_texts(unique, role="document")
        vectors = torch.from_numpy(embedded[[where[text] for text in flat]])
        self.teacher = ensemble_targets(vectors, owners, len(sentences))
        self.sentences, self.batch = sentences, batch
        self.loss = DistillationLoss(weight)
