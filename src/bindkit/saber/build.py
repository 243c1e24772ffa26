"""The SABER generator: the MCQ construction rules of the seed paper, chains, and the writer.

An MCQ has one query of N attribute-object bindings and four candidates derived from it:

1. ``binding_preserving``: the query's bindings with the pairs reordered;
2. ``attribute_swap``: candidate 1's objects in its order, attributes permuted across them;
3. ``object_swap``: candidate 1's attributes in its order, objects permuted across them;
4. ``joint_swap``: both permuted. For N >= 3 the four binding assignments are pairwise distinct
   (a permutation that repeats one is resampled). For N = 2, where only two one-to-one
   assignments exist, candidate 4 keeps one query binding and replaces the object or the
   attribute of the other with a new element not in the query.

Every random choice comes from a ``random.Random`` seeded by a string naming the unit
(``"<seed>/independent/<n>/<i>"``), so output is byte-identical for equal options and a unit's
content does not depend on how many other units are generated.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bindkit._io import (
    atomic_write_bytes,
    atomic_write_text,
    check_can_create,
    jsonl_bytes,
    remove_stray_temps,
    sha256_bytes,
    stray_temps,
)
from bindkit._lock import LOCK_NAME, directory_lock
from bindkit.errors import BindkitError
from bindkit.saber import language
from bindkit.saber.io import (
    CANDIDATE_ROLES,
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST_FILE,
    MCQ,
    SABER_FILE,
    Binding,
    Item,
    Kind,
    Role,
    counts,
)
from bindkit.saber.vocab import Realization, Vocabulary, load_vocabulary

_MAX_TRIES = 10_000
# Upper bounds checked before any work: the default set is 1,800 MCQs (11 MB); 200,000 MCQs are
# about 1.2 GB of JSON and minutes of CPU, and anything larger is almost surely a typo.
MAX_PER_N = 100_000
MAX_MCQS = 200_000


@dataclass(frozen=True)
class SaberOptions:
    """Options of :func:`generate_saber`.

    Attributes:
        seed: Seed of every random choice; equal options give byte-identical output.
        per_n: MCQs per object count N; half independent, half from nested chains (even).
        n_min: Smallest N (>= 2); nested chains start here.
        n_max: Largest N; nested chains end here.
        avoid_color_collisions: Draw bindings and realisations so that no colour attribute of
            an MCQ appears as a word inside another attribute's realisation ("yellow" next to
            "yellow velvet", "blue" next to "dark-blue denim"), which makes image MCQs
            ambiguous: a colliding draw is redrawn (realisation first, then the binding), so
            the default set has none. False (``--allow-color-collisions``) draws as before the
            option existed; :func:`color_collisions` counts them.
    """

    seed: int = 0
    per_n: int = 200
    n_min: int = 2
    n_max: int = 10
    avoid_color_collisions: bool = True

    def check(self) -> None:
        """Raise :class:`BindkitError` with a one-line message on an invalid option."""
        if self.per_n < 2 or self.per_n % 2:
            raise BindkitError(
                f"--per-n {self.per_n}: must be a positive even number (half independent MCQs, "
                "half nested chains); e.g. --per-n 200"
            )
        if self.n_min < 2:
            raise BindkitError(f"--n-min {self.n_min}: must be at least 2")
        if self.n_max < self.n_min:
            raise BindkitError(f"--n-max {self.n_max}: must be at least --n-min ({self.n_min})")
        if self.per_n > MAX_PER_N:
            raise BindkitError(
                f"--per-n {self.per_n}: at most {MAX_PER_N:,} MCQs per N; lower --per-n"
            )
        total = self.per_n * (self.n_max - self.n_min + 1)
        if total > MAX_MCQS:
            raise BindkitError(
                f"--per-n {self.per_n} with N {self.n_min}..{self.n_max}: {total:,} MCQs, more "
                f"than the {MAX_MCQS:,} allowed; lower --per-n or narrow --n-min/--n-max"
            )


def assignment(bindings: Sequence[Binding]) -> frozenset[Binding]:
    """The binding assignment of an item: which attribute sits on which object, order-free."""
    return frozenset(bindings)


def _permutation(rng: random.Random, n: int) -> list[int]:
    return rng.sample(range(n), n)


def _is_identity(perm: Sequence[int]) -> bool:
    return all(i == p for i, p in enumerate(perm))


def derive_candidates(
    rng: random.Random,
    query: Sequence[Binding],
    vocab: Vocabulary,
) -> tuple[list[list[Binding]], Binding | None]:
    """Derive the four candidates' bindings from the query's, in :data:`CANDIDATE_ROLES` order.

    Returns:
        The candidates' bindings in surface order, and for N = 2 the binding of candidate 4 that
        holds the new element (None for N >= 3).
    """
    n = len(query)
    original = assignment(query)
    while True:  # candidate 1: same bindings, pairs reordered
        order = _permutation(rng, n)
        if not _is_identity(order):
            break
    preserving = [query[i] for i in order]
    attributes = [a for a, _ in preserving]
    objects = [o for _, o in preserving]
    taken = [original]

    def swap(permute_attributes: bool, permute_objects: bool) -> list[Binding]:
        for _ in range(_MAX_TRIES):
            pa = _permutation(rng, n) if permute_attributes else list(range(n))
            po = _permutation(rng, n) if permute_objects else list(range(n))
            if (permute_attributes and _is_identity(pa)) or (permute_objects and _is_identity(po)):
                continue
            pairs = [(attributes[pa[i]], objects[po[i]]) for i in range(n)]
            if assignment(pairs) not in taken:
                taken.append(assignment(pairs))
                return pairs
        raise RuntimeError(f"could not derive {n} distinct swap candidates")  # pragma: no cover

    attribute_swap = swap(permute_attributes=True, permute_objects=False)
    if n == 2:
        object_swap = [(attributes[0], objects[1]), (attributes[1], objects[0])]
        joint, replaced = _replacement_candidate(rng, query, vocab)
        return [preserving, attribute_swap, object_swap, joint], replaced
    object_swap = swap(permute_attributes=False, permute_objects=True)
    joint_swap = swap(permute_attributes=True, permute_objects=True)
    return [preserving, attribute_swap, object_swap, joint_swap], None


def _replacement_candidate(
    rng: random.Random, query: Sequence[Binding], vocab: Vocabulary
) -> tuple[list[Binding], Binding]:
    """N = 2 candidate 4: keep one query binding; in the other, replace the attribute or the
    object by a new element not in the query. The two pairs appear in random order."""
    keep, change = rng.sample(list(query), 2)
    if rng.random() < 0.5:
        used = {a for a, _ in query}
        new_attribute = rng.choice([a.name for a in vocab.attributes if a.name not in used])
        replaced = (new_attribute, change[1])
    else:
        used = {o for _, o in query}
        new_object = rng.choice([o for o in vocab.objects if o not in used])
        replaced = (change[0], new_object)
    pairs = [keep, replaced]
    rng.shuffle(pairs)
    return pairs, replaced


def make_item(
    item_id: str,
    role: Role,
    bindings: Sequence[Binding],
    realizations: dict[str, Realization],
    rng: random.Random,
) -> Item:
    """Render one query or candidate: text form, generation form, image prompt and flip flag."""
    generation = language.render([(realizations[a].text, o) for a, o in bindings])
    return Item(
        id=item_id,
        role=role,
        bindings=tuple(bindings),
        text=language.render(bindings),
        generation_text=generation,
        image_prompt=language.image_prompt(generation, len(bindings)),
        flip=rng.random() < 0.5,
    )


def build_mcq(
    rng: random.Random,
    vocab: Vocabulary,
    query: Sequence[Binding],
    realizations: dict[str, Realization],
    *,
    mcq_id: str,
    kind: Kind,
    chain: str | None = None,
    step: int | None = None,
    avoid_color_collisions: bool = True,
) -> MCQ:
    """Build one MCQ from its query bindings.

    ``realizations`` must cover the query's attributes; an attribute that only candidate 4 of an
    N = 2 MCQ introduces is realised here from ``rng``.
    """
    for _ in range(_COLLISION_TRIES if avoid_color_collisions else 1):
        candidates, replaced = derive_candidates(rng, query, vocab)
        used = {a: realizations[a] for a, _ in query}
        if replaced is not None and replaced[0] not in used:
            avoid = None
            if avoid_color_collisions:
                avoid = color_words(vocab, [*used, replaced[0]])
            used.update(_realize(rng, vocab, [replaced], avoid))
        if not (avoid_color_collisions and collides(used, vocab)):
            break  # an N = 2 joint swap whose new attribute collides is drawn again
    items = [make_item(f"{mcq_id}-q", "query", query, used, rng)]
    items += [
        make_item(f"{mcq_id}-c{i + 1}", role, bindings, used, rng)
        for i, (role, bindings) in enumerate(zip(CANDIDATE_ROLES, candidates, strict=True))
    ]
    return MCQ(
        id=mcq_id,
        n=len(query),
        kind=kind,
        chain=chain,
        step=step,
        query=items[0],
        candidates=tuple(items[1:]),
        realizations=dict(sorted(used.items())),
    )


def _sample_bindings(
    rng: random.Random, vocab: Vocabulary, n: int, exclude: Sequence[Binding] = ()
) -> list[Binding]:
    used_attributes = {a for a, _ in exclude}
    used_objects = {o for _, o in exclude}
    attributes = rng.sample([a.name for a in vocab.attributes if a.name not in used_attributes], n)
    objects = rng.sample([o for o in vocab.objects if o not in used_objects], n)
    return list(zip(attributes, objects, strict=True))


def _realize(
    rng: random.Random,
    vocab: Vocabulary,
    bindings: Sequence[Binding],
    avoid: frozenset[str] | None = None,
) -> dict[str, Realization]:
    """Realise each attribute; with ``avoid`` (colour words), redraw a realisation that contains
    one of them other than the attribute itself (a bounded number of times: some templates,
    like "green camouflage", cannot avoid their colour)."""
    out = {}
    for attribute, _ in bindings:
        spec = vocab.attribute(attribute)
        realization = spec.realize(rng, vocab.palette)
        blocked = (avoid or frozenset()) - {attribute}
        for _ in range(_COLLISION_TRIES if blocked else 0):
            if not _words(realization.text) & blocked:
                break
            realization = spec.realize(rng, vocab.palette)
        out[attribute] = realization
    return out


_COLLISION_TRIES = 200
_WORDS = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower()))


def color_words(vocab: Vocabulary, attributes: Iterable[str]) -> frozenset[str]:
    """The colour attributes among ``attributes`` (category ``color``; their names are words)."""
    return frozenset(a for a in attributes if vocab.attribute(a).category == "color")


def collides(realizations: dict[str, Realization], vocab: Vocabulary) -> bool:
    """True when a colour attribute among ``realizations`` appears as a word in another
    attribute's realisation (e.g. "yellow" and "yellow velvet")."""
    colors = color_words(vocab, realizations)
    return any(
        _words(realization.text) & (colors - {attribute})
        for attribute, realization in realizations.items()
    )


def has_color_collision(mcq: MCQ, vocab: Vocabulary) -> bool:
    """True when the MCQ has a colour collision (see :func:`collides`)."""
    return collides(dict(mcq.realizations), vocab)


def color_collisions(mcqs: Sequence[MCQ], vocab: Vocabulary) -> int:
    """How many MCQs have a colour collision (see :func:`has_color_collision`)."""
    return sum(has_color_collision(m, vocab) for m in mcqs)


def independent_mcq(
    seed: int, n: int, index: int, vocab: Vocabulary, avoid_color_collisions: bool = True
) -> MCQ:
    """The ``index``-th independently sampled MCQ with N = ``n``."""
    rng = random.Random(f"{seed}/independent/{n}/{index}")
    query, realizations = _draw(rng, vocab, n, (), {}, avoid_color_collisions)
    return build_mcq(
        rng,
        vocab,
        query,
        realizations,
        mcq_id=f"n{n:02d}-ind-{index:04d}",
        kind="independent",
        avoid_color_collisions=avoid_color_collisions,
    )


def _draw(
    rng: random.Random,
    vocab: Vocabulary,
    n: int,
    earlier: Sequence[Binding],
    fixed: dict[str, Realization],
    avoid_color_collisions: bool,
) -> tuple[list[Binding], dict[str, Realization]]:
    """``n`` new bindings (none sharing a word with ``earlier``) and their realisations. With
    ``avoid_color_collisions`` a draw whose realisations, with the ``fixed`` ones, still collide
    after redrawing the realisations is replaced by new bindings (a bounded number of times)."""
    shown = set().union(*(_words(r.text) for r in fixed.values()))
    for _ in range(_COLLISION_TRIES if avoid_color_collisions else 1):
        new = _sample_bindings(rng, vocab, n, exclude=earlier)
        avoid = None
        if avoid_color_collisions:
            if color_words(vocab, (a for a, _ in new)) & shown:
                continue  # a new colour an earlier realisation already shows
            avoid = color_words(vocab, [*fixed, *(a for a, _ in new)])
        realizations = _realize(rng, vocab, new, avoid)
        if not (avoid_color_collisions and collides({**fixed, **realizations}, vocab)):
            break
    return new, realizations


def nested_chain(
    seed: int,
    index: int,
    n_min: int,
    n_max: int,
    vocab: Vocabulary,
    avoid_color_collisions: bool = True,
) -> list[MCQ]:
    """The ``index``-th nested chain: MCQs for N = n_min..n_max where each step keeps every
    earlier binding (and its realisation), adds one new binding and reshuffles the pair order.

    With ``avoid_color_collisions`` a new binding that collides with an earlier realisation is
    redrawn (earlier realisations are fixed for the chain)."""
    chain_id = f"chain-{index:04d}"
    rng = random.Random(f"{seed}/nested/{index}")
    bindings, realizations = _draw(rng, vocab, n_min, (), {}, avoid_color_collisions)
    mcqs = []
    for step, n in enumerate(range(n_min, n_max + 1)):
        if step:
            new, realized = _draw(rng, vocab, 1, bindings, realizations, avoid_color_collisions)
            bindings = bindings + new
            realizations.update(realized)
            rng.shuffle(bindings)
        mcq_rng = random.Random(f"{seed}/nested/{index}/{step}")
        mcqs.append(
            build_mcq(
                mcq_rng,
                vocab,
                list(bindings),
                realizations,
                mcq_id=f"n{n:02d}-{chain_id}",
                kind="nested",
                chain=chain_id,
                step=step,
                avoid_color_collisions=avoid_color_collisions,
            )
        )
    return mcqs


def build_saber(options: SaberOptions, vocab: Vocabulary) -> list[MCQ]:
    """All MCQs for ``options``, ordered by N, then independent before nested, then index."""
    options.check()
    vocab.check_supports(options.n_min, options.n_max)
    half = options.per_n // 2
    chains = [
        nested_chain(
            options.seed, c, options.n_min, options.n_max, vocab, options.avoid_color_collisions
        )
        for c in range(half)
    ]
    mcqs: list[MCQ] = []
    for step, n in enumerate(range(options.n_min, options.n_max + 1)):
        mcqs += [
            independent_mcq(options.seed, n, i, vocab, options.avoid_color_collisions)
            for i in range(half)
        ]
        mcqs += [chain[step] for chain in chains]
    return mcqs


def generate_saber(
    out: str | Path,
    *,
    seed: int = 0,
    per_n: int = 200,
    n_min: int = 2,
    n_max: int = 10,
    vocab: str | Path | Vocabulary | None = None,
    overwrite: bool = False,
    avoid_color_collisions: bool = True,
) -> dict[str, Any]:
    """Generate a SABER directory: ``OUT/saber.jsonl`` and ``OUT/manifest.json``.

    Files are written to temporary names and renamed, so an interrupted run never leaves a
    half-written ``saber.jsonl``; the temporaries a killed run left behind are removed (a
    directory holding only those counts as empty). The directory is locked while it is written,
    so a second generator into it fails at once. Equal options give byte-identical files.

    Args:
        out: Output directory; it must be missing or empty unless ``overwrite`` is set (which
            replaces ``saber.jsonl`` and ``manifest.json`` and keeps other files).
        seed: Seed of every random choice.
        per_n: MCQs per N (even): half independent, half nested.
        n_min: Smallest object count (>= 2).
        n_max: Largest object count.
        vocab: A vocabulary directory with the packaged schema; None for the packaged one; or a
            loaded :class:`~bindkit.saber.vocab.Vocabulary` (e.g. a
            :func:`~bindkit.saber.vocab.subset_vocabulary`).
        overwrite: Replace ``saber.jsonl`` and ``manifest.json`` in a non-empty ``out``.
        avoid_color_collisions: See :class:`SaberOptions` (False: ``--allow-color-collisions``).

    Returns:
        The manifest that was written.

    Raises:
        BindkitError: an option is out of bounds (checked before any work), ``out`` is not
            empty, or cannot be written (a one-line :class:`~bindkit.errors.PathError`).

    Examples:
        >>> manifest = generate_saber("saber", seed=0)  # doctest: +SKIP
        >>> manifest["counts"]["mcqs"]  # doctest: +SKIP
        1800
    """
    options = SaberOptions(
        seed=seed,
        per_n=per_n,
        n_min=n_min,
        n_max=n_max,
        avoid_color_collisions=avoid_color_collisions,
    )
    options.check()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: exists and is not a directory; choose another path")
    check_can_create(out)
    _check_empty(out, overwrite)
    vocabulary = vocab if isinstance(vocab, Vocabulary) else load_vocabulary(vocab)
    mcqs = build_saber(options, vocabulary)
    data = jsonl_bytes(m.to_json() for m in mcqs)
    manifest = make_manifest(options, vocabulary, mcqs, data)
    with directory_lock(out, "bindkit saber generate"):
        # only writers holding the lock make these temporaries: any found now are a dead run's
        remove_stray_temps(out, _OUTPUTS)
        _check_empty(out, overwrite)
        atomic_write_bytes(out / SABER_FILE, data)
        atomic_write_text(out / MANIFEST_FILE, manifest_text(manifest))
    return manifest


_OUTPUTS = (SABER_FILE, MANIFEST_FILE)


def _check_empty(out: Path, overwrite: bool) -> None:
    """Refuse a non-empty ``out`` unless ``overwrite``; a killed run's temporaries do not count."""
    if overwrite or not out.is_dir():
        return
    ignored = {LOCK_NAME, *(p.name for p in stray_temps(out, _OUTPUTS))}
    if any(p.name not in ignored for p in out.iterdir()):
        raise BindkitError(
            f"--out {out}: directory exists and is not empty; pass --overwrite or choose another"
        )


def make_manifest(
    options: SaberOptions, vocabulary: Vocabulary, mcqs: Sequence[MCQ], data: bytes
) -> dict[str, Any]:
    from bindkit import __version__

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "bindkit_version": __version__,
        "seed": options.seed,
        "options": {k: v for k, v in asdict(options).items() if k != "seed"},
        "vocabulary": {
            "source": "builtin" if vocabulary.source == "builtin" else "custom",
            "sha256": vocabulary.sha256,
            "objects": len(vocabulary.objects),
            "attributes": len(vocabulary.attributes),
            "colors": len(vocabulary.palette),
        },
        "image_prompt_template_sha256": sha256_bytes(
            language.image_prompt_template().encode("utf-8")
        ),
        "counts": counts(mcqs),
        "color_collisions": color_collisions(mcqs, vocabulary),
        "files": {SABER_FILE: {"sha256": sha256_bytes(data), "bytes": len(data)}},
    }


def manifest_text(manifest: dict[str, Any]) -> str:
    import json

    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
