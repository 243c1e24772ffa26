"""The offline template backend: a small grammar per construction type, no LLM.

It honours the same plan as the LLM backend (length band, binding-distance window, distractors,
context, register, opener, avoid and ban lists, attribute suggestions) and its output goes
through the same validator. Filler phrases are chosen by exact word count, so distances and
lengths are hit by construction rather than by retrying.

It stays one module (about 630 lines) because its word tables, filler chains and sentence
builder are one grammar: the builder's branches are written against the tables, and a split
would only put the grammar's words in one file and its rules in another.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from functools import cache

from bindkit.saber.language import indefinite_article
from bindkit.synth.controls import minimum_words, read_lines
from bindkit.synth.diversity import Plan
from bindkit.synth.example import Example

# Filler pieces, by kind. Places read naturally after a noun ("the cup on the shelf") and after
# a verb; times and clauses only after a verb or at the end of a clause. A filler chains at most
# two places, one time and two clauses, in that order ("by the window in the back room after
# lunch while the staff watched"), so two time adverbials never meet ("for a while for now"),
# and no piece ends in a bare adverb before a preposition ("nearby near a ..."). None of their
# words may be a queried attribute or object (see grammar_words), an item of the SABER
# vocabulary, an anaphor (first, second), or an attribute directly before an object.
# one-word places: two per caption at most, never beside another place ("upstairs downstairs")
SPOTS = ["there", "upstairs", "downstairs", "indoors", "outside"]
PLACES = [
    "on display",
    "in storage",
    "in place",
    "out back",
    "on the shelf",
    "by the window",
    "near the door",
    "under the stairs",
    "behind the counter",
    "beside the sink",
    "at the far end",
    "next to the wall",
    "in the back room",
    "in plain view",
    "in the corner of the room",
    "along the ledge",
    "on the windowsill",
    "at the end of the hall",
    "on the landing",
    "in the hallway",
    "by the front steps",
    "near the fireplace",
    "on the porch",
]
TIMES = [
    "today",
    "again",
    "quietly",
    "as usual",
    "for now",
    "for hours",
    "all morning",
    "after lunch",
    "earlier that week",
    "until closing time",
]
CLAUSES = [
    "as the guests arrived",
    "while the staff watched",
    "after the last visitor left",
    "before anyone noticed",
    "long after the shop had closed",
    "as the evening began",
    "while the music played",
    "before the doors closed",
]
PIECES = SPOTS + PLACES + TIMES + CLAUSES
# at most this many pieces of each kind in one filler, in this order (a spot or places)
KINDS = (("place", PLACES, 2), ("time", TIMES, 1), ("clause", CLAUSES, 1))
# at most this many pieces of a kind in one caption (over all its fillers)
PER_CAPTION = {"spot": 2, "time": 1, "clause": 2}


# Past-tense locative verbs: no subject-verb agreement to get wrong with one or more subjects
# ("lay" and "waited" are left out: the spaCy parser of the benchmark reads them as nouns in
# 3-5 % of captions).
VERBS = ["sat", "stood", "rested", "remained"]
PREPOSITIONS = ["beside", "near", "behind", "opposite"]
# Linking verbs of predicative captions (all listed in data/linking_words.txt).
COPULAS = ["was", "looked", "seemed", "appeared", "remained", "had become", "had turned", "stayed"]
# Openers as sentence-initial adverbials ("X, clause"), clauses taking a that-clause
# ("X that clause"), or sentences of their own ("X. Clause"). The first object and "There" need
# no words of their own: the caption starts with the object, or "There were ...".
OPENERS: dict[str, tuple[str, str]] = {
    "start with a place": ("Over here", ","),
    "start with a time": ("That day", ","),
    "start with a person doing something": ("Someone pointed out", "that"),
    "start with a sound": ("Amid the chatter", ","),
    "start with a smell": ("Amid the scent of coffee", ","),
    "start with a number": ("At nine sharp", ","),
    "start with a question": ("Guess what?", "."),
    "start with a quotation": ('"Look here," said Sam.', "."),
    "start with a verb in the imperative": ("Note", "that"),
    "start with a subordinate clause": ("When the doors opened", ","),
    "start with an adverb": ("Curiously", ","),
    "start with the weather": ("Despite the weather", ","),
    "start with a name": ("Sam noticed", "that"),
    "start with a prepositional phrase": ("Near the entrance", ","),
}
# The preposition a scene takes ("on a rooftop", "at a bus stop"; "in" otherwise).
SCENE_PREPOSITIONS = {
    "on": ("a beach", "a boat deck", "a ferry", "a forest trail", "a rooftop"),
    "at": (
        "a bus stop",
        "a campsite",
        "a fire station",
        "a flea market",
        "a food stall",
        "a gas station",
        "a harbor",
        "a playground",
        "a railway station",
        "a post office",
        "a coastguard hut",
    ),
}


def scene_phrase(context: str) -> list[str]:
    """ "in a garage at dusk", "on a rooftop during a party": a context as a place adverbial."""
    preposition = next(
        (p for p, places in SCENE_PREPOSITIONS.items() if context.startswith(places)), "in"
    )
    return [preposition, *context.split()]


@cache
def _fillers(places_only: bool, exclude: frozenset[str] = frozenset()) -> dict[int, list[Chain]]:
    """Chains of distinct pieces by total word count (a few per length): a spot or up to two
    places, then one time and one clause (places only, or without the kinds in ``exclude``)."""
    rng = random.Random(0)
    kinds = [(k, [tuple(p.split()) for p in pieces], most) for k, pieces, most in KINDS]
    kinds = [k for k in kinds if k[0] not in exclude and not (places_only and k[0] != "place")]
    spots = [] if "spot" in exclude else [(w,) for w in SPOTS]
    table: dict[int, list[Chain]] = {0: [((), frozenset())]}
    for _ in range(20000):
        seq: tuple[str, ...] = ()
        used: set[str] = set()
        for kind, pieces, most in kinds:
            if kind == "place" and spots and rng.random() < 0.25:
                seq, used = seq + rng.choice(spots), used | {"spot"}
                continue
            for piece in rng.sample(pieces, rng.randint(0, most)):
                seq, used = seq + piece, used | {kind}
        chain = (seq, frozenset(used))
        if seq:
            table.setdefault(len(seq), [])
            if len(table[len(seq)]) < 48 and chain not in table[len(seq)]:
                table[len(seq)].append(chain)
    return table


Chain = tuple[tuple[str, ...], frozenset[str]]  # words, kinds of piece used


class Filler:
    """Filler of an exact word count for one caption, never repeating a piece in it, and with
    at most :data:`PER_CAPTION` spots, times and clauses over all its fillers.

    ``times``: whether time adverbials may appear (not when the caption's context already
    names a time of day)."""

    def __init__(self, rng: random.Random, *, times: bool = True) -> None:
        self.rng = rng
        self.used: set[str] = set()
        self.kinds: Counter[str] = Counter()
        if not times:
            self.kinds["time"] = PER_CAPTION["time"]

    def __call__(self, n: int, *, place: bool = False) -> list[str]:
        """``n`` words; ``place``: places only where some fit (after a noun)."""
        if n < 0:
            raise ValueError("negative filler length")
        if n == 0:
            return []
        full = frozenset(k for k, most in PER_CAPTION.items() if self.kinds[k] >= most)
        tables = [
            *([_fillers(True, full)] if place else []),
            _fillers(False, full),
            # nothing else has n words: a third spot, then a third clause, a second time last
            _fillers(False, full - {"spot"}),
            _fillers(False, full - {"spot", "clause"}),
            _fillers(False),
        ]
        candidates = [t[n] for t in tables if t.get(n)]
        # the first table with a chain whose pieces the caption has not used yet; else reuse
        fresh = next(
            (
                f
                for f in (
                    [o for o in c if self.used.isdisjoint(_content_words(o[0]))] for c in candidates
                )
                if f
            ),
            candidates[0] if candidates else [],
        )
        if fresh:
            words_, kinds = self.rng.choice(fresh)
            self.used |= _content_words(words_)
            self.kinds.update(kinds)
            return list(words_)
        half = n // 2  # longer than any chain: join two
        return self(half, place=place) + self(n - half, place=place)


@cache
def _content_words(seq: tuple[str, ...]) -> frozenset[str]:
    """A filler's words that must not repeat in one caption ("the", "a", "on", ... may)."""
    return frozenset(w for w in seq if w not in _FUNCTION_WORDS)


_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "on",
        "in",
        "at",
        "by",
        "to",
        "as",
        "for",
        "all",
        "and",
        "out",
        "up",
        "had",
    ]
)


@cache
def grammar_words() -> frozenset[str]:
    """Every word the grammar itself may emit (kept out of the attribute and object pools)."""
    from bindkit.synth.text import words

    text = " ".join(
        [
            *PIECES,
            *VERBS,
            *PREPOSITIONS,
            *COPULAS,
            *(" ".join(v) for v in OPENERS.values()),
            *(p for places in SCENE_PREPOSITIONS.values() for p in places),
            *read_lines("scenes.txt"),
            *read_lines("times.txt"),
            *read_lines("weather.txt"),
            *read_lines("registers.txt"),
            "a an the and there was were which that former latter first second "
            "respectively while in on at of one other its next to right",
        ]
    )
    return frozenset(words(text))


@cache
def object_pool() -> tuple[str, ...]:
    """Template nouns, without grammar words and plural-only nouns ("a pliers")."""
    from bindkit.synth.example_rules import plural_only

    nouns = " ".join(read_lines("template_objects.txt")).split()
    return tuple(n for n in nouns if n not in grammar_words() and n not in plural_only())


def _article(word: str) -> str:
    return indefinite_article(word)


class TemplateBackend:
    """Builds a candidate example for a plan; deterministic given the plan's attempt and seed."""

    name = "template"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def produce(self, plan: Plan) -> Example:
        rng = random.Random(f"{self.seed}/template/{plan.attempt}")
        c = plan.construction
        banned = set(plan.banned)
        avoid = set(plan.avoid)
        families = _usable_families()
        if banned:
            families = {f: [w for w in ws if w not in banned] for f, ws in families.items()}
            families = {f: ws for f, ws in families.items() if len(ws) >= 2}
        used: set[str] = set()

        def pick_object() -> str:
            pool = object_pool()
            for _ in range(20):  # rejection sampling: the pool is large, the exclusions few
                choice = rng.choice(pool)
                if choice not in banned and choice not in used and choice not in avoid:
                    break
            else:
                options = [o for o in pool if o not in banned and o not in used]
                choice = rng.choice([o for o in options if o not in avoid] or options)
            used.add(choice)
            return choice

        def pick_attribute(family: str | None = None) -> str:
            fam = family or rng.choice(sorted(families))
            options: list[str] = []
            if rng.random() < 0.6:  # mostly take the plan's least-used suggestions
                options = [
                    w for w in plan.suggestions.get(fam, []) if w in families[fam] and w not in used
                ]
            options = options or [w for w in families[fam] if w not in used]
            fresh = [w for w in options if w not in avoid] or options
            choice = rng.choice(fresh)
            used.add(choice)
            return choice

        objects = [pick_object() for _ in range(c.objects)]
        slots: dict[str, str] | None = None
        if c.family == "bundle":
            slot_names = rng.sample(sorted(families), 2)
            bindings = [(pick_attribute(s), o) for o in objects for s in slot_names]
            slots = {a: slot_names[i % 2] for i, (a, _) in enumerate(bindings)}
        else:
            bindings = [(pick_attribute(), o) for o in objects]
        distractors = [(pick_attribute(), pick_object()) for _ in range(plan.distractors)]
        fill = Filler(rng, times=plan.time is None)
        placed = _place_distractors(plan.type, distractors, rng)
        body = self._body(c.family, plan, rng, fill, bindings, objects, placed["gap"])
        placed["end"] += placed.pop("gap")  # those no gap could hold
        text, realised = self._frame(plan, rng, fill, body, placed)
        example = plan.candidate(self.name, bindings, text, slots=slots, distractors=distractors)
        # record what the caption really holds: a target it could not fit is not claimed
        example.targets.update(realised)
        return example

    # -- sentence bodies ----------------------------------------------------------------
    def _body(
        self,
        family: str,
        plan: Plan,
        rng: random.Random,
        fill: Filler,
        bindings: list[tuple[str, str]],
        objects: list[str],
        woven: list[tuple[str, str]],
    ) -> list[str]:
        """The core clause(s) as words (punctuation attached), with its main verb. Distractors
        in ``woven`` that a gap between core phrases takes are removed from it."""
        lo, hi = plan.distance_window
        # never overshoot the band: the distances may grow only by the room the band leaves
        room = plan.length_band[1] - minimum_words(plan.construction, plan.distance_window)
        room -= 4 * plan.distractors
        hi = max(lo, min(hi, lo + max(0, room) // (2 if len(objects) == 2 else 3)))
        attrs = {o: [a for a, x in bindings if x == o] for o in objects}
        if family in ("adjacent", "bundle"):
            return self._adjacent(rng, fill, lo, hi, [(attrs[o], o) for o in objects], woven)
        if family == "predicative":
            return self._predicative(rng, fill, lo, hi, [(attrs[o][0], o) for o in objects], woven)
        first, second = objects
        span = rng.randint(lo, hi)
        if plan.type == "deferred_bind_respective":
            # "The cup and the pan by the window were red and blue, respectively."
            return [
                "the",
                first,
                "and",
                "the",
                second,
                *fill(span - 1, place=True),
                "were",
                attrs[first][0],
                "and",
                attrs[second][0] + ",",
                "respectively",
            ]
        # "There were a cup and a pan by the window. The former was red, and the latter blue."
        names = ("former", "latter") if rng.random() < 0.5 else ("first", "second")
        refs = [
            ("the", names[0], "was", attrs[first][0]),
            ("the", names[1], "was", attrs[second][0]),
        ]
        if plan.order == "second_first":
            refs.reverse()
        opening = ["there", "were", _article(first), first, "and", _article(second), second]
        opening += fill(max(0, span - 3), place=True)
        opening[-1] += "."
        return [*opening, *refs[0][:-1], refs[0][-1] + ",", "and", *refs[1]]

    def _adjacent(
        self,
        rng: random.Random,
        fill: Filler,
        lo: int,
        hi: int,
        phrases: list[tuple[list[str], str]],
        woven: list[tuple[str, str]] | None = None,
    ) -> list[str]:
        """Core phrases joined by gaps of exact word counts (the binding distance is the
        smallest gap): 1 word ", a" (inside a list of three), 2 words "and a", 3 or more a
        verb, filler and a preposition ("sat on the shelf beside a"); a verb gap of 7 or more
        words may hold a distractor of ``woven`` ("sat behind a zesty kazoo near a"). Gaps grow
        along the caption, so lists come first and the verb follows them; the last gap has at
        least 2 words, so every noun phrase keeps its article ("and a blue pan")."""
        woven = woven if woven is not None else []
        if len(phrases) == 3:
            gaps = [rng.randint(max(lo, 1), max(hi, 1))]
            gaps.append(rng.randint(max(gaps[0], 2), max(hi, gaps[0], 2)))
        else:
            gaps = [rng.randint(max(lo, 2), max(hi, 2))]
        attributes, obj = phrases[0]
        out = [_article(attributes[0]), *attributes, obj]
        has_verb = False
        for i, gap in enumerate(gaps):
            attributes, obj = phrases[i + 1]
            article = _article(attributes[0])
            last = i == len(gaps) - 1
            if gap == 1 and last:
                joint = ["and"]
            elif gap == 1:  # "a red cup, a blue pan and ...": the comma is no word
                out[-1] += ","
                joint = [article]
            elif gap == 2 and not last:  # "a red cup, plus a blue pan and a green mug"
                out[-1] += ","
                joint = ["plus", article]
            elif gap == 2:
                joint = ["and", article]
            elif not has_verb:
                has_verb = True
                preposition, other = rng.sample(PREPOSITIONS, 2)
                inner: list[str] = []
                if woven and gap >= 7:
                    da, do = woven.pop(0)
                    inner = [other, _article(da), da, do]
                room = gap - 3 - len(inner)
                lead = _two_word_preposition(room, preposition)  # no lone filler word
                joint = [rng.choice(VERBS), *inner, *fill(room - len(lead) + 1), *lead, article]
            else:
                room = gap - 3
                lead = _two_word_preposition(room, rng.choice(PREPOSITIONS))
                middle = fill(room - len(lead) + 1, place=True)
                if middle:
                    middle[-1] += ","
                joint = [*middle, "and", *lead, article]
            out += [*joint, *attributes, obj]
        if not has_verb:
            out.append(rng.choice(VERBS))
        return out

    def _predicative(
        self,
        rng: random.Random,
        fill: Filler,
        lo: int,
        hi: int,
        pairs: list[tuple[str, str]],
        woven: list[tuple[str, str]] | None = None,
    ) -> list[str]:
        """Clauses like "the cup by the window looked red, and the pan, which stood on the
        shelf, was blue"; a distractor of ``woven`` may close the first clause ("looked red
        beside a zesty kazoo, and ...")."""
        woven = woven if woven is not None else []
        out: list[str] = []
        for i, (attribute, obj) in enumerate(pairs):
            distance = rng.randint(lo, hi)
            copula = rng.choice([c for c in COPULAS if len(c.split()) <= distance]).split()
            if distance - len(copula) == 1:  # a two-word copula, not one lone filler word
                copula = rng.choice([c for c in COPULAS if len(c.split()) == 2]).split()
            room = distance - len(copula)
            if room >= 3 and rng.random() < 0.5:
                clause = ["which", rng.choice(VERBS), *fill(room - 2)]
                middle = [obj + ",", *clause[:-1], clause[-1] + ","]
            else:
                middle = [obj, *fill(room, place=True)]
            if i:
                out[-1] += ","
                out.append("and")
            out += ["the", *middle, *copula, attribute]
            if woven and not i:
                da, do = woven.pop(0)
                out += [rng.choice(PREPOSITIONS), _article(da), da, do]
        return out

    def _frame(
        self,
        plan: Plan,
        rng: random.Random,
        fill: Filler,
        body: list[str],
        placed: dict[str, list[tuple[str, str]]],
    ) -> tuple[str, dict[str, str | None]]:
        """Weave in the distractors (a fronted phrase, a list at the end of the clause, a
        closing sentence), then as much register, context and opener as the target length
        allows, and pad with filler to the target. Returns the caption and the targets it
        realised: a register, context or opener that did not fit is not claimed."""
        front = (
            [_PREPOSITION_TITLE[rng.randrange(len(_PREPOSITION_TITLE))]] if placed["front"] else []
        )
        for a, o in placed["front"]:
            front += [_article(a), a, o]
        if front:
            front[-1] += ","
        extra = _listed(placed["end"], lead=["near"]) if placed["end"] else []
        tail = [*_listed(placed["tail"]), "stood", "nearby."] if placed["tail"] else []
        target = rng.randint(*plan.length_band)
        budget = target - len(body) - len(front) - len(extra) - len(tail)
        realised: dict[str, str | None] = {"register": None, "context": None, "opener": None}
        opener, join = OPENERS.get(plan.opener, ("", ""))
        opening = opener.split() + ([join] if join == "that" else [])
        starts_itself = plan.opener == "start with the first object" or (
            plan.opener == 'start with "There"' and body[0] == "there"
        )
        # the register: a lead-in ("According to the field notebook,") or a closing phrase
        # (", as the field notebook records"); the closing one when an opener wants the start
        lead: list[str] = []
        close: list[str] = []
        register = plan.register.split()
        at_start = not (opener or starts_itself) and rng.random() < 0.5
        frames = _REGISTER_LEADS if at_start else _REGISTER_CLOSES
        before, after = frames[rng.randrange(len(frames))]
        framed = [*before.split(), *register, *after.split()]
        if len(framed) <= budget:
            realised["register"] = plan.register
            budget -= len(framed)
            if at_start:
                lead = framed
                lead[-1] += ","
            else:
                close = framed
        place: list[str] = []
        for words_, value in (
            (scene_phrase(plan.context), plan.context),
            (scene_phrase(plan.scene), plan.scene),
        ):
            if len(words_) <= budget:
                place, realised["context"] = words_, value
                budget -= len(words_)
                break
        if starts_itself and not (lead or front):
            realised["opener"] = plan.opener
        elif opener and not lead and len(opening) <= budget:
            realised["opener"] = plan.opener
            budget -= len(opening)
        else:
            opening = []
        pad = fill(budget) if budget > 0 else []
        if body[-1] == "respectively" and (pad or extra or place or close):
            body[-1] += ","
        clause = [*body, *pad, *extra, *place]
        if close:
            clause[-1] += ","
            clause += close
        sentence = " ".join([*lead, *front, *clause])
        if opening:
            sentence = " ".join(opening) + ("," if join == "," else "") + " " + sentence
        text = sentence[0].upper() + sentence[1:] + "."
        if tail:
            text += " " + " ".join(tail)
        return _capitalise_sentences(text), realised


# a fronted distractor: "Beside a zesty kazoo, a red cup ..."
_PREPOSITION_TITLE = ("beside", "next to", "near", "behind", "opposite")
# how a caption names its register (the seed: "32 writing registers (e.g., news caption, field
# notebook, auction listing, maintenance log)"): (words before, words after) the register
_REGISTER_LEADS = (("according to the", ""), ("in the", ""), ("as the", "puts it"))
_REGISTER_CLOSES = (("as the", "records"), ("according to the", ""), ("or so the", "says"))


def _two_word_preposition(room: int, preposition: str) -> list[str]:
    """ "next to" where one filler word would be left over (a lone "upstairs" or "today"
    reads worse than a longer preposition), else ``preposition``."""
    return ["next", "to"] if room == 1 else [preposition]


def _listed(pairs: list[tuple[str, str]], lead: list[str] | None = None) -> list[str]:
    """ "a zesty kazoo, a red pan and a blue mug" (with ``lead`` words before it)."""
    out = list(lead or [])
    for i, (a, o) in enumerate(pairs):
        if i and i == len(pairs) - 1:
            out.append("and")
        elif i:
            out[-1] += ","
        out += [_article(a), a, o]
    return out


def _place_distractors(
    kind: str, distractors: list[tuple[str, str]], rng: random.Random
) -> dict[str, list[tuple[str, str]]]:
    """Where each distractor goes: ``gap`` (pair_swap: inside the verb gap; predicative: closing
    the first clause), ``front`` (one
    fronted phrase), ``end`` (a list closing the clause) or ``tail`` (a closing sentence).
    Anaphoric captions keep theirs after the back-references, so "the first" still means the
    first queried noun."""
    options = {
        "pair_swap": ("gap", "front", "end", "tail"),
        "predicative": ("gap", "front", "end", "tail"),
        "deferred_bind_anaphoric": ("end", "tail"),
    }.get(kind, ("front", "end", "tail"))
    placed: dict[str, list[tuple[str, str]]] = {"gap": [], "front": [], "end": [], "tail": []}
    for pair in distractors:
        where = rng.choice(options)
        if where == "front" and placed["front"]:
            where = "end"
        placed[where].append(pair)
    return placed


def _capitalise_sentences(text: str) -> str:
    """Upper-case the first letter after each sentence end inside the caption."""
    return re.sub(r"([.?]\s+)([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)


@cache
def _usable_families() -> dict[str, list[str]]:
    """Adjective families without the grammar's own words."""
    from bindkit.synth.controls import adjective_families

    families = {
        f: [w for w in ws if w not in grammar_words()] for f, ws in adjective_families().items()
    }
    return {f: ws for f, ws in families.items() if len(ws) >= 2}
