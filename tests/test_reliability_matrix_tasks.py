# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""The turn-4 reliability review's benchmark-task cells (oxford5k, paris6k, sculptures6k, instre,
ilias, pods, mmeb_v2) as matrix rows: each runs ``bindkit eval`` in-process with
``builtin:tiny-clip`` on a tiny folder in the task's published layout, edited as the review's
repro edits it, and must end in one ``bindkit: error:`` line naming the file (exit 2), before any
model loads, or in a correct result (exit 0).

The folders come from the task tests' own builders (tests/test_task_*.py, tests/test_tasks_*.py),
built once per module under ``base/fx``; each row copies its folder to ``d`` and applies its edit.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from _matrix import C, Case, Cell, Outcome, check_outcome, run_matrix_case

sio = pytest.importorskip("scipy.io")
pytest.importorskip("PIL.Image")

# -------------------------------------------------------------------------------------------
# fixtures: the published layouts, then one edit per row


def _instre_mat(
    path: Path, gnd: object, qimlist: list[str] | None = None, imlist: list[str] | None = None
) -> None:
    """gnd_instre.mat with the fixture's lists and ``gnd`` as given."""
    from test_task_instre import IMLIST, QIMLIST, _cells

    sio.savemat(
        path,
        {
            "qimlist": _cells(QIMLIST if qimlist is None else qimlist),
            "imlist": _cells(IMLIST if imlist is None else imlist),
            "gnd": gnd,
        },
    )


def _instre_gnd(
    box_of: Callable[[int], list[float]], positives: list[list[float]] | None = None
) -> np.ndarray:
    """A gnd struct array: the fixture's positives (or ``positives``) and a box per query."""
    from test_task_instre import IMLIST, LISTED, QIMLIST

    gnd = np.zeros((1, len(QIMLIST)), dtype=[("ok", object), ("bbx", object)])
    for i, q in enumerate(QIMLIST):
        ok = [IMLIST.index(p) + 1 for p in LISTED[q]] if positives is None else positives[i]
        gnd[0, i] = (np.array([ok], np.float64), np.array([box_of(i)], np.float64))
    return gnd


def _inside(i: int) -> list[float]:
    return [2.0, 3.0, 8.0, 9.0]


def _query_file(d: Path, stem: str, line: str) -> None:
    (d / "gt" / f"{stem}_1_query.txt").write_text(line + "\n")


def _empty_positives(d: Path) -> None:
    for f in [*(d / "gt").glob("*_good.txt"), *(d / "gt").glob("*_ok.txt")]:
        f.write_text("")


def _ilias_query(d: Path) -> Path:
    return next((d / "ilias_core").glob("*/query/Q000_00.jpg"))


def _remove(*folders: Path) -> None:
    for folder in folders:
        shutil.rmtree(folder)


def _mmeb_row(d: Path, row: dict[str, object]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(
        pa.Table.from_pylist([row]),
        d / "ziyjiang/MMEB_Test_Instruct/ImageNet-1K/test-00000-of-00001.parquet",
    )


EDITS: dict[str, Callable[[Path], None]] = {
    # oxford5k: one query all_souls_1, 8x8 images in oxbuild_images/
    "ox_nan": lambda d: _query_file(d, "all_souls", "oxc1_all_souls_q nan nan nan nan"),
    "ox_inf": lambda d: _query_file(d, "all_souls", "oxc1_all_souls_q 0 0 inf inf"),
    "ox_outside": lambda d: _query_file(d, "all_souls", "oxc1_all_souls_q 1000 1000 2000 2000"),
    "ox_inverted": lambda d: _query_file(d, "all_souls", "oxc1_all_souls_q 40 40 5 5"),
    "ox_negative": lambda d: _query_file(d, "all_souls", "oxc1_all_souls_q -100 -100 -50 -50"),
    "ox_huge": lambda d: _query_file(d, "all_souls", "oxc1_all_souls_q 0 0 1e12 1e12"),
    "ox_zero": lambda d: _query_file(d, "all_souls", "oxc1_all_souls_q 3 3 3 3"),
    "gt_empty": _empty_positives,
    "ox_unreadable": lambda d: (d / "oxbuild_images" / "all_souls_b1.jpg").write_bytes(
        b"not a jpeg"
    ),
    "ox_zero_byte": lambda d: (d / "oxbuild_images" / "all_souls_b1.jpg").write_bytes(b""),
    # paris6k: images nested by landmark under paris/
    "pa_nan": lambda d: _query_file(d, "all_souls", "all_souls_q nan nan nan nan"),
    "pa_outside": lambda d: _query_file(d, "all_souls", "all_souls_q 1000 1000 2000 2000"),
    "pa_inverted": lambda d: _query_file(d, "all_souls", "all_souls_q 40 40 5 5"),
    "pa_unreadable": lambda d: (d / "paris" / "all_souls" / "all_souls_b1.jpg").write_bytes(
        b"not a jpeg"
    ),
    # sculptures6k: images/
    "sc_nan": lambda d: _query_file(d, "moore", "moore_q nan nan nan nan"),
    "sc_outside": lambda d: _query_file(d, "moore", "moore_q 1000 1000 2000 2000"),
    "sc_inverted": lambda d: _query_file(d, "moore", "moore_q 40 40 5 5"),
    # instre: gnd_instre.mat, 10x10 images
    "is_zero_byte": lambda d: (d / "gnd_instre.mat").write_bytes(b""),
    "is_text": lambda d: (d / "gnd_instre.mat").write_text("not a mat file\n"),
    "is_numeric_gnd": lambda d: _instre_mat(d / "gnd_instre.mat", np.arange(3.0).reshape(1, 3)),
    "is_nan_box": lambda d: _instre_mat(
        d / "gnd_instre.mat", _instre_gnd(lambda i: [np.nan] * 4 if i == 0 else _inside(i))
    ),
    "is_absurd_positives": lambda d: _instre_mat(
        d / "gnd_instre.mat", _instre_gnd(_inside, [[1e12, -5], [5], [6]])
    ),
    "is_outside_box": lambda d: _instre_mat(
        d / "gnd_instre.mat",
        _instre_gnd(lambda i: [100.0, 100.0, 200.0, 200.0] if i == 1 else _inside(i)),
    ),
    "is_inverted_box": lambda d: _instre_mat(
        d / "gnd_instre.mat", _instre_gnd(lambda i: [8.0, 9.0, 2.0, 3.0] if i == 0 else _inside(i))
    ),
    "is_empty_lists": lambda d: _instre_mat(
        d / "gnd_instre.mat", np.zeros((1, 0), dtype=[("ok", object), ("bbx", object)]), [], []
    ),
    # ilias: image_ids/, ilias_core/ (10x8 query photos with _bbox.txt), taxonomy.json
    "il_query_ids_latin1": lambda d: (d / "image_ids" / "image_query_ids.txt").write_bytes(
        b"amber_a_000/query/Q\xe9.jpg,0\n"
    ),
    "il_bad_gzip": lambda d: (d / "image_ids" / "distractor_ids.txt.gz").write_bytes(b"notgzip\n"),
    "il_box_beyond": lambda d: (
        _ilias_query(d).with_name("Q000_00_bbox.txt").write_text("5000 5000 10 10\n")
    ),
    "il_box_negative": lambda d: (
        _ilias_query(d).with_name("Q000_00_bbox.txt").write_text("1 1 -5 -5\n")
    ),
    "il_text_latin1": lambda d: next((d / "ilias_core").glob("*/query/T000.txt")).write_bytes(
        b"obj\xe9ct\n"
    ),
    "il_taxonomy_leaf": lambda d: (d / "taxonomy.json").write_text('{"toy": {"x": {"lego": 5}}}'),
    "il_taxonomy_other": lambda d: (d / "taxonomy.json").write_text(
        '{"toy": {"x": {"other": ["amber_a_000"]}}}'
    ),
    "il_duplicate_query": lambda d: (d / "image_ids" / "image_query_ids.txt").write_text(
        "amber_a_000/query/Q000_00.jpg,0\namber_a_000/query/Q000_00.jpg,0\n"
    ),
    # pods: pods_info.json, train/ and test/ per object
    "po_no_test_photos": lambda d: shutil.rmtree(d / "test" / "mugs_red"),
    "po_no_test": lambda d: shutil.rmtree(d / "test"),
    "po_two_without": lambda d: _remove(d / "test" / "mugs_red", d / "test" / "mugs_blue"),
    # mmeb_v2: ImageNet-1K with scalars where lists belong
    "mv_types": lambda d: _mmeb_row(
        d,
        {
            "qry_inst": 5,
            "qry_text": None,
            "qry_img_path": None,
            "tgt_inst": None,
            "tgt_text": "abc",
            "tgt_img_path": "x",
        },
    ),
    "mv_string_lists": lambda d: _mmeb_row(
        d,
        {
            "qry_inst": "<|image_1|> Represent",
            "qry_text": "",
            "qry_img_path": "ImageNet-1K/0.png",
            "tgt_inst": "",
            "tgt_text": "abc",
            "tgt_img_path": "x",
        },
    ),
}
LAYOUTS = ("ox", "paris", "sculp", "instre", "ilias", "pods", "mmeb_v2")


def _build(cell: Cell, name: str) -> None:
    """``ox`` … ``mmeb_v2``: the published layout copied to ``d``; any other name: its edit."""
    if name in LAYOUTS:
        shutil.copytree(cell.base / "fx" / name, cell.dir / "d")
    else:
        EDITS[name](cell.dir / "d")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: every layout under ``fx/``, by the task tests' own builders."""
    from test_task_instre import _write_release as write_instre
    from test_task_oxford_paris import _write_release as write_gt
    from test_tasks_ilias import _write_ilias
    from test_tasks_mmeb_v2 import image_fixture
    from test_tasks_pods import _write_pods

    fx = tmp_path_factory.mktemp("matrix-tasks") / "fx"
    write_gt(fx / "ox", fx / "ox" / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    write_gt(fx / "paris", fx / "paris" / "paris", "all_souls", "", nested=True)
    write_gt(fx / "sculp", fx / "sculp" / "images", "moore", "", nested=False)
    (fx / "instre").mkdir(parents=True)
    write_instre(fx / "instre")
    _write_ilias(fx / "ilias", np.random.default_rng(0))
    _write_pods(fx / "pods")
    image_fixture(fx / "mmeb_v2")
    return fx.parent


# -------------------------------------------------------------------------------------------
# rows

E = "eval -q --no-report --model builtin:tiny-clip --out r --data d --task"
CROP = "--task-option crop=true"
ROWS: list[Case] = [
    # oxford5k
    C(
        "t4_ox09",
        f"{E} oxford5k",
        "ox ox_nan",
        2,
        "d/gt/all_souls_1_query.txt: query all_souls_1: box nan nan nan nan is not finite",
    ),
    C(
        "t4_ox10",
        f"{E} oxford5k",
        "ox ox_inf",
        2,
        "query all_souls_1: box 0 0 inf inf is not finite",
    ),
    C(
        "t4_ox11",
        f"{E} oxford5k",
        "ox ox_outside",
        2,
        "query all_souls_1: box 1000 1000 2000 2000 lies wholly outside its 8x8 image",
    ),
    C(
        "t4_ox12",
        f"{E} oxford5k",
        "ox ox_inverted",
        2,
        "query all_souls_1: box 40 40 5 5 is inverted (x1 > x2 or y1 > y2)",
    ),
    C(
        "t4_ox13",
        f"{E} oxford5k",
        "ox ox_negative",
        2,
        "box -100 -100 -50 -50 lies wholly outside the image (left of or above it)",
    ),
    C("t4_ox14", f"{E} oxford5k", "ox ox_huge", 0, "builtin:tiny-clip"),  # clipped to the image
    C("t4_ox16", f"{E} oxford5k", "ox gt_empty", 2, "d/gt: no query has a good or ok image"),
    C(
        "t4_ox19",
        f"{E} oxford5k",
        "ox ox_unreadable",
        0,
        "oxford5k: 1 files are not readable images and are left out (first: all_souls_b1.jpg)",
    ),
    C(
        "t4_ox29",
        f"{E} oxford5k",
        "ox ox_zero_byte",
        0,
        "oxford5k: 1 files are not readable images and are left out (first: all_souls_b1.jpg)",
    ),
    C("t4_ox30", f"{E} oxford5k", "ox ox_zero", 2, "query all_souls_1: box 3 3 3 3 holds no pixel"),
    # paris6k
    C(
        "t4_pa09",
        f"{E} paris6k",
        "paris pa_nan",
        2,
        "d/gt/all_souls_1_query.txt: query all_souls_1: box nan nan nan nan is not finite",
    ),
    C("t4_pa11", f"{E} paris6k", "paris pa_outside", 2, "lies wholly outside its 8x8 image"),
    C("t4_pa12", f"{E} paris6k", "paris pa_inverted", 2, "is inverted"),
    C("t4_pa16", f"{E} paris6k", "paris gt_empty", 2, "d/gt: no query has a good or ok image"),
    C(
        "t4_pa19",
        f"{E} paris6k",
        "paris pa_unreadable",
        0,
        "paris6k: 1 files are not readable images and are left out (first: all_souls/all_souls_b1.jpg)",
    ),
    # sculptures6k
    C(
        "t4_sc09",
        f"{E} sculptures6k",
        "sculp sc_nan",
        2,
        "d/gt/moore_1_query.txt: query moore_1: box nan nan nan nan is not finite",
    ),
    C("t4_sc11", f"{E} sculptures6k", "sculp sc_outside", 2, "lies wholly outside its 8x8 image"),
    C("t4_sc12", f"{E} sculptures6k", "sculp sc_inverted", 2, "is inverted"),
    C("t4_sc16", f"{E} sculptures6k", "sculp gt_empty", 2, "d/gt: no query has a good or ok image"),
    # instre
    C(
        "t4_is04",
        f"{E} instre",
        "instre is_zero_byte",
        2,
        "d/gnd_instre.mat: not a readable MATLAB file",
    ),
    C(
        "t4_is06",
        f"{E} instre",
        "instre is_text",
        2,
        "d/gnd_instre.mat: not a readable MATLAB file",
    ),
    C(
        "t4_is11",
        f"{E} instre",
        "instre is_numeric_gnd",
        2,
        "d/gnd_instre.mat: gnd[0] is not a struct of positives and a box",
    ),
    C(
        "t4_is14",
        f"{E} instre {CROP}",
        "instre is_nan_box",
        2,
        "d/gnd_instre.mat: gnd[0] (query INSTRE-S1/01a_book/003.jpg): box nan nan nan nan is not finite",
    ),
    C(
        "t4_is15",
        f"{E} instre",
        "instre is_absurd_positives",
        2,
        "d/gnd_instre.mat: gnd[0] lists positive 1e+12, not an index 1..7 of imlist",
    ),
    C(
        "t4_is16",
        f"{E} instre {CROP}",
        "instre is_outside_box",
        2,
        "gnd[1] (query INSTRE-S2/cup/002.jpg): box 100 100 200 200 lies wholly outside its 10x10 image",
    ),
    C(
        "t4_is17",
        f"{E} instre {CROP}",
        "instre is_inverted_box",
        2,
        "gnd[0] (query INSTRE-S1/01a_book/003.jpg): box 8 9 2 3 is inverted",
    ),
    C(
        "t4_is19",
        f"{E} instre",
        "instre is_empty_lists",
        2,
        "d/gnd_instre.mat: qimlist is empty or holds an empty name",
    ),
    # ilias
    C(
        "t4_il06",
        f"{E} ilias",
        "ilias il_query_ids_latin1",
        2,
        "d/image_ids/image_query_ids.txt:1: not UTF-8 (byte 0xe9)",
    ),
    C(
        "t4_il08",
        f"{E} ilias --task-option distractors=3",
        "ilias il_bad_gzip",
        2,
        "d/image_ids/distractor_ids.txt.gz: not a readable gzip text file",
    ),
    C(
        "t4_il14",
        f"{E} ilias {CROP}",
        "ilias il_box_beyond",
        2,
        "Q000_00_bbox.txt: box 5000 5000 5010 5010 lies wholly outside its 10x8 image",
    ),
    C(
        "t4_il15",
        f"{E} ilias {CROP}",
        "ilias il_box_negative",
        2,
        "Q000_00_bbox.txt: the union of its boxes, 1 1 0 0 as x1 y1 x2 y2 (clipped at 0), holds no pixel",
    ),
    C("t4_il18", f"{E} ilias", "ilias il_text_latin1", 2, "T000.txt:1: not UTF-8 (byte 0xe9)"),
    C(
        "t4_il22",
        f"{E} ilias_fine",
        "ilias il_taxonomy_leaf",
        2,
        "d/taxonomy.json: expected category → mid-level → fine-level → object lists",
    ),
    C(
        "t4_il25",
        f"{E} ilias_fine",
        "ilias il_taxonomy_other",
        2,
        "d/taxonomy.json: names no fine-level class but 'other'",
    ),
    C(
        "t4_il27",
        f"{E} ilias",
        "ilias il_duplicate_query",
        2,
        "d/image_ids/image_query_ids.txt:2: id amber_a_000/query/Q000_00.jpg repeats line 1",
    ),
    # pods
    C(
        "t4_po10",
        f"{E} pods",
        "pods po_no_test_photos",
        2,
        "d/test/mugs_red: no test photos of 'mugs_red'",
    ),
    C(
        "t4_po12",
        f"{E} pods",
        "pods po_no_test",
        2,
        "d/test/mugs_red: no test photos of 'mugs_red'",
    ),
    C(
        "t4_po18",
        f"{E} pods",
        "pods po_two_without",
        2,
        "d/test/mugs_red: no test photos of 'mugs_red'",
    ),
    # mmeb_v2
    C(
        "t4_mv09",
        f"{E} mmeb_v2 --subsets ImageNet-1K",
        "mmeb_v2 mv_types",
        2,
        "test-00000-of-00001.parquet row 0: field 'qry_inst' must be a string (found int)",
    ),
    C(
        "t4_mv09b",
        f"{E} mmeb_v2 --subsets ImageNet-1K",
        "mmeb_v2 mv_string_lists",
        2,
        "test-00000-of-00001.parquet row 0: field 'tgt_text' must be a list of strings (found str)",
    ),
]
INPUTS = ("d",)


def run_case(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """This file's builders and guarded inputs through the shared engine (``tests/_matrix.py``)."""
    return run_matrix_case(case, cell, monkeypatch, _build, INPUTS)


#: refused only once the model is loaded: MMEB-V2 reads a dataset's rows when it scores it
LATE = {"t4_mv09", "t4_mv09b"}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ROWS])
def test_matrix_row(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    import bindkit.evaluation

    loaded: list[object] = []
    real = bindkit.evaluation._load

    def load(*args: object, **kwargs: object) -> object:
        loaded.append(args[0])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(bindkit.evaluation, "_load", load)
    check_outcome(case, run_case(case, cell, monkeypatch))
    if case.rc == 2 and case.id not in LATE:
        assert not loaded, "refused only after the model loaded"


def test_every_row_is_unique_and_every_edit_is_used() -> None:
    ids = [case.id for case in ROWS]
    assert len(ids) == len(set(ids))
    used = {step for case in ROWS for step in case.setup}
    assert used == set(EDITS) | set(LAYOUTS)
