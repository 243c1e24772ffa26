"""The offline template backend: a small grammar per construction type, no LLM.

It honours the same plan as the LLM backend (length band, binding-distance window, distractors,
context, register, opener, avoid and ban lists, attribute suggestions) and its output goes
through the same validator. Filler phrases are chosen by exact word count, so distances and
lengths are hit by construction rather than by retrying.
"""

from __future__ import annotations

import random
import re
from functools import cache

from bindkit.saber.language import indefinite_article
from bindkit.synth.controls import minimum_words, read_lines
from bindkit.synth.diversity import Plan
from bindkit.synth.example import Example

# Filler pieces. Places read naturally after a noun ("the cup on the shelf") and after a verb;
# other adverbials only after a verb or at the end of a clause. None of their words may be a
# queried attribute or object (see grammar_words), and none may be an anaphor (first, second).
PLACES = [
    "nearby",
    "close by",
    "on the shelf",
    "by the window",
    "near the door",
    "under the stairs",
    "behind the counter",
    "beside the sink",
    "at the far end",
    "next to the wall",
    "on the top shelf",
    "in the back room",
    "along the ledge",
    "in plain view",
    "in the corner of the room",
]
ADVERBIALS = [
    "again",
    "today",
    "quietly",
    "as usual",
    "for now",
    "for a while",
    "all morning",
    "after lunch",
    "as the guests arrived",
    "while the staff watched",
    "after the last visitor left",
    "before anyone noticed",
]
PIECES = PLACES + ADVERBIALS
# Past-tense locative verbs: no subject-verb agreement to get wrong with one or more subjects.
VERBS = ["sat", "stood", "lay", "rested", "waited", "remained"]
PREPOSITIONS = ["beside", "near", "behind", "opposite"]
# Linking verbs of predicative captions (all listed in data/linking_words.txt).
COPULAS = ["was", "looked", "seemed", "appeared", "remained", "had become", "stayed"]
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
        "a food truck",
        "a gas station",
        "a harbor",
        "a playground",
        "a train station",
        "a post office",
        "a lighthouse",
    ),
}


def scene_phrase(context: str) -> list[str]:
    """ "in a garage at dusk", "on a rooftop during a party": a context as a place adverbial."""
    preposition = next(
        (p for p, places in SCENE_PREPOSITIONS.items() if context.startswith(places)), "in"
    )
    return [preposition, *context.split()]


@cache
def _fillers(places_only: bool) -> dict[int, list[tuple[str, ...]]]:
    """Chains of distinct pieces by total word count (a few per length); at most one
    one-word piece per chain ("today quietly" does not read)."""
    rng = random.Random(0)
    pieces = [tuple(p.split()) for p in (PLACES if places_only else PIECES)]
    table: dict[int, list[tuple[str, ...]]] = {0: [()]}
    for _ in range(4000):
        seq: tuple[str, ...] = ()
        short = 0
        for piece in rng.sample(pieces, rng.randint(1, 5)):
            short += len(piece) == 1
            if short > 1:
                break
            seq += piece
            table.setdefault(len(seq), [])
            if len(table[len(seq)]) < 12 and seq not in table[len(seq)]:
                table[len(seq)].append(seq)
    return table


class Filler:
    """Filler of an exact word count for one caption, never repeating a piece in it."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def __call__(self, n: int, *, place: bool = False) -> list[str]:
        """``n`` words; ``place``: places only where some fit (after a noun)."""
        if n < 0:
            raise ValueError("negative filler length")
        if n == 0:
            return []
        options = (_fillers(True).get(n) if place else None) or _fillers(False).get(n, [])
        fresh = [o for o in options if self.used.isdisjoint(_content_words(o))]
        if fresh or options:
            choice = self.rng.choice(fresh or options)
            self.used |= _content_words(choice)
            return list(choice)
        half = n // 2  # longer than any chain: join two
        return self(half, place=place) + self(n - half, place=place)


@cache
def _content_words(seq: tuple[str, ...]) -> frozenset[str]:
    """A filler's words that must not repeat in one caption ("the", "a", "on", ... may)."""
    return frozenset(w for w in seq if len(w) > 3)


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
    from bindkit.synth.validate import plural_only

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
        fill = Filler(rng)
        body = self._body(c.family, plan, rng, fill, bindings, objects)
        text, realised = self._frame(plan, rng, fill, body, distractors)
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
    ) -> list[str]:
        """The core clause(s) as words (punctuation attached), with its main verb."""
        lo, hi = plan.distance_window
        # never overshoot the band: the distances may grow only by the room the band leaves
        room = plan.length_band[1] - minimum_words(plan.construction, plan.distance_window)
        room -= 4 * plan.distractors
        hi = max(lo, min(hi, lo + max(0, room) // (2 if len(objects) == 2 else 3)))
        attrs = {o: [a for a, x in bindings if x == o] for o in objects}
        if family in ("adjacent", "bundle"):
            return self._adjacent(rng, fill, lo, hi, [(attrs[o], o) for o in objects])
        if family == "predicative":
            return self._predicative(rng, fill, lo, hi, [(attrs[o][0], o) for o in objects])
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
    ) -> list[str]:
        """Core phrases joined by gaps of exact word counts (the binding distance is the
        smallest gap): 1 word "and" ("a red cup and blue pan"), 2 words "and a", 3 or more a
        verb, filler and a preposition ("sat on the shelf beside a"). Gaps grow along the
        caption, so lists come first and the verb follows them."""
        gaps = [rng.randint(max(lo, 1), max(hi, 1))]
        if len(phrases) == 3:
            gaps.append(rng.randint(gaps[0], max(hi, gaps[0])))
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
            elif gap == 2:
                joint = ["and", article]
            elif not has_verb:
                has_verb = True
                preposition = rng.choice(PREPOSITIONS)
                joint = [rng.choice(VERBS), *fill(gap - 3), preposition, article]
            else:
                middle = fill(gap - 3, place=True)
                if middle:
                    middle[-1] += ","
                joint = [*middle, "and", rng.choice(PREPOSITIONS), article]
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
    ) -> list[str]:
        """Clauses like "the cup by the window looked red, and the pan, which stood on the
        shelf, was blue"."""
        out: list[str] = []
        for i, (attribute, obj) in enumerate(pairs):
            distance = rng.randint(lo, hi)
            copula = rng.choice([c for c in COPULAS if len(c.split()) <= distance]).split()
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
        return out

    def _frame(
        self,
        plan: Plan,
        rng: random.Random,
        fill: Filler,
        body: list[str],
        distractors: list[tuple[str, str]],
    ) -> tuple[str, dict[str, str | None]]:
        """Add distractors, then as much context and opener as the target length allows, and
        pad with filler to the target. Returns the caption and the targets it realised (the
        template writes no register: it never claims one)."""
        extra: list[str] = []
        if distractors:
            phrases = [[_article(a), a, o] for a, o in distractors]
            extra = ["near"]
            for i, phrase in enumerate(phrases):
                if i and i == len(phrases) - 1:
                    extra.append("and")
                elif i:
                    extra[-1] += ","
                extra += phrase
        target = rng.randint(*plan.length_band)
        budget = target - len(body) - len(extra)
        context = scene_phrase(plan.context)
        scene = scene_phrase(plan.scene)
        realised: dict[str, str | None] = {"register": None, "context": None, "opener": None}
        place: list[str] = []
        for words_, value in ((context, plan.context), (scene, plan.scene)):
            if len(words_) <= budget:
                place, realised["context"] = words_, value
                budget -= len(words_)
                break
        opener, join = OPENERS.get(plan.opener, ("", ""))
        opening = opener.split() + ([join] if join == "that" else [])
        starts_itself = plan.opener == "start with the first object" or (
            plan.opener == 'start with "There"' and body[0] == "there"
        )
        if starts_itself:
            realised["opener"] = plan.opener
        elif opener and len(opening) <= budget:
            realised["opener"] = plan.opener
            budget -= len(opening)
        else:
            opening = []
        pad = fill(budget) if budget > 0 else []
        if body[-1] == "respectively" and (pad or extra or place):
            body[-1] += ","
        sentence = " ".join([*body, *pad, *extra, *place])
        if opening:
            lead = " ".join(opening) + ("," if join == "," else "")
            sentence = f"{lead} {sentence}"
        return _capitalise_sentences(sentence[0].upper() + sentence[1:]) + ".", realised


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
