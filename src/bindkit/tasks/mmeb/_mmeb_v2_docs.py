"""MMEB-V2's visual-document datasets (BEIR: queries, qrels, corpus; ranked against the whole
corpus): :func:`read_beir` and :data:`DOC_SOURCES`."""

from __future__ import annotations

from pathlib import Path

from bindkit.errors import DataFormatError
from bindkit.tasks.mmeb._mmeb_v2_files import Input, Query, Source, Split

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


def _beir(repo: str, split: str = "test", language: str | None = None) -> Source:
    return Source(repo, language, split, read_beir, ranking="global")


DOC_SOURCES: dict[str, Source] = {
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
