# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""The turn-4 reliability review's non-clean cells of soup, lines, train, the tiny-clip demo and
``--instructions`` (``../shared/reviews/turn4/reliability.md``), one row per cell (``t4_<id>``).

Each row runs ``bindkit.cli.main(argv)`` in-process in its own directory through the shared
engine (``tests/_matrix.py``). Every refusal here comes before any model loads, so the rows are
fast. Adapters are tiny peft LoRA folders of two layers of one module (no model needed).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from _matrix import C, Case, Cell, Outcome, check_outcome, run_matrix_case

torch = pytest.importorskip("torch")

# -------------------------------------------------------------------------------------------
# fixtures: each builder makes one named thing inside the cell directory

KEY = "base_model.model.encoder.layer.{}.attention.self.query"
CONFIG = {"peft_type": "LORA", "r": 2, "lora_alpha": 2, "target_modules": ["query"]}


def _adapter(out: Path, seed: int, width: int = 4, rank: int = 2) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True)
    (out / "adapter_config.json").write_text(json.dumps(CONFIG))
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in (0, 1):
        tensors[f"{KEY.format(layer)}.lora_A.weight"] = torch.randn(
            rank, width, generator=generator
        )
        tensors[f"{KEY.format(layer)}.lora_B.weight"] = torch.randn(4, rank, generator=generator)
    save_file(tensors, str(out / "adapter_model.safetensors"))
    (out / "README.md").write_text(f"card of the seed-{seed} adapter\n")


def _edit_config(adapter: Path, **values: object) -> None:
    path = adapter / "adapter_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **values}))


def _edit_b(adapter: Path, value: float) -> None:
    from safetensors.torch import load_file, save_file

    path = adapter / "adapter_model.safetensors"
    tensors = load_file(str(path))
    tensors[f"{KEY.format(1)}.lora_B.weight"][0, 0] = value
    save_file(tensors, str(path))


def _other_width(adapter: Path) -> None:
    shutil.rmtree(adapter)
    _adapter(adapter, 2, width=5)


def _rank_lie(adapter: Path) -> None:
    """Tensors of rank 2 under a config that says r 4."""
    _edit_config(adapter, r=4, lora_alpha=4)


ADAPTER_EDITS: dict[str, Callable[[Path], None]] = {
    "alpha_nan": lambda a: _edit_config(a, lora_alpha=float("nan")),
    "alpha_inf": lambda a: _edit_config(a, lora_alpha=float("inf")),
    "alpha_big": lambda a: _edit_config(a, lora_alpha=1e12),
    "nan": lambda a: _edit_b(a, float("nan")),
    "inf": lambda a: _edit_b(a, float("inf")),
    "huge": lambda a: _edit_b(a, 3e38),
}


def _instructions(path: Path, count: int) -> None:
    path.write_text("".join(f"instruction {k}\n" for k in range(count)))


def _build(cell: Cell, name: str) -> None:
    d = cell.dir
    kind, _, arg = name.partition(":")
    if name == "adapters":  # ad/a, ad/b: two adapters of the same modules
        _adapter(d / "ad" / "a", 1)
        _adapter(d / "ad" / "b", 2)
    elif name == "ad_c":  # an existing, different adapter with a note of the user's
        _adapter(d / "ad" / "c", 3)
        (d / "ad" / "c" / "NOTES.txt").write_text("notes\n")
    elif kind == "a":  # ad/a edited
        ADAPTER_EDITS[arg](d / "ad" / "a")
    elif kind == "b":  # ad/b edited
        {"width": _other_width, "rank_lie": _rank_lie, **ADAPTER_EDITS}[arg](d / "ad" / "b")
    elif name == "b_notes":
        (d / "ad" / "b" / "NOTES.txt").write_text("notes\n")
    elif name == "trip":  # t.jsonl (triplets) and p.txt (preservation sentences)
        row = {"query": "a red cup", "positive": "a red cup here", "negative": "a cup, red"}
        (d / "t.jsonl").write_text(json.dumps(row) + "\n")
        (d / "p.txt").write_text("".join(f"a red cube number {i} sits here\n" for i in range(40)))
    elif name == "user_d":  # a folder of the user's, with names the demo also writes
        for sub in ("data", "saber"):
            (d / "d" / sub).mkdir(parents=True)
        (d / "d" / "notes.txt").write_text("mine\n")
        (d / "d" / "data" / "mine.txt").write_text("mine\n")
        (d / "d" / "saber" / "saber.jsonl").write_text("mine\n")
    elif name == "saber":  # s: a small SABER set
        shutil.copytree(cell.base / "saber", d / "s")
    elif name == "many_instructions":
        _instructions(d / "i.txt", 20_000)
    elif name == "regular_file":
        (d / "regular_file").write_text("x\n")
    else:
        raise KeyError(f"unknown fixture {name!r}")


# -------------------------------------------------------------------------------------------
# the table

# fmt: off
SU = "soup ad/a ad/b"
SOUP_ROWS = [
    # issue 36: the weights before the adapters, as the usage line used to show them
    C("i36_soup_order", "soup --weights 0.7 0.3 ad/a ad/b --out o", "adapters", 0, '"weights": [0.7, 0.3]'),
    C("i36_soup_order_nan", "soup --weights nan 0.5 ad/a ad/b --out o", "adapters", 2, "--weights [nan, 0.5]: give finite numbers", absent=("o",)),
    C("i36_soup_word", "soup ad/a ad/b --weights half half --out o", "adapters", 2, "--weights half: not a number", absent=("o",)),
    C("t4_su13", f"{SU} --out o", "adapters a:alpha_nan", 2, "ad/a/adapter_config.json: lora_alpha nan with r 2 gives the scale nan; a LoRA scale must be finite", absent=("o",)),
    C("t4_su14", f"{SU} --out o", "adapters a:alpha_inf", 2, "lora_alpha inf with r 2 gives the scale inf", absent=("o",)),
    C("t4_su15", f"{SU} --out o", "adapters a:alpha_big", 2, "gives the scale 5e+11; a LoRA scale must be finite and in (0, 1000]", absent=("o",)),
    C("t4_su16", f"{SU} --out o", "adapters b:rank_lie", 2, "ad/b/adapter_model.safetensors: base_model.model.encoder.layer.0.attention.self.query.lora_A.weight has shape [2, 4], but its adapter_config.json says r 4", absent=("o",)),
    C("t4_su17", f"{SU} --out o", "adapters a:nan", 2, "ad/a/adapter_model.safetensors: tensor base_model.model.encoder.layer.1.attention.self.query.lora_B.weight holds NaN or inf", absent=("o",)),
    C("t4_su18", f"{SU} --out o", "adapters a:inf", 2, "ad/a/adapter_model.safetensors: tensor base_model.model.encoder.layer.1.attention.self.query.lora_B.weight holds NaN or inf", absent=("o",)),
    C("t4_su19", f"{SU} --out o", "adapters b:width", 2, "ad/b/adapter_model.safetensors: base_model.model.encoder.layer.0.attention.self.query.lora_A.weight has shape [2, 5], the first adapter's [2, 4]", absent=("o",)),
    C("t4_su21", f"{SU} --weights 0 0 --out o", "adapters", 2, "--weights [0.0, 0.0]: all zero, the soup would change nothing", absent=("o",)),
    C("t4_su22", f"{SU} --weights 1e12 1e12 --out o", "adapters", 2, "--weights [1000000000000.0, 1000000000000.0]: give each weight in [-10, 10]", absent=("o",)),
    C("t4_su23", f"{SU} --weights 1e308 1e308 --out o", "adapters", 2, "give each weight in [-10, 10]", absent=("o",)),
    # finite inputs and weights whose soup still overflows float32 are refused too
    C("t4_su23_overflow", f"{SU} --weights 10 1 --out o", "adapters a:huge", 2, "--weights [10.0, 1.0]: the soup's base_model.model.encoder.layer.1.attention.self.query.lora_B.weight overflows to inf", absent=("o",)),
    C("t4_su25", f"{SU} --out ad/a/sub", "adapters", 2, "--out ad/a/sub: is inside the input directory ad/a", absent=("ad/a/sub",)),
    C("t4_su30", f"{SU} --out ad/c", "adapters ad_c", 2, "--out ad/c: holds an adapter; pass --overwrite to replace it whole"),
    # with --overwrite the old adapter goes whole: no card or note of it beside the new weights
    C("t4_su30_overwrite", f"{SU} --out ad/c --overwrite", "adapters ad_c", 0, '"rank": 4', unchanged=("ad/a", "ad/b"), absent=("ad/c/README.md", "ad/c/NOTES.txt")),
    C("t4_su30_not_adapter", f"{SU} --out d --overwrite", "adapters user_d", 2, "--out d: exists and is not a peft adapter directory (no adapter_config.json); --overwrite only replaces an adapter"),
    C("t4_su26_file", f"{SU} --out regular_file", "adapters regular_file", 2, "regular_file: file exists; a file is in the way"),
]

LN = "lines ad/a --alpha 0.5"
LINES_ROWS = [
    C("t4_ln09", f"{LN} --num-layers 1000000000000 --out o", "adapters", 2, "--num-layers 1000000000000: give a whole number from 1 to 1000 (the model depth)", absent=("o",)),
    C("t4_ln21", f"{LN} --num-layers 100000000 --out o", "adapters", 2, "--num-layers 100000000: give a whole number from 1 to 1000", absent=("o",)),
    C("t4_ln15", f"{LN} --out ad/a/sub", "adapters", 2, "--out ad/a/sub: is inside the input directory ad/a", absent=("ad/a/sub",)),
    C("t4_ln18", f"{LN} --out ad/b", "adapters b_notes", 2, "--out ad/b: holds an adapter; pass --overwrite to replace it whole"),
    C("t4_ln18_overwrite", f"{LN} --out ad/b --overwrite", "adapters b_notes", 0, '"factors": [0.5, 1.0]', unchanged=("ad/a",), absent=("ad/b/NOTES.txt",)),
    # the copy keeps the source's config, so a NaN scale there is refused as the soup refuses it
    C("t4_ln19_alpha_nan", f"{LN} --out o", "adapters a:alpha_nan", 2, "ad/a/adapter_config.json: lora_alpha nan with r 2 gives the scale nan", absent=("o",)),
    C("t4_ln19", f"{LN} --out o", "adapters a:nan", 2, "ad/a/adapter_model.safetensors: tensor base_model.model.encoder.layer.1.attention.self.query.lora_B.weight holds NaN or inf", absent=("o",)),
]

TR = "train triplets --model builtin:tiny-clip --train t.jsonl --out tr --max-steps 2 --batch-size 8 --no-lines --no-progress"
TRAIN_ROWS = [
    C("t4_tr02", f"{TR} --loss infonce --temperature 1e-12", "trip", 2, "--temperature 1e-12: give a finite number in [0.001, 10]", absent=("tr",)),
    C("t4_tr04", f"{TR} --loss infonce --margin 0.5", "trip", 2, "--margin 0.5: has no effect without --loss hinge", absent=("tr",)),
    C("t4_tr05", f"{TR} --loss hinge --temperature 0.5", "trip", 2, "--temperature 0.5: has no effect without --loss infonce", absent=("tr",)),
    C("t4_tr08", f"{TR} --preserve-relational 1", "trip", 2, "--preserve-relational 1.0: has no effect without --preserve FILE", absent=("tr",)),
    C("t4_tr09", f"{TR} --preserve p.txt --preserve-relational 1e12", "trip", 2, "--preserve-relational 1000000000000.0: give a finite number in [0, 1000]", absent=("tr",)),
    C("t4_tr10", f"{TR} --preserve p.txt --preserve-relational 1 --preserve-batch 1", "trip", 2, "--preserve-relational 1.0 with --preserve-batch 1: the relational term compares pairs", absent=("tr",)),
    C("t4_tr18", "train triplets --model builtin:tiny-clip --train t.jsonl --out tr --batch-size 8 --no-lines --no-progress --epochs 1000000000000 --save-every 0", "trip", 2, "--epochs 1000000000000: give a finite number in (0, 1000]", absent=("tr",)),
    C("t4_tr23", f"{TR} --epochs 1000000000000", "trip", 2, "--epochs 1000000000000: give a finite number in (0, 1000]", absent=("tr",)),
    C("t4_tr24", f"{TR} --epochs 1000000", "trip", 2, "--epochs 1000000: give a finite number in (0, 1000]", absent=("tr",)),
    C("t4_tr26", f"{TR} --preserve p.txt --preserve-batch 1000000000000", "trip", 2, "--preserve-batch 1000000000000: give a finite number in [1, 4096]", absent=("tr",)),
    # the other options that act only in one mode, and the other counts' bounds
    C("t4_tr_preserve_weight_alone", f"{TR} --preserve-weight 2", "trip", 2, "--preserve-weight 2.0: has no effect without --preserve FILE", absent=("tr",)),
    C("t4_tr_preserve_batch_alone", f"{TR} --preserve-batch 8", "trip", 2, "--preserve-batch 8: has no effect without --preserve FILE", absent=("tr",)),
    C("t4_tr_lines_alpha_no_lines", f"{TR} --lines-alpha 0.3", "trip", 2, "--lines-alpha 0.3: has no effect without LiNeS (drop --no-lines)", absent=("tr",)),
    C("t4_tr_attn_tau_alone", f"{TR} --attn-tau 0.3", "trip", 2, "--attn-tau 0.3: has no effect without --attn-loss", absent=("tr",)),
    C("t4_tr_max_steps_bound", f"{TR} --max-steps 1000000000000", "trip", 2, "--max-steps 1000000000000: give a finite number in [1, 1000000]", absent=("tr",)),
    C("t4_tr_batch_bound", f"{TR} --batch-size 1000000000000", "trip", 2, "--batch-size 1000000000000: give a finite number in [1, 65536]", absent=("tr",)),
]

DM = "demo finetune --model builtin:tiny-clip -q --out d --steps 1 --saber-per-n 2"
DEMO_ROWS = [
    C("t4_dm11", f"{DM} --max-triplets 5", "", 2, "--max-triplets: only with --model st:default", absent=("d",)),
    C("t4_dm12", f"{DM} --preserve-weight nan", "", 2, "--preserve-weight: only with --model st:default", absent=("d",)),
    C("t4_dm13", f"{DM} --examples 5", "", 2, "--examples: only with --model st:default", absent=("d",)),
    C("t4_dm17", DM, "user_d", 2, "--out d: not an earlier run of this demo (holds notes.txt); give a new or empty folder", absent=("d/.bindkit.lock", "d/run")),
]

EI = "eval -q --no-report --model bow --data s --out r2 --instructions"
INSTRUCTION_ROWS = [
    C("t4_in17", f"{EI} i.txt", "saber many_instructions", 2, "i.txt: 20000 instructions; a sweep takes at most 200", absent=("r2",)),
    C("t4_in18", f"{EI} s/saber.jsonl", "saber", 2, "s/saber.jsonl:1: a JSON object, not an instruction", absent=("r2",)),
]
# fmt: on

ROWS: list[Case] = [*SOUP_ROWS, *LINES_ROWS, *TRAIN_ROWS, *DEMO_ROWS, *INSTRUCTION_ROWS]
INPUTS = ("ad", "t.jsonl", "p.txt", "s", "i.txt", "d")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: a small SABER set (the instruction rows' --data)."""
    from bindkit.saber.build import generate_saber

    root = tmp_path_factory.mktemp("matrix-adapters-base")
    generate_saber(root / "saber", seed=0, per_n=2, n_max=3)
    return root


def run_case(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """This file's builders and guarded inputs through the shared engine (``tests/_matrix.py``)."""
    return run_matrix_case(case, cell, monkeypatch, _build, INPUTS)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ROWS])
def test_matrix_row(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    check_outcome(case, run_case(case, cell, monkeypatch))


def test_every_row_is_unique() -> None:
    ids = [case.id for case in ROWS]
    assert len(ids) == len(set(ids))
