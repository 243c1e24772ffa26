"""What every task provides, and the task registry."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from bindkit.embed.images import ImageRef
from bindkit.embed.protocol import Embedder, Role
from bindkit.errors import BindkitError

#: Bump when a metric's definition changes: stored results with another version are recomputed.
METRICS_VERSION = 1
PAIRINGS = {
    "tt": ("text", "text"),
    "ti": ("text", "image"),
    "it": ("image", "text"),
    "ii": ("image", "image"),
}


@dataclass(frozen=True)
class Dataset:
    """A task's loaded data plus what identifies it in result files."""

    name: str  # short, file-name safe, e.g. "saber-default" or "sick-trial"
    sha256: str  # hash of the data's content (or manifest)
    source: str  # where it came from: a path or "builtin:..."
    payload: Any


class Task(Protocol):
    name: str
    description: str

    def load(self, data: str | None) -> Dataset: ...

    def pairings(self, dataset: Dataset, embedder: Embedder) -> list[str]: ...

    def evaluate(
        self,
        embedder: Embedder,
        dataset: Dataset,
        pairing: str,
        *,
        query_instruction: str | None = None,
    ) -> dict[str, Any]:
        """Return ``{"scores": {...}, "counts": {...}}``; scores are fractions in [0, 1]."""
        ...


def embed(
    embedder: Embedder,
    modality: str,
    inputs: list[str] | list[ImageRef],
    role: Role,
    instruction: str | None = None,
) -> np.ndarray:
    """Embed texts or image references with one call (the embedder dedups and caches)."""
    if modality == "text":
        return embedder.embed_texts(inputs, role=role, instruction=instruction)  # type: ignore[arg-type]
    return embedder.embed_images(inputs, role=role, instruction=instruction)


def parse_pairings(value: str | list[str] | None) -> list[str] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [p.strip() for p in items if p.strip()]
    for p in items:
        if p not in PAIRINGS:
            raise BindkitError(
                f"--pairings: unknown pairing {p!r}; use tt, ti, it, ii (query→candidate modality)"
            )
    return items


def get_task(name: str) -> Task:
    from bindkit.tasks.saber import SaberTask
    from bindkit.tasks.sts import STSTask
    from bindkit.tasks.triplets import TripletTask

    tasks: dict[str, Task] = {t.name: t for t in (SaberTask(), TripletTask(), STSTask())}
    if name not in tasks:
        close = difflib.get_close_matches(name, list(tasks), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BindkitError(f"--task {name!r}: unknown task{hint}; use one of {', '.join(tasks)}")
    return tasks[name]
