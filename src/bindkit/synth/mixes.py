"""Named training mixes: which row kinds (:mod:`bindkit.synth.augment`,
:mod:`bindkit.synth.everyday`) a training set shuffles together, and what each kind teaches.

A mix is named by a recipe; this module holds no default one (the demo's is
``bindkit.demo.finetune.MIX``). :data:`KIND_TEXT` says in a sentence what each kind is, for the
reports that name a mix. :func:`write_mix` writes a mix's training file into a synth run
(``bindkit synth mix``), where the split-set guard checks it with the run's other splits.
"""

from __future__ import annotations

import difflib
import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.synth.augment import (
    paraphrase_triplets,
    predication_triplets,
    relation_triplets,
    restatement_triplets,
    synonym_triplets,
)
from bindkit.synth.everyday import everyday_triplets
from bindkit.synth.roles import role_triplets

# Named training mixes (issue 18's search): the kinds of triplets shuffled together.
MIXES = {
    "fullpara": ("full", "paraphrase"),
    "fullrestate": ("full", "restatement"),
    "mix3": ("full", "paraphrase", "restatement"),
    "fullpararel": ("full", "paraphrase", "relation"),
    "fullpararelneg": ("full", "paraphrase", "relation", "negation"),
    "fullparaneg": ("full", "paraphrase", "negation"),
    "fullpararelnegL": ("full", "paraphrase", "relationL", "negationL"),
    "fullparapredrelneg": ("full", "paraphrase", "predication", "relation", "negation"),
    "fullparasyn": ("full", "paraphrase", "synonym"),
    "fullparasynrelneg": ("full", "paraphrase", "synonym", "relation", "negation"),
    "fullpararelnegLE": ("full", "paraphrase", "relationL", "negationL", "everyday"),
    "fullpararelnegLE2": ("full", "paraphrase", "relationL", "negationL", "everyday2"),
    "fullpararelnegLEO": ("full", "paraphrase", "relationL", "negationL", "everydayO"),
    "fullpararelnegLEOR": ("full", "paraphrase", "relationL", "negationL", "everydayOR"),
    "fullpararelnegLEORB": ("full", "paraphrase", "relationL", "negationL", "everydayORB"),
    "fullpararelnegLEORN": ("full", "paraphrase", "relationL", "negationL", "everydayORN"),
    "fullpararelnegLEORBN": ("full", "paraphrase", "relationL", "negationL", "everydayORBN"),
    "fullpararelneghLEOR": ("full", "paraphrase", "relationL", "negationLh", "everydayOR"),
    # binding-v2's search (issue 42): binding-v1's mix with role scenes (bindkit.synth.roles)
    "fullpararelnegLEORR": ("full", "paraphrase", "relationL", "negationL", "everydayOR", "roles"),
    "fullpararelnegLEORR2": (
        "full",
        "paraphrase",
        "relationL",
        "negationL",
        "everydayOR",
        "roles2",
    ),
    "fullpararelnegLEORBR": (
        "full",
        "paraphrase",
        "relationL",
        "negationL",
        "everydayORB",
        "roles",
    ),
    "full": ("full",),  # the full captions alone: seed 000's own triplets (recipe seed000-1b)
}


def training_triplets(examples: list[Any], seed: int, mix: str) -> list[dict[str, Any]]:
    """A training set of mix ``mix``: the examples' full-caption triplets (short query →
    caption vs its swap, as ``bindkit synth split`` writes them) and the other kinds of
    ``MIXES[mix]`` (:func:`paraphrase_triplets`, :func:`restatement_triplets`, …), shuffled
    together (by ``seed``), as many rows as there are full-caption triplets.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")], "A red cube "
        ...              "sat by a blue kite.", query="a red cube and a blue kite",
        ...              negatives={"attribute": "A blue cube sat by a red kite.",
        ...                         "object": "A red kite sat by a blue cube."})
        >>> len(training_triplets([ex] * 4, 0, "mix3"))
        8
    """
    # lazily: naming a mix or its KIND_TEXT (the demo's --help, its report) needs no splits
    from bindkit.synth.splits import triplets

    check_mix(mix)
    makers: dict[str, Callable[[], list[dict[str, Any]]]] = {
        "full": lambda: triplets(examples),
        "paraphrase": lambda: paraphrase_triplets(examples, seed),
        "restatement": lambda: restatement_triplets(examples),
        "relation": lambda: relation_triplets(examples, seed),
        "negation": lambda: relation_triplets(examples, seed, negate=True),
        "relationL": lambda: relation_triplets(examples, seed, listed=True),
        "negationL": lambda: relation_triplets(examples, seed, negate=True, listed=True),
        "negationLh": lambda: relation_triplets(examples, seed, negate=True, listed=True)[::2],
        "predication": lambda: predication_triplets(examples, seed),
        "synonym": lambda: synonym_triplets(examples, seed),
        "everyday": lambda: everyday_triplets(len(examples) // 2, seed),
        "everyday2": lambda: everyday_triplets(len(examples), seed),
        "everydayO": lambda: everyday_triplets(len(examples) // 3, seed, omit=True),
        # seven rows per scene index (three action, two placement, two trait rows)
        "roles": lambda: role_triplets(max(1, len(examples) // 3), seed),
        "roles2": lambda: role_triplets(max(1, len(examples)), seed),
        **{
            f"everydayOR{extra}": functools.partial(
                everyday_triplets,
                len(examples) // 3,
                seed,
                omit=True,
                replace=True,
                bare="B" in extra,
                replace_object="N" in extra,
            )
            for extra in ("", "B", "N", "BN")
        },
    }
    full = triplets(examples)
    rows = [row for kind in MIXES[mix] for row in makers[kind]()]
    random.Random(f"{seed}/{mix}").shuffle(rows)
    return rows[: len(full)]


ROLE_MAKERS = ("roles", "roles2")


def check_role_words(mix: str, exclude_data: Sequence[str | Path]) -> None:
    """Refuse a mix with role scenes when a reported set (``exclude_data``) holds one of the
    role words, also inflected (:func:`bindkit.synth.roles.overlap`): one line naming the words
    and the file; a mix without role scenes, or no data, passes."""
    if not any(kind in ROLE_MAKERS for kind in MIXES[mix]):
        return
    from bindkit.synth.roles import file_texts, overlap

    for path in exclude_data:
        if not Path(path).exists():
            raise BindkitError(f"--exclude-data {path}: not found; give a reported set's file")
        shared = overlap(file_texts(path))
        if shared:
            raise BindkitError(
                f"mix {mix}: {path} holds role words {', '.join(shared[:5])}"
                f"{' …' if len(shared) > 5 else ''}; a gain there would be memory, not "
                "transfer: remove them from bindkit/synth/data/roles.toml or report on other data"
            )


def check_mix(mix: str) -> None:
    """Refuse a mix name that :data:`MIXES` does not hold, suggesting the nearest one."""
    _check_name("mix", mix, list(MIXES))


def _check_name(what: str, name: str, names: list[str]) -> None:
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise BindkitError(f"{what} {name!r}: {hint}use one of {', '.join(names)}")


MIX_FORMAT = "bindkit-synth-mix"


def mix_file(mix: str) -> str:
    """The name of mix ``mix``'s training file in a synth run: ``train-<mix>.jsonl`` (a train
    file to the split-set guard, :func:`bindkit.synth.validate.split_name`)."""
    return f"train-{mix}.jsonl"


def mix_record(mix: str) -> str:
    """The name of the record beside :func:`mix_file`: what produced it."""
    return f"train-{mix}.json"


def write_mix(
    run_dir: str | Path,
    mix: str,
    *,
    seed: int | None = None,
    exclude_vocab: str | Path = "builtin",
    max_rows: int | None = None,
    overwrite: bool = False,
    exclude_data: Sequence[str | Path] = (),
) -> Path:
    """Write ``DIR/train-<mix>.jsonl``: :func:`training_triplets` of the run's NoOverlap train
    pool (:func:`train_pool`), as the demo's data step makes it. Every row is checked first,
    with the run's val/test/held-out files (:func:`bindkit.synth.splitset.check_split_set`);
    the file is written atomically and ``DIR/train-<mix>.json`` records what produced it (mix,
    seeds, vocabulary, the examples' and the file's hashes, rows per kind).

    Args:
        run_dir: a synth run whose split set is whole and current (``bindkit synth split``).
        mix: a name of :data:`MIXES`.
        seed: the mix's seed (default: the split set's).
        exclude_vocab: a SABER vocabulary directory, or ``builtin`` (the packaged one).
        max_rows: keep the first rows only (the mix is shuffled).
        overwrite: replace an existing file of this mix.
        exclude_data: data files or folders of the sets the training will be reported on
            (SugarCrepe, SugarCrepe++, STS, ...): a mix with role scenes
            (:mod:`bindkit.synth.roles`) is refused if one of them holds a role word, so that a
            gain there is transfer, not memory.

    Returns:
        The path of the written file.

    Raises:
        BindkitError: one line naming the bad input (unknown mix, no synth run, no split yet,
            an existing file, a row that fails its rule or leaks into another split).
    """
    from collections import Counter

    from bindkit._io import jsonl_bytes
    from bindkit.synth.rowkinds import kind_of
    from bindkit.synth.splitset import check_split_set

    check_mix(mix)
    check_role_words(mix, exclude_data)
    out = Path(run_dir) / mix_file(mix)
    pool = train_pool(run_dir, exclude_vocab, out, max_rows, overwrite)
    seed = pool.split_seed if seed is None else seed
    rows = training_triplets(pool.train, seed, mix)[:max_rows]
    _, failures = check_split_set(out.parent, extra={out.name: list(rows)})
    if failures:
        where, _, rejection = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise BindkitError(
            f"{out.parent / where}: [{rejection.rule}] {rejection.message}{more}; nothing written"
        )
    what = {"mix": mix, "kinds": list(MIXES[mix]), "seed": seed, "max_rows": max_rows}
    if exclude_data:  # which sets the role words were checked against
        what["role_words_absent_from"] = [str(p) for p in exclude_data]
    counts = {"row_kinds": dict(Counter(kind_of(row) for row in rows))}
    pool.write(out, jsonl_bytes(rows), MIX_FORMAT, what, len(rows), counts)
    return out


def write_preservation(
    run_dir: str | Path,
    name: str,
    *,
    seed: int | None = None,
    exclude_vocab: str | Path = "builtin",
    max_rows: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``DIR/preserve-<name>.jsonl`` (``{"text": ...}`` rows, what ``TrainConfig.preserve``
    reads): the preservation set ``name`` of the run's NoOverlap train pool
    (:func:`bindkit.synth.preservation.preservation_sentences`), as the demo's data step makes
    it (the demo keeps the first steps x preservation-batch sentences: ``max_rows``), atomically,
    with ``DIR/preserve-<name>.json`` recording what produced it. Arguments and errors as
    :func:`write_mix`'s.
    """
    from bindkit._io import jsonl_bytes
    from bindkit.synth.preservation import PRESERVATION_SETS, preservation_sentences

    _check_name("preservation set", name, list(PRESERVATION_SETS))
    out = Path(run_dir) / f"preserve-{name}.jsonl"
    pool = train_pool(run_dir, exclude_vocab, out, max_rows, overwrite)
    seed = pool.split_seed if seed is None else seed
    texts = preservation_sentences(pool.train, name, seed)[:max_rows]
    data = jsonl_bytes({"text": text} for text in texts)
    pool.write(
        out,
        data,
        PRESERVATION_FORMAT,
        {"set": name, "seed": seed, "max_rows": max_rows},
        len(texts),
        {},
    )
    return out


PRESERVATION_FORMAT = "bindkit-synth-preservation"


@dataclass(frozen=True)
class TrainPool:
    """A synth run's NoOverlap train pool and what identifies it, for the files made from it."""

    run_dir: Path
    split_seed: int
    examples_sha256: str
    vocabulary: dict[str, Any]
    train: list[Any]

    def write(
        self,
        out: Path,
        data: bytes,
        format_name: str,
        what: dict[str, Any],
        rows: int,
        extra: dict[str, Any],
    ) -> None:
        """``data`` to ``out`` atomically, then its record (``out`` as ``.json``)."""
        import json

        from bindkit import __version__
        from bindkit._io import atomic_write_bytes, atomic_write_text, sha256_bytes

        atomic_write_bytes(out, data)
        record = {
            "format": format_name,
            "bindkit_version": __version__,
            **what,
            "split_seed": self.split_seed,
            "exclude_vocab": self.vocabulary,
            "examples": {"sha256": self.examples_sha256, "train_pool": len(self.train)},
            "rows": rows,
            **extra,
            "sha256": sha256_bytes(data),
        }
        atomic_write_text(out.with_suffix(".json"), json.dumps(record, indent=2) + "\n")


def finished(out: Path) -> bool:
    """Whether ``out`` is a whole file of a finished write: its record (``out`` as ``.json``,
    written last) holds its sha256. A file without it is what a killed run left, and a rerun
    writes it again (the same bytes) instead of refusing it."""
    import json

    from bindkit._io import sha256_file

    try:
        record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
        return bool(record.get("sha256") == sha256_file(out))
    except (OSError, ValueError, AttributeError):
        return False


def train_pool(
    run_dir: str | Path,
    exclude_vocab: str | Path,
    out: Path,
    max_rows: int | None,
    overwrite: bool,
) -> TrainPool:
    """The NoOverlap train pool of a synth run: the examples of its train split (split with the
    split set's seed, so that none is a val/test example) without an item of the
    ``exclude_vocab`` SABER vocabulary, after the checks every writer into the run makes (a
    synth run, a whole and current split set, ``max_rows`` at least 1, ``out`` new unless
    ``overwrite``)."""
    from bindkit.synth.splits import (
        check_exclude_vocab,
        no_overlap,
        read_examples,
        saber_words,
        split,
        verify_splits,
        vocab_identity,
    )

    run_dir = Path(run_dir)
    if not (run_dir / "examples.jsonl").is_file():
        raise BindkitError(
            f"{run_dir}: not a synth run (no examples.jsonl); run `bindkit synth generate "
            f"--out {run_dir} --n N` first"
        )
    if max_rows is not None and max_rows < 1:
        raise BindkitError(f"--max-rows {max_rows}: give at least 1")
    check_exclude_vocab(exclude_vocab)
    if out.exists() and not overwrite and finished(out):
        raise BindkitError(f"{out}: exists; pass --overwrite to replace it")
    summary = verify_splits(run_dir)
    split_seed = int(summary["options"]["seed"])
    words = saber_words(None if str(exclude_vocab) == "builtin" else exclude_vocab)
    examples = read_examples(run_dir / "examples.jsonl")
    train = no_overlap(split(examples, split_seed)["train"], words)
    if not train:
        raise BindkitError(
            f"{run_dir}: no train example without a word of the {exclude_vocab} vocabulary; "
            "generate more examples or give another --exclude-vocab"
        )
    return TrainPool(
        run_dir,
        split_seed,
        str(summary["examples"]["sha256"]),
        vocab_identity(exclude_vocab, words),
        train,
    )


# What each kind of MIXES teaches, in a clause for the reports that name a mix.
_OMISSION_TEXT = (
    "; → the caption with one attribute dropped vs the swap: a detail left out moves a "
    "sentence less than a binding changed"
)
_REPLACEMENT_TEXT = "; → the paraphrase vs the caption with one attribute contradicted"
_BARE_TEXT = "; → the caption with both attributes dropped vs the swap"
_NOUN_TEXT = "; → the paraphrase vs the caption with one noun replaced"
_ROLE_TEXT = (
    "role scenes (`role_triplets`: who does what to whom and what lies on what, in words of no "
    "reported set → the converse ('A lynx is tickled by a walrus.') vs the roles swapped ('A "
    "lynx tickles a walrus.'), and back; with a trait on each end, vs the traits traded; {n})"
)
KIND_TEXT = {
    "roles": _ROLE_TEXT.format(n="one scene of each family per three examples"),
    "roles2": _ROLE_TEXT.format(n="one scene of each family per example"),
    "paraphrase": "paraphrase triplets (its caption → its pairs listed in its scene vs the "
    "caption's own swap, which shares almost every word with the query: word overlap points "
    "the wrong way)",
    "restatement": "restatement triplets (its caption → the same caption without its "
    "attributes, the bindings stated after it, vs the caption's own swap: every relation "
    "word kept, only binding tells them apart)",
    "relation": "relation triplets (its caption → the caption without its asides vs the caption "
    "with one relation or verb contradicted: relations matter more than asides)",
    "predication": "predication triplets (its caption → each object's attributes stated of it, "
    "in its scene, vs the caption's own swap)",
    "synonym": "synonym triplets (its caption → the caption without its asides, its relations "
    "reworded, vs the caption's own swap)",
    "relationL": "relation triplets with listed positives (its caption → its pairs listed in "
    "its scene vs the caption with one relation contradicted)",
    "negationL": "negation triplets with listed positives (its caption → its pairs listed in its "
    "scene vs the caption with one verb negated: a contradiction is further than an omission)",
    "negationLh": "negation triplets with listed positives, every second one (its caption → "
    "its pairs listed in its scene vs the caption with one verb negated)",
    "negation": "negation triplets (its caption → the caption without its asides vs the caption "
    "with one verb negated: a negation is no aside)",
    **{
        kind: "everyday binding scenes (`everyday_triplets`: a caption of who does what to what, "
        "each with an attribute → its reordered paraphrase vs its attribute swap, and back"
        + extra
        + f"; {scenes}, no SABER word), so that binding is not learnt as a property of the "
        "template's style"
        for kind, extra, scenes in (
            ("everyday", "", "one scene per two examples"),
            ("everyday2", "", "one scene per example"),
            ("everydayO", _OMISSION_TEXT, "one scene per three examples"),
            *(
                (
                    f"everydayOR{extra}",
                    _OMISSION_TEXT
                    + _REPLACEMENT_TEXT
                    + ("B" in extra) * _BARE_TEXT
                    + ("N" in extra) * _NOUN_TEXT,
                    "one scene per three examples",
                )
                for extra in ("", "B", "N", "BN")
            ),
        )
    },
}
