"""Where each default of ``bindkit train clusters`` comes from: seed 002, or bindkit's choice.

Seed 002 (hierarchical prompt + SaHa) states its fine-tuning recipe in §IV-A1 "Implementation
Details" and its batch in Table VII (§IV-C2). :data:`SEED002` holds one :class:`Source` per
option of :class:`~bindkit.train.config.ClusterTrainConfig` whose default bindkit sets for the
recipe: the paper's value with the section that states it, or bindkit's value with the reason,
where the paper states none. :class:`~bindkit.train.config.ClusterTrainConfig` takes its
defaults and help suffixes from here, so ``--help`` and the code cannot disagree, and
``docs/seed-choices.md`` lists the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Source:
    """One default: its value, and either the paper's place (``stated``) or bindkit's reason."""

    value: Any
    stated: str = ""  # "seed 002 §IV-A1": the paper states this value there
    reason: str = ""  # why bindkit chose it, where the paper states nothing

    def __post_init__(self) -> None:
        if bool(self.stated) == bool(self.reason):
            raise ValueError("a Source is either stated by the paper or bindkit's, with a reason")

    @property
    def label(self) -> str:
        """The suffix of the option's help text."""
        return self.stated if self.stated else f"bindkit's choice: {self.reason}"


IV_A1 = "seed 002 §IV-A1"

SEED002: dict[str, Source] = {
    # §IV-A1: "AdamW optimizer with a learning rate of 5×10⁻⁵"
    "lr": Source(5e-5, stated=IV_A1),
    # §IV-A1: "a linear schedule with a 100-step warm-up"
    "schedule": Source("linear", stated=IV_A1),
    "warmup_steps": Source(100, stated=IV_A1),
    # §IV-A1: "The temperature τ and maximum sequence length are set to 0.02 and 1024 tokens"
    "temperature": Source(0.02, stated=IV_A1),
    "max_length": Source(1024, stated=IV_A1),
    # §IV-A1: "trained for 1.5 epochs using a LoRA adapter (rank 8)"
    "epochs": Source(1.5, stated=IV_A1),
    "lora_r": Source(8, stated=IV_A1),
    # §IV-A1: "input images are resized to a fixed 448×448 resolution during training"
    "image_size": Source(448, stated=IV_A1),
    # §IV-C2, Table VII: SaHa (Ours), k 7, B 256
    "clusters_per_step": Source(
        256,
        stated="seed 002 Table VII (SaHa, k 7: B 256); read per device, the paper does not say "
        "whether its B is per GPU",
    ),
    # §IV-A1 names GradCache but no chunk size; a chunk size changes memory, never gradients
    "chunk_size": Source(
        32,
        reason="seed 002 §IV-A1 uses GradCache without a chunk size; any chunk gives the same "
        "gradients (tests/test_gradcache.py), so it only sets memory",
    ),
    "lora_alpha": Source(
        16.0,
        reason="seed 002 states only the rank; alpha = 2 x rank (scale 2), bindkit's earlier "
        "default for this command, kept so earlier runs keep their identity",
    ),
    "weight_decay": Source(
        0.0,
        reason="seed 002 names AdamW without a weight decay; 0 is transformers' Trainer default "
        "(torch's AdamW default would be 0.01)",
    ),
    "lora_dropout": Source(
        0.0, reason="seed 002 states no dropout; none, as seed 000's recipe (r 4, α 4, dropout 0)"
    ),
    # §III-C3: the InfoNCE denominator "strictly within the SaHa-constructed clusters"
    "in_batch": Source(False, stated="seed 002 §III-C3"),
    "lines": Source(
        False,
        reason="seed 002 applies no LiNeS (its recipe, §IV-A1, has no post-hoc step); --lines "
        "adds it",
    ),
}
