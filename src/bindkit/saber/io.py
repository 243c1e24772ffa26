"""The SABER file format: ``DIR/saber.jsonl`` (one MCQ per line) and ``DIR/manifest.json``.

One line of ``saber.jsonl``::

    {"id", "n", "kind": "independent"|"nested", "chain": null|str, "step": null|int,
     "query": ITEM, "candidates": [ITEM x 4], "realizations": {attribute: REALIZATION}}

    ITEM = {"id", "role", "bindings": [[attribute, object], ...], "text", "generation_text",
            "image_prompt", "flip": bool, "image": null | path relative to DIR}
    REALIZATION = {"text": "white and orange striped", "slots": {"color1": "white", ...}}

Candidates are written in the fixed role order of :data:`CANDIDATE_ROLES`; readers find a role by
each candidate's ``role`` (:func:`role_positions`), never by position. ``realizations`` holds
the one instantiated appearance of every attribute that occurs in the MCQ (reused by the query and
all candidates), so renderers and the validator need not parse generation texts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bindkit.errors import DataFormatError
from bindkit.saber.vocab import Realization

Role = Literal["query", "binding_preserving", "attribute_swap", "object_swap", "joint_swap"]
Kind = Literal["independent", "nested"]
ROLES: tuple[Role, ...] = (
    "query",
    "binding_preserving",
    "attribute_swap",
    "object_swap",
    "joint_swap",
)
CANDIDATE_ROLES: tuple[Role, ...] = ROLES[1:]
KINDS: tuple[Kind, ...] = ("independent", "nested")
SABER_FILE = "saber.jsonl"
MANIFEST_FILE = "manifest.json"
FORMAT_NAME = "saber"
FORMAT_VERSION = 1

Binding = tuple[str, str]  # (attribute, object)


@dataclass(frozen=True)
class Item:
    """A query or candidate: N attribute-object bindings in surface order and their renderings."""

    id: str
    role: Role
    bindings: tuple[Binding, ...]
    text: str
    generation_text: str
    image_prompt: str
    flip: bool
    image: str | None = None

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(a for a, _ in self.bindings)

    @property
    def objects(self) -> tuple[str, ...]:
        return tuple(o for _, o in self.bindings)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "bindings": [list(b) for b in self.bindings],
            "text": self.text,
            "generation_text": self.generation_text,
            "image_prompt": self.image_prompt,
            "flip": self.flip,
            "image": self.image,
        }


@dataclass(frozen=True)
class MCQ:
    """One multiple-choice question: a query and four candidates (:data:`CANDIDATE_ROLES` order)."""

    id: str
    n: int
    kind: Kind
    chain: str | None
    step: int | None
    query: Item
    candidates: tuple[Item, ...]
    realizations: Mapping[str, Realization]

    @property
    def items(self) -> tuple[Item, ...]:
        return (self.query, *self.candidates)

    def candidate(self, role: Role) -> Item:
        """The candidate whose ``role`` field is ``role`` (see :func:`role_positions`)."""
        return self.candidates[role_positions(self)[CANDIDATE_ROLES.index(role)]]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "n": self.n,
            "kind": self.kind,
            "chain": self.chain,
            "step": self.step,
            "query": self.query.to_json(),
            "candidates": [c.to_json() for c in self.candidates],
            "realizations": {k: v.to_json() for k, v in self.realizations.items()},
        }


def role_positions(mcq: MCQ) -> tuple[int, ...]:
    """Where each of :data:`CANDIDATE_ROLES` sits among ``mcq.candidates``, read from each
    candidate's ``role`` field, so a file with its candidates in another order still scores each
    role as itself.

    Raises:
        DataFormatError: the query's role is not ``query`` or the candidates are not one of each
            candidate role; the message names the MCQ.
    """
    roles = [c.role for c in mcq.candidates]
    if mcq.query.role != "query" or sorted(roles) != sorted(CANDIDATE_ROLES):
        raise DataFormatError(
            f"MCQ {mcq.id!r}: query role {mcq.query.role!r}, candidate roles {roles}; a query "
            f"needs role 'query' and one candidate of each of {', '.join(CANDIDATE_ROLES)}; "
            "regenerate the set (`bindkit saber validate DIR` lists every violation)"
        )
    return tuple(roles.index(role) for role in CANDIDATE_ROLES)


@dataclass(frozen=True)
class SaberSet:
    """A loaded SABER directory."""

    directory: Path
    mcqs: tuple[MCQ, ...]
    manifest: Mapping[str, Any] | None

    def image_path(self, item: Item) -> Path | None:
        return None if item.image is None else self.directory / item.image


def _field(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise DataFormatError(f"{where}: missing field {key!r}")
    value = obj[key]
    # bool is an int subclass: never accept it where an int is expected
    if isinstance(value, bool) and kind is int:
        raise DataFormatError(f"{where}: field {key!r} must be int, got bool")
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise DataFormatError(
            f"{where}: field {key!r} must be {expected}, got {type(value).__name__}"
        )
    return value


def item_from_json(obj: Any, where: str) -> Item:
    """Parse one ITEM object; raises :class:`DataFormatError` naming ``where`` and the field."""
    if not isinstance(obj, dict):
        raise DataFormatError(f"{where}: an item must be a JSON object")
    role = _field(obj, "role", str, where)
    if role not in ROLES:
        raise DataFormatError(f"{where}: unknown role {role!r}; use one of {', '.join(ROLES)}")
    raw = _field(obj, "bindings", list, where)
    bindings: list[Binding] = []
    for pair in raw:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(x, str) and x for x in pair)
        ):
            raise DataFormatError(
                f"{where}: every binding must be [attribute, object] (two non-empty strings), "
                f"got {pair!r}"
            )
        bindings.append((pair[0], pair[1]))
    image = obj.get("image")
    if image is not None and not isinstance(image, str):
        raise DataFormatError(f"{where}: field 'image' must be null or a relative path string")
    return Item(
        id=_field(obj, "id", str, where),
        role=role,
        bindings=tuple(bindings),
        text=_field(obj, "text", str, where),
        generation_text=_field(obj, "generation_text", str, where),
        image_prompt=_field(obj, "image_prompt", str, where),
        flip=_field(obj, "flip", bool, where),
        image=image,
    )


def mcq_from_json(obj: Any, where: str) -> MCQ:
    """Parse one line's object; raises :class:`DataFormatError` naming ``where`` and the field."""
    if not isinstance(obj, dict):
        raise DataFormatError(f"{where}: a line must be a JSON object")
    kind = _field(obj, "kind", str, where)
    if kind not in KINDS:
        raise DataFormatError(f"{where}: unknown kind {kind!r}; use independent or nested")
    chain = obj.get("chain")
    step = obj.get("step")
    if "chain" not in obj or (chain is not None and not isinstance(chain, str)):
        raise DataFormatError(f"{where}: field 'chain' must be null or a string")
    step_ok = step is None or (isinstance(step, int) and not isinstance(step, bool))
    if "step" not in obj or not step_ok:
        raise DataFormatError(f"{where}: field 'step' must be null or an integer")
    candidates = _field(obj, "candidates", list, where)
    if len(candidates) != len(CANDIDATE_ROLES):
        raise DataFormatError(
            f"{where}: 'candidates' must hold {len(CANDIDATE_ROLES)} items, got {len(candidates)}"
        )
    raw_real = _field(obj, "realizations", dict, where)
    realizations: dict[str, Realization] = {}
    for attribute, value in raw_real.items():
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("text"), str)
            or not isinstance(value.get("slots", {}), dict)
            or not all(isinstance(v, str) for v in value.get("slots", {}).values())
        ):
            raise DataFormatError(
                f"{where}: realizations[{attribute!r}] must be "
                '{"text": str, "slots": {slot: str}}'
            )
        realizations[attribute] = Realization(value["text"], dict(value.get("slots", {})))
    return MCQ(
        id=_field(obj, "id", str, where),
        n=_field(obj, "n", int, where),
        kind=kind,
        chain=chain,
        step=step,
        query=item_from_json(_field(obj, "query", dict, where), f"{where} query"),
        candidates=tuple(
            item_from_json(c, f"{where} candidate {i + 1}") for i, c in enumerate(candidates)
        ),
        realizations=realizations,
    )


def scan_lines(path: Path) -> Iterator[tuple[int, Any, str | None]]:
    """Yield ``(line number, parsed JSON or None, error or None)`` for each non-empty line.

    A corrupt line (bad JSON, bytes that are not UTF-8, or a ``\\uD800``-style escape that
    decodes to a lone surrogate no encoder accepts) yields its error message instead of stopping,
    so a validator can report every bad line in one pass.
    """
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield lineno, None, f"not UTF-8 text (byte {exc.start + 1}: {exc.reason})"
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                yield lineno, None, f"corrupt JSON ({exc.msg} at column {exc.colno})"
                continue
            if _SURROGATE_ESCAPE.search(line) and not _encodable(obj):
                yield lineno, None, "a \\u escape encodes a lone surrogate, which is not text"
                continue
            yield lineno, obj, None


# only a line with such an escape can hold a lone surrogate; check those lines in full
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _encodable(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def iter_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line number, parsed JSON)`` for each non-empty line of a JSONL file.

    Raises:
        DataFormatError: on a line that is not valid JSON, naming file and line.
    """
    for lineno, obj, error in scan_lines(path):
        if error is not None:
            raise DataFormatError(f"{path}:{lineno}: {error}; regenerate the file or fix that line")
        yield lineno, obj


def saber_file(directory: str | Path) -> Path:
    path = Path(directory) / SABER_FILE
    if not path.is_file():
        raise DataFormatError(
            f"{path}: not found; point to a directory made by `bindkit saber generate`"
        )
    return path


def read_manifest(directory: str | Path) -> dict[str, Any] | None:
    """The directory's manifest, or None when it has none."""
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{path}: corrupt JSON ({exc}); regenerate the directory") from exc
    if not isinstance(manifest, dict):
        raise DataFormatError(f"{path}: must hold a JSON object")
    return manifest


def read_saber(directory: str | Path) -> SaberSet:
    """Load a SABER directory (``saber.jsonl`` and, if present, ``manifest.json``).

    Raises:
        DataFormatError: the file is missing, or a line is corrupt or breaks the schema; the
            message names the file and line. Use :func:`bindkit.saber.validate.validate_saber`
            to check the benchmark's rules as well.
    """
    path = saber_file(directory)
    mcqs = tuple(mcq_from_json(obj, f"{path}:{lineno}") for lineno, obj in iter_lines(path))
    return SaberSet(Path(directory), mcqs, read_manifest(directory))


IMAGES_DIR = "images"


def drawn_for_sha256(item: Item, mcq: MCQ) -> str:
    """Hash of what an item's image must show: its prompt, bindings, the realisations of its
    attributes and its flip. An image recorded with another hash was drawn for other data."""
    from bindkit._io import canonical_json, sha256_bytes

    known = mcq.realizations
    realizations = {a: known[a].to_json() for a in item.attributes if a in known}
    payload = {
        "image_prompt": item.image_prompt,
        "bindings": [list(b) for b in item.bindings],
        "realizations": realizations,
        "flip": item.flip,
    }
    return sha256_bytes(canonical_json(payload).encode())


def image_file_digests(directory: str | Path, mcqs: Sequence[MCQ]) -> dict[str, str]:
    """The sha256 of each image file the items point to, by item id, in item order.

    Raises:
        DataFormatError: an item points to a file that does not exist.
    """
    from bindkit._io import sha256_file

    root = Path(directory)
    out: dict[str, str] = {}
    for mcq in mcqs:
        for item in mcq.items:
            if item.image is None:
                continue
            path = root / item.image
            if not path.is_file():
                raise DataFormatError(
                    f"{path}: image of {item.id} not found; render it again "
                    "(`bindkit saber render DIR`)"
                )
            out[item.id] = sha256_file(path)
    return out


def image_set_sha256(directory: str | Path, mcqs: Sequence[MCQ]) -> tuple[int, str]:
    """Count and digest of the images the items point to: sha256 over ``id, path, file sha256``
    lines in item order, so renaming, replacing or re-pointing any image changes it."""
    return _set_digest(image_file_digests(directory, mcqs), mcqs)


def _set_digest(files: Mapping[str, str], mcqs: Sequence[MCQ]) -> tuple[int, str]:
    paths = {item.id: item.image for mcq in mcqs for item in mcq.items}
    digest = hashlib.sha256()
    for item_id, file_digest in files.items():
        digest.update(f"{item_id}\t{paths[item_id]}\t{file_digest}\n".encode())
    return len(files), digest.hexdigest()


def counts(mcqs: Sequence[MCQ]) -> dict[str, Any]:
    """Summary counts recorded in the manifest and printed by the CLI."""
    by_n: dict[str, int] = {}
    for mcq in mcqs:
        by_n[str(mcq.n)] = by_n.get(str(mcq.n), 0) + 1
    return {
        "mcqs": len(mcqs),
        "candidates": sum(len(m.candidates) for m in mcqs),
        "items": sum(len(m.items) for m in mcqs),
        "independent": sum(m.kind == "independent" for m in mcqs),
        "nested": sum(m.kind == "nested" for m in mcqs),
        "chains": len({m.chain for m in mcqs if m.chain is not None}),
        "by_n": by_n,
    }


def write_saber(
    directory: str | Path,
    mcqs: Sequence[MCQ],
    manifest_extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Rewrite ``DIR/saber.jsonl`` and refresh ``DIR/manifest.json`` so the directory validates.

    The existing manifest (if any) is kept; its ``counts`` and ``files`` are recomputed from
    ``mcqs``, and the keys of ``manifest_extra`` are set on top (e.g. ``{"images": {...}}``). When
    ``manifest_extra`` holds an ``images`` section, its ``count`` and ``sha256`` are filled in
    from the image files, and so is each ``items`` record's ``sha256`` (records of items without
    an image are dropped); a new section without ``items`` (images attached by the caller) gets
    one record per image, drawn for the item as it is now. Both files are written atomically,
    the data first.

    Returns:
        The manifest that was written.

    Raises:
        DataFormatError: an item points to an image file that does not exist.
    """
    from bindkit._io import atomic_write_bytes, atomic_write_text, jsonl_bytes, sha256_bytes

    root = Path(directory)
    data = jsonl_bytes(m.to_json() for m in mcqs)
    manifest: dict[str, Any] = dict(read_manifest(root) or {})
    manifest.setdefault("format", FORMAT_NAME)
    manifest.setdefault("format_version", FORMAT_VERSION)
    manifest.update(manifest_extra or {})
    manifest["counts"] = counts(mcqs)
    manifest["files"] = {SABER_FILE: {"sha256": sha256_bytes(data), "bytes": len(data)}}
    if isinstance(manifest.get("images"), Mapping):
        files = image_file_digests(root, mcqs)
        count, digest = _set_digest(files, mcqs)
        section = {**manifest["images"], "count": count, "sha256": digest}
        records = section.get("items")
        if records is None and "images" in (manifest_extra or {}):  # attached by the caller now
            records = {
                item.id: {"prompt_sha256": drawn_for_sha256(item, mcq), "redo": 0}
                for mcq in mcqs
                for item in mcq.items
            }
        if isinstance(records, Mapping):  # per image: what it was drawn for, now its file hash
            section["items"] = {
                i: {**records[i], "sha256": files[i]}
                for i in files
                if isinstance(records.get(i), Mapping)
            }
        manifest["images"] = section
    atomic_write_bytes(root / SABER_FILE, data)
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    atomic_write_text(root / MANIFEST_FILE, text)
    return manifest
