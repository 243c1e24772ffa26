"""The offline template backend: a small grammar per construction type, no LLM.

It honours the same plan as the LLM backend (length band, binding-distance window, distractors,
context, register, opener, avoid and ban lists, attribute suggestions) and its output goes
through the same validator. Filler phrases are chosen by exact word count, so distances and
lengths are hit by construction rather than by retrying.
"""

from __future__ import annotations

import random
from functools import cache

from bindkit.saber.language import indefinite_article
from bindkit.synth.controls import minimum_words, read_lines
from bindkit.synth.diversity import Plan
from bindkit.synth.example import Example

# Filler pieces: word sequences that read naturally when chained. None of their words may be a
# queried attribute or object (see _grammar_words).
PIECES = [
    "resting",
    "nearby",
    "again",
    "today",
    "quietly",
    "untouched",
    "as usual",
    "for now",
    "on the shelf",
    "by the window",
    "near the door",
    "under the stairs",
    "for a while",
    "all morning",
    "after lunch",
    "in plain view",
    "behind the counter",
    "beside the sink",
    "at the far end",
    "next to the wall",
    "on the top shelf",
    "in the back room",
    "where someone had left",
    "that nobody had moved",
    "as the guests arrived",
    "while the staff watched",
    "on the second table",
    "in the corner of the room",
    "after the last visitor left",
    "before anyone noticed",
]
CONNECTORS = {
    1: ["and"],
    2: ["and also", "next to", "beside"],
    3: ["and right beside", "sat next to"],
}
COPULAS = ["was", "looked", "seemed", "had become", "had turned", "had grown", "stayed"]
OPENERS = {
    "start with a place": "Over here",
    "start with a time": "That day",
    "start with the first object": "",
    "start with a person doing something": "Someone pointed out that",
    "start with a sound": "Amid the chatter",
    "start with a smell": "Amid the scent of coffee",
    "start with a number": "Two things stood out",
    "start with a question": "Guess what was found",
    "start with a quotation": "Look here, said someone",
    "start with a verb in the imperative": "Note that",
    "start with a subordinate clause": "When the doors opened",
    "start with an adverb": "Curiously",
    "start with the weather": "Despite the weather",
    "start with a name": "Sam noted that",
    'start with "There"': "There, plainly,",
    "start with a prepositional phrase": "Near the entrance",
}


@cache
def _fillers() -> dict[int, list[tuple[str, ...]]]:
    """Sequences of pieces by total word count, 0..30 (a few per length)."""
    rng = random.Random(0)
    pieces = [tuple(p.split()) for p in PIECES]
    table: dict[int, list[tuple[str, ...]]] = {0: [()]}
    for _ in range(4000):
        seq: tuple[str, ...] = ()
        for piece in rng.sample(pieces, rng.randint(1, 5)):
            seq += piece
            table.setdefault(len(seq), [])
            if len(table[len(seq)]) < 12 and seq not in table[len(seq)]:
                table[len(seq)].append(seq)
    return table


def filler(rng: random.Random, n: int) -> list[str]:
    if n < 0:
        raise ValueError("negative filler length")
    options = _fillers().get(n)
    if options:
        return list(rng.choice(options))
    # longer than any chain: join two
    half = n // 2
    return filler(rng, half) + filler(rng, n - half)


@cache
def grammar_words() -> frozenset[str]:
    """Every word the grammar itself may emit (kept out of the attribute and object pools)."""
    from bindkit.synth.text import words

    text = " ".join(
        [
            *PIECES,
            *[" ".join(v) for v in CONNECTORS.values()],
            *COPULAS,
            *OPENERS.values(),
            *read_lines("scenes.txt"),
            *read_lines("times.txt"),
            *read_lines("weather.txt"),
            *read_lines("registers.txt"),
            "a an the and there was were which that former latter first second "
            "respectively while in of one other its",
        ]
    )
    return frozenset(words(text))


@cache
def object_pool() -> tuple[str, ...]:
    nouns = " ".join(read_lines("template_objects.txt")).split()
    return tuple(n for n in nouns if n not in grammar_words())


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
        body = self._body(c.family, plan, rng, bindings, objects)
        text = self._frame(plan, rng, body, distractors)
        return plan.candidate(self.name, bindings, text, slots=slots, distractors=distractors)

    # -- sentence bodies ----------------------------------------------------------------
    def _body(
        self,
        family: str,
        plan: Plan,
        rng: random.Random,
        bindings: list[tuple[str, str]],
        objects: list[str],
    ) -> list[str]:
        lo, hi = plan.distance_window
        # never overshoot the band: the distances may grow only by the room the band leaves
        room = plan.length_band[1] - minimum_words(plan.construction, plan.distance_window)
        room -= 4 * plan.distractors
        hi = max(lo, min(hi, lo + max(0, room) // (2 if len(objects) == 2 else 3)))
        attrs = {o: [a for a, x in bindings if x == o] for o in objects}
        if family in ("adjacent", "bundle"):
            gaps = [rng.randint(max(lo, 1), max(hi, 1))]
            if len(objects) == 3:
                gaps.append(rng.randint(gaps[0], max(hi, gaps[0])))
                rng.shuffle(gaps)
            out: list[str] = []
            for i, o in enumerate(objects):
                if i == 0:
                    phrase = [*attrs[o], o]
                    out += [_article(phrase[0]), *phrase]
                    continue
                gap = gaps[i - 1]  # words between the previous object and this core phrase
                connector = (
                    rng.choice(CONNECTORS[min(3, max(1, gap - 1))]).split() if gap >= 2 else []
                )
                middle = filler(rng, gap - 1 - len(connector)) if gap >= 2 else []
                phrase = [*attrs[o], o]
                article = [_article(phrase[0])] if gap >= 1 else []
                if gap == 1:  # only the article between the phrases: "a red cup, a blue pan"
                    out[-1] += ","
                out += [*middle, *connector, *article, *phrase]
            return out
        if family == "predicative":
            out = []
            for i, o in enumerate(objects):
                distance = rng.randint(lo, hi)
                copula = rng.choice([c for c in COPULAS if len(c.split()) <= distance]).split()
                room = distance - len(copula)
                relative = (
                    ["which", "stood", *filler(rng, room - 2)] if room >= 3 else filler(rng, room)
                )
                if i:
                    out += ["and"]
                out += ["the", o, *relative, *copula, attrs[o][0]]
            return out
        first, second = objects
        span = rng.randint(lo, hi)
        if plan.type == "deferred_bind_respective":
            middle = filler(rng, span - 1)
            return [
                "the",
                first,
                "and",
                "the",
                second,
                *middle,
                "were",
                attrs[first][0],
                "and",
                attrs[second][0],
                "respectively",
            ]
        words_ = ("former", "latter") if rng.random() < 0.5 else ("first", "second")
        head = (
            ["the", words_[1], "was"] if plan.order == "second_first" else ["the", words_[0], "was"]
        )
        middle = filler(rng, max(0, span - len(head)))
        first_ref = ["the", words_[0], "was", attrs[first][0]]
        second_ref = ["the", words_[1], "was", attrs[second][0]]
        if plan.order == "second_first":
            first_ref, second_ref = second_ref, first_ref
        assignments = [*first_ref, "and", *second_ref]
        return [
            "there",
            "was",
            _article(first),
            first,
            "and",
            _article(second),
            second,
            *middle,
            *assignments,
        ]

    def _frame(
        self,
        plan: Plan,
        rng: random.Random,
        body: list[str],
        distractors: list[tuple[str, str]],
    ) -> str:
        """Add distractors, then as much context, opener and register as the target length
        allows, and pad with filler to the target."""
        extra: list[str] = []
        for a, o in distractors:
            extra += ["near", _article(a), a, o]
        target = rng.randint(*plan.length_band)
        budget = target - len(body) - len(extra)
        options = {
            "context": ["in", *plan.context.split()],
            "scene": ["in", *plan.scene.split()],
            "opener": [w.lower() for w in OPENERS.get(plan.opener, "").split()],
            "register": plan.register.split(),
        }
        chosen: dict[str, list[str]] = {}
        for key in ("context", "scene", "opener", "register"):
            if key == "scene" and "context" in chosen:
                continue
            if len(options[key]) <= budget:
                chosen[key] = options[key]
                budget -= len(options[key])
        pad = filler(rng, budget) if budget > 0 else []
        sentence = " ".join(
            [
                *chosen.get("opener", []),
                *body,
                *pad,
                *extra,
                *chosen.get("context", chosen.get("scene", [])),
            ]
        )
        sentence = sentence[0].upper() + sentence[1:] + "."
        if "register" in chosen:
            label = " ".join(chosen["register"])
            return f"{label[0].upper() + label[1:]}: {sentence}"
        return sentence


@cache
def _usable_families() -> dict[str, list[str]]:
    """Adjective families without the grammar's own words."""
    from bindkit.synth.controls import adjective_families

    families = {
        f: [w for w in ws if w not in grammar_words()] for f, ws in adjective_families().items()
    }
    return {f: ws for f, ws in families.items() if len(ws) >= 2}
