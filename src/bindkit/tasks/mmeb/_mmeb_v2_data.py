"""MMEB-V2's per-dataset readers, restating TIGER-AI-Lab/VLM2Vec's ``src/data/eval_dataset``.

Each reader turns one dataset's published annotation rows into :class:`Split`: queries (an
input, the candidate names and the relevant names) and the candidates by name, de-duplicated by
name in first-seen order (rows first, then the corpus) as ``generate_cand_dataset`` does, so a
ranking over "all candidates" lists them in VLM2Vec's order. Texts are composed as each loader
composes them, whitespace included (a text query is the loader's string as it is, e.g. image_t2i's
final ``"\n"``); an input with an image, a page or a video passes its text as the embedder's
instruction: a :class:`~bindkit.embed.prompts.Composed`, plain (stripped, the model's token left
out) for every prompt format and exact (what follows VLM2Vec's token, every space and newline
kept) for ``vlm2vec:``.

Files, relative to ``--data ROOT`` (a clone of the Hub dataset ``TIGER-Lab/MMEB-V2`` with each
annotation dataset downloaded to ``ROOT/<hub owner>/<hub name>``, e.g. with
``hf download VLM2Vec/UCF101 --repo-type dataset --local-dir ROOT/VLM2Vec/UCF101``):

* image: ``ziyjiang/MMEB_Test_Instruct/<dataset>/test-*.parquet``, images under ``image-tasks/``;
* video: ``VLM2Vec/<dataset>/`` (parquet, JSON or JSONL, as its card's ``configs:`` names
  them), frames ``video-tasks/frames/<group>/<dataset>/<id>/``
  (else the clip ``video-tasks/videos/<group>/<dataset>/<id>.mp4``);
* visual documents: the BEIR-format ``queries``, ``qrels`` and ``corpus`` parquet files of
  ``vidore/...``, ``openbmb/VisRAG-Ret-Test-...`` or ``VLM2Vec/...``; pages are the corpus rows'
  images (VLM2Vec saves exactly these to ``visdoc-tasks/<dataset>/`` before embedding them).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from bindkit.errors import BindkitError, DataFormatError
from bindkit.tasks._files import read_parquet_rows
from bindkit.tasks.mmeb._base import META_TASKS

Kind = Literal["text", "image", "video", "page"]
Metric = Literal["hit_at_1", "ndcg_linear_at_5"]


@dataclass(frozen=True)
class Input:
    """One thing to embed: a text, or an image, page or video with ``text`` as instruction."""

    kind: Kind
    text: str
    path: str = ""  # image file or video (frame folder) under ROOT, or a page's corpus id
    sample: bool = True  # a video: False keeps every frame (VLM2Vec's load_frames)
    #: an image or a video: what follows the model's token in VLM2Vec's composed prompt,
    #: whitespace kept (``prompts.Composed``); ``text`` is the plain instruction
    exact: str | None = None


@dataclass(frozen=True)
class Query:
    id: str
    input: Input
    candidates: tuple[str, ...]  # names ranked for this query (a local ranking)
    labels: tuple[str, ...]
    rel_scores: tuple[float, ...] | None = None


@dataclass
class Split:
    """One dataset as VLM2Vec scores it."""

    queries: list[Query]
    candidates: dict[str, Input]  # name -> input, in VLM2Vec's order
    ranking: Literal["local", "global"]
    pages: dict[str, Any] = field(default_factory=dict)  # corpus id -> parquet image cell

    def add(self, name: str, item: Input) -> None:
        self.candidates.setdefault(name, item)


@dataclass(frozen=True)
class Source:
    """Where a dataset's annotation rows are published and how its reader reads them."""

    repo: str  # Hub dataset id, its folder under ROOT
    config: str | None
    split: str
    reader: Callable[[Path, str, Source], Split]
    media: str = ""  # frames / images folder under ROOT
    ranking: Literal["local", "global"] = "local"

    def files(self, root: Path, config: str | None = None) -> list[Path]:
        """The split's annotation files (parquet, JSON or JSONL) in the Hub's layouts.

        A folder with a dataset card resolves them as ``datasets.load_dataset(folder, config,
        split=...)`` does (the card's ``configs:`` mapping, e.g. ``data/test.jsonl`` or a root
        ``msvd_test.json``); otherwise, or when the card names no such config, the parquet
        layouts ``<config>/<split>-*.parquet``, ``<config>/<split>/*.parquet``
        (``refs/convert/parquet``) and ``data/<split>-*.parquet``; last, the file names
        ``datasets`` infers a split from (``data/test.jsonl``, ``default/test/0000.parquet``)."""
        base = root / self.repo
        config = config if config is not None else self.config
        if (base / "README.md").is_file():
            found = _card_files(base, config, self.split)
            if found:
                return found
        folders = [base / config, base / "data" / config] if config else [base / "data", base]
        if not config:
            folders.append(base / "default")
        for folder in folders:
            found = sorted(folder.glob(f"{self.split}-*.parquet")) or sorted(
                (folder / self.split).glob("*.parquet")
            )
            if found:
                return found
        if not config and base.is_dir():
            return _card_files(base, None, self.split)
        return []

    def rows(self, root: Path, columns: tuple[str, ...], config: str | None = None) -> list[Any]:
        return [row for _, row in self.located_rows(root, columns, config)]

    def located_rows(
        self, root: Path, columns: tuple[str, ...], config: str | None = None
    ) -> list[tuple[str, Any]]:
        """Each row with ``FILE row N`` (0-based within its file), for errors that name it."""
        files = self.files(root, config)
        if not files:
            where = root / self.repo / (config or self.config or "")
            raise DataFormatError(
                f"{where}: no {self.split} annotation files (parquet, JSON or JSONL); download "
                f"huggingface.co/datasets/{self.repo} to {root / self.repo}"
            )
        return [(f"{f} row {n}", row) for f in files for n, row in enumerate(read_rows(f, columns))]


def _card_files(base: Path, config: str | None, split: str) -> list[Path]:
    """The split's files as ``datasets`` resolves a local dataset folder (its card's
    ``configs:``, else its inferred layout); empty when it resolves none."""
    try:
        import datasets
    except ImportError:
        raise BindkitError(
            f"{base}: reading its dataset card needs datasets; pip install 'bindkit[benchmarks]'"
        ) from None
    with tempfile.TemporaryDirectory() as cache:  # resolving writes lock files only
        try:
            builder = datasets.load_dataset_builder(str(base), config, cache_dir=cache)
        except (FileNotFoundError, ValueError):
            return []  # no data files, or the card has no such config
    found = (builder.config.data_files or {}).get(split, [])
    return [Path(str(f)) for f in found if Path(str(f)).suffix in READABLE]


READABLE = (".parquet", ".json", ".jsonl")


def read_rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """One annotation file's rows (parquet, JSON lines, or a JSON list of records) with
    ``columns``; a missing column names the file."""
    if path.suffix == ".parquet":
        return read_parquet_rows(path, columns)
    try:
        with path.open(encoding="utf-8") as f:
            if path.suffix == ".jsonl":
                records = [json.loads(line) for line in f if line.strip()]
            else:
                records = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DataFormatError(f"{path}: expected a list of records; pass the file as published")
    for record in records:
        missing = [c for c in columns if c not in record]
        if missing:
            raise DataFormatError(
                f"{path}: no field {missing[0]!r} (found {', '.join(record)}); "
                "pass the file as published"
            )
    return [{c: r[c] for c in columns} for r in records]


# -- image (MMEB_Test_Instruct rows; every ranking is over the row's own candidates) -------------
IMAGE_TOKEN = "<|image_1|>"
IMAGE_COLUMNS = ("qry_inst", "qry_text", "qry_img_path", "tgt_inst", "tgt_text", "tgt_img_path")


def after_token(instruction: str, text: str | None = None) -> str:
    """What follows the token in ``process_input_text(instruction, text=text,
    add_image_token=True)`` (or ``add_video_token``): ``" " + instruction [+ " " + text]``."""
    return " " + (f"{instruction} {text}" if text else instruction)


def _vlm2vec_v1(instruction: str, text: str | None = None) -> str:
    """The image loaders' ``process_input_text(...).replace(" \\n", "\\n")`` after the token
    (the replace also joins the token's space to a leading newline)."""
    return (BARE_IMAGE + after_token(instruction, text)).replace(" \n", "\n")[len(BARE_IMAGE) :]


BARE_IMAGE = "<|image_pad|>"  # VLM2Vec's Qwen2-VL image token, only to compose the replace


def _image_query(row: dict[str, Any], newline_first: bool) -> Input:
    """``process_input_text(inst, text=qry_text, add_image_token=True)`` (then the replace and
    ``+ "\\n"``) without the token; ``text`` is the same, stripped."""
    inst = str(row["qry_inst"] or "").replace(IMAGE_TOKEN, "")
    if newline_first:  # image_qa and image_i2i_vg: "\n" + inst.strip()
        inst = "\n" + inst.strip()
    text = f"{inst} {row['qry_text']}" if row["qry_text"] else inst
    path = f"image-tasks/{row['qry_img_path']}"
    exact = _vlm2vec_v1(inst, row["qry_text"] or None) + "\n"
    return Input("image", text.replace(" \n", "\n").strip(), path, exact=exact)


def _target_texts(row: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    """(plain, exact) per candidate image: the instruction with the caption (WebQA, EDIS,
    RefCOCO-Matching) and a final newline, or the instruction alone, with the newline for
    image_t2i and without it for image_i2i_vg (``image_i2i_vg_dataset.py``)."""
    inst = str(row["tgt_inst"] or "").replace(IMAGE_TOKEN, "")
    captions = [str(c or "") for c in row["tgt_text"]]
    if captions and captions[0].strip():  # WebQA, EDIS, RefCOCO-Matching: instruction + caption
        return [
            (f"{inst} {c}".replace(" \n", "\n").strip(), _vlm2vec_v1(f"{inst} {c}", "") + "\n")
            for c in captions
        ]
    exact = _vlm2vec_v1(inst, "") + ("\n" if kind == "t2i" else "")
    return [(inst.replace(" \n", "\n").strip(), exact)] * len(row["tgt_img_path"])


def check_image_row(row: dict[str, Any], kind: str, where: str) -> None:
    """The types MMEB_Test_Instruct publishes: instructions and texts strings (or null), the
    candidate lists lists, and a query image path where the query is an image; anything else
    (a string where a list belongs is read letter by letter) is refused naming the row."""
    fix = "pass the file as published (huggingface.co/datasets/ziyjiang/MMEB_Test_Instruct)"
    for column in ("qry_inst", "qry_text", "tgt_inst"):
        if row[column] is not None and not isinstance(row[column], str):
            found = type(row[column]).__name__
            raise DataFormatError(
                f"{where}: field {column!r} must be a string (found {found}); {fix}"
            )
    for column in ("tgt_text", "tgt_img_path"):
        values = row[column]
        if not isinstance(values, list) or not all(v is None or isinstance(v, str) for v in values):
            found = type(values).__name__
            raise DataFormatError(
                f"{where}: field {column!r} must be a list of strings (found {found}); {fix}"
            )
    if kind != "t2i" and not (isinstance(row["qry_img_path"], str) and row["qry_img_path"]):
        raise DataFormatError(f"{where}: field 'qry_img_path' must name the query image; {fix}")


def _image_reader(kind: str) -> Callable[[Path, str, Source], Split]:
    def read(root: Path, name: str, source: Source) -> Split:
        split = Split([], {}, "local")
        for number, (where, row) in enumerate(source.located_rows(root, IMAGE_COLUMNS, name)):
            check_image_row(row, kind, where)
            targets = [str(t or "") for t in row["tgt_text"]]
            paths = [str(p or "") for p in row["tgt_img_path"]]
            if not targets:
                raise DataFormatError(f"{name} row {number}: tgt_text is empty")
            if kind in ("cls", "qa", "i2t"):
                query = _image_query(row, newline_first=kind == "qa")
                names = targets
                for t in targets:  # the candidate texts as published
                    split.add(t, Input("text", t))
            else:
                if kind == "t2i":  # image_t2i_eval: inst + " " + text + "\n" (VisDial "\n\n")
                    inst = str(row["qry_inst"] or "").replace(IMAGE_TOKEN, "")
                    text = f"{inst} {row['qry_text']}\n" + ("\n" if name == "VisDial" else "")
                    query = Input("text", text)
                    names = paths
                else:  # i2i_vg: the name is path + caption (several objects of one image)
                    query = _image_query(row, newline_first=True)
                    names = [f"{p}:{c.strip(chr(34))}" for p, c in zip(paths, targets, strict=True)]
                for n, p, (text, exact) in zip(names, paths, _target_texts(row, kind), strict=True):
                    split.add(n, Input("image", text, f"image-tasks/{p}", exact=exact))
            # the row number first: one image can be the query of several rows (VQA, VisDial)
            path = row["qry_img_path"]
            qid = f"{number}:{path}" if path else str(number)
            split.queries.append(Query(qid, query, tuple(names), (names[0],)))
        return split

    return read


# -- video -------------------------------------------------------------------------------------
QA_PROMPT = (
    "Given a video and a question, select the most accurate answer from the provided "
    "candidates. Return only the exact text of your chosen answer. Question: "
)
CLS_INSTRUCTION = {
    "K700": "Recognize the category of the video content.",
    "UCF101": "What activities or sports are being performed by the person in the video?",
    "HMDB51": "What actions or objects interactions are the person in the video doing?",
    "Breakfast": "Recognize the breakfast type that the person is cooking in the video. ",
}
LABEL_LISTS = {"K700": "Kinetics-700", "UCF101": "UCF101", "HMDB51": "HMDB51"}


def video_labels(name: str) -> list[str]:
    """The candidate labels VLM2Vec ranks a classification clip against, in its order."""
    text = resources.files("bindkit.tasks").joinpath("data/mmeb_v2_video_labels.json").read_text()
    labels: list[str] = json.loads(text)[LABEL_LISTS.get(name, name)]
    return labels


def _qa_query(query: str) -> str:
    """``process_query(query, prompt=TASK_PROMPT, video_token=...)`` without the token."""
    return f"{QA_PROMPT} {query}".strip()


def _clip(text: str, path: str, exact: str | None = None, sample: bool = True) -> Input:
    """A video input: ``text`` plain (stripped), ``exact`` what follows VLM2Vec's video token
    (default ``" " + text`` unstripped, as ``process_input_text``/``process_query`` put it)."""
    return Input("video", text.strip(), path, sample, " " + text if exact is None else exact)


def _option_text(option: str) -> str:
    """The candidate text VLM2Vec embeds for an option such as ``"A. a dog"`` (restated as
    published, including its slice for an option without ``". "``)."""
    return option[option.find(". ") :].strip(". ")


def _read_cls(root: Path, name: str, source: Source) -> Split:
    split = Split([], {}, "global")
    instruction = CLS_INSTRUCTION[name]  # Breakfast's ends with a space, kept in ``exact``
    for row in source.rows(root, ("video_id", "pos_text")):
        vid, label = str(row["video_id"]), str(row["pos_text"])
        query = _clip(instruction, f"{source.media}/{vid}")
        split.queries.append(Query(vid, query, (), (label,)))
        split.add(label, Input("text", label))
    for label in video_labels(name):
        split.add(label, Input("text", label))
    return split


def _read_activitynetqa(root: Path, name: str, source: Source) -> Split:
    split = Split([], {}, "local")
    options = ("yes", "no")
    for row in source.rows(root, ("video_name", "question", "answer", "question_id")):
        question = str(row["question"]) + "? (A) yes; (B) no."
        text = _qa_query(question)
        query = _clip(
            text, f"{source.media}/v_{row['video_name']}", exact=f" {QA_PROMPT} {question}"
        )
        split.queries.append(Query(str(row["question_id"]), query, options, (str(row["answer"]),)))
        for o in options:
            split.add(o, Input("text", o))
    return split


def _read_egoschema(root: Path, name: str, source: Source) -> Split:
    split = Split([], {}, "local")
    columns = ("video_idx", "question", "answer", "question_idx", "option")
    for row in source.rows(root, columns):
        options = [str(o) for o in row["option"]]
        question = str(row["question"]) + " ".join(options)
        text = _qa_query(question)
        query = _clip(text, f"{source.media}/{row['video_idx']}", exact=f" {QA_PROMPT} {question}")
        answer = options[int(row["answer"])]
        split.queries.append(Query(str(row["question_idx"]), query, tuple(options), (answer,)))
        for o in options:
            split.add(o, Input("text", _option_text(o)))
    return split


def _read_videomme(root: Path, name: str, source: Source) -> Split:
    split = Split([], {}, "local")
    for row in source.rows(root, ("question", "videoID", "options", "answer", "question_id")):
        options = [str(o) for o in row["options"]]
        question = str(row["question"]) + "\n" + "\n".join(options)
        text = _qa_query(question)
        query = _clip(text, f"{source.media}/{row['videoID']}", exact=f" {QA_PROMPT} {question}")
        answer = options["ABCD".index(str(row["answer"]))]
        split.queries.append(Query(str(row["question_id"]), query, tuple(options), (answer,)))
        for o in options:
            split.add(o, Input("text", _option_text(o)))
    return split


def qa_template(question: str, candidates: list[str], answer: Any) -> tuple[str, list[str], str]:
    """``vision_utils.qa_template``: the question with lettered options, the lettered options,
    and the lettered answer (``(@)`` when the answer is not among the candidates, as there)."""
    question += "\nOptions:\n"
    index = -1
    options = []
    for i, c in enumerate(candidates):
        question += f"({chr(ord('A') + i)}) {c}\n"
        options.append(f"({chr(ord('A') + i)}) {c}")
        if c == answer:
            index = i
    return question.rstrip(), options, f"({chr(ord('A') + index)}) {answer}"


def _read_nextqa(root: Path, name: str, source: Source) -> Split:
    split = Split([], {}, "local")
    columns = ("video", "question", "answer", "qid", "a0", "a1", "a2", "a3", "a4")
    for row in source.rows(root, columns):
        options = [str(row[f"a{i}"]) for i in range(5)]
        # qa_template letters the options in the query; the candidates stay the raw answers
        text, _, _ = qa_template(_qa_query(str(row["question"])), options, row["answer"])
        exact, _, _ = qa_template(f" {QA_PROMPT} {row['question']}", options, row["answer"])
        query = _clip(text, f"{source.media}/{row['video']}", exact)
        answer = options[int(row["answer"])]
        split.queries.append(Query(str(row["qid"]), query, tuple(options), (answer,)))
        for o in options:
            split.add(o, Input("text", o))
    return split


MVBENCH_SUBSETS = (
    "episodic_reasoning",
    "action_sequence",
    "action_prediction",
    "action_antonym",
    "fine_grained_action",
    "unexpected_action",
    "object_existence",
    "object_interaction",
    "object_shuffle",
    "moving_direction",
    "action_localization",
    "scene_transition",
    "action_count",
    "moving_count",
    "moving_attribute",
    "state_change",
    "fine_grained_pose",
    "character_order",
    "egocentric_navigation",
    "counterfactual_inference",
)


def read_mvbench(root: Path, name: str, source: Source) -> Split:
    """``load_hf_dataset_multiple_subset``: the 20 configs' rows, concatenated in this order."""
    split = Split([], {}, "local")
    number = 0
    for subset in MVBENCH_SUBSETS:
        for row in source.rows(root, ("question", "video", "candidates", "answer"), subset):
            cands = [str(c) for c in row["candidates"]]
            text, options, answer = qa_template(
                _qa_query(str(row["question"])), cands, row["answer"]
            )
            exact, _, _ = qa_template(f" {QA_PROMPT} {row['question']}", cands, row["answer"])
            query = _clip(text, f"{source.media}/{subset}/{row['video']}", exact)
            split.queries.append(Query(f"{subset}/{number}", query, tuple(options), (answer,)))
            for o in options:
                split.add(o, Input("text", o))
            number += 1
    return split


def _read_ssv2(root: Path, name: str, source: Source) -> Split:
    """Each clip against its own ``neg_text`` candidates; the first 1,000 rows
    (``num_sample_per_subset: 1000`` in ``video.yaml``)."""
    split = Split([], {}, "local")
    instruction = (
        "What actions or object interactions are being performed by the person in the video?"
    )
    for row in source.rows(root, ("video_id", "pos_text", "neg_text"))[:1000]:
        cands = tuple(str(c) for c in row["neg_text"])
        query = _clip(instruction, f"{source.media}/{row['video_id']}")
        split.queries.append(Query(str(row["video_id"]), query, cands, (str(row["pos_text"]),)))
        for c in cands:
            split.add(c, Input("text", c))
    return split


VIDEO_TARGET = "Understand the content of the provided video."
RETRIEVAL = {  # dataset: (query instruction, id column, caption column)
    "MSR-VTT": ("Find a video that contains the following visual content:", "video_id", "caption"),
    "MSVD": (
        "Find the video snippet that corresponds to the given summary:",
        "video_id",
        "caption",
    ),
    "DiDeMo": ("Find a video that includes the following described scenes:", "video", "caption"),
    "YouCook2": (
        "Find a video that demonstrates the following action while making a recipe:",
        "id",
        "sentence",
    ),
    "VATEX": ("Select a video that fits the description provided:", "videoID", "enCap"),
}


def _read_video_retrieval(root: Path, name: str, source: Source) -> Split:
    """A caption against every clip of the dataset; a caption list gives its first caption."""
    split = Split([], {}, "global")
    instruction, id_column, caption_column = RETRIEVAL[name]
    for row in source.rows(root, (id_column, caption_column)):
        caption = row[caption_column]
        caption = str(caption[0] if isinstance(caption, list) else caption)
        vid = str(row[id_column])
        if name == "DiDeMo":  # the clip's file name without its extension
            vid = Path(vid).stem
        query = Input("text", f"{instruction} {caption}")
        split.queries.append(Query(vid, query, (), (vid,)))
        split.add(vid, _clip(VIDEO_TARGET, f"{source.media}/{vid}"))
    return split


MOMENT_QUERY = "Find the clip that corresponds to the described scene in the given video:"


def _read_moments(root: Path, name: str, source: Source) -> Split:
    """QVHighlight, Charades-STA: the video's ``query/`` frames with the description, against
    the clip folders beside it, listed in ``os.listdir`` order as VLM2Vec lists them; the answer
    is the last ``positive*`` folder of that listing (an earlier one counts as a wrong
    candidate, as there). The order is the file system's: on the same folder it is VLM2Vec's,
    elsewhere a video with several ``positive*`` folders can have another answer."""
    split = Split([], {}, "local")
    for number, row in enumerate(source.rows(root, ("query", "video_path"))):
        video = Path(str(row["video_path"])).stem
        folder = f"{source.media}/{video}"
        query = _clip(f"{MOMENT_QUERY} {row['query']}", f"{folder}/query")
        where = root / folder
        clips = (
            [c for c in os.listdir(where) if c != "query" and (where / c).is_dir()]
            if where.is_dir()
            else []
        )
        names = tuple(f"{folder}/{c}" for c in clips)
        positive = [n for n, c in zip(names, clips, strict=True) if c.startswith("positive")]
        if clips and not positive:
            raise DataFormatError(f"{where}: no positive* clip folder; unpack it as published")
        split.queries.append(Query(f"{video}/{number}", query, names, tuple(positive[-1:])))
        for n in names:
            split.add(n, _clip(VIDEO_TARGET, n))
    return split


def _read_momentseeker(root: Path, name: str, source: Source) -> Split:
    """A text, an image or a video segment with its sentence, against the listed clips. The
    loader reads the query segment and the clips with ``load_frames``: every frame, none
    sampled (``sample=False``)."""
    split = Split([], {}, "local")
    target = "Understand the content of the provided video clip."
    frames = f"{source.media}/video_frames"
    columns = ("query", "positive_frames", "negative_frames", "input_frames")
    for number, row in enumerate(source.rows(root, columns)):
        given, text = str(row["input_frames"] or ""), str(row["query"])
        if given.endswith(".mp4"):
            folder = given.split(".mp4")[0].replace("/", "_")
            query = _clip(
                f"Find the clip that corresponds to the given sentence and video segment: {text}",
                f"{frames}/{folder}",
                sample=False,
            )
        elif given.endswith(".jpg"):  # process_input_text(..., add_image_token=True): a space
            inst = f"Select the video clip that aligns with the given text and image: {text}"
            query = Input("image", inst.strip(), f"{source.media}/query_{given}", exact=" " + inst)
        else:
            query = Input("text", f"Find the clip that corresponds to the given text: {text}")

        def clip(entry: Any) -> str:
            return f"{frames}/{str(entry['output_path']).replace('/', '_').split('.mp4')[0]}"

        positives = [clip(e) for e in row["positive_frames"]]
        names = tuple(positives + [clip(e) for e in row["negative_frames"]])
        split.queries.append(Query(str(number), query, names, tuple(positives)))
        for n in names:
            split.add(n, _clip(target, n, sample=False))
    return split


# -- visual documents (BEIR: queries, qrels, corpus; ranked against the whole corpus) -----------
DOC_QUERY = "Find a document image that matches the given query:"
DOC_PAGE = "Understand the content of the provided document image."


def read_beir(root: Path, name: str, source: Source) -> Split:
    split = Split([], {}, "global")
    language = source.config  # ViDoRe v2's English-only sets filter the queries by language
    columns = ("query-id", "query") + (("language",) if language else ())
    queries = [
        q
        for q in source.rows(root, columns, "queries")
        if not language or q["language"] == language
    ]
    qrels: dict[str, dict[str, float]] = {}
    for r in source.rows(root, ("query-id", "corpus-id", "score"), "qrels"):
        if r["score"] > 0:  # load_qrels_mapping: positive judgements, the highest per pair
            docs = qrels.setdefault(str(r["query-id"]), {})
            docs[str(r["corpus-id"])] = max(docs.get(str(r["corpus-id"]), 0), r["score"])
    corpus = source.rows(root, ("corpus-id", "image"), "corpus")
    split.pages = {str(r["corpus-id"]): r["image"] for r in corpus}
    for q in queries:
        qid = str(q["query-id"])
        if qid not in qrels:
            raise DataFormatError(f"{name}: query {qid} has no positive qrels row")
        docs = qrels[qid]
        unknown = [d for d in docs if d not in split.pages]
        if unknown:
            raise DataFormatError(f"{name}: qrels name corpus-id {unknown[0]!r}, not in corpus")
        text = Input("text", f"{DOC_QUERY} {q['query']}")
        split.queries.append(
            Query(qid, text, tuple(docs), tuple(docs), tuple(float(s) for s in docs.values()))
        )
        for d in docs:
            split.add(d, Input("page", DOC_PAGE, d))
    for d in split.pages:
        split.add(d, Input("page", DOC_PAGE, d))
    return split


def _image(kind: str) -> Source:
    return Source("ziyjiang/MMEB_Test_Instruct", None, "test", _image_reader(kind), "image-tasks")


def _video(
    repo: str,
    reader: Callable[[Path, str, Source], Split],
    media: str,
    config: str | None = None,
) -> Source:
    return Source(repo, config, "test", reader, f"video-tasks/frames/{media}")


def _beir(repo: str, split: str = "test", language: str | None = None) -> Source:
    return Source(repo, language, split, read_beir, ranking="global")


IMAGE_KINDS = {
    **dict.fromkeys(META_TASKS["classification"], "cls"),  # MMEB v1's lists
    **dict.fromkeys(META_TASKS["vqa"], "qa"),
    **dict.fromkeys(("MSCOCO_i2t", "VisualNews_i2t"), "i2t"),
    **dict.fromkeys(
        ("VisDial", "MSCOCO_t2i", "VisualNews_t2i", "WebQA", "EDIS", "Wiki-SS-NQ"), "t2i"
    ),
    **dict.fromkeys(
        (
            "CIRR",
            "NIGHTS",
            "OVEN",
            "FashionIQ",
            "MSCOCO",
            "RefCOCO",
            "RefCOCO-Matching",
            "Visual7W-Pointing",
        ),
        "i2i_vg",
    ),
}

SOURCES: dict[str, Source] = {
    **{name: _image(kind) for name, kind in IMAGE_KINDS.items()},
    "K700": _video("VLM2Vec/Kinetics-700", _read_cls, "video_cls/K700"),
    "HMDB51": _video("VLM2Vec/HMDB51", _read_cls, "video_cls/HMDB51"),
    "UCF101": _video("VLM2Vec/UCF101", _read_cls, "video_cls/UCF101"),
    "Breakfast": _video("VLM2Vec/Breakfast", _read_cls, "video_cls/Breakfast"),
    "Video-MME": _video("VLM2Vec/Video-MME", _read_videomme, "video_qa/Video-MME"),
    "EgoSchema": _video("VLM2Vec/EgoSchema", _read_egoschema, "video_qa/EgoSchema", "Subset"),
    "ActivityNetQA": _video("VLM2Vec/ActivityNetQA", _read_activitynetqa, "video_qa/ActivityNetQA"),
    "SmthSmthV2": _video("VLM2Vec/SmthSmthV2", _read_ssv2, "video_cls/SSv2"),
    "NExTQA": _video("VLM2Vec/NExTQA", _read_nextqa, "video_qa/NExTQA", "MC"),
    "MVBench": Source(
        "VLM2Vec/MVBench", None, "train", read_mvbench, "video-tasks/frames/video_qa/MVBench"
    ),
    "MSR-VTT": _video("VLM2Vec/MSR-VTT", _read_video_retrieval, "video_ret/MSR-VTT", "test_1k"),
    "MSVD": _video("VLM2Vec/MSVD", _read_video_retrieval, "video_ret/MSVD"),
    "DiDeMo": _video("VLM2Vec/DiDeMo", _read_video_retrieval, "video_ret/DiDeMo"),
    "YouCook2": Source(
        "lmms-lab/YouCook2",
        None,
        "val",
        _read_video_retrieval,
        "video-tasks/frames/video_ret/YouCook2",
    ),
    "VATEX": _video("VLM2Vec/VATEX", _read_video_retrieval, "video_ret/VATEX"),
    "QVHighlight": _video("VLM2Vec/QVHighlight", _read_moments, "video_mret/QVHighlight"),
    "Charades-STA": _video("VLM2Vec/Charades-STA", _read_moments, "video_mret/Charades_STA"),
    "MomentSeeker": _video("VLM2Vec/MomentSeeker", _read_momentseeker, "video_mret/MomentSeeker"),
    "ViDoRe_arxivqa": _beir("vidore/arxivqa_test_subsampled_beir"),
    "ViDoRe_docvqa": _beir("vidore/docvqa_test_subsampled_beir"),
    "ViDoRe_infovqa": _beir("vidore/infovqa_test_subsampled_beir"),
    "ViDoRe_tabfquad": _beir("vidore/tabfquad_test_subsampled_beir"),
    "ViDoRe_tatdqa": _beir("vidore/tatdqa_test_beir"),
    "ViDoRe_shiftproject": _beir("vidore/shiftproject_test_beir"),
    **{
        f"ViDoRe_syntheticDocQA_{t}": _beir(f"vidore/syntheticDocQA_{t}_test_beir")
        for t in ("artificial_intelligence", "energy", "government_reports", "healthcare_industry")
    },
    "ViDoRe_esg_reports_human_labeled_v2": _beir("vidore/esg_reports_human_labeled_v2"),
    "ViDoRe_biomedical_lectures_v2_multilingual": _beir("vidore/biomedical_lectures_v2"),
    "ViDoRe_economics_reports_v2_multilingual": _beir("vidore/economics_reports_v2"),
    "ViDoRe_esg_reports_v2_multilingual": _beir("vidore/esg_reports_v2"),
    # visdoc.yaml's English-only views of the same files (not on the leaderboard)
    "ViDoRe_biomedical_lectures_v2": _beir("vidore/biomedical_lectures_v2", language="english"),
    "ViDoRe_economics_reports_v2": _beir("vidore/economics_reports_v2", language="english"),
    "ViDoRe_esg_reports_v2": _beir("vidore/esg_reports_v2", language="english"),
    **{
        f"VisRAG_{t}": _beir(f"openbmb/VisRAG-Ret-Test-{t}", "train")
        for t in ("ArxivQA", "ChartQA", "MP-DocVQA", "SlideVQA", "InfoVQA", "PlotQA")
    },
    "ViDoSeek-page": _beir("VLM2Vec/ViDoSeek-page-fixed"),
    "ViDoSeek-doc": _beir("VLM2Vec/ViDoSeek"),
    "MMLongBench-page": _beir("VLM2Vec/MMLongBench-page-fixed"),
    "MMLongBench-doc": _beir("VLM2Vec/MMLongBench-doc"),
}
