"""Fixed, hashed dev/test halves of an evaluation set: select on one, report the other.

Every item of a set that is used to choose anything (a recipe, a learning rate, a LiNeS α) gets a
half from the SHA-256 of its **key** under a fixed salt: ``dev`` or ``test``, about half each,
the same on every machine and independent of file order. The key is what must not straddle the
two halves: SugarCrepe and SugarCrepe++ key an item by its COCO image (so an image, every caption
of it and its rewrites in both benchmarks, lies in one half), a SABER MCQ by its nested chain (a
chain's MCQs share bindings) or its id, an STS pair by its two sentences, a triplet by its
positive. A task that has halves implements :meth:`bindkit.tasks.base.Task.halve` with
:func:`half_of` and :func:`halved`; ``bindkit eval --half``, ``evaluate(half=...)`` and a panel
entry's ``half`` reach it, and selection code refuses a test half (:func:`check_selection`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Literal, TypeVar, cast

from bindkit.errors import BindkitError

Half = Literal["dev", "test"]
HALVES: tuple[Half, ...] = ("dev", "test")
#: changing it reassigns every item: never, once tables have been reported
SALT = "bindkit/halves/v1"

T = TypeVar("T")
D = TypeVar("D")  # a bindkit.tasks.base.Dataset (not imported: base imports this module)


def normalise_key(key: str) -> str:
    """Case and runs of white space do not move an item to the other half."""
    return " ".join(key.lower().split())


def half_of(key: str) -> Half:
    """``"dev"`` or ``"test"`` for an item's key: the parity of the first byte of
    SHA-256(salt, NUL, normalised key).

    Example:
        >>> half_of("000000565045.jpg") == half_of("  000000565045.JPG ")
        True
    """
    digest = hashlib.sha256(f"{SALT}\0{normalise_key(key)}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "test"


def check_half(half: str, where: str = "--half") -> Half:
    """``half`` if it is ``dev`` or ``test``, else one line naming ``where``."""
    if half not in HALVES:
        raise BindkitError(f"{where} {half!r}: give dev or test (the hashed halves of the set)")
    return "dev" if half == "dev" else "test"


def keep(items: Sequence[T], key: Callable[[T], str], half: Half) -> list[T]:
    """The items of ``half``, in their order."""
    return [item for item in items if half_of(key(item)) == half]


def halved(dataset: D, payload: Any, half: Half) -> D:
    """``dataset`` restricted to ``half``: its payload replaced, and a name, source and digest of
    its own (results of the two halves and of the whole set never share a file or a reuse)."""
    whole: Any = dataset  # a Dataset: typed by D, read by its fields
    digest = hashlib.sha256(f"{whole.sha256}\nhalf={half}\n{SALT}".encode()).hexdigest()
    result: D = replace(
        whole,
        name=f"{whole.name}.{half}",
        source=f"{whole.source}#half={half}",
        sha256=digest,
        payload=payload,
    )
    return result


def check_selection(
    entries: Iterable[Any], where: str, *, reported: Iterable[Any] = (), reported_as: str = ""
) -> None:
    """Refuse a selection panel (a sweep's panel, a search's dev panel) that reads a test half,
    or data that a reported table (``reported``: its entries, named ``reported_as``) reads too
    unless selection takes the dev half and the table the test half: one line naming the entry.

    Entries are :class:`bindkit.recipes.panel.PanelEntry`-like (``name``, ``task``, ``data``,
    ``half``); two entries read the same data when task and data (the path resolved) agree.
    """
    table = list(reported)
    for index, entry in enumerate(entries):
        label = f"{where}[{index}] ({entry.name})"
        if entry.half == "test":
            raise BindkitError(
                f"{label}: reads the test half of {entry.task}; selection may read only dev "
                'halves (half = "dev"); the test half is for the reported table'
            )
        for shown in table:
            if _same_data(entry, shown) and not (entry.half == "dev" and shown.half == "test"):
                raise BindkitError(
                    f"{label}: reads the {entry.task} data that {reported_as} {shown.name!r} "
                    'reports; select on its dev half (half = "dev") and report its test half '
                    '(half = "test")'
                )


def _same_data(a: Any, b: Any) -> bool:
    from pathlib import Path

    if a.task != b.task:
        return False
    if a.task == "saber" and {a.data, b.data} <= {None, "{saber}"}:
        return True  # a recipe's {saber} is the generator's seed 0: the default set's MCQs
    if a.data is None or b.data is None or a.data.startswith("{") or b.data.startswith("{"):
        return bool(a.data == b.data)
    return Path(a.data).resolve() == Path(b.data).resolve()


def halve_by_image(dataset: D, half: str) -> D:
    """For data whose payload has ``items: {subset: [row with "filename"]}`` (SugarCrepe,
    SugarCrepe++): each subset's rows of the images in ``half``."""
    chosen = check_half(half)
    payload = cast(Any, dataset).payload  # D is a Dataset
    items = {
        subset: keep(rows, lambda r: str(r["filename"]), chosen)
        for subset, rows in payload.items.items()
    }
    return halved(dataset, replace(payload, items=items), chosen)
