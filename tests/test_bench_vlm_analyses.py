"""benchmarks/vlm_analyses.py: the vocabulary split, the checks on every row, the false-negative
count by hand, and each subcommand end to end at a tiny size on builtin:tiny-vlm."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bindkit.errors import BindkitError
from bindkit.saber.vocab import load_vocabulary, subset_vocabulary
from script_module import load_script


def _module() -> ModuleType:
    return load_script("benchmarks/vlm_analyses.py")


va = _module()
common = load_script("benchmarks/_vlm_common.py")  # what the three analyses share
gap = load_script("benchmarks/_vlm_gap.py")


def test_the_halves_are_disjoint_and_cover_the_vocabulary() -> None:
    shapes = load_vocabulary("shapes")
    a, b = common.split_vocabulary(shapes)

    def names(vocab: Any) -> set[str]:
        return {x.name for x in vocab.attributes}

    assert names(a).isdisjoint(names(b)) and set(a.objects).isdisjoint(b.objects)
    assert names(a) | names(b) == names(shapes) and set(a.objects) | set(b.objects) == set(
        shapes.objects
    )
    assert len(b.objects) == common.HALF_N_MAX <= len(a.objects)
    overlapping = subset_vocabulary(shapes, ["red", "wooden"], ["ring"], "C")
    with pytest.raises(BindkitError, match="share 'wooden'"):
        common.check_halves(b, overlapping)


def test_every_row_is_checked_against_its_half() -> None:
    from bindkit.demo.tiny_clip import triplet_rows
    from bindkit.saber.build import SaberOptions, build_saber

    a, b = common.split_vocabulary(load_vocabulary("shapes"))
    mcqs = build_saber(SaberOptions(seed=2, per_n=4, n_max=common.HALF_N_MAX), a)
    rows = triplet_rows(mcqs)
    assert common.check_vocabulary(rows, a, "NoOverlap") == len(rows) == 3 * len(mcqs)
    as_rows = [{"bindings": common.mcq_bindings(m)} for m in mcqs]
    assert common.check_vocabulary(as_rows, a, "evaluation") == len(mcqs)
    with pytest.raises(BindkitError, match=r"NoOverlap row 0 \(query\)"):
        common.check_vocabulary(rows, b, "NoOverlap")
    # one word of the other half, in the last text of the last row, is found
    last = json.loads(json.dumps(rows[-1]))
    last["bindings"]["negative"][-1][1] = b.objects[0]
    with pytest.raises(BindkitError, match=f"{b.objects[0]!r} is not in"):
        common.check_vocabulary([*rows[:-1], last], a, "NoOverlap")


def test_size_matched_draws_the_same_count_from_each_pool() -> None:
    pools = {"x": list(range(10)), "y": list(range(100, 107)), "z": list(range(200, 230))}
    chosen, count = common.size_matched(pools, 50, 2)
    assert count == 7 and {len(c) for c in chosen.values()} == {7}
    assert set(chosen["y"]) == set(pools["y"]) and set(chosen["x"]) <= set(pools["x"])
    assert common.size_matched(pools, 5, 2)[1] == 5
    assert common.size_matched(pools, 50, 2)[0] == chosen  # a fixed seed


def test_spread_and_binding_key() -> None:
    assert common.spread(list(range(10)), 4) == [0, 2, 5, 7]
    assert common.spread([1, 2], 4) == [1, 2]
    assert common.binding_key([("red", "cube"), ("blue", "cone")]) == "blue cone; red cube"


def _cluster(anchor: str, *negatives: str) -> dict[str, Any]:
    return {"pairs": [{"query": f"q-{p}", "positive": p} for p in (anchor, *negatives)]}


def test_false_negatives_counted_by_hand() -> None:
    truth = {"a.png": "red cube", "b.png": "red cube", "c.png": "blue cone", "d.png": "red cone"}
    clusters = [
        _cluster("a.png", "b.png", "c.png"),  # b shows a's binding set: false
        _cluster("c.png", "d.png"),
        _cluster("b.png", "a.png", "d.png", "c.png"),  # a: false
    ]
    assert common.false_negatives(clusters, truth) == (2, 6)
    assert common.false_negatives([], truth) == (0, 0)


def test_the_model_folder_and_the_layout_specs() -> None:
    from bindkit.embed.backends.builtin import builtin_dir

    folder = builtin_dir("tiny-vlm")
    specs = gap.gap_specs("builtin:tiny-vlm", Path("/x/adapter-raw"))
    assert specs["native"] == "builtin:tiny-vlm+adapter=/x/adapter-raw"
    assert specs["mllm"].startswith(f"mllm:{folder}+max_pixels=")
    assert specs["mllm"].endswith("+adapter=/x/adapter-raw")
    other = common.checkpoint_folder("builtin:tiny-vlm+weights=" + str(folder))
    assert other[0] == folder
    with pytest.raises(BindkitError, match="--adapter"):
        gap.gap_specs("builtin:tiny-vlm+adapter=/x", None)


def test_a_wrong_model_or_adapter_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert va.main(["overlap", "--model", "st:default", "--out", str(tmp_path)]) == 2
    assert "give builtin:tiny-vlm" in capsys.readouterr().err
    args = ["gap", "--out", str(tmp_path), "--adapter", str(tmp_path / "none")]
    assert va.main(args) == 2
    assert "no adapter_config.json" in capsys.readouterr().err
    assert not (tmp_path / "saber").exists()  # refused before any work


TINY = ["--eval-per-n", "2", "--threads", "1", "-q"]


@pytest.mark.slow
def test_overlap_then_gap_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--train-per-n", "4", "--train-mcqs", "6", "--steps", "2"]
    assert va.main(["overlap", "--out", str(out), *args, *TINY]) == 0
    record = json.loads((out / "overlap" / "overlap.json").read_text())
    assert list(record["table"]) == list(record["control"]) == ["base", *common.ARMS]
    assert record["counts"]["eval_mcqs"] == record["counts"]["control_mcqs"] == 12
    assert {record["counts"][arm]["triplets"] for arm in common.ARMS} == {18}
    assert all(0 <= v <= 1 for row in record["table"].values() for v in row.values())
    assert record["provenance"]["base_model"]["weights"]["weights"]
    scores = out / "overlap" / "scores" / "nooverlap.json"
    stamp = scores.stat().st_mtime_ns
    assert va.main(["overlap", "--out", str(out), *args, *TINY]) == 0
    assert scores.stat().st_mtime_ns == stamp  # reused, not recomputed

    adapter = out / "overlap" / "NoOverlap" / "run" / "adapter-raw"
    assert (
        va.main(["gap", "--out", str(out), "--pairs", "6", "--adapter", str(adapter), *TINY]) == 0
    )
    found = json.loads((out / "gap" / "gap.json").read_text())
    gap = found["layouts"]
    assert list(gap) == ["base", "adapter-raw"]
    expected = ["qwen3-vl-embedding (native)"] + [
        f"mllm {n}" for n in ("none", "user", "system", "hierarchical")
    ]
    assert list(gap["base"]) == expected
    assert gap["base"]["mllm none"]["modality_gap"] != gap["base"]["mllm system"]["modality_gap"]
    assert gap["base"]["mllm none"]["spec"].endswith("+layout=none")
    for name in expected:  # the adapter reaches every row, the layout rows included
        assert gap["adapter-raw"][name]["modality_gap"] != gap["base"][name]["modality_gap"]
    scores = found["scores"]
    assert list(scores["base"]) == list(scores["adapter-raw"]) == expected
    assert set(scores["base"]["mllm user"]["scores"]) == set(common.PAIRINGS)
    assert scores["base"]["mllm user"]["provenance"][0]["model"] == "base · mllm user"


def test_saha_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--pool-per-n", "2", "--k", "3", "--steps", "2", "--clusters-per-step", "2"]
    assert va.main(["saha", "--out", str(out), *args, *TINY]) == 0
    record = json.loads((out / "saha" / "saha.json").read_text())
    for mined in record["mining"].values():
        # the ground-truth count agrees with bindkit mine's label-based diagnostics
        assert mined["negatives"] == mined["diagnostics"]["labelled_negatives"]
        assert mined["false_negative_rate"] == pytest.approx(
            mined["diagnostics"]["false_negative_rate"]
        )
    assert record["mining"]["SaHa + label filter"]["false_negatives"] == 0
    assert record["mining"]["hard negatives (top-k)"]["false_negatives"] > 0
    assert list(record["table"]) == ["base", *common.TRAINED]
    assert (out / "saha" / "saha.md").read_text().count("|") > 20


def test_the_mllm_system_layout_with_the_models_own_prompt_is_the_native_model() -> None:
    """What the layout rows of ``gap`` change is the prompt alone: the ``mllm`` family on the
    tiny-vlm folder, system layout with tiny-vlm's own system prompt, gives its vectors."""
    import numpy as np
    from PIL import Image

    from bindkit.embed.prompts import QWEN3_VL_EMBEDDING_DEFAULT
    from bindkit.embed.registry import load_embedder

    specs = gap.gap_specs(common.MODEL, None)
    native = load_embedder(specs["native"], cache=False, progress=False)
    mllm = load_embedder(
        f"{specs['mllm']}+layout=system+system_prompt={QWEN3_VL_EMBEDDING_DEFAULT}",
        cache=False,
        progress=False,
    )
    other = load_embedder(f"{specs['mllm']}+layout=system", cache=False, progress=False)
    texts = ["A red cube and a blue cone.", "A blue cube and a red cone."]
    # the size of a rendered scene: max_pixels (16,384: 128 x 128) decides its visual tokens
    images = [Image.new("RGB", (256, 256), c) for c in ((200, 30, 30), (30, 30, 200))]
    for image in images:
        image.paste((240, 240, 240), (0, 0, 128, 96))
    for role in ("query", "document"):
        a, b = native.embed_texts(texts, role=role), mllm.embed_texts(texts, role=role)
        np.testing.assert_allclose(a, b, atol=1e-6)
        a, b = native.embed_images(images, role=role), mllm.embed_images(images, role=role)
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert not np.allclose(native.embed_texts(texts), other.embed_texts(texts), atol=1e-3)
