"""CLEVR-binding, PUG:SPARE and PUG:SPAR against transcriptions of their publishers' scoring.

Each fixture is written in the layout the publisher ships (the Drive folders Koishigarina et
al.'s loaders read, PUG:SPAR's ``labels.csv`` folder and the Hub's parquet export). The
``_publisher_*`` functions below transcribe the publishers' code line for line (torch swapped
for numpy, nothing else changed): ``data_loading/clevr.py`` ``train_val_test_split`` and
``alignment/clevr_alignment_utils.py`` ``get_pair_labels`` / ``get_caption_labels`` /
``get_accuracy``; ``data_loading/pug.py`` ``PUGSPARELoader`` and ``alignment/
pug_alignment_utils.py``; ``PUG_SPAR/run_eval_vlms_on_spar.py``'s attribute setting and the
hard-negative branch of its ``process``. bindkit's score on the fixture must equal theirs on the
same vectors.
"""

from __future__ import annotations

import hashlib
import io
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _fakes import TableEmbedder
from _per_query import mean_is_score
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.tasks.base import get_task
from bindkit.tasks.pairs import _koishigarina

PIL = pytest.importorskip("PIL.Image")

COLOURS = ["blue", "gray", "brown", "cyan", "green", "purple", "red", "yellow"]
SHAPES = ["cube", "sphere", "cylinder"]


def _png(path: Path) -> None:
    """A 4x4 PNG of one colour drawn from its file name (so a decoded image is told apart)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rgb = tuple(hashlib.sha256(path.name.encode()).digest()[:3])
    PIL.new("RGB", (4, 4), rgb).save(path)


def _png_bytes(rgb: tuple[int, int, int]) -> dict[str, Any]:
    buffer = io.BytesIO()
    PIL.new("RGB", (4, 4), rgb).save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


# -- CLEVR-binding ------------------------------------------------------------------------------
def _write_clevr(folder: Path, scenes: int = 150, seed: int = 3) -> list[tuple[str, ...]]:
    """``output_2obj.csv`` (filename, shape, colour, shape, colour; no header) and
    ``images_2obj/``, as the publisher's 2obj zip unpacks; some scenes share a colour, some
    repeat in the other order."""
    rng = random.Random(seed)
    rows = []
    for i in range(scenes):
        o1, o2 = rng.sample(SHAPES, 2)
        a1 = rng.choice(COLOURS)
        a2 = a1 if i % 9 == 0 else rng.choice(COLOURS)
        rows.append((f"CLEVR_2obj_{i:06d}.png", o1, a1, o2, a2))
    rows.append(("CLEVR_2obj_999998.png", *rows[1][3:5], *rows[1][1:3]))  # the other order
    lines = "".join(",".join(r) + "\n" for r in rows)
    (folder / "images_2obj").mkdir(parents=True, exist_ok=True)
    (folder / "output_2obj.csv").write_text(lines)
    for r in rows:
        _png(folder / "images_2obj" / r[0])
    return rows


def _publisher_clevr_labels(rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    out = []
    for row in rows:
        pair_label = list(row[1:])
        for i in range(0, len(pair_label), 2):
            pair_label[i], pair_label[i + 1] = pair_label[i + 1], pair_label[i]
        out.append(tuple(pair_label))
    return out


def _publisher_clevr_split(all_pair_labels: list[tuple[str, ...]]) -> tuple[list[int], ...]:
    attr_list, obj_list = sorted(set(COLOURS)), sorted(set(SHAPES))
    attr_to_idx = {a: i for i, a in enumerate(attr_list)}
    obj_to_idx = {o: i for i, o in enumerate(obj_list)}

    def tuple_to_matrix(tup: tuple[str, ...]) -> np.ndarray:
        matrix = np.zeros((3, 8), dtype=int)
        for i in range(0, len(tup), 2):
            matrix[obj_to_idx[tup[i + 1]]][attr_to_idx[tup[i]]] += 1
        return matrix

    def matrix_to_tuple(matrix: np.ndarray) -> tuple[str, ...]:
        result: list[str] = []
        for obj_idx in range(3):
            for attr_idx in range(8):
                for _ in range(matrix[obj_idx][attr_idx]):
                    result += [attr_list[attr_idx], obj_list[obj_idx]]
        return tuple(result)

    unique_labels_uptoorder = sorted(set(all_pair_labels))
    matrix_labels: list[np.ndarray] = []
    for label in unique_labels_uptoorder:
        matrix = tuple_to_matrix(label)
        if any(np.array_equal(matrix, m) for m in matrix_labels):
            continue
        matrix_labels.append(matrix)
    unique_pair_labels = [matrix_to_tuple(m) for m in matrix_labels]

    random.seed(42)
    test: list[np.ndarray] = []
    val: list[np.ndarray] = []
    while len(test) < int(0.1 * len(unique_pair_labels)):
        sample = random.sample(unique_pair_labels, 1)[0]
        matrix = tuple_to_matrix(sample)
        if any(np.array_equal(matrix, m) for m in test):
            continue
        test.append(matrix)
        matrix = tuple_to_matrix((sample[2], sample[1], sample[0], sample[3]))
        if any(np.array_equal(matrix, m) for m in test):
            continue
        test.append(matrix)
    while len(val) < int(0.1 * len(unique_pair_labels)):
        sample = random.sample(unique_pair_labels, 1)[0]
        matrix = tuple_to_matrix(sample)
        if any(np.array_equal(matrix, m) for m in val) or any(
            np.array_equal(matrix, m) for m in test
        ):
            continue
        val.append(matrix)
        matrix = tuple_to_matrix((sample[2], sample[1], sample[0], sample[3]))
        if any(np.array_equal(matrix, m) for m in val) or any(
            np.array_equal(matrix, m) for m in test
        ):
            continue
        val.append(matrix)
    test_indices, val_indices, train_indices = [], [], []
    for i, pair_label in enumerate(all_pair_labels):
        matrix = tuple_to_matrix(pair_label)
        if any(np.array_equal(matrix, m) for m in test):
            test_indices.append(i)
        elif any(np.array_equal(matrix, m) for m in val):
            val_indices.append(i)
        else:
            train_indices.append(i)
    return train_indices, val_indices, test_indices


def _publisher_clevr_pair_labels() -> dict[tuple[str, ...], int]:
    # get_pair_labels(attr_set, obj_set), the sets walked in sorted order (see clevr_binding)
    pair_labels: list[tuple[str, ...]] = []
    for attr1 in sorted(set(COLOURS)):
        for obj1 in sorted(set(SHAPES)):
            for attr2 in sorted(set(COLOURS)):
                for obj2 in sorted(set(SHAPES)):
                    if obj1 == obj2:
                        continue
                    if (attr1, obj1, attr2, obj2) in pair_labels:
                        continue
                    if (attr2, obj2, attr1, obj1) in pair_labels:
                        continue
                    pair_labels.append((attr1, obj1, attr2, obj2))
    return {pair_label: i for i, pair_label in enumerate(pair_labels)}


def _publisher_caption_labels(
    pair_labels: list[tuple[str, ...]], pair_label_dict: dict[tuple[str, ...], int]
) -> tuple[list[int], list[int]]:
    labels, neg_labels = [], []
    for pair_label in pair_labels:
        if tuple(pair_label) in pair_label_dict:
            labels.append(pair_label_dict[tuple(pair_label)])
        elif (pair_label[2], pair_label[3], pair_label[0], pair_label[1]) in pair_label_dict:
            labels.append(
                pair_label_dict[(pair_label[2], pair_label[3], pair_label[0], pair_label[1])]
            )
        else:
            raise ValueError("The pair label is not in the pair label dictionary")
        neg_pair_label = (pair_label[2], pair_label[1], pair_label[0], pair_label[3])
        if tuple(neg_pair_label) in pair_label_dict:
            neg_labels.append(pair_label_dict[tuple(neg_pair_label)])
        elif (
            neg_pair_label[2],
            neg_pair_label[3],
            neg_pair_label[0],
            neg_pair_label[1],
        ) in pair_label_dict:
            neg_labels.append(
                pair_label_dict[
                    (neg_pair_label[2], neg_pair_label[3], neg_pair_label[0], neg_pair_label[1])
                ]
            )
        else:
            raise ValueError("The pair label is not in the pair label dictionary")
    return labels, neg_labels


def _publisher_clevr_accuracy(
    image_embeddings: np.ndarray,
    caption_embeddings: np.ndarray,
    pair_indices: list[int],
    neg_pair_indices: list[int],
) -> float:
    pos_similarity = np.sum(image_embeddings * caption_embeddings[pair_indices], axis=-1)
    neg_similarity = np.sum(image_embeddings * caption_embeddings[neg_pair_indices], axis=-1)
    correct = 0
    total = 0
    for i in range(len(pos_similarity)):
        if pair_indices[i] != neg_pair_indices[i]:
            total += 1
            if pos_similarity[i] > neg_similarity[i] or (pos_similarity[i] == neg_similarity[i]):
                correct += 1
    return correct / total


def _captions(pair_label_dict: dict[tuple[str, ...], int]) -> list[str]:
    return [f"{p[0]} {p[1]} and {p[2]} {p[3]}" for p in pair_label_dict]


def test_clevr_split_is_the_publishers(tmp_path: Path) -> None:
    rows = _write_clevr(tmp_path / "clevr")
    labels = _publisher_clevr_labels(rows)
    train, val, test = _publisher_clevr_split(labels)
    ours = _koishigarina.clevr_split([tuple(x) for x in labels])  # type: ignore[misc]
    assert ours == {"test": test, "val": val, "train": train}
    assert test and val and train  # the fixture fills every split


@pytest.mark.parametrize("subset", ["test", "val", "train"])
def test_clevr_binding_scores_as_the_publishers_get_accuracy(tmp_path: Path, subset: str) -> None:
    rows = _write_clevr(tmp_path / "clevr")
    labels = _publisher_clevr_labels(rows)
    split = dict(zip(("train", "val", "test"), _publisher_clevr_split(labels), strict=True))
    pair_label_dict = _publisher_clevr_pair_labels()
    captions = _captions(pair_label_dict)
    # a tie: one scene's caption and its negative share a vector (the publisher counts it right)
    tied = labels[split[subset][1]]
    model = TableEmbedder(
        {
            "{} {} and {} {}".format(*t): np.eye(8)[0]
            for t in (
                tied,
                (tied[2], tied[1], tied[0], tied[3]),
                (tied[2], tied[3], tied[0], tied[1]),
                (tied[0], tied[3], tied[2], tied[1]),
            )
        }
    )
    (record,) = evaluate(
        [model],
        task="clevr_binding",
        data=tmp_path / "clevr",
        subsets=subset,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    indices = split[subset]
    pos, neg = _publisher_caption_labels([labels[i] for i in indices], pair_label_dict)
    images = model.embed_images([tmp_path / "clevr" / "images_2obj" / rows[i][0] for i in indices])
    texts = model.embed_texts(captions)
    expected = _publisher_clevr_accuracy(images, texts, pos, neg)
    assert record["scores"]["accuracy"] == pytest.approx(expected, abs=1e-12)
    same = sum(p == n for p, n in zip(pos, neg, strict=True))
    assert record["counts"] == {
        "items": len(indices),
        "same_colour": same,
        "missing_images": 0,
        "scored": len(indices) - same,
    }
    assert 0 < expected < 1
    per_item = mean_is_score(tmp_path / "r", record, "correct", "accuracy").values
    one_by_one = [
        _publisher_clevr_accuracy(images[k : k + 1], texts, pos[k : k + 1], neg[k : k + 1])
        for k in range(len(indices))
        if pos[k] != neg[k]
    ]
    assert per_item.tolist() == one_by_one


def test_clevr_binding_reads_only_the_published_vocabulary(tmp_path: Path) -> None:
    _write_clevr(tmp_path / "clevr")
    with (tmp_path / "clevr" / "output_2obj.csv").open("a") as f:
        f.write("CLEVR_x.png,cube,pink,sphere,red\n")
    with pytest.raises(DataFormatError, match=r"output_2obj.csv:152: 'pink' is not one of blue"):
        get_task("clevr_binding").load(tmp_path / "clevr")
    with pytest.raises(DataFormatError, match=r"output_2obj.csv: not found"):
        get_task("clevr_binding").load(tmp_path)


# -- PUG:SPARE ----------------------------------------------------------------------------------
SPARE_TEXTURES = ("Red", "Blue", "Grass", "Gold")
SPARE_ANIMALS = ("Cat", "Dog", "Goldfish", "Elephant")
SPARE_COLUMNS = [
    "filename",
    "world_name",
    "character_name",
    "character2_name",
    "character_texture",
    "character2_texture",
]


def _write_pug_spare(
    folder: Path,
    keep: float = 0.35,
    seed: int = 5,
    textures: tuple[str, ...] = SPARE_TEXTURES,
    animals: tuple[str, ...] = SPARE_ANIMALS,
    worlds: tuple[str, ...] = ("Desert", "Island"),
) -> list[dict[str, str]]:
    """``PUG_SPARE.csv`` and one folder per world, as the publisher's Drive files unpack."""
    rng = random.Random(seed)
    rows = []
    for world in worlds:
        for t1 in textures:
            for c1 in animals:
                for t2 in textures:
                    for c2 in animals:
                        if t1 == t2 or c1 == c2 or rng.random() > keep:
                            continue
                        name = f"{c1}_{t1}_{c2}_{t2}.png"
                        rows.append(
                            dict(zip(SPARE_COLUMNS, (name, world, c1, c2, t1, t2), strict=True))
                        )
                        _png(folder / world / name)
    lines = ",".join(SPARE_COLUMNS) + "\n"
    lines += "".join(",".join(r[c] for c in SPARE_COLUMNS) + "\n" for r in rows)
    (folder / "PUG_SPARE.csv").write_text(lines)
    return rows


def _publisher_pug_spare(folder: Path) -> tuple[Any, dict[tuple[str, ...], int], tuple[Any, ...]]:
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(folder / "PUG_SPARE.csv")
    objects = df["character_name"].unique()
    attributes = df["character_texture"].unique()
    pair_labels = [
        (attr1, obj1, attr2, obj2)
        for attr1 in attributes
        for obj1 in objects
        for attr2 in attributes
        for obj2 in objects
        if obj1 != obj2 and attr1 != attr2
    ]
    pair_labels_dict = {pair_label: i for i, pair_label in enumerate(pair_labels)}

    def extend_test_indices(unique_pair_labels: list[Any], df: Any) -> list[int]:
        extended_indices: list[int] = []
        for (
            character_texture,
            character_name,
            character2_texture,
            character2_name,
        ) in unique_pair_labels:
            for n1, n2, t1, t2 in (
                (character_name, character2_name, character_texture, character2_texture),
                (character2_name, character_name, character2_texture, character_texture),
                (character_name, character2_name, character2_texture, character_texture),
                (character2_name, character_name, character_texture, character2_texture),
            ):
                alt_row = df[df["character_name"] == n1]
                alt_row = alt_row[alt_row["character2_name"] == n2]
                alt_row = alt_row[alt_row["character_texture"] == t1]
                alt_row = alt_row[alt_row["character2_texture"] == t2]
                extended_indices.extend(list(alt_row.index))
        return extended_indices

    random.seed(42)
    unique_combinations: list[Any] = []
    for pair_label in list(pair_labels_dict.keys()):
        attr1, obj1, attr2, obj2 = pair_label
        if (attr1, obj2, attr2, obj1) in unique_combinations:
            continue
        if (attr2, obj1, attr1, obj2) in unique_combinations:
            continue
        unique_combinations.append(pair_label)
    test_labels = random.sample(unique_combinations, int(0.1 * len(unique_combinations)))
    test_indices = extend_test_indices(test_labels, df)
    val_labels = random.sample(
        [combo for combo in unique_combinations if combo not in test_labels],
        int(0.1 * len(unique_combinations)),
    )
    val_indices = extend_test_indices(val_labels, df)
    train_indices = [i for i in df.index if i not in test_indices and i not in val_indices]
    return df, pair_labels_dict, (train_indices, val_indices, test_indices)


def _publisher_pug_accuracy(
    image_embeddings: np.ndarray,
    caption_embeddings: np.ndarray,
    pair_indices: list[int],
    neg_pair_indices: list[int],
) -> float:
    pos_similarity = np.sum(image_embeddings * caption_embeddings[pair_indices], axis=-1)
    neg_similarity = np.sum(image_embeddings * caption_embeddings[neg_pair_indices], axis=-1)
    correct = (pos_similarity > neg_similarity).sum().item()
    return float(correct / len(image_embeddings))


@pytest.mark.parametrize("subset", ["test", "val", "train"])
def test_pug_spare_scores_as_the_publishers_get_accuracy(tmp_path: Path, subset: str) -> None:
    _write_pug_spare(tmp_path / "spare")
    df, pair_labels_dict, (train, val, test) = _publisher_pug_spare(tmp_path / "spare")
    indices = {"train": train, "val": val, "test": test}[subset]
    first = df.iloc[indices[0]]
    tie = (first["character2_texture"], first["character_name"], first["character_texture"])
    model = TableEmbedder(  # one row's caption and negative tie: strictly compared, so wrong
        {
            f"{first['character_texture']} {first['character_name']} and "
            f"{first['character2_texture']} {first['character2_name']}": np.eye(8)[0],
            f"{tie[0]} {tie[1]} and {tie[2]} {first['character2_name']}": np.eye(8)[0],
        }
    )
    (record,) = evaluate(
        [model],
        task="pug_spare",
        data=tmp_path / "spare",
        subsets=subset,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    labels = [
        (
            df.iloc[i]["character_texture"],
            df.iloc[i]["character_name"],
            df.iloc[i]["character2_texture"],
            df.iloc[i]["character2_name"],
        )
        for i in indices
    ]
    pos, neg = _publisher_caption_labels(labels, pair_labels_dict)
    files = [
        tmp_path / "spare" / df.iloc[i]["world_name"] / df.iloc[i]["filename"] for i in indices
    ]
    images = model.embed_images(files)
    texts = model.embed_texts(_captions(pair_labels_dict))
    expected = _publisher_pug_accuracy(images, texts, pos, neg)
    assert record["scores"]["accuracy"] == pytest.approx(expected, abs=1e-12)
    assert record["counts"]["items"] == len(indices)
    assert record["counts"]["repeated"] == len(indices) - len(set(indices))
    assert 0 < expected < 1
    per_item = mean_is_score(tmp_path / "r", record, "correct", "accuracy").values
    one_by_one = [
        _publisher_pug_accuracy(images[k : k + 1], texts, pos[k : k + 1], neg[k : k + 1])
        for k in range(len(indices))
    ]
    assert per_item.tolist() == one_by_one


def test_pug_spare_split_lists_rows_as_the_publisher(tmp_path: Path) -> None:
    # every binding of 3 textures x 6 animals: the drawn bindings include a scene named both
    # ways round, so the publisher's split lists its rows twice
    animals = ("Cat", "Dog", "Goldfish", "Elephant", "Penguin", "Horse")
    _write_pug_spare(tmp_path / "spare", 1.0, 0, SPARE_TEXTURES[:3], animals, ("Desert",))
    _, _, (train, val, test) = _publisher_pug_spare(tmp_path / "spare")
    dataset = get_task("pug_spare").load(tmp_path / "spare")
    assert dataset.payload.splits == {"test": test, "val": val, "train": train}
    assert _koishigarina.repeats(test) == len(test) - len(set(test)) > 0


def test_pug_spare_refuses_a_row_outside_the_caption_list(tmp_path: Path) -> None:
    _write_pug_spare(tmp_path / "spare")
    with (tmp_path / "spare" / "PUG_SPARE.csv").open("a") as f:
        f.write("x.png,Desert,Cat,Dog,Red,Red\n")
    with pytest.raises(DataFormatError, match=r"PUG_SPARE.csv:\d+: 'Red Cat and Red Dog' has no"):
        get_task("pug_spare").load(tmp_path / "spare")


# -- PUG:SPAR -----------------------------------------------------------------------------------
SPAR_COLUMNS = [
    "filename",
    "world_name",
    "character_name",
    "character2_name",
    "character1_pos",
    "character2_pos",
    "character_texture",
    "character2_texture",
]


def _spar_rows() -> list[dict[str, str]]:
    """Scenes as labels.csv lists them: blanks, single animals, same-animal pairs and both
    texture pairs, either texture first."""
    scenes = []
    animals = ["Goldfish", "Elephant", "Penguin"]
    for w, world in enumerate(("Arena", "Desert")):
        scenes.append((f"{w}_bg.png", world, "blank", "blank", "Default", "Default"))
        scenes.append((f"{w}_one.png", world, "Goldfish", "blank", "Blue", "Default"))
        for first, second in (
            ("Blue", "Red"),
            ("Red", "Blue"),
            ("Grass", "Stone"),
            ("Stone", "Grass"),
        ):
            for c1 in animals:
                for c2 in animals:
                    name = f"{w}_{c1}_{first}_{c2}_{second}.png"
                    scenes.append((name, world, c1, c2, first, second))
    return [
        dict(zip(SPAR_COLUMNS, (f, w, c1, c2, "left", "right", t1, t2), strict=True))
        for f, w, c1, c2, t1, t2 in scenes
    ]


def _write_pug_spar(folder: Path) -> list[dict[str, str]]:
    rows = _spar_rows()
    lines = (
        ",".join(SPAR_COLUMNS)
        + "\n"
        + "".join(",".join(r[c] for c in SPAR_COLUMNS) + "\n" for r in rows)
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "labels.csv").write_text(lines)
    for r in rows:
        _png(folder / r["filename"])
    return rows


def _publisher_spar_attribute_rows(folder: Path, texture: str) -> Any:
    pd = pytest.importorskip("pandas")
    main_df = pd.read_csv(str(folder) + "/" + "labels.csv")
    subset_char_double = main_df[
        (main_df["character_name"] != "blank") & (main_df["character2_name"] != "blank")
    ].reset_index(drop=True)
    subset = subset_char_double[(subset_char_double["character_texture"] == texture)]
    return subset.loc[~(subset["character_name"] == subset["character2_name"])].reset_index(
        drop=True
    )


def _publisher_spar_hard_negative(
    image_embed: np.ndarray, text_features: np.ndarray, index: int, neg_index: int, flip: bool
) -> bool:
    # process(..., hard_negative=True), one image; ``flip`` is its random.random() >= 0.5
    if flip:
        label = 1
        logits = 100.0 * image_embed @ text_features[[neg_index, index]].T
    else:
        label = 0
        logits = 100.0 * image_embed @ text_features[[index, neg_index]].T
    output = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    return bool(np.argmax(output) == label)


@pytest.mark.parametrize("layout", ["tarball", "parquet"])
@pytest.mark.parametrize(("subset", "texture"), [("blue_red", "Blue"), ("grass_stone", "Grass")])
def test_pug_spar_scores_as_the_publishers_hard_negative_setting(
    tmp_path: Path, layout: str, subset: str, texture: str
) -> None:
    folder = tmp_path / "spar"
    rows = _write_pug_spar(folder)
    df = _publisher_spar_attribute_rows(folder, texture)
    captions_two_objects, labels, neg_labels = [], [], []
    for idx in range(len(df)):
        c1, c2 = df["character_name"][idx], df["character2_name"][idx]
        t1, t2 = df["character_texture"][idx], df["character2_texture"][idx]
        captions_two_objects.append(
            f"This is a photo of a {c1} textured with {t1} and a {c2} textured with {t2}"
        )
    captions_two_objects = list(set(captions_two_objects))
    for idx in range(len(df)):
        c1, c2 = df["character_name"][idx], df["character2_name"][idx]
        t1, t2 = df["character_texture"][idx], df["character2_texture"][idx]
        labels.append(
            captions_two_objects.index(
                f"This is a photo of a {c1} textured with {t1} and a {c2} textured with {t2}"
            )
        )
        neg_labels.append(
            captions_two_objects.index(
                f"This is a photo of a {c2} textured with {t1} and a {c1} textured with {t2}"
            )
        )
    colours = {r["filename"]: (i, 40 + i % 200, 7) for i, r in enumerate(rows)}
    tied = (
        df["character_name"][0],
        df["character2_name"][0],
        df["character_texture"][0],
        df["character2_texture"][0],
    )
    # one scene's two captions tie: the script's coin flip makes it right half the time
    same = f"textured with {tied[2]} and a {{}} textured with {tied[3]}"
    model = TableEmbedder(
        {
            f"This is a photo of a {a} " + same.format(b): np.eye(8)[1]
            for a, b in ((tied[0], tied[1]), (tied[1], tied[0]))
        }
    )
    if layout == "parquet":
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        table = [
            {
                **{c: r[c] for c in SPAR_COLUMNS if c != "filename"},
                "image": _png_bytes(colours[r["filename"]]),
            }
            for r in rows
        ]
        data = tmp_path / "hub" / "data"
        data.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(table[:20]), data / "train-00000-of-00002.parquet")
        pq.write_table(pa.Table.from_pylist(table[20:]), data / "train-00001-of-00002.parquet")
        names = ["rgb" + "-".join(map(str, colours[f])) for f in df["filename"]]
        images = np.stack([model._vector(n) for n in names])
        source = tmp_path / "hub"
    else:
        images = model.embed_images([folder / f for f in df["filename"]])
        source = folder
    (record,) = evaluate(
        [model],
        task="pug_spar",
        data=source,
        subsets=subset,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    text_features = model.embed_texts(captions_two_objects)
    credit = [
        np.mean(
            [
                _publisher_spar_hard_negative(
                    images[k], text_features, labels[k], neg_labels[k], flip
                )
                for flip in (False, True)
            ]
        )
        for k in range(len(df))
    ]
    assert record["scores"]["accuracy"] == pytest.approx(float(np.mean(credit)), abs=1e-12)
    per_item = mean_is_score(tmp_path / "r", record, "correct", "accuracy").values
    assert per_item.tolist() == credit  # item by item, in the script's row order
    assert record["counts"]["items"] == len(df) == 12  # 2 worlds x 6 ordered pairs of animals
    assert 0.5 in credit  # the tie


def test_pug_spar_names_both_layouts_when_neither_is_there(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match=r"neither labels.csv nor .parquet files"):
        get_task("pug_spar").load(tmp_path)
