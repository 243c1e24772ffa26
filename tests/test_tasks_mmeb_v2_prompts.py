"""MMEB-V2's inputs reach a VLM2Vec model as VLM2Vec's loaders compose them, character for
character: with last-token pooling a space or a newline changes the embedding.

``official_*`` below restate ``src/model/processor.py``'s ``process_input_text`` (Qwen2-VL
branch) and each loader's composition (``image_*_dataset.py``/``image_*_eval.py``,
``video_classification_datasets.py``, ``activitynetqa_dataset.py``, ``nextqa_dataset.py``,
``momentseeker_dataset.py``); the readers' inputs, rendered by the ``vlm2vec`` prompt format,
must equal them exactly (no whitespace normalisation).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bindkit.embed.prompts import Composed, vlm2vec_prompt
from bindkit.tasks.mmeb._mmeb_v2_data import SOURCES
from bindkit.tasks.mmeb._mmeb_v2_files import Input, Split

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

IMAGE = "<|image_pad|>"
VIDEO = "<|video_pad|>"
V1_IMAGE = "<|image_1|>"
QA = (
    "Given a video and a question, select the most accurate answer from the provided "
    "candidates. Return only the exact text of your chosen answer. Question: "
)


def process_input_text(
    instruction: str,
    text: str | None = None,
    add_video_token: bool = False,
    add_image_token: bool = False,
) -> str:
    prompt = instruction
    if text:
        prompt = prompt + " " + text
    if add_video_token:
        prompt = VIDEO + " " + prompt
    if add_image_token:
        prompt = IMAGE + " " + prompt
    return prompt


def official_image_query(row: dict[str, Any], newline_first: bool) -> str:
    """image_cls / image_i2t (``newline_first`` False), image_qa / image_i2i_vg (True)."""
    inst = row["qry_inst"].replace(V1_IMAGE, "")
    if newline_first:
        inst = "\n" + inst.strip()
    text = process_input_text(inst, text=row["qry_text"], add_image_token=True)
    return text.replace(" \n", "\n") + "\n"


def official_targets(row: dict[str, Any], newline: bool) -> list[str]:
    """image_t2i (``newline`` True) and image_i2i_vg (False) candidate prompts."""
    inst = row["tgt_inst"].replace(V1_IMAGE, "")
    if row["tgt_text"][0].strip():
        out = []
        for cap in row["tgt_text"]:
            t = process_input_text(inst + " " + cap, text="", add_image_token=True)
            out.append(t.replace(" \n", "\n") + "\n")
        return out
    t = process_input_text(inst, text="", add_image_token=True).replace(" \n", "\n")
    return [t + "\n" if newline else t] * len(row["tgt_img_path"])


def official_t2i_query(row: dict[str, Any], name: str) -> str:
    text = row["qry_inst"].replace(V1_IMAGE, IMAGE) + " " + row["qry_text"] + "\n"
    return text + "\n" if name == "VisDial" else text


def official_qa_template(question: str, candidates: list[str]) -> str:
    question = f"{question}\n" + "Options:\n"
    for idx, c in enumerate(candidates):
        question += f"({chr(ord('A') + idx)}) {c}\n"
    return question.rstrip()


def rendered(item: Input, role: Any) -> str:
    """The ``vlm2vec`` prompt of one input as ``mmeb_v2`` hands it to the embedder."""
    if item.kind == "text":
        return vlm2vec_prompt(item.text, False, role, None)
    assert item.exact is not None
    instruction = Composed(item.text, item.exact)
    return vlm2vec_prompt(None, item.kind == "image", role, instruction, video=item.kind == "video")


def _read(root: Path, name: str) -> Split:
    return SOURCES[name].reader(root, name, SOURCES[name])


def _image_rows(root: Path, name: str, rows: list[dict[str, Any]]) -> None:
    path = root / "ziyjiang/MMEB_Test_Instruct" / name / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def _row(**kw: Any) -> dict[str, Any]:
    base = {"qry_inst": "", "qry_text": "", "qry_img_path": "q.jpg", "tgt_inst": ""}
    return base | kw


CASES = {
    "ImageNet-1K": _row(
        qry_inst="<|image_1|> Represent the given image for classification\n",
        tgt_text=["tench ", "goldfish"],
        tgt_img_path=["", ""],
    ),
    "OK-VQA": _row(
        qry_inst="<|image_1|> Represent the given image with the following question: ",
        qry_text="What is the man holding? ",
        tgt_text=["a kite", "an umbrella"],
        tgt_img_path=["", ""],
    ),
    "MSCOCO_t2i": _row(
        qry_inst="Find me an everyday image that matches the given caption:",
        qry_text="A man with a red kite.",
        tgt_inst="<|image_1|>\nRepresent the given image.\n",
        tgt_text=["", ""],
        tgt_img_path=["a.jpg", "b.jpg"],
    ),
    "VisDial": _row(
        qry_inst="Represent the given dialogue about an image, which is used for image retrieval:",
        qry_text="Q:is it a dog A:yes",
        tgt_inst="<|image_1|> Represent the given image.",
        tgt_text=[""],
        tgt_img_path=["c.jpg"],
    ),
    "WebQA": _row(
        qry_inst="Find a Wikipedia image that answers this question:",
        qry_text="What colour is the roof?",
        tgt_inst="<|image_1|> Represent the given Wikipedia image with related text information:",
        tgt_text=["The roof ", "A door"],
        tgt_img_path=["d.jpg", "e.jpg"],
    ),
    "MSCOCO": _row(
        qry_inst="<|image_1|> Select the portion of the image that isolates the object: ",
        qry_text='"kite"',
        tgt_inst="<|image_1|>\nRepresent the given cropped image of the object.",
        tgt_text=["", ""],
        tgt_img_path=["f.jpg", "g.jpg"],
    ),
    "RefCOCO-Matching": _row(
        qry_inst="<|image_1|> Select the portion of the image that follows the language "
        "expressions: ",
        qry_text='"the left man"',
        tgt_inst="<|image_1|> Select the portion of the image that follows the language "
        "expressions: ",
        tgt_text=['"left man"', '"right man"'],
        tgt_img_path=["h.jpg", "h.jpg"],
    ),
}
KINDS = {
    "ImageNet-1K": "cls",
    "OK-VQA": "qa",
    "MSCOCO_t2i": "t2i",
    "VisDial": "t2i",
    "WebQA": "t2i",
    "MSCOCO": "i2i_vg",
    "RefCOCO-Matching": "i2i_vg",
}


@pytest.mark.parametrize("name", list(CASES))
def test_image_inputs_render_as_vlm2vecs_loaders(tmp_path: Path, name: str) -> None:
    row, kind = CASES[name], KINDS[name]
    _image_rows(tmp_path, name, [row])
    split = _read(tmp_path, name)
    (query,) = split.queries
    cands = [split.candidates[n] for n in query.candidates]
    if kind in ("cls", "qa"):
        expected_q = official_image_query(row, newline_first=kind == "qa")
        expected_c = list(row["tgt_text"])  # the candidate texts as published
    elif kind == "t2i":
        expected_q = official_t2i_query(row, name)
        expected_c = official_targets(row, newline=True)
    else:
        expected_q = official_image_query(row, newline_first=True)
        expected_c = official_targets(row, newline=False)
    assert rendered(query.input, "query") == expected_q
    assert [rendered(c, "document") for c in cands] == expected_c


def test_the_whitespace_cases_the_review_named(tmp_path: Path) -> None:
    """t2i queries end with "\\n", VisDial's with "\\n\\n"; an i2i_vg candidate without a
    caption has no final newline, a t2i one has."""
    for name in ("MSCOCO_t2i", "VisDial", "MSCOCO"):
        _image_rows(tmp_path, name, [CASES[name]])
    coco = _read(tmp_path, "MSCOCO_t2i")
    assert coco.queries[0].input.text.endswith("caption: A man with a red kite.\n")
    assert _read(tmp_path, "VisDial").queries[0].input.text.endswith("A:yes\n\n")
    vg = _read(tmp_path, "MSCOCO")
    assert rendered(vg.candidates[vg.queries[0].candidates[0]], "document") == (
        "<|image_pad|>\nRepresent the given cropped image of the object."
    )
    t2i = coco.candidates[coco.queries[0].candidates[0]]
    assert rendered(t2i, "document") == "<|image_pad|>\nRepresent the given image.\n\n"


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_video_inputs_render_as_vlm2vecs_loaders(tmp_path: Path) -> None:
    _jsonl(
        tmp_path / "VLM2Vec/Breakfast/data/test.jsonl",
        [{"video_id": "P03_cam01_P03_tea", "pos_text": "tea"}],
    )
    _jsonl(
        tmp_path / "VLM2Vec/ActivityNetQA/data/test.jsonl",
        [{"video_name": "abc", "question": "is it red ", "answer": "yes", "question_id": "q"}],
    )
    nextqa = {"video": "v1", "question": "why did he run?", "answer": 1, "qid": "n1"}
    nextqa |= {f"a{i}": f"answer {i}" for i in range(5)}
    (tmp_path / "VLM2Vec/NExTQA/MC").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist([nextqa]), tmp_path / "VLM2Vec/NExTQA/MC/test-00000-of-00001.parquet"
    )
    breakfast = _read(tmp_path, "Breakfast").queries[0].input
    assert rendered(breakfast, "query") == process_input_text(
        "Recognize the breakfast type that the person is cooking in the video. ",
        add_video_token=True,
    )
    assert rendered(breakfast, "query").endswith("video. ")  # the published trailing space
    anet = _read(tmp_path, "ActivityNetQA").queries[0].input
    assert rendered(anet, "query") == f"{VIDEO} {QA} is it red ? (A) yes; (B) no."
    nq = _read(tmp_path, "NExTQA").queries[0].input
    expected = official_qa_template(
        f"{VIDEO} {QA} why did he run?", [f"answer {i}" for i in range(5)]
    )
    assert rendered(nq, "query") == expected


def test_momentseeker_image_query_has_a_space_after_the_token(tmp_path: Path) -> None:
    rows = [
        {
            "query": "the same cup",
            "input_frames": "cup.jpg",
            "positive_frames": [{"output_path": "ego/c3.mp4"}],
            "negative_frames": [{"output_path": "ego/c4.mp4"}],
        }
    ]
    path = tmp_path / "VLM2Vec/MomentSeeker/data/test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    split = _read(tmp_path, "MomentSeeker")
    inst = "Select the video clip that aligns with the given text and image:"
    assert rendered(split.queries[0].input, "query") == process_input_text(
        inst, text="the same cup", add_image_token=True
    )
    clip = split.candidates[split.queries[0].candidates[0]]
    assert rendered(clip, "document") == process_input_text(
        "Understand the content of the provided video clip.", add_video_token=True
    )


class Recorder:
    """An embedder that records the instructions it is handed."""

    modalities = frozenset({"text", "image", "video"})
    spec = "test:recorder"

    def __init__(self) -> None:
        self.instructions: list[Any] = []

    def embed_texts(self, texts: list[str], *, role: Any = "query") -> np.ndarray:
        return np.ones((len(texts), 3), np.float32)

    def embed_images(self, images: Any, *, role: Any = "query", instruction: Any = None) -> Any:
        self.instructions.append(instruction)
        return np.ones((len(images), 3), np.float32)

    def embed_videos(self, videos: Any, *, role: Any = "query", instruction: Any = None) -> Any:
        self.instructions.append(instruction)
        return np.ones((len(videos), 3), np.float32)


def test_the_task_hands_the_exact_composition_to_the_embedder(tmp_path: Path) -> None:
    from bindkit.tasks.mmeb.mmeb_v2 import embed_inputs

    _jsonl(
        tmp_path / "VLM2Vec/Breakfast/data/test.jsonl",
        [{"video_id": "P03_cam01_P03_tea", "pos_text": "tea"}],
    )
    split = _read(tmp_path, "Breakfast")
    folder = tmp_path / split.queries[0].input.path
    folder.mkdir(parents=True)
    (folder / "frame_0001.png").write_bytes(b"")
    recorder = Recorder()
    embed_inputs(recorder, [("query", split.queries[0].input)], tmp_path, split, 8, "t")  # type: ignore[arg-type]
    (given,) = recorder.instructions
    assert isinstance(given, Composed)
    assert given == "Recognize the breakfast type that the person is cooking in the video."
    assert given.exact == " Recognize the breakfast type that the person is cooking in the video. "


def test_image_query_ids_are_unique_when_rows_share_an_image(tmp_path: Path) -> None:
    row = CASES["OK-VQA"]
    _image_rows(tmp_path, "OK-VQA", [row, row | {"qry_text": "What colour?"}])
    ids = [q.id for q in _read(tmp_path, "OK-VQA").queries]
    assert ids == ["0:q.jpg", "1:q.jpg"]


def test_repeated_per_query_ids_are_numbered() -> None:
    from bindkit.tasks.mmeb.mmeb_v2 import unique_ids

    assert unique_ids(["a", "b", "a", "a"]) == ["a", "b", "a#2", "a#3"]
    assert unique_ids(["x", "y"]) == ["x", "y"]


def test_ties_break_as_vlm2vecs_argsort_breaks_them() -> None:
    """Tied candidates keep the order of ``np.argsort(-scores)`` (``eval.py``), whatever it is
    on this machine: the ranking equals it on tie-heavy scores, local and global."""
    from bindkit.tasks.mmeb._mmeb_v2_files import Query
    from bindkit.tasks.mmeb.mmeb_v2 import rank

    rng = np.random.default_rng(0)
    for n in (2, 4, 5, 16, 17, 40):
        names = [f"c{i}" for i in range(n)]
        split = Split([], {c: Input("text", c) for c in names}, "local")
        levels = rng.integers(0, 3, n)  # scores 0, 1 or 2: many ties
        cand = {
            c: np.array([1.0, float(v)], np.float32) for c, v in zip(names, levels, strict=True)
        }
        query = Input("text", "q")
        vectors: dict[Any, np.ndarray] = {("query", query): np.array([0.0, 1.0], np.float32)}
        vectors |= {("document", split.candidates[c]): v for c, v in cand.items()}
        queries = [Query("a", query, tuple(names), ("c0",))]
        matrix = np.stack([cand[c] for c in names])
        official = [names[i] for i in np.argsort(-np.dot(vectors[("query", query)], matrix.T))]
        assert rank(split, queries, names, vectors) == [official]  # type: ignore[arg-type]
        split.ranking = "global"
        assert rank(split, queries, names, vectors) == [official]  # type: ignore[arg-type]
