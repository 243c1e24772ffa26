"""`bindkit export` as Hugging Face datasets and the read-back wherever bindkit reads files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError, DataFormatError
from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber

datasets = pytest.importorskip("datasets")
pytest.importorskip("huggingface_hub")
pytest.importorskip("PIL")

from bindkit.hfdata.read import local_path  # noqa: E402


def load(path: Path, tmp_path: Path, name: str | None = None, **kwargs: Any) -> Any:
    return datasets.load_dataset(str(path), name=name, cache_dir=str(tmp_path / "hf"), **kwargs)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rendered shapes SABER set (N = 2, 3), images on disk."""
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.render.renderer import render_saber

    directory = tmp_path_factory.mktemp("rendered") / "saber"
    generate_saber(directory, seed=2, per_n=2, n_max=3, vocab="shapes")
    render_saber(directory, ProceduralBackend(size=64), progress=False)
    return directory


@pytest.fixture(scope="module")
def rendered_hf(rendered: Path) -> Path:
    out = rendered.parent / "saber-hf"
    assert main(["export", "saber", str(rendered), "--out", str(out)]) == 0
    return out


def test_saber_export_loads_back_equal_field_by_field_with_image_bytes(
    rendered: Path, rendered_hf: Path, tmp_path: Path
) -> None:
    from bindkit.hfdata.schema import mcq_json, saber_features

    source = read_saber(rendered)
    table = load(rendered_hf, tmp_path, split="test", features=saber_features(decode=False))
    assert isinstance(table.features["query"]["image"], datasets.Image)
    assert len(table) == len(source.mcqs)
    for row, mcq in zip(table, source.mcqs, strict=True):
        assert mcq_json(row) == mcq.to_json()  # every field of every item
        for got, item in zip((row["query"], *row["candidates"]), mcq.items, strict=True):
            assert item.image is not None
            assert got["image"]["bytes"] == (rendered / item.image).read_bytes()
    decoded = load(rendered_hf, tmp_path, split="test")[0]["query"]["image"]
    assert decoded.size == (64, 64)  # the Image feature decodes to a PIL image
    by_n = load(rendered_hf, tmp_path, "n3", split="test")
    assert [r["id"] for r in by_n] == [m.id for m in source.mcqs if m.n == 3]


def test_saber_card_has_the_hub_metadata_and_how_it_was_made(rendered_hf: Path) -> None:
    from huggingface_hub import DatasetCard

    card = DatasetCard.load(rendered_hf / "README.md")
    meta = card.data.to_dict()
    assert meta["license"] == "mit" and meta["pretty_name"] == "SABER"
    assert meta["language"] == ["en"]
    record = json.loads((rendered_hf / "bindkit.json").read_text())
    assert record["source"] == "saber"  # the folder's name, no machine path
    assert {"multiple-choice", "image-to-text"} <= set(meta["task_categories"])
    assert meta["size_categories"] == ["n<1K"] and "binding" in meta["tags"]
    names = [c["config_name"] for c in meta["configs"]]
    assert names == ["default", "n2", "n3"]
    assert meta["configs"][0]["default"] is True
    manifest = json.loads((rendered_hf / "bindkit" / "manifest.json").read_text())
    assert f"saber.jsonl sha256: {manifest['files']['saber.jsonl']['sha256']}" in card.text
    assert manifest["images"]["sha256"] in card.text and "seed: 2" in card.text
    assert "bindkit export saber" in card.text


def test_saber_read_back_is_the_same_set_and_validates(
    rendered: Path, rendered_hf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    back = local_path(rendered_hf)
    source, again = read_saber(rendered), read_saber(back)
    assert again.mcqs == source.mcqs and again.manifest == source.manifest
    for mcq in source.mcqs:
        for item in mcq.items:
            assert item.image is not None
            assert (back / item.image).read_bytes() == (rendered / item.image).read_bytes()
    assert main(["saber", "validate", str(rendered_hf), "--vocab", "shapes"]) == 0
    assert "every rule holds" in capsys.readouterr().out
    assert local_path(rendered_hf) == back  # rebuilt once, then reused


def test_eval_on_the_export_scores_as_on_the_original(tmp_path: Path) -> None:
    from bindkit.evaluation import evaluate

    data = tmp_path / "saber"
    generate_saber(data, seed=4, per_n=4, n_max=4)
    assert main(["export", "saber", str(data), "--out", str(tmp_path / "hf")]) == 0
    kwargs: dict[str, Any] = dict(cache=False, report=False, verbose=False)
    (plain,) = evaluate(["bow"], data=data, out=tmp_path / "a", **kwargs)
    (exported,) = evaluate(["bow"], data=tmp_path / "hf", out=tmp_path / "b", **kwargs)
    assert exported["scores"] == plain["scores"]
    assert exported["data"]["sha256"] == plain["data"]["sha256"]
    assert exported["data"]["name"] == plain["data"]["name"] == "saber"
    # the data as the user named it, not the rebuilt cache folder
    assert exported["data"]["source"] == str(tmp_path / "hf")
    assert plain["data"]["source"] == str(data)


def test_saber_shards_out_of_n_order_read_back_in_file_order(tmp_path: Path) -> None:
    from bindkit.saber.io import write_saber

    data = tmp_path / "saber"
    generate_saber(data, seed=1, per_n=2, n_max=3)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_saber(mixed, list(reversed(read_saber(data).mcqs)))
    assert main(["export", "saber", str(mixed), "--out", str(tmp_path / "hf")]) == 0
    assert read_saber(local_path(tmp_path / "hf")).mcqs == read_saber(mixed).mcqs


def test_a_changed_shard_is_refused_on_read_back(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    data = tmp_path / "saber"
    generate_saber(data, seed=1, per_n=2, n_max=2)
    out = tmp_path / "hf"
    assert main(["export", "saber", str(data), "--out", str(out)]) == 0
    shard = out / "data" / "n2" / "test-00000-of-00001.parquet"
    table = pq.read_table(shard)
    pq.write_table(table.slice(0, 1).replace_schema_metadata(table.schema.metadata), shard)
    with pytest.raises(DataFormatError, match=r"do not rebuild saber.jsonl as exported"):
        local_path(out)


def test_a_hand_edited_saber_file_is_refused_for_export(tmp_path: Path) -> None:
    data = tmp_path / "saber"
    generate_saber(data, seed=1, per_n=2, n_max=2)
    lines = (data / "saber.jsonl").read_text().splitlines()
    (data / "saber.jsonl").write_text("\n".join(json.dumps(json.loads(x)) for x in lines) + "\n")
    with pytest.raises(DataFormatError, match=r"not written as bindkit writes it"):
        from bindkit.export.write import export

        export("saber", data, tmp_path / "hf")


# -- synth ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def synth_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bindkit.synth.command import run
    from bindkit.synth.splits import write_splits

    out = tmp_path_factory.mktemp("synth") / "run"
    run(out, 200, seed=1, progress=False)
    write_splits(out, exclude_vocab="builtin", mixed_lengths=True)
    return out


@pytest.fixture(scope="module")
def synth_hf(synth_run: Path) -> Path:
    out = synth_run.parent / "run-hf"
    assert main(["export", "synth", str(synth_run), "--out", str(out)]) == 0
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _named(table: Any) -> list[dict[str, Any]]:
    labels = {k: f for k, f in table.features.items() if isinstance(f, datasets.ClassLabel)}
    return [{k: labels[k].int2str(v) if k in labels else v for k, v in r.items()} for r in table]


def test_synth_export_has_every_split_and_variant_equal_to_its_file(
    synth_run: Path, synth_hf: Path, tmp_path: Path
) -> None:
    """Each config's rows are the split file's: the trainer configs (default, the variants)
    its query/positive/negative, the *_full configs every field."""
    default, full = load(synth_hf, tmp_path), load(synth_hf, tmp_path, "full")
    files = json.loads((synth_run / "splits.json").read_text())["files"]
    shared = [n.removesuffix(".jsonl") for n in files if "/" not in n]
    assert sorted(default) == sorted(shared) == sorted(full)
    assert {"train", "val", "test"} <= set(default) and any(
        s.startswith("heldout_") for s in default
    )
    assert isinstance(full["train"].features["negative_kind"], datasets.ClassLabel)
    trainer = ["query", "positive", "negative"]
    for split in shared:
        rows = _rows(synth_run / f"{split}.jsonl")
        assert _named(full[split]) == rows
        assert default[split].to_list() == [{k: r[k] for k in trainer} for r in rows]
    for variant in ("no_overlap", "random", "overlap_only", "mixed_lengths"):
        rows = _rows(synth_run / variant / "train.jsonl")
        assert _named(load(synth_hf, tmp_path, f"{variant}_full", split="train")) == rows
        train = load(synth_hf, tmp_path, variant, split="train")
        assert train.column_names == trainer
    mixed = load(synth_hf, tmp_path, "mixed_lengths_full", split="train")
    assert isinstance(mixed.features["format"], datasets.ClassLabel)


def test_synth_read_back_is_the_split_set_byte_for_byte(synth_run: Path, synth_hf: Path) -> None:
    from bindkit.synth.splits import verify_splits
    from bindkit.tasks.text.triplets import read_triplets

    train = local_path(f"{synth_hf}:no_overlap/train")
    assert train.name == "train.jsonl" and train.parent.name == "no_overlap"
    root = train.parent.parent
    verify_splits(root)  # splits.json and examples.jsonl came along: the set is whole
    for name in json.loads((synth_run / "splits.json").read_text())["files"]:
        assert (root / name).read_bytes() == (synth_run / name).read_bytes(), name
    assert read_triplets(local_path(f"{synth_hf}:test")) == _rows(synth_run / "test.jsonl")
    with pytest.raises(BindkitError, match=r"no split 'tset'; use one of train, val, test"):
        local_path(f"{synth_hf}:tset")
    with pytest.raises(BindkitError, match=r"holds several splits; name one, e.g. .*-hf:train"):
        local_path(synth_hf)


def test_triplet_eval_and_training_read_an_exported_split(
    synth_run: Path, synth_hf: Path, tmp_path: Path
) -> None:
    from bindkit.evaluation import evaluate
    from bindkit.train.config import TrainConfig

    kwargs: dict[str, Any] = dict(task="triplets", cache=False, report=False, verbose=False)
    (plain,) = evaluate(["bow"], data=synth_run / "test.jsonl", out=tmp_path / "a", **kwargs)
    (exported,) = evaluate(["bow"], data=f"{synth_hf}:test", out=tmp_path / "b", **kwargs)
    assert exported["scores"] == plain["scores"]
    assert exported["data"]["sha256"] == plain["data"]["sha256"]
    assert exported["data"]["source"] == f"{synth_hf}:test"
    config = TrainConfig(
        model="bow", out=str(tmp_path / "run"), train=f"{synth_hf}:train", val=f"{synth_hf}:val"
    )
    assert Path(config.train).read_bytes() == (synth_run / "train.jsonl").read_bytes()
    assert Path(config.val or "").read_bytes() == (synth_run / "val.jsonl").read_bytes()


# -- clusters ---------------------------------------------------------------------------------
def _clusters(path: Path, records: list[dict[str, Any]]) -> Path:
    from bindkit._io import jsonl_bytes

    path.write_bytes(jsonl_bytes(records))
    return path


def test_clusters_export_round_trip(tmp_path: Path) -> None:
    from bindkit.train.objectives import read_clusters

    pairs = [
        {"query": f"a red {o}", "positive": f"one red {o}", "label": o, "task": "t"}
        for o in ("cube", "ball", "cone")
    ]
    records = [
        {"anchor": "a red cube", "task": "t", "phase": 1, "pairs": pairs},
        {
            "anchor": "a red ball",
            "task": "t",
            "phase": 2,
            "pairs": [pairs[1], {**pairs[0], "n": 3}],
        },
    ]
    source = _clusters(tmp_path / "clusters.jsonl", records)
    (tmp_path / "clusters.diagnostics.json").write_text('{"provenance": {"model": "bow"}}\n')
    out = tmp_path / "hf"
    assert main(["export", "clusters", str(source), "--out", str(out)]) == 0
    table = load(out, tmp_path, split="train")
    assert [r["anchor"] for r in table] == ["a red cube", "a red ball"]
    assert table[1]["pairs"][1] == {**pairs[0], "n": 3} and table[0]["pairs"][0]["n"] is None
    back = local_path(out)
    assert back.read_bytes() == source.read_bytes()
    assert read_clusters(back) == [r["pairs"] for r in records]
    assert (back.parent / "clusters.diagnostics.json").is_file()
    assert "model: bow" in (out / "README.md").read_text()


def test_a_pair_field_of_two_types_is_refused(tmp_path: Path) -> None:
    from bindkit.export.write import export

    records = [
        {
            "anchor": "a",
            "task": "",
            "phase": 0,
            "pairs": [{"query": "a", "positive": "b", "label": 1}],
        },
        {
            "anchor": "c",
            "task": "",
            "phase": 0,
            "pairs": [{"query": "c", "positive": "d", "label": "x"}],
        },
    ]
    source = _clusters(tmp_path / "c.jsonl", records)
    with pytest.raises(
        DataFormatError, match=r"c.jsonl:2: pair field 'label' is string here and int64"
    ):
        export("clusters", source, tmp_path / "hf")


# -- the folder: atomic, overwrite policy, push, Hub ids ---------------------------------------
def test_export_is_atomic_and_never_replaces_without_overwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "saber"
    generate_saber(data, seed=1, per_n=2, n_max=3)
    out = tmp_path / "hf"
    import bindkit.export.write as module

    calls = []
    real = module.write_parquet

    def flaky(rows: Any, features: Any, path: Path) -> int:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(rows, features, path)

    monkeypatch.setattr(module, "write_parquet", flaky)
    assert main(["export", "saber", str(data), "--out", str(out)]) == 2
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["saber"]
    monkeypatch.undo()
    assert main(["export", "saber", str(data), "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["export", "saber", str(data), "--out", str(out)]) == 2
    assert "not empty; pass --overwrite" in capsys.readouterr().err
    assert main(["export", "saber", str(data), "--out", str(out), "--overwrite"]) == 0
    assert main(["export", "saber", str(data), "--out", str(data / "hf")]) == 2
    assert "inside the input directory" in capsys.readouterr().err


def _complete_export(out: Path) -> None:
    """``out`` is one whole export: every file its record lists, with that hash, and no other."""
    import hashlib

    record = json.loads((out / "bindkit.json").read_text())
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert present == {*record["files"], "bindkit.json", "README.md"}
    assert set(record["rows"]) <= present
    for name, digest in record["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name


def test_two_concurrent_exports_into_one_out_leave_one_complete_export(tmp_path: Path) -> None:
    import subprocess
    import sys

    data = tmp_path / "saber"
    generate_saber(data, seed=1, per_n=40, n_max=5)
    out = tmp_path / "hf"
    argv = [sys.executable, "-m", "bindkit", "export", "saber", str(data), "--out", str(out)]
    for extra in ([], ["--overwrite"]):  # a fresh --out, then over a complete export
        runs = [
            subprocess.Popen([*argv, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)
        ]
        done = [(run.wait(timeout=300), run.stderr.read().decode()) for run in runs]  # type: ignore[union-attr]
        assert any(rc == 0 for rc, _ in done), done
        for rc, err in done:  # the loser of a fresh --out is told, in one line
            assert rc == 0 or (rc == 2 and err.count("\n") == 1), err
            assert rc == 0 or "another run wrote it meanwhile" in err or "not empty" in err
        assert extra == [] or all(rc == 0 for rc, _ in done)
        _complete_export(out)
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_staging_is_per_writer_and_the_swap_survives_a_writer_in_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import subprocess

    import bindkit._staging as staging

    out = tmp_path / "hf"
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f".hf.export-{gone.pid}-abcd1234"  # a killed writer's
    live = tmp_path / f".hf.export-{os.getppid()}-abcd1234"  # a live writer's: never touched
    for folder in (dead, live):
        folder.mkdir()
    mine = staging.new_staging(out, "export")
    assert not dead.exists() and live.is_dir()
    assert mine.name.startswith(f".hf.export-{os.getpid()}-")
    (mine / "ours").write_text("ours")

    real, landed = os.rename, []

    def another_writer_first(src: Any, dst: Any) -> None:
        if Path(src) == mine and not landed:  # theirs lands just before our rename
            landed.append(out)
            out.mkdir()
            (out / "theirs").write_text("theirs")
        real(src, dst)

    monkeypatch.setattr(staging.os, "rename", another_writer_first)
    with pytest.raises(BindkitError, match=r"--out .*hf: another run wrote it meanwhile"):
        staging.swap_into_place(mine, out, replace=False)
    assert sorted(p.name for p in out.iterdir()) == ["theirs"]
    shutil.rmtree(out)
    landed.clear()
    staging.swap_into_place(mine, out, replace=True)  # theirs is moved aside: the last wins
    assert sorted(p.name for p in out.iterdir()) == ["ours"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "hf"]


class FakeApi:
    calls: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def create_repo(self, repo_id: str, **kwargs: Any) -> None:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))

    def upload_folder(self, **kwargs: Any) -> Any:
        self.calls.append(("upload_folder", kwargs))
        return type("Info", (), {"commit_url": "https://hub/commit/1"})()


def test_push_uploads_the_folder_as_a_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import huggingface_hub

    data = tmp_path / "saber"
    generate_saber(data, seed=1, per_n=2, n_max=2)
    out = tmp_path / "hf"
    FakeApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    argv = ["export", "saber", str(data), "--out", str(out), "--push", "me/saber", "--private"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--push me/saber: no Hugging Face token; run `hf auth login`" in err
    assert len(err.strip().splitlines()) == 1 and FakeApi.calls == []
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_x")
    assert main([*argv, "--overwrite"]) == 0
    (create, created), (upload, uploaded) = FakeApi.calls
    assert create == "create_repo" and created == {
        "repo_id": "me/saber",
        "repo_type": "dataset",
        "private": True,
        "exist_ok": True,
    }
    assert upload == "upload_folder" and uploaded["repo_type"] == "dataset"
    assert uploaded["folder_path"] == str(out) and uploaded["repo_id"] == "me/saber"
    assert "pushed to me/saber: https://hub/commit/1" in capsys.readouterr().out


def test_a_hub_id_reads_from_the_local_cache_only(
    rendered_hf: Path, rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    snapshot = tmp_path / "snapshot"
    shutil.copytree(rendered_hf, snapshot)
    seen: list[dict[str, Any]] = []

    def cached(repo_id: str, **kwargs: Any) -> str:
        seen.append({"repo_id": repo_id, **kwargs})
        if repo_id != "me/saber":
            raise huggingface_hub.errors.LocalEntryNotFoundError("not cached")
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", cached)
    assert read_saber(local_path("hf:me/saber")).mcqs == read_saber(rendered).mcqs
    assert seen[0] == {"repo_id": "me/saber", "repo_type": "dataset", "local_files_only": True}
    with pytest.raises(BindkitError, match=r"hf:me/other: not in the local Hugging Face cache"):
        local_path("hf:me/other")
    with pytest.raises(BindkitError, match=r"a saber export has no splits"):
        local_path("hf:me/saber:train")


def test_plain_paths_pass_through_untouched(tmp_path: Path) -> None:
    assert local_path(tmp_path / "x.jsonl") == tmp_path / "x.jsonl"
    assert local_path("C:/data/x.jsonl") == Path("C:/data/x.jsonl")


def test_mining_an_exported_split_mines_what_the_file_gives(
    synth_run: Path, synth_hf: Path, tmp_path: Path
) -> None:
    from bindkit.mining.pipeline import MineConfig, mine
    from bindkit.train.config import ClusterTrainConfig

    config = MineConfig(method="hn", k=3)
    plain = mine("bow", synth_run / "val.jsonl", tmp_path / "a.jsonl", config, log=None)
    exported = mine("bow", f"{synth_hf}:val", tmp_path / "b.jsonl", config, log=None)
    assert (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()
    assert exported["provenance"]["data_sha256"] == plain["provenance"]["data_sha256"]
    assert (
        main(["export", "clusters", str(tmp_path / "b.jsonl"), "--out", str(tmp_path / "hf")]) == 0
    )
    run = ClusterTrainConfig(model="bow", out=str(tmp_path / "run"), clusters=str(tmp_path / "hf"))
    assert Path(run.clusters).read_bytes() == (tmp_path / "b.jsonl").read_bytes()


@pytest.mark.slow
def test_image_pairings_on_the_export_score_as_on_the_original(
    rendered: Path, rendered_hf: Path, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    from bindkit.evaluation import evaluate

    kwargs: dict[str, Any] = dict(cache=False, report=False, verbose=False, pairings=["ti", "ii"])
    plain = evaluate(["builtin:tiny-clip"], data=rendered, out=tmp_path / "a", **kwargs)
    exported = evaluate(["builtin:tiny-clip"], data=rendered_hf, out=tmp_path / "b", **kwargs)
    assert [r["pairing"] for r in plain] == ["ti", "ii"]
    for a, b in zip(plain, exported, strict=True):
        same = {k: v for k, v in a["data"].items() if k not in ("source", "key")}
        assert b["scores"] == a["scores"] and {k: b["data"][k] for k in same} == same


def test_shards_are_written_batch_by_batch_and_read_back_whole(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from bindkit.export.write import write_parquet
    from bindkit.hfdata.read import read_shard
    from bindkit.hfdata.schema import encode_triplets, triplet_features

    rows = [
        {"query": f"q{i}", "positive": "p", "negative": "n", "type": "pair_swap",
         "negative_kind": "object"}
        for i in range(7)
    ]  # fmt: skip
    features = triplet_features(rows)
    path = tmp_path / "x.parquet"
    assert write_parquet(iter(encode_triplets(rows, features, "x")), features, path, batch=3) == 7
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    back, found = read_shard(tmp_path, "x.parquet")
    assert found == features and back == encode_triplets(rows, features, "x")
    assert load(tmp_path, tmp_path, data_files=str(path), split="train").features == features


def test_a_missing_image_stops_the_export_before_anything_is_written(
    rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "saber"
    shutil.copytree(rendered, copy)
    item = read_saber(copy).mcqs[-1].candidates[-1]
    assert item.image is not None
    (copy / item.image).unlink()
    assert main(["export", "saber", str(copy), "--out", str(tmp_path / "hf")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"image of {item.id} not found; render it again")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saber"]


def test_reading_an_export_without_datasets_installed_says_what_to_install(
    rendered_hf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setenv("BINDKIT_CACHE_DIR", str(tmp_path / "fresh"))  # nothing rebuilt yet
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(BindkitError, match=r"need `datasets`: pip install 'bindkit\[hf\]'"):
        local_path(rendered_hf)


def test_a_hub_source_keys_its_results_the_same_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.records.fields import data_key

    key = data_key("saber", "hf:me/saber")
    monkeypatch.chdir(tmp_path)
    assert data_key("saber", "hf:me/saber") == key != data_key("saber", "hf:me/other")


@pytest.mark.parametrize("theirs", ["folder", "file"])
def test_an_out_written_after_staging_is_never_replaced_without_overwrite(
    tmp_path: Path, theirs: str
) -> None:
    """Another run's ``out`` that appeared after our pre-check (before the swap is tried): the
    swap without ``replace`` refuses in one line and leaves theirs as it is, not moved aside."""
    import bindkit._staging as staging

    out = tmp_path / "hf"
    mine = staging.new_staging(out, "export")
    (mine / "ours").write_text("ours")
    if theirs == "folder":
        out.mkdir()
        (out / "theirs").write_text("theirs")
    else:
        out.write_text("theirs")
    with pytest.raises(BindkitError, match=r"^--out .*hf: another run wrote it meanwhile; "):
        staging.swap_into_place(mine, out, replace=False)
    if theirs == "folder":
        assert sorted(p.name for p in out.iterdir()) == ["theirs"]
        assert (out / "theirs").read_text() == "theirs"
    else:
        assert out.read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, "hf"])
    assert (mine / "ours").read_text() == "ours"  # ours is left for the caller to clean up
