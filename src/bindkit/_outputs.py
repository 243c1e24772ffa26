"""Which bindkit command's output a folder holds, from the file each one leaves at its top.

A command that writes into an existing ``--out`` (``finetune`` resumes there, ``export-results``
adds its ``results/`` tree) must not mix its files into another command's output: a synth run
with a finetune's ``runs/`` beside its ``examples.jsonl`` is two things at once, and the next
``synth generate`` or ``finetune`` on it reads the wrong files. :func:`check_own_output` refuses
such a folder in one line; a new, empty or unrelated folder, or one of the command's own, passes.
"""

from __future__ import annotations

from pathlib import Path

from bindkit.errors import BindkitError

#: (file at the folder's top, what it marks, the output kind); the first match decides
MARKERS: tuple[tuple[str, str, str], ...] = (
    ("recipe.json", "a bindkit finetune run", "finetune"),
    ("saber.jsonl", "a SABER set", "saber"),  # before manifest.json: a SABER set has one too
    ("manifest.json", "a bindkit synth run", "synth"),
    ("examples.jsonl", "a bindkit synth run", "synth"),
    ("study.db", "a bindkit sweep", "sweep"),
    ("sweep.md", "a bindkit sweep", "sweep"),
    ("adapter_config.json", "a peft adapter", "adapter"),
    (".bindkit-fetch.json", "a bindkit fetch folder", "fetch"),
)


def output_kind(folder: Path) -> tuple[str, str, str] | None:
    """``(marker file, description, kind)`` of the command output ``folder`` holds, or None."""
    if not folder.is_dir():
        return None
    for name, what, kind in MARKERS:
        if (folder / name).exists():
            return name, what, kind
    return None


def check_own_output(out: Path, own: str, option: str = "--out") -> None:
    """Refuse ``out`` when it holds another command's output (``own``: this command's kind).

    Raises:
        BindkitError: ``--out synth: holds a bindkit synth run (manifest.json); ...``.

    Example:
        >>> check_own_output(Path("no-such-folder"), "finetune")
    """
    found = output_kind(Path(out))
    if found is None or found[2] == own:
        return
    name, what, _kind = found
    raise BindkitError(
        f"{option} {out}: holds {what} ({name}); writing here would mix two outputs in one "
        f"folder; choose a new or empty {option}"
    )
