"""MMEB-V2's per-dataset readers, restating TIGER-AI-Lab/VLM2Vec's ``src/data/eval_dataset``.

Each reader turns one dataset's published annotation rows into a
:class:`~._mmeb_v2_files.Split`: queries (an input, the candidate names and the relevant names)
and the candidates by name, de-duplicated by name in first-seen order (rows first, then the
corpus) as ``generate_cand_dataset`` does, so a ranking over "all candidates" lists them in
VLM2Vec's order. Texts are composed as each loader
composes them, whitespace included (a text query is the loader's string as it is, e.g. image_t2i's
final ``"\n"``); an input with an image, a page or a video passes its text as the embedder's
instruction: a :class:`~bindkit.embed.prompts.Composed`, plain (stripped, the model's token left
out) for every prompt format and exact (what follows VLM2Vec's token, every space and newline
kept) for ``vlm2vec:``.

One module a part: the files and types (:mod:`._mmeb_v2_files`, which also describes where
each file lies under ``--data ROOT``), the image readers (:mod:`._mmeb_v2_image`), the video
readers (:mod:`._mmeb_v2_video`) and the visual-document reader (:mod:`._mmeb_v2_docs`); this
module is their table, :data:`SOURCES` (dataset name → :class:`~._mmeb_v2_files.Source`).
"""

from __future__ import annotations

from bindkit.tasks.mmeb._mmeb_v2_docs import DOC_SOURCES
from bindkit.tasks.mmeb._mmeb_v2_files import Source
from bindkit.tasks.mmeb._mmeb_v2_image import IMAGE_SOURCES
from bindkit.tasks.mmeb._mmeb_v2_video import VIDEO_SOURCES

__all__ = ["SOURCES"]

SOURCES: dict[str, Source] = {**IMAGE_SOURCES, **VIDEO_SOURCES, **DOC_SOURCES}
"""Every MMEB-V2 dataset bindkit reads: image, then video, then visual documents."""
