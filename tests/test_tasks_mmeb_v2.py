"""MMEB-V2 on fixtures in the official layout, against a restatement of VLM2Vec's evaluation.

The fixture writes each dataset's annotation parquet as its Hub dataset publishes it
(``VLM2Vec/UCF101``'s ``video_id``/``pos_text``, ``vidore/*``'s BEIR ``queries``/``qrels``/
``corpus``, ``ziyjiang/MMEB_Test_Instruct``'s ``qry_inst``...) plus generated frame folders,
images and pages. ``official_scores`` below restates VLM2Vec's loaders (query text, candidate
names, ``generate_cand_dataset``), ``eval.py``'s ranking and ``RankingMetrics``' ``hit_at_k``
and ``ndcg_at_k`` independently of bindkit's code, on the same embedder's vectors.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bindkit.embed.base import BaseEmbedder
from bindkit.embed.cache import EmbeddingCache
from bindkit.embed.video import VideoRef, as_video_ref
from bindkit.errors import BindkitError
from bindkit.evaluation import evaluate

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
Image = pytest.importorskip("PIL.Image")

VIDEO_TOKEN = "<|video_pad|>"
PROMPT = (
    "Given a video and a question, select the most accurate answer from the provided "
    "candidates. Return only the exact text of your chosen answer. Question: "
)
DIM = 12


def _words(text: str) -> np.ndarray:
    v = np.zeros(DIM, np.float32)
    for word in re.findall(r"\w+", text.lower()):
        v[int(hashlib.sha256(word.encode()).hexdigest()[:6], 16) % DIM] += 1.0
    return v


def _instruction(text: str | None) -> np.ndarray:
    """A tenth of the words plus a vector seeded by the whole text: any change to an
    instruction moves the vector."""
    seed = int(hashlib.sha256((text or "").encode()).hexdigest()[:8], 16)
    noise = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return _words(text or "") / 10 + noise


def _colour(image: Any) -> np.ndarray:
    rgb = np.asarray(image.convert("RGB"), np.float32).reshape(-1, 3).mean(0) / 255.0
    return np.concatenate([rgb, np.sin(7 * rgb), np.cos(5 * rgb), rgb**2]).astype(np.float32)


def sampled_frames(folder: Path, num_frames: int | None = 8) -> list[Path]:
    """VLM2Vec's ``process_video_frames``: frames in natural name order, ``num_frames`` of them
    at ``np.linspace(0, n - 1, num_frames, dtype=int)`` when there are enough; ``None``: all
    of them (``load_frames``)."""

    def key(name: str) -> list[Any]:
        return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]

    frames = sorted(
        (p for p in folder.iterdir() if p.suffix in (".png", ".jpeg")), key=lambda p: key(p.name)
    )
    if num_frames is not None and num_frames <= len(frames):
        frames = [frames[i] for i in np.linspace(0, len(frames) - 1, num_frames, dtype=int)]
    return frames


class ColourWords(BaseEmbedder):
    """Texts: a hashed bag of words; images and frame folders: colour features of the (sampled)
    frames plus a vector of the instruction. Counts what it encodes."""

    modalities = frozenset({"text", "image", "video"})

    def __init__(self, crash_after_videos: int | None = None, **kwargs: Any) -> None:
        super().__init__(spec="test:colour-words", **kwargs)
        self.encoded: list[tuple[str, int]] = []
        self.crash_after_videos = crash_after_videos
        self.videos: list[VideoRef] = []

    def _describe(self) -> dict[str, Any]:
        return {"backend": "colour-words"}

    def _encode_texts(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        self.encoded.append(("text", len(texts)))
        return np.stack([_words(t) for t in texts])

    def _encode_images(self, images: list[Any], role: str, instruction: str | None) -> np.ndarray:
        self.encoded.append(("image", len(images)))
        bonus = _instruction(instruction)
        return np.stack([_colour(im) + bonus for im in images])

    def embed_videos(
        self, videos: Any, *, role: Any = "query", instruction: str | None = None
    ) -> np.ndarray:
        refs = [as_video_ref(v) for v in videos]
        self.videos += refs

        def frames(ref: VideoRef) -> list[Path]:
            return sampled_frames(ref.path, 8 if ref.sample else None)

        def encode(batch: list[VideoRef]) -> np.ndarray:
            done = sum(n for kind, n in self.encoded if kind == "video")
            if self.crash_after_videos is not None and done >= self.crash_after_videos:
                raise KeyboardInterrupt  # a kill while clips are embedded
            self.encoded.append(("video", len(batch)))
            bonus = _instruction(instruction)
            return np.stack(
                [np.mean([_colour(Image.open(f)) for f in frames(r)], 0) + bonus for r in batch]
            )

        keys = [
            "vid:" + hashlib.sha256(b"".join(f.read_bytes() for f in frames(r))).hexdigest()
            for r in refs
        ]
        return self._run(
            refs,
            keys=keys,
            lengths=[0] * len(refs),
            encode=encode,
            prompt=self.prompt_key("image", role, instruction) + "|video",
            what="videos",
        )


# -- the fixture (official layout) --------------------------------------------------------------
def _parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def _frames(folder: Path, colours: list[tuple[int, int, int]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, c in enumerate(colours):
        Image.new("RGB", (8, 8), c).save(folder / f"frame_{i + 1:04d}.png")


def _clip_colours(seed: int, n: int = 11) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(seed)
    return [tuple(int(x) for x in rng.integers(0, 256, 3)) for _ in range(n)]


def _png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (6, 6), colour).save(out, format="PNG")
    return out.getvalue()


def video_fixture(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Annotation rows per dataset, written in the official layout with frame folders."""
    rows: dict[str, list[dict[str, Any]]] = {
        "UCF101": [
            {"video_id": "v_ApplyEyeMakeup_g01_c01", "pos_text": "ApplyEyeMakeup"},
            {"video_id": "v_Archery_g02_c01", "pos_text": "Archery"},
            {"video_id": "v_Biking_g03_c02", "pos_text": "Biking"},
        ],
        "Breakfast": [
            {"video_id": "P03_cam01_P03_tea", "pos_text": "tea"},
            {"video_id": "P04_cam01_P04_juice", "pos_text": "juice"},
        ],
        "K700": [
            {"video_id": "abc_000010_000020", "pos_text": "archery"},
            {"video_id": "def_000001_000011", "pos_text": "whistling"},
        ],
        "ActivityNetQA": [
            {
                "video_name": "abc",
                "question": "is the man outdoors",
                "answer": "yes",
                "question_id": "q0",
            },
            {"video_name": "def", "question": "is it raining", "answer": "no", "question_id": "q1"},
            {"video_name": "ghi", "question": "is he red", "answer": "no", "question_id": "q2"},
            {"video_name": "x3", "question": "is it sunny", "answer": "yes", "question_id": "q3"},
            {"video_name": "x4", "question": "is it late", "answer": "no", "question_id": "q4"},
            {"video_name": "x5", "question": "is it indoors", "answer": "yes", "question_id": "q5"},
            {"video_name": "x6", "question": "is it loud", "answer": "no", "question_id": "q6"},
            {"video_name": "x7", "question": "is it a park", "answer": "yes", "question_id": "q7"},
            {
                "video_name": "x8",
                "question": "is it a kitchen",
                "answer": "no",
                "question_id": "q8",
            },
        ],
        "EgoSchema": [
            {
                "video_idx": "e1",
                "question": "What does C do?",
                "answer": "2",
                "question_idx": "e1q",
                "option": ["A. cooks red food", "B. reads", "C. walks a blue dog", "D. sleeps"],
            },
            {
                "video_idx": "e2",
                "question": "Why?",
                "answer": "0",
                "question_idx": "e2q",
                "option": [
                    "A. green",
                    "B. sky",
                    "C. noodles",
                    "Dx",
                ],  # no ". ": the slice as published
            },
        ],
        "Video-MME": [
            {
                "question": "What colour is the car?",
                "videoID": "fFjv93ACGo8",
                "options": ["A. Red.", "B. Blue.", "C. Green.", "D. Black."],
                "answer": "C",
                "question_id": "001-1",
                "domain": "Knowledge",
                "sub_category": "Humanity",
            },
            {
                "question": "How many people?",
                "videoID": "8pc3E9v3kUg",
                "options": ["A. One.", "B. Two.", "C. Three.", "D. Four."],
                "answer": "A",
                "question_id": "002-1",
                "domain": "Film",
                "sub_category": "Action",
            },
        ],
    }
    hub = {
        "UCF101": "VLM2Vec/UCF101/data",
        "Breakfast": "VLM2Vec/Breakfast/data",
        "K700": "VLM2Vec/Kinetics-700/data",
        "ActivityNetQA": "VLM2Vec/ActivityNetQA/data",
        "EgoSchema": "VLM2Vec/EgoSchema/Subset",
        "Video-MME": "VLM2Vec/Video-MME/data",
    }
    media = {
        "UCF101": "video_cls/UCF101",
        "Breakfast": "video_cls/Breakfast",
        "K700": "video_cls/K700",
        "ActivityNetQA": "video_qa/ActivityNetQA",
        "EgoSchema": "video_qa/EgoSchema",
        "Video-MME": "video_qa/Video-MME",
    }
    ids = {
        "ActivityNetQA": lambda r: "v_" + r["video_name"],
        "EgoSchema": lambda r: r["video_idx"],
        "Video-MME": lambda r: r["videoID"],
    }
    seed = 0
    for name, table in rows.items():
        _parquet(root / hub[name] / "test-00000-of-00001.parquet", table)
        for r in table:
            seed += 1
            vid = ids.get(name, lambda r: r["video_id"])(r)
            _frames(root / "video-tasks/frames" / media[name] / vid, _clip_colours(seed))
    return rows


# -- VLM2Vec's evaluation, restated (its loaders' texts and names, eval.py, RankingMetrics) -----
def _strip_token(text: str) -> str:
    return text.replace(VIDEO_TOKEN, "").replace("<|image_pad|>", "").strip()


def official_prepare(
    name: str, rows: list[dict[str, Any]], labels: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """(query rows, corpus rows, eval_type) as VLM2Vec's loaders build them."""
    queries, corpus = [], []
    cls = {
        "UCF101": "What activities or sports are being performed by the person in the video?",
        "Breakfast": "Recognize the breakfast type that the person is cooking in the video. ",
        "K700": "Recognize the category of the video content.",
    }
    frame_dir = {
        "UCF101": "video_cls/UCF101",
        "Breakfast": "video_cls/Breakfast",
        "K700": "video_cls/K700",
        "ActivityNetQA": "video_qa/ActivityNetQA",
        "EgoSchema": "video_qa/EgoSchema",
        "Video-MME": "video_qa/Video-MME",
    }[name]
    for r in rows:
        if name in cls:
            text = VIDEO_TOKEN + " " + cls[name]
            vid, names, label = r["video_id"], [r["pos_text"]], r["pos_text"]
            texts = [r["pos_text"]]
        elif name == "ActivityNetQA":
            text = f"{VIDEO_TOKEN} {PROMPT} {r['question'] + '? (A) yes; (B) no.'}"
            vid, names, label, texts = (
                "v_" + r["video_name"],
                ["yes", "no"],
                r["answer"],
                ["yes", "no"],
            )
        elif name == "EgoSchema":
            text = f"{VIDEO_TOKEN} {PROMPT} {r['question'] + ' '.join(r['option'])}"
            vid, names = r["video_idx"], r["option"]
            label = r["option"][int(r["answer"])]
            texts = [o[o.find(". ") :].strip(". ") for o in r["option"]]
        else:
            text = f"{VIDEO_TOKEN} {PROMPT} {r['question'] + chr(10) + chr(10).join(r['options'])}"
            vid, names = r["videoID"], r["options"]
            label = r["options"]["ABCD".index(r["answer"])]
            texts = [o[o.find(". ") :].strip(". ") for o in r["options"]]
        queries.append(
            {
                "text": text,
                "video": f"video-tasks/frames/{frame_dir}/{vid}",
                "cand_text": texts,
                "cand_names": names,
                "label_name": label,
            }
        )
    if name in cls:
        corpus = [{"cand_text": [lab], "cand_names": [lab]} for lab in labels]
    return queries, corpus, "global" if name in cls else "local"


def generate_cand_dataset(
    queries: list[dict[str, Any]], corpus: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for row in queries:
        for text, cname in zip(row["cand_text"], row["cand_names"], strict=True):
            seen.setdefault(cname, text)
    for row in corpus:
        seen.setdefault(row["cand_names"][0], row["cand_text"][0])
    return list(seen.items())


def hit_at_k(prediction: list[str], true_labels: list[str], k: int) -> float:
    if not true_labels or k == 0:
        return 0.0
    return 1.0 if len(set(prediction[:k]).intersection(set(true_labels))) > 0 else 0.0


def ndcg_at_k(prediction: list[str], true_labels: Any, k: int, rel_scores: Any) -> float:
    def dcg(rel_list: list[float]) -> float:
        return sum(rel / np.log2(idx + 2) for idx, rel in enumerate(rel_list))

    if rel_scores is None:
        label_set = set(true_labels) if isinstance(true_labels, list) else {true_labels}
        relevance = [1 if item in label_set else 0 for item in prediction[:k]]
        ideal = [1] * min(len(label_set), k)
    else:
        label_rels = dict(zip(true_labels, rel_scores, strict=True))
        relevance = [label_rels.get(item, 0) for item in prediction[:k]]
        ideal = sorted(label_rels.values(), reverse=True)[:k]
    idcg = dcg(ideal) if ideal else 1
    return dcg(relevance) / idcg if idcg > 0 else 0.0


def official_scores(
    q_vecs: np.ndarray,
    cand_keys: list[str],
    cand_vecs: np.ndarray,
    infos: list[dict[str, Any]],
    eval_type: str,
) -> dict[str, Any]:
    preds = []
    if eval_type == "global":
        ranked = np.argsort(-np.dot(q_vecs, cand_vecs.T), axis=1)
        for row, info in zip(ranked, infos, strict=True):
            labels = (
                info["label_name"] if isinstance(info["label_name"], list) else [info["label_name"]]
            )
            preds.append(([cand_keys[i] for i in row], labels, info.get("rel_scores")))
    else:
        lookup = dict(zip(cand_keys, cand_vecs, strict=True))
        for q, info in zip(q_vecs, infos, strict=True):
            c = np.stack([lookup[k] for k in info["cand_names"]])
            order = np.argsort(-np.dot(q, c.T))
            labels = (
                info["label_name"] if isinstance(info["label_name"], list) else [info["label_name"]]
            )
            preds.append(([info["cand_names"][i] for i in order], labels, info.get("rel_scores")))
    return {
        "hit@1": float(np.mean([hit_at_k(p, list(set(t)), 1) for p, t, _ in preds])),
        "ndcg_linear@5": float(np.mean([ndcg_at_k(p, t, 5, r) for p, t, r in preds])),
        "top5": [p[:5] for p, _, _ in preds],
    }


def vlm2vec_video(
    model: ColourWords, root: Path, name: str, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    from bindkit.tasks.mmeb._mmeb_v2_video import video_labels

    labels = video_labels(name) if name in ("UCF101", "Breakfast", "K700") else []
    queries, corpus, eval_type = official_prepare(name, rows, labels)
    q_vecs = np.concatenate(
        [
            model.embed_videos(
                [root / q["video"]], role="query", instruction=_strip_token(q["text"])
            )
            for q in queries
        ]
    )
    cands = generate_cand_dataset(queries, corpus)
    cand_vecs = model.embed_texts([t for _, t in cands], role="document")
    return official_scores(q_vecs, [k for k, _ in cands], cand_vecs, queries, eval_type)


# -- tests ---------------------------------------------------------------------------------------
def test_video_datasets_equal_vlm2vecs_scoring(tmp_path: Path) -> None:
    data = tmp_path / "MMEB-V2"
    rows = video_fixture(data)
    model = ColourWords(cache=None)
    records = evaluate(
        [model], task="mmeb_v2", data=data, subsets="video", out=tmp_path / "r", verbose=False
    )
    by = {r["subset"]: r for r in records}
    assert list(by) == ["K700", "UCF101", "Breakfast", "Video-MME", "EgoSchema", "ActivityNetQA"]
    from bindkit.tasks.base import EvalContext, get_task

    task = get_task("mmeb_v2")
    dataset = task.load(data)
    for name, table in rows.items():
        expected = vlm2vec_video(ColourWords(cache=None), data, name, table)
        assert by[name]["scores"]["hit_at_1"] == pytest.approx(expected["hit@1"]), name
        assert by[name]["scores"]["score"] == by[name]["scores"]["hit_at_1"]
        assert by[name]["scores"]["ndcg_linear_at_5"] == pytest.approx(expected["ndcg_linear@5"])
        result = task.evaluate(ColourWords(cache=None), dataset, name, "it", EvalContext())
        assert result is not None
        assert result["per_query"]["top"] == expected["top5"], name  # the same rankings
    assert by["UCF101"]["counts"]["candidates"] == 101  # every label, as VLM2Vec ranks them
    hits = [by[n]["scores"]["hit_at_1"] for n in rows]
    assert 0 < np.mean(hits) < 1  # the fixture separates right from wrong rankings
    per_query = result["per_query"]  # Video-MME, the last
    assert per_query["ids"] == ["001-1", "002-1"] and per_query["metric"] == "correct"
    assert np.mean(per_query["values"]) == by["Video-MME"]["scores"]["hit_at_1"]
    report = (tmp_path / "r" / "report.md").read_text()
    assert "## MMEB-V2 per meta-task" in report
    mean = 100 * np.mean(hits)
    assert f"| test:colour-words | – | {mean:.1f} (6/18) | – | {mean:.1f} (6/78) |" in report


def test_an_embedder_without_videos_is_refused_in_one_line(tmp_path: Path) -> None:
    from _fakes import TableEmbedder

    data = tmp_path / "MMEB-V2"
    video_fixture(data)
    with pytest.raises(BindkitError, match=r"mmeb_v2 UCF101: fake:table does not embed videos"):
        evaluate(
            [TableEmbedder()],
            task="mmeb_v2",
            data=data,
            subsets="UCF101",
            out=tmp_path / "r",
            verbose=False,
            report=False,
        )


def test_a_family_with_no_data_names_its_subsets(tmp_path: Path) -> None:
    data = tmp_path / "MMEB-V2"
    video_fixture(data)
    with pytest.raises(
        BindkitError, match=r"--subsets visdoc: none of its subsets \(ViDoRe_arxivqa"
    ):
        evaluate(
            [ColourWords(cache=None)],
            task="mmeb_v2",
            data=data,
            subsets="visdoc",
            out=tmp_path / "r",
            verbose=False,
        )
    records = evaluate(
        [ColourWords(cache=None)],
        task="mmeb_v2",
        data=data,
        subsets="seed002-video,UCF101",
        out=tmp_path / "r",
        verbose=False,
        report=False,
    )
    assert [r["subset"] for r in records] == [
        "ActivityNetQA",
        "Breakfast",
        "EgoSchema",
        "K700",
        "UCF101",
        "Video-MME",
    ]


def test_a_killed_run_resumes_without_reembedding(tmp_path: Path) -> None:
    data = tmp_path / "MMEB-V2"
    video_fixture(data)
    cache = tmp_path / "cache.sqlite"
    kwargs: dict[str, Any] = dict(
        task=get_task_chunked(),
        data=data,
        subsets="UCF101",
        out=tmp_path / "r",
        verbose=False,
        report=False,
    )
    # one batch of the embedder would take all three clips: chunk_size=1 makes three calls
    first = ColourWords(crash_after_videos=2, cache=EmbeddingCache(cache))
    with pytest.raises(KeyboardInterrupt):
        evaluate([first], **kwargs)
    assert [n for kind, n in first.encoded if kind == "video"] == [1, 1]  # two clips, then killed
    second = ColourWords(cache=EmbeddingCache(cache))
    (record,) = evaluate([second], **kwargs)
    assert sum(n for kind, n in second.encoded if kind == "video") == 1  # only the third clip
    assert sum(n for kind, n in second.encoded if kind == "text") == 101  # the labels, once
    third = ColourWords(cache=EmbeddingCache(cache))
    (again,) = evaluate([third], **kwargs)
    assert third.encoded == [] and again["scores"] == record["scores"]
    visdoc_fixture(data)  # another dataset downloaded: UCF101's result stays reusable
    fourth = ColourWords(cache=None)
    (same,) = evaluate([fourth], **kwargs)
    assert fourth.encoded == [] and same == again


def get_task_chunked() -> Any:
    from bindkit.tasks.base import get_task

    with pytest.raises(BindkitError, match="chunk_size=0: use at least 1"):
        get_task("mmeb_v2", {"chunk_size": "0"})
    return get_task("mmeb_v2", {"chunk_size": "1"})


# -- visual documents (BEIR) and image tasks ----------------------------------------------
def visdoc_fixture(root: Path) -> dict[str, Any]:
    base = root / "vidore/arxivqa_test_subsampled_beir"
    pages = {f"p{i}": _clip_colours(100 + i, 1)[0] for i in range(7)}
    queries = [
        {"query-id": "q1", "query": "red chart of sales"},
        {"query-id": "q2", "query": "blue table with totals"},
        {"query-id": "q3", "query": "green figure"},
    ]
    qrels = [
        {"query-id": "q1", "corpus-id": "p2", "score": 1},
        {"query-id": "q1", "corpus-id": "p5", "score": 1},
        {"query-id": "q2", "corpus-id": "p0", "score": 1},
        {"query-id": "q2", "corpus-id": "p3", "score": 0},  # not relevant: left out
        {"query-id": "q3", "corpus-id": "p6", "score": 1},
    ]
    corpus = [
        {"corpus-id": k, "image": {"bytes": _png(c), "path": f"{k}.png"}} for k, c in pages.items()
    ]
    _parquet(base / "queries/test-00000-of-00001.parquet", queries)
    _parquet(base / "qrels/test-00000-of-00001.parquet", qrels)
    _parquet(base / "corpus/test-00000-of-00001.parquet", corpus)
    return {"queries": queries, "qrels": qrels, "corpus": corpus}


def test_visdoc_ndcg_equals_vlm2vecs_scoring(tmp_path: Path) -> None:
    data = tmp_path / "MMEB-V2"
    fx = visdoc_fixture(data)
    model = ColourWords(cache=None)
    (record,) = evaluate(
        [model], task="mmeb_v2", data=data, subsets="visdoc", out=tmp_path / "r", verbose=False
    )
    # VLM2Vec's vidore loader: queries with TASK_INST_QRY, pages with TASK_INST_TGT, qrels > 0
    inst_q = "Find a document image that matches the given query:"
    inst_t = "Understand the content of the provided document image."
    qrels: dict[str, dict[str, int]] = {}
    for r in fx["qrels"]:
        if r["score"] > 0:
            qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = r["score"]
    infos = [
        {
            "label_name": list(qrels[q["query-id"]]),
            "rel_scores": list(qrels[q["query-id"]].values()),
        }
        for q in fx["queries"]
    ]
    names: dict[str, None] = {}
    for q in fx["queries"]:
        names |= dict.fromkeys(qrels[q["query-id"]])
    names |= dict.fromkeys(c["corpus-id"] for c in fx["corpus"])
    ref = ColourWords(cache=None)
    q_vecs = ref.embed_texts([f"{inst_q} {q['query']}" for q in fx["queries"]], role="query")
    images = {c["corpus-id"]: Image.open(io.BytesIO(c["image"]["bytes"])) for c in fx["corpus"]}
    c_vecs = ref.embed_images([images[n] for n in names], role="document", instruction=inst_t)
    expected = official_scores(q_vecs, list(names), c_vecs, infos, "global")
    assert record["scores"]["score"] == pytest.approx(expected["ndcg_linear@5"])
    assert record["scores"]["ndcg_linear_at_5"] == pytest.approx(expected["ndcg_linear@5"])
    assert record["scores"]["hit_at_1"] == pytest.approx(expected["hit@1"])
    assert 0 < record["scores"]["score"] < 1
    assert record["counts"]["candidates"] == 7


def test_ndcg_linear_matches_the_definition_on_graded_labels() -> None:
    from bindkit.tasks.mmeb.mmeb_v2 import ndcg_linear_at_k

    prediction = ["d", "a", "x", "b", "y", "c"]
    got = ndcg_linear_at_k(prediction, ["a", "b", "c"], [2, 1, 3], 5)
    want = ndcg_at_k(prediction, ["a", "b", "c"], 5, [2, 1, 3])
    assert got == pytest.approx(want)
    assert got == pytest.approx((2 / np.log2(3) + 1 / np.log2(5)) / (3 + 2 / np.log2(3) + 1 / 2))


def image_fixture(root: Path) -> None:
    images = root / "image-tasks"
    for i, c in enumerate([(250, 10, 10), (10, 250, 10), (10, 10, 250)]):
        (images / "ImageNet-1K").mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (6, 6), c).save(images / "ImageNet-1K" / f"{i}.png")
    inst = "<|image_1|> Represent the given image for classification"
    _parquet(
        root / "ziyjiang/MMEB_Test_Instruct/ImageNet-1K/test-00000-of-00001.parquet",
        [
            {
                "qry_inst": inst,
                "qry_text": "",
                "qry_img_path": f"ImageNet-1K/{i}.png",
                "tgt_inst": "",
                "tgt_text": t,
                "tgt_img_path": [""] * len(t),
            }
            for i, t in enumerate(
                [
                    ["red thing", "green thing"],
                    ["blue thing", "green thing", "red"],
                    ["red", "blue"],
                ]
            )
        ],
    )
    _parquet(
        root / "ziyjiang/MMEB_Test_Instruct/MSCOCO_t2i/test-00000-of-00001.parquet",
        [
            {
                "qry_inst": "Find me an everyday image that matches the given caption:",
                "qry_text": f"caption {i}",
                "qry_img_path": "",
                "tgt_inst": "<|image_1|>\nRepresent the given image.",
                "tgt_text": ["", "", ""],
                "tgt_img_path": [f"ImageNet-1K/{j}.png" for j in (i, (i + 1) % 3, (i + 2) % 3)],
            }
            for i in range(3)
        ],
    )


def test_image_tasks_equal_vlm2vecs_scoring(tmp_path: Path) -> None:
    data = tmp_path / "MMEB-V2"
    image_fixture(data)
    records = evaluate(
        [ColourWords(cache=None)],
        task="mmeb_v2",
        data=data,
        subsets="image",
        out=tmp_path / "r",
        verbose=False,
        report=False,
    )
    by = {r["subset"]: r for r in records}
    assert list(by) == ["ImageNet-1K", "MSCOCO_t2i"]
    ref = ColourWords(cache=None)
    table = pq.read_table(
        data / "ziyjiang/MMEB_Test_Instruct/ImageNet-1K/test-00000-of-00001.parquet"
    ).to_pylist()
    # image_cls: query "<image> " + inst + "\n"; candidates the raw tgt_text, label the first
    qv = np.concatenate(
        [
            ref.embed_images(
                [data / "image-tasks" / r["qry_img_path"]],
                instruction=_strip_token(r["qry_inst"].replace("<|image_1|>", "")),
            )
            for r in table
        ]
    )
    cands: dict[str, None] = {}
    for r in table:
        cands |= dict.fromkeys(r["tgt_text"])
    cv = ref.embed_texts(list(cands), role="document")
    infos = [{"cand_names": r["tgt_text"], "label_name": r["tgt_text"][0]} for r in table]
    expected = official_scores(qv, list(cands), cv, infos, "local")
    assert by["ImageNet-1K"]["scores"]["hit_at_1"] == pytest.approx(expected["hit@1"])
    # image_t2i: text query inst + " " + text; every candidate image with the target instruction
    table = pq.read_table(
        data / "ziyjiang/MMEB_Test_Instruct/MSCOCO_t2i/test-00000-of-00001.parquet"
    ).to_pylist()
    qv = ref.embed_texts([f"{r['qry_inst']} {r['qry_text']}" for r in table])
    paths: dict[str, None] = {}
    for r in table:
        paths |= dict.fromkeys(r["tgt_img_path"])
    cv = ref.embed_images(
        [data / "image-tasks" / p for p in paths],
        role="document",
        instruction="Represent the given image.",
    )
    infos = [{"cand_names": r["tgt_img_path"], "label_name": r["tgt_img_path"][0]} for r in table]
    expected = official_scores(qv, list(paths), cv, infos, "local")
    assert by["MSCOCO_t2i"]["scores"]["hit_at_1"] == pytest.approx(expected["hit@1"])


# -- the other video loaders: retrieval, moment retrieval, NExTQA, MVBench, SSv2 ---------------
def _embed_one(model: ColourWords, root: Path, item: tuple[str, str, str], role: Any) -> np.ndarray:
    kind, text, path = item
    text = _strip_token(text)
    if kind == "text":
        return model.embed_texts([text], role=role)[0]
    if kind == "image":
        return model.embed_images([root / path], role=role, instruction=text)[0]
    return model.embed_videos([root / path], role=role, instruction=text)[0]


def official_qa_template(
    question: str, candidates: list[str], answer: Any
) -> tuple[str, list[str], str, int]:
    question = f"{question}\n"
    question += "Options:\n"
    answer_idx = -1
    options = []
    for idx, c in enumerate(candidates):
        question += f"({chr(ord('A') + idx)}) {c}\n"
        options.append(f"({chr(ord('A') + idx)}) {c}")
        if c == answer:
            answer_idx = idx
    question = question.rstrip()
    answer = f"({chr(ord('A') + answer_idx)}) {answer}"
    return question, options, answer, answer_idx


def other_video_fixture(root: Path) -> dict[str, Any]:
    """Rows per dataset in the official layout, and VLM2Vec's (queries, candidates, eval_type)
    built as its loaders build them."""
    frames = root / "video-tasks/frames"
    seed = 500
    out: dict[str, Any] = {}

    def clip(path: Path) -> None:
        nonlocal seed
        seed += 1
        _frames(path, _clip_colours(seed, 5))

    target = (VIDEO_TOKEN + " Understand the content of the provided video.").strip()
    # MSR-VTT: a caption against every clip (global)
    rows = [
        {"video_id": f"video{i}", "video": f"video{i}.mp4", "caption": f"a man {w} a car"}
        for i, w in enumerate(["drives", "washes", "paints"])
    ]
    _parquet(root / "VLM2Vec/MSR-VTT/test_1k/test-00000-of-00001.parquet", rows)
    for r in rows:
        clip(frames / "video_ret/MSR-VTT" / r["video_id"])
    queries = [
        {
            "query": (
                "text",
                "Find a video that contains the following visual content: " + r["caption"],
                "",
            ),
            "cand_names": [r["video_id"]],
            "label_name": r["video_id"],
        }
        for r in rows
    ]
    cands = {
        r["video_id"]: ("video", target, f"video-tasks/frames/video_ret/MSR-VTT/{r['video_id']}")
        for r in rows
    }
    out["MSR-VTT"] = (queries, cands, "global")
    # NExTQA: lettered options in the query, raw answers as candidates
    prompt = PROMPT
    rows = [
        {
            "video": 4010,
            "question": "why did the boy run",
            "answer": 1,
            "qid": 7,
            "type": "CW",
            "a0": "to eat",
            "a1": "to play",
            "a2": "rain",
            "a3": "cold",
            "a4": "a dog",
        },
        {
            "video": 4011,
            "question": "what is next",
            "answer": 4,
            "qid": 8,
            "type": "TN",
            "a0": "sits",
            "a1": "jumps",
            "a2": "falls",
            "a3": "sings",
            "a4": "sleeps",
        },
    ]
    _parquet(root / "VLM2Vec/NExTQA/MC/test-00000-of-00001.parquet", rows)
    queries = []
    cands = {}
    for r in rows:
        clip(frames / "video_qa/NExTQA" / str(r["video"]))
        options = [r[f"a{i}"] for i in range(5)]
        q = f"{VIDEO_TOKEN} {prompt} {r['question']}"
        q, _, _, _ = official_qa_template(q, options, r["answer"])
        queries.append(
            {
                "query": ("video", q, f"video-tasks/frames/video_qa/NExTQA/{r['video']}"),
                "cand_names": options,
                "label_name": options[r["answer"]],
            }
        )
        for o in options:
            cands.setdefault(o, ("text", o, ""))
    out["NExTQA"] = (queries, cands, "local")
    # MVBench: 20 configs concatenated, lettered candidates
    from bindkit.tasks.mmeb._mmeb_v2_video import MVBENCH_SUBSETS

    queries, cands = [], {}
    for i, subset in enumerate(MVBENCH_SUBSETS):
        row = {
            "video": f"clip{i}.mp4",
            "question": f"what happens {i}?",
            "candidates": ["up", "down", "left"],
            "answer": ["up", "down", "left"][i % 3],
        }
        _parquet(root / f"VLM2Vec/MVBench/{subset}/train-00000-of-00001.parquet", [row])
        clip(frames / "video_qa/MVBench" / subset / row["video"])
        q = f"{VIDEO_TOKEN} {prompt} {row['question']}"
        q, options, answer, _ = official_qa_template(q, row["candidates"], row["answer"])
        queries.append(
            {
                "query": (
                    "video",
                    q,
                    f"video-tasks/frames/video_qa/MVBench/{subset}/{row['video']}",
                ),
                "cand_names": options,
                "label_name": answer,
            }
        )
        for o in options:
            cands.setdefault(o, ("text", o, ""))
    out["MVBench"] = (queries, cands, "local")
    # SmthSmthV2: each clip against its own neg_text (local)
    inst = (
        VIDEO_TOKEN
        + " What actions or object interactions are being performed by the person in the video?"
    )
    rows = [
        {
            "video_id": 11,
            "pos_text": "pushing a box",
            "neg_text": ["pulling a box", "pushing a box", "lifting a cup"],
        },
        {
            "video_id": 12,
            "pos_text": "opening a jar",
            "neg_text": ["opening a jar", "closing a jar"],
        },
    ]
    _parquet(root / "VLM2Vec/SmthSmthV2/data/test-00000-of-00001.parquet", rows)
    queries, cands = [], {}
    for r in rows:
        clip(frames / "video_cls/SSv2" / str(r["video_id"]))
        queries.append(
            {
                "query": ("video", inst, f"video-tasks/frames/video_cls/SSv2/{r['video_id']}"),
                "cand_names": r["neg_text"],
                "label_name": r["pos_text"],
            }
        )
        for c in r["neg_text"]:
            cands.setdefault(c, ("text", c, ""))
    out["SmthSmthV2"] = (queries, cands, "local")
    # QVHighlight: the video's query/ frames against the clip folders beside them
    rows = [
        {"query": "a woman cooks", "video_path": "videos/vid_a.mp4"},
        {"query": "a dog runs", "video_path": "videos/vid_b.mp4"},
    ]
    _parquet(root / "VLM2Vec/QVHighlight/data/test-00000-of-00001.parquet", rows)
    queries, cands = [], {}
    for r in rows:
        name = Path(r["video_path"]).stem
        base = f"video-tasks/frames/video_mret/QVHighlight/{name}"
        for c in ("query", "negative_0", "negative_1", "positive", "negative_2"):
            clip(root / base / c)
        # moment_retrieval_datasets.py: os.listdir order, 'query' and files skipped
        listed = os.listdir(root / base)
        names = [f"{base}/{c}" for c in listed if c != "query" and (root / base / c).is_dir()]
        text = (
            f"{VIDEO_TOKEN} Find the clip that corresponds to the described scene in the given "
            f"video: {r['query']}"
        )
        queries.append(
            {
                "query": ("video", text, f"{base}/query"),
                "cand_names": names,
                "label_name": f"{base}/positive",
            }
        )
        for n in names:
            cands.setdefault(n, ("video", target, n))
    out["QVHighlight"] = (queries, cands, "local")
    # MomentSeeker: text, image or video-segment queries; several positives
    ms = "video-tasks/frames/video_mret/MomentSeeker"
    rows = [
        {
            "query": "he opens the door",
            "input_frames": "",
            "positive_frames": [{"output_path": "ego/c1.mp4"}],
            "negative_frames": [{"output_path": "ego/c2.mp4"}, {"output_path": "ego/c3.mp4"}],
        },
        {
            "query": "then she sits",
            "input_frames": "movie/m1.mp4",
            "positive_frames": [{"output_path": "ego/c2.mp4"}, {"output_path": "ego/c4.mp4"}],
            "negative_frames": [{"output_path": "ego/c1.mp4"}],
        },
        {
            "query": "the same cup",
            "input_frames": "cup.jpg",
            "positive_frames": [{"output_path": "ego/c3.mp4"}],
            "negative_frames": [{"output_path": "ego/c4.mp4"}],
        },
    ]
    _parquet(root / "VLM2Vec/MomentSeeker/data/test-00000-of-00001.parquet", rows)
    for c in ("ego_c1", "ego_c2", "ego_c3", "ego_c4", "movie_m1"):
        clip(root / ms / "video_frames" / c)
    Image.new("RGB", (6, 6), (200, 30, 90)).save(root / ms / "query_cup.jpg")
    queries, cands = [], {}
    tgt = VIDEO_TOKEN + " Understand the content of the provided video clip."
    for r in rows:
        if r["input_frames"].endswith(".mp4"):
            q = (
                "video",
                f"{VIDEO_TOKEN} Find the clip that corresponds to the given sentence and video "
                f"segment: {r['query']}",
                f"{ms}/video_frames/" + r["input_frames"].split(".mp4")[0].replace("/", "_"),
            )
        elif r["input_frames"].endswith(".jpg"):
            q = (
                "image",
                "<|image_pad|> Select the video clip that aligns with the given text and image: "
                + r["query"],
                f"{ms}/query_{r['input_frames']}",
            )
        else:
            q = ("text", f"Find the clip that corresponds to the given text: {r['query']}", "")
        pos = [
            f"{ms}/video_frames/" + e["output_path"].replace("/", "_").split(".mp4")[0]
            for e in r["positive_frames"]
        ]
        neg = [
            f"{ms}/video_frames/" + e["output_path"].replace("/", "_").split(".mp4")[0]
            for e in r["negative_frames"]
        ]
        queries.append({"query": q, "cand_names": pos + neg, "label_name": pos})
        for n in pos + neg:
            cands.setdefault(n, ("video", tgt, n))
    out["MomentSeeker"] = (queries, cands, "local")
    return out


def test_the_other_video_loaders_equal_vlm2vecs_scoring(tmp_path: Path) -> None:
    from bindkit.tasks.base import EvalContext, get_task

    data = tmp_path / "MMEB-V2"
    fixtures = other_video_fixture(data)
    task = get_task("mmeb_v2")
    dataset = task.load(data)
    assert set(fixtures) <= set(dataset.subsets)
    for name, (queries, cands, eval_type) in fixtures.items():
        ref = ColourWords(cache=None)
        q_vecs = np.stack([_embed_one(ref, data, q["query"], "query") for q in queries])
        c_vecs = np.stack([_embed_one(ref, data, c, "document") for c in cands.values()])
        expected = official_scores(q_vecs, list(cands), c_vecs, queries, eval_type)
        result = task.evaluate(ColourWords(cache=None), dataset, name, "it", EvalContext())
        assert result is not None
        assert result["per_query"]["top"] == expected["top5"], name
        assert result["scores"]["hit_at_1"] == pytest.approx(expected["hit@1"]), name
        assert result["scores"]["ndcg_linear_at_5"] == pytest.approx(expected["ndcg_linear@5"])


def test_momentseeker_clips_keep_every_frame(tmp_path: Path) -> None:
    """MomentSeeker's loader reads its segments and clips with ``load_frames`` (no sampling):
    the embedder gets ``VideoRef(sample=False)``; the other datasets' clips are sampled."""
    from bindkit.tasks.base import EvalContext, get_task

    data = tmp_path / "MMEB-V2"
    other_video_fixture(data)
    task = get_task("mmeb_v2")
    dataset = task.load(data)
    seeker, moments = ColourWords(cache=None), ColourWords(cache=None)
    assert task.evaluate(seeker, dataset, "MomentSeeker", "it", EvalContext()) is not None
    assert task.evaluate(moments, dataset, "QVHighlight", "it", EvalContext()) is not None
    assert seeker.videos and not any(v.sample for v in seeker.videos)
    assert moments.videos and all(v.sample for v in moments.videos)


def test_moment_candidates_and_answer_follow_os_listdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VLM2Vec lists the clip folders with ``os.listdir`` and takes the last ``positive*`` one
    as the answer; a listing that is not in name order shows it."""
    from bindkit.tasks.mmeb._mmeb_v2_data import SOURCES

    source = SOURCES["QVHighlight"]
    _parquet(
        tmp_path / "VLM2Vec/QVHighlight/data/test-00000-of-00001.parquet",
        [{"query": "a dog runs", "video_path": "videos/vid_a.mp4"}],
    )
    base = tmp_path / source.media / "vid_a"
    listed = ["positive_b", "negative_1", "query", "positive_a", "negative_0"]
    for c in listed:
        (base / c).mkdir(parents=True)
    (base / "notes.txt").write_text("a file, skipped")
    real = os.listdir
    monkeypatch.setattr(
        os, "listdir", lambda p: [*listed, "notes.txt"] if Path(p) == base else real(p)
    )
    (query,) = source.reader(tmp_path, "QVHighlight", source).queries
    clips = [Path(c).name for c in query.candidates]
    assert clips == ["positive_b", "negative_1", "positive_a", "negative_0"]
    assert [Path(c).name for c in query.labels] == ["positive_a"]  # the last listed


def test_a_seed_002_dataset_of_another_size_is_noted(tmp_path: Path) -> None:
    from bindkit.tasks.base import EvalContext, get_task

    data = tmp_path / "MMEB-V2"
    video_fixture(data)
    task = get_task("mmeb_v2")
    dataset = task.load(data)
    notes: list[str] = []
    ctx = EvalContext(warn=notes.append)
    assert task.evaluate(ColourWords(cache=None), dataset, "UCF101", "it", ctx) is not None
    assert notes == [
        "warning: mmeb_v2 UCF101: 3 queries, 101 candidates; seed 002 reports 1,000 queries, "
        "101 candidates: check the download (huggingface.co/datasets/VLM2Vec/UCF101)"
    ]


# -- a real model path: tiny Qwen2-VL through `bindkit eval` ------------------------------------
@pytest.mark.slow
def test_cli_on_a_tiny_qwen2_vl_equals_vlm2vecs_scoring(
    tmp_path: Path, tiny_qwen2_vl: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Image and visual-document datasets through ``bindkit eval --model mllm:...`` score as
    VLM2Vec's ranking on the same model's vectors; the video datasets run once the mllm backend
    embeds videos and are refused in one line until then."""
    import json

    from bindkit.cli import main
    from bindkit.embed.registry import load_embedder

    data = tmp_path / "MMEB-V2"
    image_fixture(data)
    fx = visdoc_fixture(data)
    rows = video_fixture(data)
    spec = f"mllm:{tiny_qwen2_vl}"
    out = tmp_path / "r"
    argv = ["eval", "--model", spec, "--task", "mmeb_v2", "--data", str(data), "--out", str(out)]
    assert main([*argv, "--subsets", "visdoc,image-ret", "--no-cache"]) == 0
    records = {
        json.loads(p.read_text())["subset"]: json.loads(p.read_text())
        for p in out.rglob("*.json")
        if "mmeb_v2" in str(p)
    }
    assert set(records) == {"ViDoRe_arxivqa", "MSCOCO_t2i"}
    model = load_embedder(spec, cache=False)
    inst_q = "Find a document image that matches the given query:"
    qrels: dict[str, dict[str, int]] = {}
    for r in fx["qrels"]:
        if r["score"] > 0:
            qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = r["score"]
    names: dict[str, None] = {}
    for q in fx["queries"]:
        names |= dict.fromkeys(qrels[q["query-id"]])
    names |= dict.fromkeys(c["corpus-id"] for c in fx["corpus"])
    pages = {c["corpus-id"]: Image.open(io.BytesIO(c["image"]["bytes"])) for c in fx["corpus"]}
    q_vecs = model.embed_texts([f"{inst_q} {q['query']}" for q in fx["queries"]], role="query")
    c_vecs = model.embed_images(
        [pages[n] for n in names],
        role="document",
        instruction="Understand the content of the provided document image.",
    )
    infos = [
        {
            "label_name": list(qrels[q["query-id"]]),
            "rel_scores": list(qrels[q["query-id"]].values()),
        }
        for q in fx["queries"]
    ]
    expected = official_scores(q_vecs, list(names), c_vecs, infos, "global")
    got = records["ViDoRe_arxivqa"]["scores"]
    assert got["ndcg_linear_at_5"] == pytest.approx(expected["ndcg_linear@5"], abs=1e-9)
    assert got["hit_at_1"] == pytest.approx(expected["hit@1"], abs=1e-9)
    assert "## MMEB-V2 per meta-task" in (out / "report.md").read_text()
    code = main([*argv, "--subsets", "seed002-video", "--no-cache"])
    if "video" not in model.modalities:  # until the mllm backend embeds videos
        assert code == 2
        assert "mmeb_v2 " in capsys.readouterr().err
        return
    assert code == 0
    for name, table in rows.items():
        expected = vlm2vec_video(model, data, name, table)  # type: ignore[arg-type]
        (record,) = [
            json.loads(p.read_text())
            for p in out.rglob("*.json")
            if json.loads(p.read_text()).get("subset") == name
        ]
        assert record["scores"]["hit_at_1"] == pytest.approx(expected["hit@1"], abs=1e-9), name


# -- the other image loaders: image_qa, image_i2t, image_t2i with captions, image_i2i_vg --------
IMG = "<|image_pad|>"


def official_image(
    kind: str, rows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(queries, candidates) as VLM2Vec's image_* loaders build them (Qwen2-VL's image token)."""

    def process(instruction: str, text: str | None = None) -> str:  # process_input_text
        prompt = instruction + (" " + text if text else "")
        return IMG + " " + prompt

    queries, cands = [], {}
    for r in rows:
        if kind in ("qa", "vg"):
            inst = "\n" + r["qry_inst"].replace("<|image_1|>", "").strip()
        else:
            inst = r["qry_inst"].replace("<|image_1|>", "")
        if kind == "t2i":
            query = (
                "text",
                r["qry_inst"].replace("<|image_1|>", IMG) + " " + r["qry_text"] + "\n",
                "",
            )
        else:
            text = process(inst, r["qry_text"]).replace(" \n", "\n") + "\n"
            query = ("image", text, "image-tasks/" + r["qry_img_path"])
        if kind in ("qa", "i2t"):
            names = r["tgt_text"]
            for t in names:
                cands.setdefault(t, ("text", t, ""))
        else:
            tgt_inst = r["tgt_inst"].replace("<|image_1|>", "")
            if r["tgt_text"][0].strip():
                texts = [
                    process(tgt_inst + " " + c, "").replace(" \n", "\n") + "\n"
                    for c in r["tgt_text"]
                ]
            else:
                end = "\n" if kind == "t2i" else ""
                texts = [process(tgt_inst, "").replace(" \n", "\n") + end] * len(r["tgt_img_path"])
            if kind == "vg":
                names = [
                    p + ":" + c.strip('"')
                    for p, c in zip(r["tgt_img_path"], r["tgt_text"], strict=True)
                ]
            else:
                names = r["tgt_img_path"]
            for n, t, p in zip(names, texts, r["tgt_img_path"], strict=True):
                cands.setdefault(n, ("image", t, "image-tasks/" + p))
        queries.append({"query": query, "cand_names": names, "label_name": names[0]})
    return queries, cands


VQA_INST = "<|image_1|>\nRepresent the given image with the following question:"
WEBQA_TGT = "<|image_1|> Represent the given Wikipedia image with related text information:"
CIRR_INST = "<|image_1|>\nGiven an image, find a similar everyday image with the described changes:"
REF_INST = "<|image_1|>\nSelect the portion of the image that follows the language expressions:"


def test_the_other_image_loaders_equal_vlm2vecs_scoring(tmp_path: Path) -> None:
    from bindkit.tasks.base import EvalContext, get_task

    data = tmp_path / "MMEB-V2"
    image_fixture(data)  # the images ImageNet-1K/{0,1,2}.png
    paths = [f"ImageNet-1K/{i}.png" for i in range(3)]
    base = data / "ziyjiang/MMEB_Test_Instruct"
    fixtures = {
        "OK-VQA": (
            "qa",
            [
                {
                    "qry_inst": VQA_INST,
                    "qry_text": f"what is {w}?",
                    "qry_img_path": p,
                    "tgt_inst": "",
                    "tgt_text": [w, "tree", "car"],
                    "tgt_img_path": ["", "", ""],
                }
                for w, p in zip(["red", "grass", "sky"], paths, strict=True)
            ],
        ),
        "VisualNews_i2t": (
            "i2t",
            [
                {
                    "qry_inst": "<|image_1|> Find a caption for the news in the given photo.",
                    "qry_text": "",
                    "qry_img_path": p,
                    "tgt_inst": "",
                    "tgt_text": [f"news {i}", f"news {i + 1}"],
                    "tgt_img_path": ["", ""],
                }
                for i, p in enumerate(paths)
            ],
        ),
        "WebQA": (
            "t2i",
            [
                {
                    "qry_inst": "<|image_1|> Find a Wikipedia image that answers this question:",
                    "qry_text": f"where is {w}",
                    "qry_img_path": "",
                    "tgt_inst": WEBQA_TGT,
                    "tgt_text": [f"{w} page", "other page"],
                    "tgt_img_path": [p, paths[(i + 1) % 3]],
                }
                for i, (w, p) in enumerate(zip(["paris", "rome", "oslo"], paths, strict=True))
            ],
        ),
        "CIRR": (
            "vg",
            [
                {
                    "qry_inst": CIRR_INST,
                    "qry_text": f"make it {w}",
                    "qry_img_path": p,
                    "tgt_inst": "<|image_1|>\nRepresent the given image.",
                    "tgt_text": ["", ""],
                    "tgt_img_path": [paths[(i + 1) % 3], paths[(i + 2) % 3]],
                }
                for i, (w, p) in enumerate(zip(["green", "blue", "red"], paths, strict=True))
            ],
        ),
        "RefCOCO-Matching": (
            "vg",
            [
                {
                    "qry_inst": REF_INST,
                    "qry_text": '"the left one"',
                    "qry_img_path": p,
                    "tgt_inst": REF_INST,
                    "tgt_text": ['"the left one"', '"the right one"'],
                    "tgt_img_path": [p, p],
                }
                for p in paths
            ],
        ),
    }
    for name, (_, rows) in fixtures.items():
        _parquet(base / name / "test-00000-of-00001.parquet", rows)
    task = get_task("mmeb_v2")
    dataset = task.load(data)
    for name, (kind, rows) in fixtures.items():
        queries, cands = official_image(kind, rows)
        ref = ColourWords(cache=None)
        q_vecs = np.stack([_embed_one(ref, data, q["query"], "query") for q in queries])
        c_vecs = np.stack([_embed_one(ref, data, c, "document") for c in cands.values()])
        expected = official_scores(q_vecs, list(cands), c_vecs, queries, "local")
        result = task.evaluate(ColourWords(cache=None), dataset, name, "it", EvalContext())
        assert result is not None
        assert result["per_query"]["top"] == expected["top5"], name
        numbered = [f"{i}:{p}" for i, p in enumerate(paths)]
        assert result["per_query"]["ids"] == (numbered if kind != "t2i" else ["0", "1", "2"])
        assert result["scores"]["hit_at_1"] == pytest.approx(expected["hit@1"]), name


def test_missing_clips_stop_the_run_or_are_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    data = tmp_path / "MMEB-V2"
    video_fixture(data)
    shutil.rmtree(data / "video-tasks/frames/video_qa/EgoSchema/e2")
    kwargs: dict[str, Any] = dict(
        task="mmeb_v2", data=data, subsets="EgoSchema", verbose=False, report=False
    )
    with pytest.raises(
        BindkitError,
        match=r"mmeb_v2 EgoSchema: 1 images or clips missing \(first: .*EgoSchema/e2\)",
    ):
        evaluate([ColourWords(cache=None)], out=tmp_path / "a", **kwargs)
    (record,) = evaluate(
        [ColourWords(cache=None)], out=tmp_path / "b", allow_missing_images=True, **kwargs
    )
    assert record["partial"] is True
    assert record["counts"] == {"queries": 2, "scored": 1, "candidates": 8, "missing_images": 1}
    assert "scoring the rest" in capsys.readouterr().err
    with pytest.raises(
        BindkitError,
        match=r"--subsets ViDoRe_docvqa: no annotation files under .*vidore/docvqa_test_subsampled_"
        r"beir; download huggingface.co/datasets/vidore/docvqa_test_subsampled_beir",
    ):
        evaluate(
            [ColourWords(cache=None)],
            task="mmeb_v2",
            data=data,
            subsets="ViDoRe_docvqa",
            out=tmp_path / "c",
            verbose=False,
        )


def test_progress_counts_the_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BINDKIT_PROGRESS", "1")
    data = tmp_path / "MMEB-V2"
    video_fixture(data)
    evaluate(
        [ColourWords(cache=None, progress=False)],
        task="mmeb_v2",
        data=data,
        subsets="UCF101",
        out=tmp_path / "r",
        verbose=False,
        report=False,
    )
    err = capsys.readouterr().err
    assert "mmeb_v2 UCF101: embedding" in err and "104/104" in err  # 3 clips + 101 labels


def test_vidore_v2_english_views_filter_the_queries_and_run_only_when_named(tmp_path: Path) -> None:
    data = tmp_path / "MMEB-V2"
    base = data / "vidore/esg_reports_v2"
    queries = [
        {"query-id": "q1", "query": "emissions", "language": "english"},
        {"query-id": "q2", "query": "emissions", "language": "french"},
        {"query-id": "q3", "query": "water use", "language": "english"},
    ]
    qrels = [
        {"query-id": q, "corpus-id": f"p{i}", "score": 1} for i, q in enumerate(["q1", "q2", "q3"])
    ]
    corpus = [
        {"corpus-id": f"p{i}", "image": {"bytes": _png((40 * i, 90, 200 - 50 * i)), "path": ""}}
        for i in range(3)
    ]
    _parquet(base / "queries/test-00000-of-00001.parquet", queries)
    _parquet(base / "qrels/test-00000-of-00001.parquet", qrels)
    _parquet(base / "corpus/test-00000-of-00001.parquet", corpus)
    kwargs: dict[str, Any] = dict(
        task="mmeb_v2", data=data, out=tmp_path / "r", verbose=False, report=False
    )
    (default,) = evaluate([ColourWords(cache=None)], **kwargs)
    assert default["subset"] == "ViDoRe_esg_reports_v2_multilingual"
    assert default["counts"]["queries"] == 3
    (english,) = evaluate([ColourWords(cache=None)], subsets="ViDoRe_esg_reports_v2", **kwargs)
    assert english["counts"]["queries"] == 2 and english["counts"]["candidates"] == 3


def test_ndcg_linear_cuts_the_binary_ideal_at_k() -> None:
    """More relevant candidates than k (7 labels, k = 5): the ideal DCG is that of k hits, as
    the official ``ndcg_at_k``'s ``[1] * min(len(label_set), k)``."""
    from bindkit.tasks.mmeb.mmeb_v2 import ndcg_linear_at_k

    labels = [f"d{i}" for i in range(7)]
    prediction = ["x", "d0", "d1", "y", "d2", "d3", "d4", "d5", "d6"]
    got = ndcg_linear_at_k(prediction, labels, None, 5)
    assert got == pytest.approx(ndcg_at_k(prediction, labels, 5, None))
    ideal = sum(1 / np.log2(i + 2) for i in range(5))
    assert got == pytest.approx((1 / np.log2(3) + 1 / np.log2(4) + 1 / np.log2(6)) / ideal)
    assert ndcg_linear_at_k(labels, labels, None, 5) == pytest.approx(1.0)


def official_evaluate_ndcg(prediction: list[str], labels: list[str], rel: list[float]) -> float:
    """``RankingMetrics.evaluate``'s way to ``ndcg_at_k``: ``true_labels =
    list(set(true_labels))`` first, then zipped with ``rel_scores`` in the file's order."""
    return ndcg_at_k(prediction, list(set(labels)), 5, rel)


def _labels_the_set_reorders() -> list[str]:
    """Page ids whose ``set`` order differs from their order in this process (string hashes
    follow PYTHONHASHSEED, so the search is run, not fixed)."""
    for n in range(500):
        labels = [f"corpus-{n}-{i}" for i in range(4)]
        if list(set(labels)) != labels:
            return labels
    raise AssertionError("no reordering set in 500 tries")


def test_graded_ndcg_is_intended_by_default_and_the_leaderboards_on_request() -> None:
    """D2: with graded labels the default pairs each page with its own grade (``ndcg_at_k`` as
    documented); ``ndcg=leaderboard`` gives the official evaluate()'s value in this process."""
    from bindkit.tasks.mmeb.mmeb_v2 import MMEBV2, leaderboard_labels, ndcg_linear_at_k

    labels = _labels_the_set_reorders()
    grades = [4.0, 3.0, 2.0, 1.0]
    prediction = [*labels, "other-1", "other-2"]  # the intended order: a perfect ranking
    intended = ndcg_linear_at_k(prediction, labels, grades, 5)
    assert intended == pytest.approx(ndcg_at_k(prediction, labels, 5, grades)) == 1.0
    leaderboard = ndcg_linear_at_k(prediction, leaderboard_labels(labels), grades, 5)
    assert leaderboard == pytest.approx(official_evaluate_ndcg(prediction, labels, grades))
    assert leaderboard < 1.0  # grades paired with the wrong pages
    assert MMEBV2()._ndcg_labels(tuple(labels)) == tuple(labels)
    assert MMEBV2(ndcg="leaderboard")._ndcg_labels(tuple(labels)) == list(set(labels))


def test_the_ndcg_option_is_checked_and_recorded_only_where_it_counts() -> None:
    from bindkit.tasks.base import get_task

    assert get_task("mmeb_v2").options("ViDoRe_arxivqa") == {}
    leaderboard = get_task("mmeb_v2", {"ndcg": "leaderboard"})
    assert leaderboard.options("ViDoRe_arxivqa") == {"ndcg": "leaderboard"}
    assert leaderboard.options("ImageNet-1K") == {}  # binary labels: the same value
    with pytest.raises(BindkitError, match=r"ndcg='exp': use one of intended, leaderboard"):
        get_task("mmeb_v2", {"ndcg": "exp"})


@pytest.mark.parametrize("form", ["intended", "leaderboard"])
def test_graded_visdoc_end_to_end_in_either_form(tmp_path: Path, form: str) -> None:
    from bindkit.tasks.mmeb.mmeb_v2 import MMEBV2

    data = tmp_path / "MMEB-V2"
    fx = visdoc_fixture(data)
    base = data / "vidore/arxivqa_test_subsampled_beir"
    graded = [
        {"query-id": "q1", "corpus-id": "p2", "score": 2},
        {"query-id": "q1", "corpus-id": "p5", "score": 1},
        {"query-id": "q1", "corpus-id": "p4", "score": 3},
        {"query-id": "q2", "corpus-id": "p0", "score": 1},
        {"query-id": "q3", "corpus-id": "p6", "score": 1},
    ]
    _parquet(base / "qrels/test-00000-of-00001.parquet", graded)
    (record,) = evaluate(
        [ColourWords(cache=None)],
        task=MMEBV2(ndcg=form),
        data=data,
        subsets="visdoc",
        out=tmp_path / "r",
        verbose=False,
    )
    qrels: dict[str, dict[str, int]] = {}
    for r in graded:
        qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = r["score"]
    ref = ColourWords(cache=None)
    inst_q = "Find a document image that matches the given query:"
    q_vecs = ref.embed_texts([f"{inst_q} {q['query']}" for q in fx["queries"]], role="query")
    names = list(
        dict.fromkeys(
            [
                *(d for q in fx["queries"] for d in qrels[q["query-id"]]),
                *(c["corpus-id"] for c in fx["corpus"]),
            ]
        )
    )
    images = {c["corpus-id"]: Image.open(io.BytesIO(c["image"]["bytes"])) for c in fx["corpus"]}
    c_vecs = ref.embed_images(
        [images[n] for n in names],
        role="document",
        instruction="Understand the content of the provided document image.",
    )
    ranked = np.argsort(-np.dot(q_vecs, c_vecs.T), axis=1)
    values = []
    for row, q in zip(ranked, fx["queries"], strict=True):
        labels, rel = list(qrels[q["query-id"]]), list(qrels[q["query-id"]].values())
        prediction = [names[i] for i in row]
        values.append(
            official_evaluate_ndcg(prediction, labels, rel)
            if form == "leaderboard"
            else ndcg_at_k(prediction, labels, 5, rel)
        )
    assert record["scores"]["ndcg_linear_at_5"] == pytest.approx(float(np.mean(values)))
    assert record["options"].get("ndcg") == (None if form == "intended" else "leaderboard")
