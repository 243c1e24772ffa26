"""ARO COCO-Order and Flickr30k-Order on fixtures in the published Karpathy layout: the
original's caption cleaning, the four shuffles and their draw order, the argmax tie rule (a tie
is correct), seeds in the result's options, missing images reported."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.tasks.pairs import _aro_order as order
from bindkit.tasks.pairs.aro import ARO

CAPTIONS = [
    "A red car parked near a tall building.",
    "Dogs",
    "Two small cats sleeping on a soft couch; the couch is blue!",
    "A man (left) riding a brown horse on the beach.",
]
LONG = " ".join(f"word{i}" for i in range(40)) + "."


# -- the original's functions, verbatim but for the injected tagger and tokenizer -----------
# dataset_zoo/perturbations.py (TextShuffler) and dataset_zoo/aro_datasets.py (COCO_Order)
class _OriginalShuffler:
    def __init__(self, tagged: dict[str, tuple[list[str], list[str]]]) -> None:
        self.tagged = tagged

    def shuffle_nouns_and_adj(self, ex: str) -> str:
        tokens, tags = self.tagged[ex]
        text = np.array(tokens)
        noun_idx = [i for i, tag in enumerate(tags) if tag in ["NN", "NNS", "NNP", "NNPS"]]
        adjective_idx = [i for i, tag in enumerate(tags) if tag in ["JJ", "JJR", "JJS"]]
        text[noun_idx] = np.random.permutation(text[noun_idx])
        text[adjective_idx] = np.random.permutation(text[adjective_idx])
        return " ".join(text)

    def shuffle_allbut_nouns_and_adj(self, ex: str) -> str:
        tokens, tags = self.tagged[ex]
        text = np.array(tokens)
        noun_adj_idx = [
            i
            for i, tag in enumerate(tags)
            if tag in ["NN", "NNS", "NNP", "NNPS", "JJ", "JJR", "JJS"]
        ]
        else_idx = np.ones(text.shape[0])
        else_idx[noun_adj_idx] = 0
        else_idx = else_idx.astype(bool)
        text[else_idx] = np.random.permutation(text[else_idx])
        return " ".join(text)

    def get_trigrams(self, sentence: list[str]) -> list[list[str]]:
        trigrams = []
        trigram: list[str] = []
        for i in range(len(sentence)):
            trigram.append(sentence[i])
            if i % 3 == 2:
                trigrams.append(trigram[:])
                trigram = []
        if trigram:
            trigrams.append(trigram)
        return trigrams

    def shuffle_within_trigrams(self, ex: str) -> str:
        trigrams = self.get_trigrams(ex.split())
        for trigram in trigrams:
            random.shuffle(trigram)
        return " ".join([" ".join(trigram) for trigram in trigrams])

    def shuffle_trigrams(self, ex: str) -> str:
        trigrams = self.get_trigrams(ex.split())
        random.shuffle(trigrams)
        return " ".join([" ".join(trigram) for trigram in trigrams])


def _original_options(captions: list[str], seed: int, tagged: dict) -> list[tuple[str, ...]]:
    random.seed(seed)  # misc.seed_all
    np.random.seed(seed)
    shuffler = _OriginalShuffler(tagged)
    fns = [
        shuffler.shuffle_nouns_and_adj,
        shuffler.shuffle_allbut_nouns_and_adj,
        shuffler.shuffle_within_trigrams,
        shuffler.shuffle_trigrams,
    ]
    out = []
    for caption in captions:
        options = [order.pre_caption(caption, 30)]
        for fn in fns:
            options.append(order.pre_caption(fn(caption), 30))
        out.append(tuple(options))
    return out


def _fake_tagged(captions: list[str], seed: int) -> dict[str, tuple[list[str], list[str]]]:
    """Whitespace tokens with made-up Penn tags (nouns, adjectives and others mixed)."""
    rng = np.random.default_rng(seed)
    tags = ["NN", "NNS", "JJ", "DT", "IN", "VBG", "JJR", "NNP", ","]
    return {c: (c.split(), [str(t) for t in rng.choice(tags, len(c.split()))]) for c in captions}


def test_draws_follow_the_original_order() -> None:
    words = ["a", "red", "car", "near", "the", "tall", "old", "building", "with", "two", "dogs"]
    rng = np.random.default_rng(0)
    captions = [" ".join(rng.choice(words, rng.integers(1, 14))) for _ in range(40)]
    tagged = _fake_tagged(captions, 1)

    def tag(caps: Sequence[str]) -> Iterator[tuple[list[str], list[str]]]:
        return (tagged[c] for c in caps)

    for seed in (1, 7):
        ours = order.caption_options(captions, seed, tag, str.split)
        assert ours == _original_options(captions, seed, tagged)
    assert ours != order.caption_options(captions, 1, tag, str.split)


# -- the pure pieces ------------------------------------------------------------------------
def test_pre_caption_as_the_original() -> None:
    assert order.pre_caption('A  Man (left), "riding": a horse~ #1*; isn\'t it? yes!') == (
        "a man left , riding a horse 1 isn't it? yes"
    )
    assert order.pre_caption(LONG).split() == [f"word{i}" for i in range(30)]
    assert order.pre_caption("one two three", max_words=2) == "one two"
    assert order.pre_caption("  tab\there.\n") == "tab\there"  # a single tab stays, as there


NOUN_TAGS = ["DT", "JJ", "NN", "IN", "DT", "JJR", "NNS", "VBG", "NNP"]
TOKENS = ["a", "red", "car", "near", "the", "taller", "trees", "facing", "Paris"]
NOUN_POS = [2, 6, 8]
ADJ_POS = [1, 5]
OTHER_POS = [0, 3, 4, 7]


def _positions(out: str, positions: list[int]) -> list[str]:
    words = out.split(" ")
    return [words[i] for i in positions]


def test_noun_adjective_shuffle_permutes_within_each_class() -> None:
    seen = set()
    for seed in range(30):
        out = order.shuffle_nouns_and_adj(TOKENS, NOUN_TAGS, np.random.RandomState(seed))
        assert Counter(_positions(out, NOUN_POS)) == Counter(["car", "trees", "Paris"])
        assert Counter(_positions(out, ADJ_POS)) == Counter(["red", "taller"])
        assert _positions(out, OTHER_POS) == ["a", "near", "the", "facing"]
        seen.add(out)
    assert len(seen) > 3  # the nouns and adjectives do move


def test_allbut_shuffle_moves_only_the_other_words() -> None:
    seen = set()
    for seed in range(30):
        out = order.shuffle_allbut_nouns_and_adj(TOKENS, NOUN_TAGS, np.random.RandomState(seed))
        assert _positions(out, NOUN_POS + ADJ_POS) == ["car", "trees", "Paris", "red", "taller"]
        assert Counter(_positions(out, OTHER_POS)) == Counter(["a", "near", "the", "facing"])
        seen.add(out)
    assert len(seen) > 3


def test_trigram_shuffles() -> None:
    tokens = list("abcdefgh")
    assert order.trigrams(tokens) == [["a", "b", "c"], ["d", "e", "f"], ["g", "h"]]
    within, across = set(), set()
    for seed in range(30):
        out = order.shuffle_within_trigrams(tokens, random.Random(seed)).split()
        groups = [sorted(out[i : i + 3]) for i in (0, 3, 6)]
        assert groups == [["a", "b", "c"], ["d", "e", "f"], ["g", "h"]]
        within.add(" ".join(out))
        out2 = order.shuffle_trigrams(tokens, random.Random(seed))
        groups = ["a b c", "d e f", "g h"]
        assert sorted(out2.split(" ")) == tokens
        assert any(
            out2 == " ".join(groups[i] for i in perm)
            for perm in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
        )
        across.add(out2)
    assert len(within) > 3 and len(across) > 3


def test_argmax_tie_counts_as_correct() -> None:
    scores = np.array(
        [
            [0.5, 0.5, 0.1, 0.1, 0.1],  # the caption ties a shuffle: argmax picks index 0
            [0.4, 0.5, 0.1, 0.1, 0.1],
            [0.9, 0.1, 0.2, 0.3, 0.4],
        ]
    )
    assert order.score_order(scores, "correct").tolist() == [1.0, 0.0, 1.0]
    assert order.score_order(scores, "correct").tolist() == [
        float(np.argmax(s) == 0) for s in scores
    ]


def test_order_scores_blocks_equal_the_plain_product_and_identical_strings_tie() -> None:
    rng = np.random.default_rng(0)
    images, texts = rng.standard_normal((4, 6)), rng.standard_normal((9, 6))
    image_index = rng.integers(0, 4, 11)
    option_index = rng.integers(0, 9, (11, 5))
    option_index[3, 2] = option_index[3, 0]
    plain = np.array(
        [
            [images[i] @ texts[t] for t in row]
            for i, row in zip(image_index, option_index, strict=True)
        ]
    )
    for block in (1, 3, 4096):
        got = order.order_scores(images, texts, image_index, option_index, block=block)
        np.testing.assert_allclose(got, plain, rtol=1e-12)
    assert got[3, 2] == got[3, 0]


def test_identical_strings_tie_even_when_the_product_is_not_bitwise_stable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a product whose last bits depend on where a row sits (as a BLAS kernel's may)
    einsum = np.einsum
    wobble = np.random.default_rng(0)
    monkeypatch.setattr(
        np, "einsum", lambda *a: einsum(*a) * (1 + 1e-15 * wobble.random(einsum(*a).shape))
    )
    images, texts = np.eye(3), np.eye(3)
    scores = order.order_scores(images, texts, np.array([0]), np.array([[0, 0, 1, 2, 0]]))
    assert scores[0, 1] == scores[0, 0] == scores[0, 4]
    assert order.score_order(scores, "correct").tolist() == [1.0]


# -- spaCy and NLTK -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nlp_tools() -> None:
    pytest.importorskip("spacy")
    pytest.importorskip("nltk")
    order.spacy_model()


def test_real_shuffles_are_seeded_cleaned_and_keep_the_words(nlp_tools: None) -> None:
    captions = [*CAPTIONS, LONG]
    first = order.caption_options(captions, 1, order.spacy_tag, order.nltk_tokenize)
    assert first == order.caption_options(captions, 1, order.spacy_tag, order.nltk_tokenize)
    assert first != order.caption_options(captions, 2, order.spacy_tag, order.nltk_tokenize)
    for caption, options in zip(captions, first, strict=True):
        assert len(options) == 5 and options[0] == order.pre_caption(caption)
        for option in options:
            assert len(option.split(" ")) <= 30
            assert not set(option) & set('.!"()*#:;~') and option == option.lower()
        if caption != LONG:  # truncation keeps different words of different orders
            assert all(Counter(o.split()) == Counter(options[0].split()) for o in options)
    dogs = first[CAPTIONS.index("Dogs")]
    assert set(dogs) == {"dogs"}  # one word: every shuffle equals the caption (a tie)
    cats = first[2]
    assert cats[1] != cats[0]
    # "two small cats sleeping on a soft couch the couch is blue": adjectives at 1, 6, 11 and
    # nouns at 2, 7, 9 trade places among themselves; every other word stays
    words = cats[1].split()
    assert sorted(words[i] for i in (1, 6, 11)) == ["blue", "small", "soft"]
    assert sorted(words[i] for i in (2, 7, 9)) == ["cats", "couch", "couch"]
    assert [words[i] for i in (0, 3, 4, 5, 8, 10)] == ["two", "sleeping", "on", "a", "the", "is"]


def test_trigram_tokens_are_nltk_treebank_tokens(nlp_tools: None) -> None:
    # punctuation and clitics are tokens of their own, so they take a trigram slot
    assert order.nltk_tokenize("A man's dog, running.") == [
        "A", "man", "'s", "dog", ",", "running", ".",
    ]  # fmt: skip


def test_reduced_spacy_pipeline_tags_as_the_full_one(nlp_tools: None) -> None:
    import spacy

    full = spacy.load(order.spacy_model())
    assert "parser" in full.pipe_names
    expected = [([t.text for t in full(c)], [t.tag_ for t in full(c)]) for c in CAPTIONS]
    assert list(order.spacy_tag(CAPTIONS)) == expected


def test_missing_spacy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(order, "SPACY_MODELS", ("no_such_spacy_model",))
    with pytest.raises(BindkitError, match=r"en_core_web_sm.*pip install 'bindkit\[benchmarks\]'"):
        order.spacy_model()
    with pytest.raises(BindkitError, match="bindkit"):
        ARO().options("coco_order")
    assert ARO().options("vg_relation") == {}


# -- the task on the published layout -------------------------------------------------------
def _image(path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    path.parent.mkdir(parents=True, exist_ok=True)
    pil.new("RGB", (4, 4), (10, 20, 30)).save(path, format="PNG")


def _coco(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    items = [
        {"image": "val2014/COCO_val2014_1.jpg", "caption": CAPTIONS[:2], "image_id": 1},
        {"image": "val2014/COCO_val2014_2.jpg", "caption": CAPTIONS[2:3], "image_id": 2},
        {"image": "val2014/COCO_val2014_3.jpg", "caption": CAPTIONS[3:], "image_id": 3},
    ]
    (root / "coco_karpathy_test.json").write_text(json.dumps(items))
    _image(root / "val2014" / "COCO_val2014_1.jpg")
    _image(root / "val2014" / "COCO_val2014_2.jpg")  # COCO_val2014_3.jpg is missing
    return root


def test_coco_order_known_answer_missing_images_and_seed(tmp_path: Path, nlp_tools: None) -> None:
    data = _coco(tmp_path / "aro")
    e0 = np.eye(8)[0]
    # image · caption: item 0 scores 1 (the top); "dogs" -1 but every option is the same string
    # (a tie: correct); item 2's caption -1 while its shuffles are random vectors: wrong
    vectors = {
        "COCO_val2014_1.jpg": e0,
        "COCO_val2014_2.jpg": e0,
        order.pre_caption(CAPTIONS[0]): e0,
        "dogs": -e0,
        order.pre_caption(CAPTIONS[2]): -e0,
    }
    embedder = TableEmbedder(vectors)
    records = evaluate(
        [embedder],
        task="aro",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        allow_missing_images=True,
    )
    (record,) = records
    assert record["subset"] == "coco_order" and record["pairing"] == "it"
    assert record["scores"]["accuracy"] == pytest.approx(2 / 3)
    assert record["counts"] == {
        "items": 4,
        "images": 3,
        "missing_images": 1,
        "scored": 3,
        "same_as_caption": 2,  # "dogs", and the car caption's noun shuffle (seed 1)
    }
    assert record["options"]["order_seed"] == 1
    assert record["options"]["spacy_model"].startswith("en_core_web_sm")
    assert record["options"]["max_words"] == 30
    # captions embedded once per distinct string; the two present images once each
    task = ARO(order_seed=5)
    dataset = task.load(data)
    options = task.caption_options(dataset.payload, "coco_order")
    assert options != ARO().caption_options(dataset.payload, "coco_order")
    embedder.calls.clear()
    (again,) = evaluate(
        [embedder],
        task=task,
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        allow_missing_images=True,
    )
    assert again["options"]["order_seed"] == 5  # another seed is another result
    distinct = len({t for item in options[:3] for t in item})
    assert ("image", 2, None) in embedder.calls and ("text", distinct, None) in embedder.calls


def test_missing_images_stop_the_run_and_nothing_to_score_fails(
    tmp_path: Path, nlp_tools: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "flickr"
    data.mkdir()
    items = [{"image": "flickr30k-images/1.jpg", "caption": CAPTIONS[:2]}]
    (data / "flickr30k_test.json").write_text(json.dumps(items))
    run = {"task": "aro", "data": data, "out": tmp_path / "r", "cache": False, "verbose": False}
    with pytest.raises(BindkitError, match="aro flickr30k_order: 1 of 1 images missing") as exc:
        evaluate([TableEmbedder()], **run)
    assert "flickr30k-images/1.jpg" in str(exc.value) and "--allow-missing-images" in str(exc.value)
    with pytest.raises(BindkitError, match="nothing to score"):
        evaluate([TableEmbedder()], **run, allow_missing_images=True)
    assert not list((tmp_path / "r").rglob("it.json"))
    assert "1 of 1 images missing" in capsys.readouterr().err
    _image(data / "flickr30k-images" / "1.jpg")
    (record,) = evaluate(
        [TableEmbedder()], task="aro", data=data, out=tmp_path / "r", cache=False, verbose=False
    )
    assert record["subset"] == "flickr30k_order" and record["counts"]["scored"] == 2


def test_image_root_overrides_the_json_folder(tmp_path: Path, nlp_tools: None) -> None:
    data = tmp_path / "ann"
    data.mkdir()
    items = [{"image": "flickr30k-images/1.jpg", "caption": CAPTIONS[:1]}]
    (data / "flickr30k_test.json").write_text(json.dumps(items))
    _image(tmp_path / "imgs" / "flickr30k-images" / "1.jpg")
    (record,) = evaluate(
        [TableEmbedder()],
        task="aro",
        data=data,
        image_root=tmp_path / "imgs",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert record["counts"]["missing_images"] == 0


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"coco_karpathy_test\.json at https://storage"):
        ARO().load(tmp_path)
    (tmp_path / "coco_karpathy_test.json").write_text(
        json.dumps([{"image": "val2014/x.jpg", "caption": "one caption"}])
    )
    with pytest.raises(
        DataFormatError, match=r"item 0: field 'caption' must be a list.*test split"
    ):
        ARO().load(tmp_path)
    (tmp_path / "coco_karpathy_test.json").write_text(json.dumps([{"caption": ["a"]}]))
    with pytest.raises(DataFormatError, match="field 'image'"):
        ARO().load(tmp_path)
    with pytest.raises(BindkitError, match="order_seed"):
        ARO(order_seed=-1)


def test_asking_for_an_absent_subset_names_its_file_and_source(tmp_path: Path) -> None:
    data = _coco(tmp_path / "aro")

    def ask(subset: str) -> None:
        evaluate(
            [TableEmbedder({})],
            task="aro",
            data=data,
            subsets=subset,
            out=tmp_path / "r",
            cache=False,
            verbose=False,
        )

    with pytest.raises(BindkitError) as caught:
        ask("flickr30k_order")
    message = str(caught.value)
    assert str(data / "flickr30k_test.json") in message and "\n" not in message
    assert order.PUBLISHED["flickr30k_order"] in message
    with pytest.raises(BindkitError, match="not in aro's data"):  # not a subset of ARO at all
        ask("nope")


def test_task_options_from_the_cli(
    tmp_path: Path, nlp_tools: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.cli import main

    data = _coco(tmp_path / "aro")
    argv = ["eval", "--model", "builtin:tiny-clip", "--task", "aro", "--data", str(data), "-q"]
    argv.append("--allow-missing-images")  # the fixture lacks one image
    seeds = {}
    for seed in ("1", "2"):
        out = tmp_path / f"r{seed}"
        assert main([*argv, "--task-option", f"order_seed={seed}", "--out", str(out)]) == 0
        (path,) = out.rglob("it.json")
        seeds[seed] = json.loads(path.read_text())["options"]["order_seed"]
    assert seeds == {"1": 1, "2": 2}
    capsys.readouterr()
    bad = {
        "order_sed=2": "did you mean order_seed",
        "order_seed=two": "order_seed=two: not a valid int",
        "order_seed=-1": "order_seed -1",
        "order_seed": "write KEY=VALUE",
    }
    for option, message in bad.items():
        assert main([*argv, "--task-option", option, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err, err
    saber = ["eval", "--model", "bow", "--task", "saber", "--task-option", "k=1", "--out", "x"]
    assert main(saber) == 2
    assert "saber has no such option" in capsys.readouterr().err


# -- the original's sentence split and identical token sequences (issue 20, finding 8) -------
MULTI = [
    "A man rides a horse. A dog runs by the old fence.",
    "Two cats sleep on a couch. The couch is blue. A lamp stands near.",
    "A red car parked near a tall building.",
    "Three birds sit on a wire. One of them sings loudly.",
    "A woman holds an umbrella in the rain.",
]


@pytest.fixture
def punkt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Punkt data folder with empty parameters: the sentence split NLTK's word_tokenize runs
    (its heuristics: a period before a capitalised word ends a sentence)."""
    nltk = pytest.importorskip("nltk")
    folder = tmp_path / "nltk_data" / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (folder / name).touch()
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "nltk_data"), *nltk.data.path])


def _multi(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    items = [{"image": "val2014/COCO_val2014_1.jpg", "caption": MULTI}]
    (root / "coco_karpathy_test.json").write_text(json.dumps(items))
    _image(root / "val2014" / "COCO_val2014_1.jpg")
    return root


def test_trigrams_use_the_originals_sentence_split_where_punkt_is_installed(
    tmp_path: Path, nlp_tools: None, punkt: None
) -> None:
    from nltk.tokenize import word_tokenize

    assert order.sentence_split_available()
    assert order.nltk_tokenize("A dog. A cat runs.", True) == word_tokenize("A dog. A cat runs.")
    assert order.nltk_tokenize("A dog. A cat runs.", True)[:3] == ["A", "dog", "."]
    task = ARO()
    dataset = task.load(_multi(tmp_path / "aro"))
    got = task.caption_options(dataset.payload, "coco_order")
    assert got == order.caption_options(MULTI, 1, order.spacy_tag, word_tokenize)  # the original
    one_line = order.caption_options(
        MULTI, 1, order.spacy_tag, lambda c: order.nltk_tokenize(c, False)
    )
    assert got != one_line  # without the split the draws drift from the first caption on
    assert task.options("coco_order")["nltk_tokenize"].startswith("word_tokenize (Punkt")


def test_without_punkt_the_result_says_so(tmp_path: Path, nlp_tools: None) -> None:
    if order.sentence_split_available():
        pytest.skip("NLTK's Punkt data is installed here")
    (record,) = evaluate(
        [TableEmbedder()],
        task="aro",
        data=_multi(tmp_path / "aro"),
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert "preserve_line" in record["options"]["nltk_tokenize"]


def test_options_that_tokenise_like_the_caption_tie_with_it(tmp_path: Path) -> None:
    task = ARO()
    dataset = task.load(_multi(tmp_path / "aro"))
    caption = "a man , riding a horse"
    options = [("a man, riding a horse", caption, "horse a riding man a", "a b c", "c b a")]
    for split in (True, False):
        dataset.payload.options[("coco_order", 1, split)] = options * len(MULTI)
    e0, e1 = np.eye(8)[0], np.eye(8)[1]
    # the two spellings would get different vectors, the spaced one the higher score
    vectors = {"COCO_val2014_1.jpg": e0, "a man, riding a horse": e0 + e1, caption: e0}
    vectors |= {text: -e0 for text in options[0][2:]}
    embedder = TableEmbedder(vectors)
    result = task.evaluate(embedder, dataset, "coco_order", "it", _ctx())
    assert result is not None
    assert result["scores"]["accuracy"] == 1.0  # a tie with the caption is correct
    assert result["counts"]["same_as_caption"] == len(MULTI)
    assert order.token_key("a man, riding") == order.token_key("a man , riding")
    assert order.token_key("a man riding") != order.token_key("a man , riding")


def _ctx():  # type: ignore[no-untyped-def]
    from bindkit.tasks.base import EvalContext

    return EvalContext()
