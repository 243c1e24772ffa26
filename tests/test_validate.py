"""``validate`` on directories with one planted violation of each rule."""

from __future__ import annotations

import itertools
import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bindkit.errors import DataFormatError
from bindkit.saber.language import image_prompt, render
from bindkit.saber.validate import RULES, validate_saber
from bindkit.saber.vocab import load_vocabulary

Row = dict[str, Any]
EXERCISED: set[str] = set()


def rerender(row: Row) -> None:
    """Recompute every item's strings from its bindings, so only the planted rule breaks."""
    real = row["realizations"]
    for item in [row["query"], *row["candidates"]]:
        pairs = [tuple(b) for b in item["bindings"]]
        item["text"] = render(pairs)
        item["generation_text"] = render([(real[a]["text"], o) for a, o in pairs])
        item["image_prompt"] = image_prompt(item["generation_text"], len(pairs))


def pick(rows: list[Row], **where: Any) -> Row:
    return next(r for r in rows if all(r[k] == v for k, v in where.items()))


def plant(src: Path, dst: Path, mutate: Callable[[list[Row]], Any]) -> None:
    shutil.copytree(src, dst)
    rows = [json.loads(line) for line in (dst / "saber.jsonl").read_text().splitlines()]
    result = mutate(rows)
    lines = result if isinstance(result, list) and result and isinstance(result[0], str) else None
    text = "\n".join(lines) if lines else "\n".join(json.dumps(r) for r in rows)
    (dst / "saber.jsonl").write_text(text + "\n")


def _set_c1_to_query(rows: list[Row]) -> None:
    row = pick(rows, n=3, kind="independent")
    row["candidates"][0]["bindings"] = row["query"]["bindings"]
    rerender(row)


def _reverse_c2(rows: list[Row]) -> None:
    row = pick(rows, n=4, kind="independent")
    row["candidates"][1]["bindings"].reverse()
    rerender(row)


def _c3_equals_c1(rows: list[Row]) -> None:
    row = pick(rows, n=2, kind="independent")
    row["candidates"][2]["bindings"] = row["candidates"][0]["bindings"]
    rerender(row)


def _c4_like_c2(rows: list[Row]) -> None:
    row = pick(rows, n=4, kind="independent")
    row["candidates"][3]["bindings"] = row["candidates"][1]["bindings"]
    rerender(row)


def _n2_c4_replaces_both(rows: list[Row]) -> None:
    """Candidate 4 keeps one binding but replaces both elements of the other."""
    row = pick(rows, n=2, kind="independent")
    mentioned = json.dumps(row)
    new_attr = next(a for a in ("sandy", "furry", "spiky", "rusty") if a not in mentioned)
    new_obj = next(o for o in ("kayak", "teapot", "toothbrush") if o not in mentioned)
    row["candidates"][3]["bindings"] = [row["query"]["bindings"][0], [new_attr, new_obj]]
    used = {a for item in [row["query"], *row["candidates"]] for a, _ in item["bindings"]}
    row["realizations"] = {k: v for k, v in row["realizations"].items() if k in used}
    row["realizations"][new_attr] = {"text": new_attr, "slots": {}}
    rerender(row)


def _c4_same_assignment_as_c2(rows: list[Row]) -> None:
    row = pick(rows, n=4, kind="independent")
    row["candidates"][3]["bindings"] = list(reversed(row["candidates"][1]["bindings"]))
    rerender(row)


def _equal_two_colors(rows: list[Row]) -> None:
    vocab = load_vocabulary()
    for row in rows:
        for name, real in row["realizations"].items():
            if row["kind"] == "independent" and vocab.attribute(name).type == "two-color":
                real["slots"]["color2"] = real["slots"]["color1"]
                real["text"] = vocab.attribute(name).template.format(**real["slots"])
                rerender(row)
                return
    raise AssertionError("no two-color attribute in the fixture")


def _realization_off_template(rows: list[Row]) -> None:
    row = pick(rows, n=3, kind="independent")
    name = next(iter(row["realizations"]))
    row["realizations"][name]["text"] += " shiny"
    rerender(row)


def _generation_uses_basic_form(rows: list[Row]) -> None:
    for row in rows:
        item = row["candidates"][1]
        if item["generation_text"] != item["text"]:
            item["generation_text"] = item["text"]
            item["image_prompt"] = image_prompt(item["text"], len(item["bindings"]))
            return
    raise AssertionError("no item whose generation form differs")


def _bad_prompt(rows: list[Row]) -> None:
    rows[0]["query"]["image_prompt"] = "A photo of things."


def _escaping_image(rows: list[Row]) -> None:
    rows[0]["query"]["image"] = "../outside.png"
    rows[1]["query"]["image"] = "images/missing.png"


def _independent_with_chain(rows: list[Row]) -> None:
    pick(rows, kind="independent")["chain"] = "chain-9999"


def _chain_gap(rows: list[Row]) -> None:
    pick(rows, kind="nested", step=2)["step"] = 7


def _chain_realization_changes(rows: list[Row]) -> None:
    """Give an attribute of step 1 another valid realisation than it has in step 0."""
    vocab = load_vocabulary()
    first = pick(rows, kind="nested", step=0)
    second = pick(rows, kind="nested", step=1, chain=first["chain"])
    for name, _ in first["query"]["bindings"]:
        attribute = vocab.attribute(name)
        if attribute.type == "standalone":
            continue
        rng = random.Random(0)
        current = first["realizations"][name]["text"]
        while (other := attribute.realize(rng, vocab.palette)).text == current:
            pass
        second["realizations"][name] = other.to_json()
        rerender(second)
        return
    raise AssertionError("step 0 of the first chain has only standalone attributes")


def _drop_one_independent(rows: list[Row]) -> None:
    rows.remove(pick(rows, n=3, kind="independent"))


def _edit_after_manifest(rows: list[Row]) -> None:
    rows[0]["query"]["flip"] = not rows[0]["query"]["flip"]


def _duplicate_id(rows: list[Row]) -> None:
    rows[1]["id"] = rows[0]["id"]


def _swap_candidate_roles(rows: list[Row]) -> None:
    c = rows[0]["candidates"]
    c[1], c[2] = c[2], c[1]


def _wrong_n(rows: list[Row]) -> None:
    pick(rows, n=2, kind="independent")["n"] = 3


def _duplicate_object(rows: list[Row]) -> None:
    row = pick(rows, n=3, kind="independent")
    row["query"]["bindings"][1][1] = row["query"]["bindings"][0][1]
    rerender(row)


def _unknown_object(rows: list[Row]) -> None:
    row = pick(rows, n=3, kind="independent")
    old = row["query"]["bindings"][0][1]
    for item in [row["query"], *row["candidates"]]:
        for binding in item["bindings"]:
            if binding[1] == old:
                binding[1] = "spaceship"
    rerender(row)


def _wrong_text(rows: list[Row]) -> None:
    rows[0]["candidates"][0]["text"] = rows[0]["candidates"][0]["text"].replace(" and a", " and")


def _corrupt_line(rows: list[Row]) -> list[str]:
    lines = [json.dumps(r) for r in rows]
    lines[2] = lines[2][: len(lines[2]) // 2]
    return lines


def _missing_field(rows: list[Row]) -> None:
    del rows[0]["candidates"][2]["generation_text"]


CASES: list[tuple[str, Callable[[list[Row]], Any], set[str]]] = [
    ("format", _corrupt_line, {"format", "balance", "manifest", "chain", "complete"}),
    ("format", _missing_field, {"format", "balance", "manifest", "complete"}),
    ("ids", _duplicate_id, {"ids", "manifest"}),
    ("roles", _swap_candidate_roles, {"roles", "manifest"}),
    ("n", _wrong_n, {"n", "balance", "manifest", "complete"}),
    ("query", _duplicate_object, {"query", "manifest"}),
    ("vocabulary", _unknown_object, {"vocabulary", "manifest"}),
    (
        "binding-preserving",
        _set_c1_to_query,
        {"binding-preserving", "attribute-swap", "object-swap", "manifest"},
    ),
    ("attribute-swap", _reverse_c2, {"attribute-swap", "manifest"}),
    ("object-swap", _c3_equals_c1, {"object-swap", "manifest"}),
    ("joint-swap", _c4_like_c2, {"joint-swap", "distinct", "manifest"}),
    ("joint-swap", _n2_c4_replaces_both, {"joint-swap", "manifest"}),
    ("distinct", _c4_same_assignment_as_c2, {"distinct", "manifest"}),
    ("text", _wrong_text, {"text", "manifest"}),
    ("realization", _equal_two_colors, {"realization", "manifest"}),
    ("realization", _realization_off_template, {"realization", "manifest"}),
    ("generation", _generation_uses_basic_form, {"generation", "manifest"}),
    ("prompt", _bad_prompt, {"prompt", "manifest"}),
    ("image", _escaping_image, {"image", "manifest"}),
    ("kind", _independent_with_chain, {"kind", "manifest"}),
    ("chain", _chain_gap, {"chain", "manifest", "complete"}),
    ("chain", _chain_realization_changes, {"chain", "manifest"}),
    ("balance", _drop_one_independent, {"balance", "manifest", "complete"}),
    ("manifest", _edit_after_manifest, {"manifest"}),
]


def test_the_fixture_is_valid(small_saber: Path) -> None:
    report = validate_saber(small_saber)
    assert report.ok, report.violations
    assert report.mcqs == 16


@pytest.mark.parametrize(("rule", "mutate", "allowed"), CASES, ids=[c[1].__name__ for c in CASES])
def test_planted_violation_is_reported(
    small_saber: Path,
    tmp_path: Path,
    rule: str,
    mutate: Callable[[list[Row]], Any],
    allowed: set[str],
) -> None:
    plant(small_saber, tmp_path / "d", mutate)
    report = validate_saber(tmp_path / "d")
    rules = {v.rule for v in report.violations}
    assert rule in rules, report.violations
    assert rules <= allowed, report.violations
    for violation in report.violations:
        assert violation.where and "\n" not in str(violation)
    EXERCISED.add(rule)


@pytest.fixture(scope="module")
def long_chains(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """N = 2..8 with two chains: long enough that a never-reshuffled chain is no accident."""
    from bindkit.saber.build import generate_saber

    out = tmp_path_factory.mktemp("saber") / "long"
    generate_saber(out, seed=3, per_n=4, n_min=2, n_max=8)
    return out


def _unshuffle_chains(rows: list[Row]) -> None:
    """S3: every chain step keeps its earlier pairs in order and appends the new pair."""
    previous: dict[str, list[Any]] = {}
    for row in sorted((r for r in rows if r["kind"] == "nested"), key=lambda r: r["step"]):
        query = row["query"]["bindings"]
        earlier = previous.get(row["chain"], [])
        row["query"]["bindings"] = earlier + [b for b in query if b not in earlier]
        previous[row["chain"]] = row["query"]["bindings"]
        rerender(row)


def _cut_a_chain(rows: list[Row]) -> list[Row]:
    """S4: chain-0001 stops at N = 6, and one independent MCQ of N = 7 and 8 goes too."""
    cut = [r for r in rows if r.get("chain") == "chain-0001" and r["n"] > 6]
    cut += [pick(rows, n=n, kind="independent") for n in (7, 8)]
    return [r for r in rows if r not in cut]


LONG_CASES: list[tuple[str, Callable[[list[Row]], Any], set[str]]] = [
    (
        "reshuffle",
        _unshuffle_chains,
        {
            "reshuffle",
            "binding-preserving",
            "attribute-swap",
            "object-swap",
            "distinct",
            "joint-swap",
            "manifest",
        },
    ),
    ("complete", _cut_a_chain, {"complete", "manifest"}),
]


@pytest.mark.parametrize(
    ("rule", "mutate", "allowed"), LONG_CASES, ids=[c[1].__name__ for c in LONG_CASES]
)
def test_planted_chain_violation_is_reported(
    long_chains: Path,
    tmp_path: Path,
    rule: str,
    mutate: Callable[[list[Row]], Any],
    allowed: set[str],
) -> None:
    assert validate_saber(long_chains).ok
    destination = tmp_path / "d"
    shutil.copytree(long_chains, destination)
    rows = [json.loads(x) for x in (destination / "saber.jsonl").read_text().splitlines()]
    rows = mutate(rows) or rows
    (destination / "saber.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = validate_saber(destination)
    rules = {v.rule for v in report.violations}
    assert rule in rules and rules <= allowed, report.violations
    (destination / "manifest.json").unlink()  # the rules hold without a manifest too
    assert rule in {v.rule for v in validate_saber(destination).violations}


def test_reshuffle_accepts_chance_order_keeping(tmp_path: Path) -> None:
    """Chains that keep their order at some steps by chance (N = 2..10, 10 chains) pass."""
    from bindkit.saber.build import generate_saber
    from bindkit.saber.io import mcq_from_json
    from bindkit.saber.validate import check_reshuffle, keeps_order

    generate_saber(tmp_path / "s", seed=1, per_n=20, n_min=2, n_max=10)
    assert validate_saber(tmp_path / "s").ok
    rows = [json.loads(x) for x in (tmp_path / "s" / "saber.jsonl").read_text().splitlines()]
    mcqs = [mcq_from_json(r, "x") for r in rows if r["kind"] == "nested"]
    chains: dict[str, list[Any]] = {}
    for m in sorted(mcqs, key=lambda m: m.step or 0):
        chains.setdefault(m.chain or "", []).append(m)
    kept = sum(keeps_order(a, b) for c in chains.values() for a, b in itertools.pairwise(c))
    assert kept > 0 and check_reshuffle(chains) == []  # some steps keep order by chance


@pytest.mark.slow
def test_the_default_set_validates(tmp_path: Path) -> None:
    from bindkit.saber.build import generate_saber

    generate_saber(tmp_path / "s", seed=0)
    assert validate_saber(tmp_path / "s").ok


def test_every_rule_has_a_planted_case() -> None:
    assert {c[0] for c in CASES} | {c[0] for c in LONG_CASES} == set(RULES)


def test_violation_names_the_mcq(small_saber: Path, tmp_path: Path) -> None:
    plant(small_saber, tmp_path / "d", _set_c1_to_query)
    report = validate_saber(tmp_path / "d")
    (violation,) = [v for v in report.violations if v.rule == "binding-preserving"]
    assert violation.where.startswith("n03-ind-")
    corrupt = tmp_path / "c"
    plant(small_saber, corrupt, _corrupt_line)
    (fmt,) = [v for v in validate_saber(corrupt).violations if v.rule == "format"]
    assert fmt.where == "saber.jsonl:3" and "corrupt JSON" in fmt.message


def test_missing_directory_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"saber\.jsonl: not found"):
        validate_saber(tmp_path)


def test_every_realisation_contains_its_attribute_word() -> None:
    """No "mirror-chrome" for mirrored: the generation form names the attribute."""
    vocab = load_vocabulary()
    rng = random.Random(0)
    for attribute in vocab.attributes:
        for _ in range(30):
            text = attribute.realize(rng, vocab.palette).text
            assert attribute.name in text, (attribute.name, text)
