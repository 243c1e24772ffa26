"""Models from mteb's registry (``mteb:NAME``, e.g. ``mteb:intfloat/e5-small-v2``).

``mteb.get_model_meta(NAME)`` (the registry only: nothing is looked up on the hub) gives the
model's loader, revision and loader kwargs; ``load_model`` builds mteb's wrapper, which applies
the model's prompts and instructions exactly as under ``mteb.evaluate``: every call hands it a
task metadata (``+task=NAME``: an mteb task's, which picks task-specific prompts; otherwise a
neutral retrieval task) with the bindkit instruction as the task prompt, and the role as mteb's
prompt type (query / document). Weights come from the local Hugging Face cache (or
``+cache_folder=DIR``, a folder in the hub cache's layout); the fingerprint hashes mteb's name,
revision, loader and loader kwargs, and results are named without ``+cache_folder``
(:attr:`MtebEmbedder.result_name`), so a local path never names a result or a plot line.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from bindkit.embed.base import BaseEmbedder
from bindkit.embed.images import load_image
from bindkit.embed.protocol import Modality, Role
from bindkit.errors import BindkitError

_UNHASHED = {"device", "cache_folder"}  # where the model runs and lives, not what it computes


def without_option(spec: str, key: str) -> str:
    """``spec`` without its ``+key=VALUE`` part (the other parts as written)."""
    head, *parts = spec.split("+")
    kept = [p for p in parts if p.partition("=")[0].replace("-", "_") != key]
    return "+".join([head, *kept])


class MtebEmbedder(BaseEmbedder):
    """An mteb model wrapper served as a bindkit embedder."""

    def __init__(
        self,
        name: str,
        *,
        revision: str | None = None,
        device: str | None = None,
        cache_folder: str | None = None,
        task: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        import mteb

        try:
            meta = mteb.get_model_meta(name, revision)
        except (KeyError, ValueError) as exc:
            reason = str(exc).strip("'\"").splitlines()[0]
            raise BindkitError(
                f"mteb:{name}: {reason} (mteb {mteb.__version__}); a sentence-transformers "
                f"model outside mteb's registry loads as st:{name}"
            ) from None
        if meta.loader is None:
            raise BindkitError(f"mteb:{name}: mteb knows this model but has no loader for it")
        self.task_metadata = self._task(task) if task else None
        loader_kwargs = {"cache_folder": cache_folder} if cache_folder else {}
        try:
            self.model = meta.load_model(device=device, **loader_kwargs)
        except OSError as exc:
            raise BindkitError(
                f"mteb:{name}: cannot load revision {meta.revision} ({exc}); download it into "
                "the Hugging Face cache first or give +cache_folder=DIR"
            ) from None
        self.meta = self.model.mteb_model_meta
        # results are named without where the weights live: +cache_folder is a local path
        self.result_name = without_option(self.spec, "cache_folder")
        self.name = name
        self.task = task
        self.modalities = frozenset(m for m in self.meta.modalities if m in ("text", "image"))
        if not self.modalities:
            raise BindkitError(f"mteb:{name}: embeds {self.meta.modalities}, not text or images")

    @staticmethod
    def _task(task: str) -> Any:
        import mteb

        try:
            return mteb.get_task(task).metadata
        except KeyError as exc:
            raise BindkitError(f"mteb +task={task}: {str(exc).strip(chr(39))}") from None

    def _describe(self) -> dict[str, Any]:
        import mteb

        loader = self.meta.loader
        kwargs = {k: v for k, v in self.meta.loader_kwargs.items() if k not in _UNHASHED}
        return {
            "backend": "mteb",
            "model": self.meta.name,
            "revision": self.meta.revision,
            "loader": f"{loader.__module__}.{loader.__qualname__}",
            "loader_kwargs": json.loads(json.dumps(kwargs, sort_keys=True, default=repr)),
            "task": self.task,
            "mteb": mteb.__version__,
        }

    def _metadata(self, modality: Modality, role: Role, instruction: str | None) -> Any:
        from mteb.abstasks.task_metadata import TaskMetadata

        code = "t" if modality == "text" else "i"
        base = self.task_metadata
        if base is None:
            base = TaskMetadata(
                name="BindkitEmbed",
                description="bindkit embedding call",
                dataset={"path": "bindkit/embed", "revision": "1"},
                type="Any2AnyRetrieval",
                eval_langs=["eng-Latn"],
                main_score="ndcg_at_10",
            )
        update: dict[str, Any] = {"category": f"{code}2{code}", "modalities": [modality]}
        if instruction is not None:
            update["prompt"] = {role: instruction}
        return base.model_copy(update=update)

    def _encode(
        self, column: str, values: list[Any], role: Role, instruction: str | None
    ) -> np.ndarray:
        from datasets import Dataset
        from mteb._create_dataloaders import create_dataloader
        from mteb.types import PromptType

        modality: Modality = "text" if column == "text" else "image"
        metadata = self._metadata(modality, role, instruction)
        prompt_type = PromptType.query if role == "query" else PromptType.document
        loader = create_dataloader(
            Dataset.from_dict({"id": [str(i) for i in range(len(values))], column: values}),
            task_metadata=metadata,
            prompt_type=prompt_type,
            input_column=column,
            batch_size=len(values),
        )
        vectors = self.model.encode(
            loader,
            task_metadata=metadata,
            hf_split="test",
            hf_subset="default",
            prompt_type=prompt_type,
            batch_size=len(values),
            show_progress_bar=False,
        )
        if hasattr(vectors, "detach"):
            vectors = vectors.detach().float().cpu().numpy()
        return np.asarray(vectors, dtype=np.float32)

    def _encode_texts(self, texts: list[str], role: Role, instruction: str | None) -> np.ndarray:
        return self._encode("text", texts, role, instruction)

    def _encode_images(self, images: list[Any], role: Role, instruction: str | None) -> np.ndarray:
        pixels = [load_image(image, self.image_policy) for image in images]
        return self._encode("image", pixels, role, instruction)
