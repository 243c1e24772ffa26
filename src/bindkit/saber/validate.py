"""Re-check every SABER rule on a directory (ours or a user's) and list each violation.

Each violation names its rule (see :data:`RULES`), the MCQ id (or file and line) and what is wrong.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path, PurePosixPath
from typing import Any

from bindkit._io import sha256_file
from bindkit.errors import DataFormatError
from bindkit.saber import language
from bindkit.saber.build import assignment
from bindkit.saber.io import (
    CANDIDATE_ROLES,
    FORMAT_NAME,
    FORMAT_VERSION,
    MCQ,
    SABER_FILE,
    counts,
    drawn_for_sha256,
    image_set_sha256,
    mcq_from_json,
    read_manifest,
    saber_file,
    scan_lines,
)
from bindkit.saber.vocab import Vocabulary, load_vocabulary

RULES: dict[str, str] = {
    "format": "every line is a JSON object with the documented fields and types",
    "ids": "MCQ ids and item ids are unique",
    "roles": "the query has role 'query'; candidates follow the fixed role order",
    "n": "n is at least 2 and every item has exactly n bindings",
    "query": "the query pairs n distinct objects with n distinct attributes",
    "vocabulary": "every attribute and object is in the vocabulary",
    "binding-preserving": "candidate 1 has the query's bindings with the pairs reordered",
    "attribute-swap": "candidate 2 keeps candidate 1's object order and permutes its attributes "
    "into a different assignment",
    "object-swap": "candidate 3 keeps candidate 1's attribute order and permutes its objects "
    "into a different assignment",
    "joint-swap": "N >= 3: candidate 4 permutes both attributes and objects into a different "
    "assignment; N = 2: it keeps one query binding and replaces the object or the attribute "
    "of the other with a new element not in the query",
    "distinct": "N >= 3: the four candidates have pairwise distinct binding assignments",
    "text": "the text form is the conjunction of 'a/an attribute object' phrases",
    "realization": "each attribute has one realisation, a valid instance of its template "
    "(palette colors, two distinct colors, a listed variant)",
    "generation": "the generation form uses that one realisation of every attribute",
    "prompt": "the image prompt is built from the generation form",
    "image": "image is null or a relative path to an existing file inside the directory",
    "kind": "independent MCQs have no chain or step; nested MCQs have both",
    "chain": "a chain's steps are consecutive from the smallest N, and each step keeps every "
    "earlier binding (and its realisation) and adds exactly one",
    "reshuffle": "nested chains reshuffle the pair order at each step: no long chain keeps the "
    "order of its earlier pairs at every step, and no more steps keep it than chance allows",
    "complete": "every chain runs from the smallest to the largest N, and every N in between "
    "has the same number of MCQs",
    "balance": "for each N, half of the MCQs are independent and half nested",
    "manifest": "manifest.json matches the data (format, counts, file hash, image set hash); "
    "a rendered set has an image for every item, each recorded with the hash of the prompt it "
    "was drawn for, still the item's",
}


@dataclass(frozen=True)
class Violation:
    rule: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: [{self.rule}] {self.message}"


@dataclass
class ValidationReport:
    directory: Path
    mcqs: int = 0
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def by_rule(self) -> Counter[str]:
        return Counter(v.rule for v in self.violations)


def check_mcq(mcq: MCQ, vocab: Vocabulary | None) -> list[Violation]:
    """Every rule that concerns one MCQ on its own."""
    out: list[Violation] = []

    def bad(rule: str, message: str) -> None:
        out.append(Violation(rule, mcq.id, message))

    if mcq.query.role != "query":
        bad("roles", f"the query has role {mcq.query.role!r}")
    roles = tuple(c.role for c in mcq.candidates)
    if roles != CANDIDATE_ROLES:
        bad("roles", f"candidate roles are {list(roles)}, expected {list(CANDIDATE_ROLES)}")
    if mcq.n < 2:
        bad("n", f"n = {mcq.n}; SABER needs at least 2 bindings")
    for item in mcq.items:
        if len(item.bindings) != mcq.n:
            bad("n", f"{item.id} has {len(item.bindings)} bindings, n = {mcq.n}")
    if out:  # the structural rules below assume roles and sizes are right
        return out

    query = list(mcq.query.bindings)
    q_attrs, q_objs = mcq.query.attributes, mcq.query.objects
    if len(set(q_attrs)) != len(q_attrs) or len(set(q_objs)) != len(q_objs):
        bad("query", "objects and attributes must each be distinct")
        return out
    if vocab is not None:
        for item in mcq.items:
            for attribute, obj in item.bindings:
                if not vocab.has_attribute(attribute):
                    bad("vocabulary", f"{item.id}: unknown attribute {attribute!r}")
                if obj not in vocab.objects:
                    bad("vocabulary", f"{item.id}: unknown object {obj!r}")

    original = assignment(query)
    c1, c2, c3, c4 = mcq.candidates
    if assignment(c1.bindings) != original:
        bad("binding-preserving", "candidate 1 does not have the query's bindings")
    elif list(c1.bindings) == query:
        bad("binding-preserving", "candidate 1 keeps the query's pair order; it must reorder")
    for item, rule, kept, permuted in (
        (c2, "attribute-swap", "object", "attribute"),
        (c3, "object-swap", "attribute", "object"),
    ):
        if _column(item.bindings, kept) != _column(c1.bindings, kept):
            bad(rule, f"{item.id} must keep candidate 1's {kept} order")
        if sorted(_column(item.bindings, permuted)) != sorted(_column(c1.bindings, permuted)):
            bad(rule, f"{item.id} must permute the query's {permuted}s, not replace them")
        if assignment(item.bindings) == original:
            bad(rule, f"{item.id} has the query's binding assignment; it must swap bindings")
    if mcq.n == 2:
        _check_replacement(mcq, bad)
    else:
        if sorted(c4.attributes) != sorted(q_attrs) or sorted(c4.objects) != sorted(q_objs):
            bad("joint-swap", "candidate 4 must use exactly the query's attributes and objects")
        elif c4.attributes == c1.attributes or c4.objects == c1.objects:
            bad("joint-swap", "candidate 4 must permute both attributes and objects of candidate 1")
        if assignment(c4.bindings) == original:
            bad("joint-swap", "candidate 4 has the query's binding assignment")
        assignments = [assignment(c.bindings) for c in mcq.candidates]
        if len(set(assignments)) != len(assignments):
            bad("distinct", "two candidates have the same binding assignment")

    for item in mcq.items:
        if item.text != language.render(item.bindings):
            bad("text", f"{item.id}: {item.text!r} != {language.render(item.bindings)!r}")
    used = {a for item in mcq.items for a in item.attributes}
    if set(mcq.realizations) != used:
        missing, extra = sorted(used - set(mcq.realizations)), sorted(set(mcq.realizations) - used)
        bad(
            "realization",
            f"realizations must cover exactly the MCQ's attributes "
            f"(missing {missing}, extra {extra})",
        )
        return out
    if vocab is not None:
        for name, realization in mcq.realizations.items():
            if vocab.has_attribute(name):
                problem = vocab.attribute(name).check_realization(realization, vocab.palette)
                if problem:
                    bad("realization", f"{name!r}: {problem}")
    for item in mcq.items:
        expected = language.render([(mcq.realizations[a].text, o) for a, o in item.bindings])
        if item.generation_text != expected:
            bad("generation", f"{item.id}: {item.generation_text!r} != {expected!r}")
        elif item.image_prompt != language.image_prompt(item.generation_text, len(item.bindings)):
            bad("prompt", f"{item.id}: the image prompt is not built from the generation form")
    return out


def _column(bindings: Sequence[tuple[str, str]], which: str) -> tuple[str, ...]:
    return tuple(b[0] if which == "attribute" else b[1] for b in bindings)


def _check_replacement(mcq: MCQ, bad: Any) -> None:
    query = set(mcq.query.bindings)
    c4 = mcq.candidates[3]
    kept = [b for b in c4.bindings if b in query]
    others = [b for b in c4.bindings if b not in query]
    if len(kept) != 1 or len(others) != 1:
        bad("joint-swap", "N = 2: candidate 4 must keep exactly one query binding")
        return
    (lost,) = query - set(kept)
    new_attribute, new_object = others[0]
    q_attrs, q_objs = set(mcq.query.attributes), set(mcq.query.objects)
    attribute_replaced = new_object == lost[1] and new_attribute not in q_attrs
    object_replaced = new_attribute == lost[0] and new_object not in q_objs
    if not (attribute_replaced or object_replaced):
        bad(
            "joint-swap",
            "N = 2: candidate 4's second binding must replace exactly the object or the "
            f"attribute of {list(lost)} with a new element not in the query",
        )


def check_dataset(mcqs: Sequence[MCQ]) -> list[Violation]:
    """Rules across MCQs: unique ids, kinds, chains and the per-N balance."""
    out: list[Violation] = []
    seen: Counter[str] = Counter(m.id for m in mcqs)
    seen.update(item.id for m in mcqs for item in m.items)
    out += [Violation("ids", key, f"id used {n} times") for key, n in seen.items() if n > 1]

    chains: dict[str, list[MCQ]] = defaultdict(list)
    for m in mcqs:
        if m.kind == "independent" and (m.chain is not None or m.step is not None):
            out.append(Violation("kind", m.id, "an independent MCQ must have chain and step null"))
        elif m.kind == "nested":
            if m.chain is None or m.step is None:
                out.append(Violation("kind", m.id, "a nested MCQ needs a chain id and a step"))
            else:
                chains[m.chain].append(m)
    n_min = min((m.n for m in mcqs), default=2)
    n_max = max((m.n for m in mcqs), default=2)
    ordered = {c: sorted(members, key=lambda m: m.step or 0) for c, members in chains.items()}
    for chain_id, members in ordered.items():
        out += _check_chain(chain_id, members, n_min)
        if members[-1].n != n_max:
            message = f"stops at N = {members[-1].n}; the file's chains run to N = {n_max}"
            out.append(Violation("complete", chain_id, message))
    out += check_reshuffle(ordered)
    by_n = Counter(m.n for m in mcqs)
    expected = by_n.get(n_min, 0)
    for n in range(n_min, n_max + 1):
        if by_n.get(n, 0) != expected:
            message = f"{by_n.get(n, 0)} MCQs; N = {n_min} has {expected}"
            out.append(Violation("complete", f"N={n}", message))

    per_n: dict[int, Counter[str]] = defaultdict(Counter)
    for m in mcqs:
        per_n[m.n][m.kind] += 1
    for n, kinds in sorted(per_n.items()):
        if kinds["independent"] != kinds["nested"]:
            out.append(
                Violation(
                    "balance",
                    f"N={n}",
                    f"{kinds['independent']} independent vs {kinds['nested']} nested MCQs; "
                    "they must be equal",
                )
            )
    return out


# A chain keeps its earlier pairs' order at a step with k earlier pairs with chance 1/k!.
UNSHUFFLED_CHANCE = 1e-4  # a chain never reshuffled is rejected below this chance
EXCESS_SD = 5.0  # order-keeping steps beyond chance + this many standard deviations


def keeps_order(previous: MCQ, current: MCQ) -> bool:
    """Whether ``current`` lists ``previous``'s pairs in the same relative order."""
    earlier = set(previous.query.bindings)
    return [b for b in current.query.bindings if b in earlier] == list(previous.query.bindings)


def check_reshuffle(chains: dict[str, list[MCQ]]) -> list[Violation]:
    """The seed reshuffles the pair order at every chain step. A random shuffle keeps the
    order of k earlier pairs with chance 1/k!, so a single step proves nothing (bindkit's own
    default set has about 70 of 800 such steps). Rejected: a chain that keeps the order at every
    step when the chance of that is below UNSHUFFLED_CHANCE, and a file whose order-keeping
    steps exceed their expected number by more than EXCESS_SD standard deviations."""
    out: list[Violation] = []
    kept = expected = variance = 0.0
    for chain_id, members in chains.items():
        steps = [(a, b) for a, b in pairwise(members) if a.n >= 2 and b.n == a.n + 1]
        chances = [1 / math.factorial(a.n) for a, _ in steps]
        keeps = [keeps_order(a, b) for a, b in steps]
        if steps and all(keeps) and math.prod(chances) < UNSHUFFLED_CHANCE:
            message = f"keeps the order of its earlier pairs at all {len(steps)} steps"
            out.append(Violation("reshuffle", chain_id, message))
        kept += sum(keeps)
        expected += sum(chances)
        variance += sum(p * (1 - p) for p in chances)
    if kept > expected + EXCESS_SD * math.sqrt(variance) + 1:
        message = (
            f"{kept:.0f} chain steps keep the order of their earlier pairs; a reshuffle keeps "
            f"about {expected:.0f}"
        )
        out.append(Violation("reshuffle", "chains", message))
    return out


def _check_chain(chain_id: str, members: list[MCQ], n_min: int) -> list[Violation]:
    out: list[Violation] = []
    steps = [m.step for m in members]
    if steps != list(range(len(members))):
        out.append(
            Violation("chain", chain_id, f"steps are {steps}; expected 0..{len(members) - 1}")
        )
        return out
    if members[0].n != n_min:
        out.append(Violation("chain", chain_id, f"starts at N = {members[0].n}, not {n_min}"))
    for previous, current in pairwise(members):
        before, after = set(previous.query.bindings), set(current.query.bindings)
        if current.n != previous.n + 1 or not before <= after or len(after - before) != 1:
            out.append(
                Violation(
                    "chain",
                    current.id,
                    f"step {current.step} must keep all {len(before)} bindings of step "
                    f"{previous.step} and add exactly one",
                )
            )
        for attribute in {a for a, _ in before} & {a for a, _ in after}:
            if previous.realizations.get(attribute) != current.realizations.get(attribute):
                out.append(
                    Violation(
                        "chain",
                        current.id,
                        f"attribute {attribute!r} is realised unlike in step {previous.step}",
                    )
                )
    return out


def check_images(mcqs: Iterable[MCQ], directory: Path) -> list[Violation]:
    out = []
    root = directory.resolve()
    for m in mcqs:
        for item in m.items:
            if item.image is None:
                continue
            rel = PurePosixPath(item.image)
            if rel.is_absolute() or ".." in rel.parts:
                out.append(Violation("image", item.id, f"{item.image!r} must be relative to DIR"))
            elif not (root / rel).is_file():
                out.append(Violation("image", item.id, f"{item.image!r} does not exist"))
    return out


def check_manifest(
    manifest: dict[str, Any] | None, mcqs: Sequence[MCQ], directory: Path
) -> list[Violation]:
    if manifest is None:
        return []
    where = "manifest.json"
    out = []
    if manifest.get("format") != FORMAT_NAME or manifest.get("format_version") != FORMAT_VERSION:
        out.append(
            Violation(
                "manifest",
                where,
                f"format {manifest.get('format')!r} v{manifest.get('format_version')!r} is not "
                f"{FORMAT_NAME!r} v{FORMAT_VERSION}",
            )
        )
    if manifest.get("counts") != counts(mcqs):
        out.append(Violation("manifest", where, "counts do not match saber.jsonl"))
    options = manifest.get("options")
    if isinstance(options, dict) and mcqs:
        found = {
            "n_min": min(m.n for m in mcqs),
            "n_max": max(m.n for m in mcqs),
            "per_n": max(Counter(m.n for m in mcqs).values()),
        }
        for key, value in found.items():
            if key in options and options[key] != value:
                message = f"options.{key} is {options[key]!r}, the data has {value}"
                out.append(Violation("manifest", where, message))
    files = manifest.get("files")
    entry = files.get(SABER_FILE) if isinstance(files, dict) else None
    recorded = entry.get("sha256") if isinstance(entry, dict) else None
    if recorded is not None and recorded != sha256_file(directory / SABER_FILE):
        out.append(
            Violation(
                "manifest",
                where,
                "saber.jsonl changed after the manifest was written (hash differs)",
            )
        )
    images = manifest.get("images")
    if isinstance(images, dict):
        try:
            count, digest = image_set_sha256(directory, mcqs)
        except DataFormatError:
            return out  # a missing image is reported once, by the `image` rule
        if images.get("count") != count or images.get("sha256") != digest:
            out.append(
                Violation(
                    "manifest",
                    where,
                    f"images changed after rendering (manifest: {images.get('count')} images, "
                    f"found {count}, or their hash differs); render again",
                )
            )
        out += check_image_records(images, mcqs, directory)
    return out


def check_image_records(
    images: dict[str, Any], mcqs: Sequence[MCQ], directory: Path
) -> list[Violation]:
    """The images section against the data: every item has an image, and each image's record
    holds the hash of what it was drawn for, still the item's (one violation per problem kind,
    with the count and the first item; the set hash covers the files themselves)."""
    items = [(item, mcq) for mcq in mcqs for item in mcq.items]
    records = images.get("items")
    problems: dict[str, list[str]] = defaultdict(list)
    for item, mcq in items:
        if item.image is None:
            problems["have no image (render failed or not run); render again"].append(item.id)
            continue
        if not isinstance(records, dict):
            continue
        record = records.get(item.id)
        if not isinstance(record, dict):
            problems["have no record in the images section; render again"].append(item.id)
        elif record.get("prompt_sha256") != drawn_for_sha256(item, mcq):
            problems[
                "were drawn for other data (prompt hash differs); render again to redraw them"
            ].append(item.id)
    out = [
        Violation("manifest", ids[0], f"{len(ids)} of {len(items)} items {what}")
        for what, ids in problems.items()
    ]
    if not isinstance(records, dict) and any(item.image for item, _ in items):
        message = "the images section records no per-image hashes (an older render); render again"
        out.append(Violation("manifest", "manifest.json", message))
    return out


def manifest_vocabulary(directory: Path) -> Vocabulary:
    """The packaged vocabulary whose hash the manifest records (the default when there is no
    manifest or it records none)."""
    from bindkit.errors import VocabularyError
    from bindkit.saber.vocab import NAMED_VOCABULARIES

    default = load_vocabulary()
    manifest = read_manifest(directory) or {}
    recorded = manifest.get("vocabulary")
    digest = recorded.get("sha256") if isinstance(recorded, dict) else None
    if not isinstance(digest, str) or digest == default.sha256:
        return default
    for name in NAMED_VOCABULARIES:
        named = load_vocabulary(name)
        if named.sha256 == digest:
            return named
    raise VocabularyError(
        f"{directory / 'manifest.json'}: the set was built from a vocabulary that is not "
        f"packaged (sha256 {digest[:12]}); pass --vocab DIR with that vocabulary"
    )


def validate_saber(
    directory: str | Path, vocab: str | Path | Vocabulary | None = None
) -> ValidationReport:
    """Check every rule in :data:`RULES` on a SABER directory.

    Args:
        directory: A directory holding ``saber.jsonl`` (and usually ``manifest.json``).
        vocab: The vocabulary the data claims to use: a directory, a loaded
            :class:`Vocabulary`, or None for the one the manifest names (by its hash: the
            packaged default or a packaged named one such as ``shapes``).

    Returns:
        A report whose ``violations`` list every problem found (empty when the data is valid).

    Raises:
        DataFormatError: ``saber.jsonl`` is missing or ``manifest.json`` is unreadable.
        VocabularyError: no ``vocab`` given and the manifest names a vocabulary that is not
            packaged (the message says to pass ``--vocab DIR``).
    """
    directory = Path(directory)
    path = saber_file(directory)
    if isinstance(vocab, Vocabulary):
        vocabulary = vocab
    elif vocab is None:
        vocabulary = manifest_vocabulary(directory)
    else:
        vocabulary = load_vocabulary(vocab)
    report = ValidationReport(directory)
    mcqs: list[MCQ] = []
    for lineno, obj, error in scan_lines(path):
        where = f"{SABER_FILE}:{lineno}"
        if error is not None:
            report.violations.append(Violation("format", where, error))
            continue
        try:
            mcq = mcq_from_json(obj, where)
        except DataFormatError as exc:
            message = str(exc).removeprefix(where + ": ")
            report.violations.append(Violation("format", where, message))
            continue
        mcqs.append(mcq)
        report.violations += check_mcq(mcq, vocabulary)
    report.mcqs = len(mcqs)
    report.violations += check_dataset(mcqs)
    report.violations += check_images(mcqs, directory)
    report.violations += check_manifest(read_manifest(directory), mcqs, directory)
    return report
