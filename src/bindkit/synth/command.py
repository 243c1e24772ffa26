"""The whole ``bindkit synth generate`` command around :func:`bindkit.synth.generate.generate`:
:func:`run` validates the options (:func:`check_options`), refuses a directory that is not a
synth run, holds the directory's lock, checks ``OUT/manifest.json`` (a resumed run must use the
options it started with: :data:`IDENTITY`, the packaged data's hashes), generates, and writes
the splits.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError, PathError
from bindkit.synth.backends.base import AsyncBackend, Backend
from bindkit.synth.diversity import Controller
from bindkit.synth.generate import DEADLINE, MAX_N, Stats, generate
from bindkit.synth.rundir import FORMAT, MANIFEST, check_out, clean_temporary, read_manifest

# manifest fields that change what a run generates, and the option that sets each
IDENTITY = {
    "backend": "--backend",
    "seed": "--seed",
    "llm_model": "--llm-model",
    "temperature": "temperature",
    "json_mode": "json_mode",
    "prompts_sha256": "--prompts (the prompt templates)",
    "controls_sha256": "the synth controls (controls.toml)",
    "data_sha256": "the packaged synth data files",
}


@dataclass
class RunResult:
    """What :func:`run` did: the controller and statistics, timing and split file counts."""

    out: Path
    controller: Controller
    stats: Stats
    seconds: float
    splits: dict[str, int] | None


def check_options(
    n: int,
    *,
    concurrency: int,
    timeout: float,
    max_retries: int,
    max_failures: int,
    max_attempts: int | None = None,
    deadline: float = DEADLINE,
) -> None:
    """Refuse runaway or meaningless sizes before any work (one line naming the option)."""
    bounds: list[tuple[str, float, float, float]] = [
        ("--n", n, 1, MAX_N),
        ("--concurrency", concurrency, 1, 1024),
        ("--timeout", timeout, 0.001, 3600),
        ("--max-retries", max_retries, 0, 100),
        ("--max-failures", max_failures, 1, 1_000_000),
    ]
    if max_attempts is not None:
        bounds.append(("--max-attempts", max_attempts, 1, 1000 * MAX_N))
    for option, value, lo, hi in bounds:
        if not lo <= value <= hi or value != value:  # NaN compares false both ways
            raise BindkitError(f"{option} {value}: must be at least {lo:g} and at most {int(hi):,}")
    if not timeout <= deadline <= 7 * 86400:  # NaN fails too
        raise BindkitError(
            f"--deadline {deadline}: must be at least --timeout ({timeout:g}) and at most 604,800"
        )


# packaged synth data that no generated example is made from (the recipe's everyday words,
# synth.everyday): left out of a run's identity, so that editing it refuses no resume
NOT_GENERATION_DATA = frozenset({"everyday.toml"})


def _synth_data_hashes() -> dict[str, str]:
    from importlib.resources import files

    from bindkit._io import sha256_bytes

    root = files("bindkit.synth").joinpath("data")
    digest = []
    names = (p.name for p in root.iterdir() if p.is_file() and p.name not in NOT_GENERATION_DATA)
    for name in sorted(names):
        digest.append(f"{name}:{sha256_bytes(root.joinpath(name).read_bytes())}")
    return {
        "controls_sha256": sha256_bytes(root.joinpath("controls.toml").read_bytes()),
        "data_sha256": sha256_bytes("\n".join(digest).encode()),
    }


def _manifest(
    backend: dict[str, Any], seed: int, options: dict[str, Any], old: dict[str, Any] | None
) -> dict[str, Any]:
    from bindkit import __version__

    identity = {"seed": seed, **backend, **_synth_data_hashes()}
    if old is not None:
        for key, option in IDENTITY.items():
            was, now = old.get("identity", {}).get(key), identity.get(key)
            if was != now:
                raise BindkitError(
                    f"{option}: this run was started with {was!r}, not {now!r}; resuming would "
                    "mix two runs. Rerun with the original value, or choose a new --out"
                )
    return {
        "format": FORMAT,
        "format_version": 1,
        "command": "bindkit synth generate",
        "bindkit_version": __version__,
        "identity": identity,
        "options": options,
        "started_with": (old or {}).get("started_with", __version__),
    }


def run(
    out: str | Path,
    n: int,
    *,
    backend: str = "template",
    seed: int = 0,
    concurrency: int = 8,
    base_url: str | None = None,
    llm_model: str | None = None,
    api_key: str | None = None,
    timeout: float = 120.0,
    max_retries: int = 5,
    max_failures: int = 20,
    max_attempts: int | None = None,
    deadline: float = DEADLINE,
    prompts: str | Path | None = None,
    splits: bool = True,
    exclude_vocab: str | Path | None = None,
    mixed_lengths: bool = False,
    drop_variants: bool = False,
    progress: bool | None = None,
) -> RunResult:
    """Generate a synthetic binding data set into ``out`` (resuming), then write its splits.

    Equals ``bindkit synth generate``. ``out/manifest.json`` records the options, seed, package
    version, backend (an LLM's model and base URL, never the key) and the hashes of the prompts,
    controls and data files; resuming with an option that changes the data is refused.

    Args:
        out: the run's directory (created; must be empty, new, or a synth run).
        n: target number of accepted examples (1 to 10,000,000).
        backend: a name in :data:`bindkit.synth.backends.BACKENDS`.
        seed: seed of plans, grammar choices and splits.
        concurrency: openai: requests in flight.
        base_url: openai: the server, e.g. ``http://localhost:8000/v1``.
        llm_model: openai: the model name.
        api_key: openai: the key (default ``OPENAI_API_KEY``); never written anywhere.
        timeout: openai: seconds per request.
        max_retries: openai: retries of one request on 408/429/5xx and network errors.
        max_failures: stop after this many transport failures in a row.
        max_attempts: give up after this many attempts (default: max(1000, 50 × n)).
        deadline: openai: stop when the server gave no answer for this many seconds (a
            server that accepts connections and never answers; at least ``timeout``).
        prompts: openai: a directory of prompt templates (default: the packaged ones).
        splits: write train/val/test/held-out triplet files afterwards.
        exclude_vocab: a SABER vocabulary directory (or ``"builtin"``): also write the NoOverlap,
            Random and OverlapOnly training subsets (see :func:`bindkit.synth.splits.write_splits`).
        mixed_lengths: also write the MixedLengths training set.
        drop_variants: let the splits delete an earlier split's variant folders these options
            do not rewrite (otherwise refused before anything is generated).
        progress: show a progress bar (default: on unless ``BINDKIT_PROGRESS=0``).

    Example:
        >>> result = run("synth", 1000, seed=0, progress=False)  # doctest: +SKIP
        >>> result.splits["train"]  # doctest: +SKIP
    """
    from bindkit._lock import directory_lock
    from bindkit.synth.backends import BackendOptions, make_backend
    from bindkit.synth.splits import check_exclude_vocab

    if progress is None:
        progress = os.environ.get("BINDKIT_PROGRESS") not in ("0", "false")
    check_options(
        n,
        max_attempts=max_attempts,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        max_failures=max_failures,
        deadline=deadline,
    )
    if exclude_vocab is not None:
        check_exclude_vocab(exclude_vocab)
    engine = make_backend(
        backend,
        BackendOptions(
            seed=seed,
            base_url=base_url,
            llm_model=llm_model,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            prompts=prompts,
        ),
    )
    out = Path(out)
    check_out(out)
    options = {
        "n": n,
        "concurrency": concurrency,
        "timeout": timeout,
        "max_retries": max_retries,
        "max_failures": max_failures,
        "max_attempts": max_attempts,
        "deadline": deadline,
        "prompts": None if prompts is None else str(prompts),
        "splits": splits,
        "exclude_vocab": None if exclude_vocab is None else str(exclude_vocab),
        "mixed_lengths": mixed_lengths,
        "drop_variants": drop_variants,
    }
    try:
        with directory_lock(out, "bindkit synth generate"):
            return _locked_run(out, n, engine, seed, options, max_attempts, max_failures, progress)
    except PathError:  # already one line naming the path and what to do
        raise
    except OSError as exc:  # disk full, permissions changed under a long run, ...
        where = exc.filename or out
        raise BindkitError(
            f"{where}: {exc.strerror or exc}; fix that and rerun the same command to resume"
        ) from None


def _locked_run(
    out: Path,
    n: int,
    engine: Backend | AsyncBackend,
    seed: int,
    options: dict[str, Any],
    max_attempts: int | None,
    max_failures: int,
    progress: bool,
) -> RunResult:
    from bindkit._io import atomic_write_text
    from bindkit.synth.backends import describe
    from bindkit.synth.splits import check_variants_kept, write_splits

    clean_temporary(out)
    if options["splits"] and not options["drop_variants"]:
        check_variants_kept(out, options["exclude_vocab"], options["mixed_lengths"])
    # read under the lock: the manifest a finished concurrent writer left is the one to match
    manifest = _manifest(describe(engine), seed, options, read_manifest(out))
    start = time.perf_counter()
    controller, stats = generate(
        out,
        n,
        engine,
        seed=seed,
        concurrency=options["concurrency"],
        max_attempts=max_attempts,
        max_failures=max_failures,
        progress=progress,
        # written only once resume() accepted the files: a refused run leaves the old manifest
        on_start=lambda: atomic_write_text(out / MANIFEST, json.dumps(manifest, indent=2) + "\n"),
        deadline=options["deadline"],
    )
    seconds = time.perf_counter() - start
    counts = None
    if options["splits"]:
        counts = write_splits(
            out,
            seed=seed,
            exclude_vocab=options["exclude_vocab"],
            mixed_lengths=options["mixed_lengths"],
            drop_variants=True,  # checked above, before generating
            lock=False,
        )
    return RunResult(out, controller, stats, seconds, counts)
