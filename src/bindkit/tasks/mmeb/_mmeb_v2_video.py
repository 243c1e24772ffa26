"""MMEB-V2's video datasets (classification, QA, retrieval, moment retrieval): their readers,
after VLM2Vec's video loaders, and :data:`VIDEO_SOURCES`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from bindkit.errors import DataFormatError
from bindkit.tasks.mmeb._mmeb_v2_files import Input, Query, Source, Split

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


def _video(
    repo: str,
    reader: Callable[[Path, str, Source], Split],
    media: str,
    config: str | None = None,
) -> Source:
    return Source(repo, config, "test", reader, f"video-tasks/frames/{media}")


VIDEO_SOURCES: dict[str, Source] = {
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
}
