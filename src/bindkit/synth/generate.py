"""Crash-safe, resumable generation: plan → backend → complete → validate → admit → append.

``OUT/examples.jsonl`` gets every accepted example and ``OUT/rejected.jsonl`` every rejection
(with its rule), one flushed line each. A restart reads both back, rebuilds the controller
(caps, avoid lists, duplicate sets) and continues to the target: a killed run loses at most the
requests in flight, and never duplicates or loses an accepted example.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from bindkit.errors import BindkitError
from bindkit.synth.diversity import Controller, Plan
from bindkit.synth.example import Example, complete
from bindkit.synth.validate import validate_example

EXAMPLES = "examples.jsonl"
REJECTED = "rejected.jsonl"


class Backend(Protocol):
    name: str

    def produce(self, plan: Plan) -> Example: ...


class AsyncBackend(Protocol):
    name: str

    async def produce_async(self, plan: Plan) -> Example: ...


class Rejected(Exception):
    """A backend's answer that cannot become an example (rule + message)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


@dataclass
class Stats:
    accepted: Counter[str] = field(default_factory=Counter)  # by type
    rejected: Counter[str] = field(default_factory=Counter)  # by rule
    resumed: int = 0

    def table(self, controller: Controller) -> str:
        lines = ["type                        accepted"]
        lines += [f"  {t:<26}{n:>8}" for t, n in sorted(controller.by_type.items())]
        lines.append("rejections by rule")
        lines += [f"  {r:<26}{n:>8}" for r, n in self.rejected.most_common()] or ["  none"]
        words = controller.counts
        attributes = sum(1 for w in words if w not in controller.objects)
        lines.append(
            f"vocabulary: {len(words)} distinct words ({attributes} attributes), most frequent "
            + (f"{words.most_common(1)[0][0]!r} x{words.most_common(1)[0][1]}" if words else "-")
        )
        return "\n".join(lines)


def _truncate_partial_line(path: Path) -> None:
    """Drop a last line cut short by a crash (no trailing newline)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        data = path.read_bytes()
        handle.truncate(data.rfind(b"\n") + 1)


def resume(out: Path) -> tuple[Controller, int, Stats]:
    """Rebuild the controller and the attempt counter from what ``out`` already holds."""
    controller = Controller()
    stats = Stats()
    attempts = 0
    for name in (EXAMPLES, REJECTED):
        _truncate_partial_line(out / name)
    if (out / EXAMPLES).exists():
        with (out / EXAMPLES).open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                ex = Example.from_json(json.loads(line), f"{out / EXAMPLES}:{lineno}")
                controller.record(ex)
                attempts = max(attempts, int(ex.source.get("attempt", -1)) + 1)
                stats.accepted[ex.type] += 1
    if (out / REJECTED).exists():
        with (out / REJECTED).open(encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                stats.rejected[row["rule"]] += 1
                attempts = max(attempts, int(row.get("attempt", -1)) + 1)
    stats.resumed = controller.accepted
    return controller, attempts, stats


def _append(handle: IO[str], row: dict[str, Any]) -> None:
    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    handle.flush()


def accept_or_reject(
    candidate: Example, controller: Controller, seed: int
) -> tuple[Example | None, str | None, str]:
    """Complete, validate and admit a candidate: (example, None, "") or (None, rule, message)."""
    attempt = int(candidate.source.get("attempt", 0))
    try:
        complete(candidate, random.Random(f"{seed}/complete/{attempt}"))
    except (KeyError, ValueError, StopIteration, IndexError) as exc:
        return None, "malformed", f"cannot derive negatives: {exc!r}"
    problems = validate_example(candidate)
    if problems:
        return None, problems[0].rule, problems[0].message
    rule = controller.admit(candidate)
    if rule:
        return None, rule, "rejected by the diversity controls"
    return candidate, None, ""


def generate(
    out: str | Path,
    n: int,
    backend: Backend | AsyncBackend,
    *,
    seed: int = 0,
    concurrency: int = 8,
    max_attempts: int | None = None,
    progress: bool = True,
    on_accept: Callable[[Example], None] | None = None,
) -> tuple[Controller, Stats]:
    """Generate until ``OUT/examples.jsonl`` holds ``n`` accepted examples (resuming)."""
    if n < 1:
        raise BindkitError(f"--n {n}: must be at least 1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    controller, attempt, stats = resume(out)
    limit = max_attempts if max_attempts is not None else max(1000, 50 * n)
    bar = _Bar(n, controller.accepted, progress)
    with (
        (out / EXAMPLES).open("a", encoding="utf-8") as good,
        (out / REJECTED).open("a", encoding="utf-8") as bad,
    ):

        def handle(candidate: Example | None, plan: Plan, error: Rejected | None) -> None:
            if error is not None or candidate is None:
                reason = error.rule if error else "malformed"
                _append(
                    bad,
                    {
                        "attempt": plan.attempt,
                        "type": plan.type,
                        "rule": reason,
                        "message": str(error),
                    },
                )
                stats.rejected[reason] += 1
            else:
                example, rule, message = accept_or_reject(candidate, controller, seed)
                if example is None:
                    _append(
                        bad,
                        {
                            "attempt": plan.attempt,
                            "type": plan.type,
                            "rule": rule,
                            "message": message,
                            "example": candidate.to_json(),
                        },
                    )
                    stats.rejected[rule or "?"] += 1
                else:
                    _append(good, example.to_json())
                    controller.record(example)
                    stats.accepted[example.type] += 1
                    if on_accept:
                        on_accept(example)
            bar.update(controller.accepted, sum(stats.rejected.values()))

        if hasattr(backend, "produce_async"):
            attempt = asyncio.run(
                _run_async(backend, controller, n, attempt, seed, concurrency, limit, handle)
            )
        else:
            while controller.accepted < n and attempt < limit:
                plan = controller.plan(attempt, seed)
                attempt += 1
                try:
                    candidate: Example | None = backend.produce(plan)
                    error = None
                except Rejected as exc:
                    candidate, error = None, exc
                handle(candidate, plan, error)
    bar.close()
    if controller.accepted < n:
        raise BindkitError(
            f"stopped after {attempt} attempts with {controller.accepted}/{n} examples; see "
            f"{out / REJECTED} for the rules that rejected the rest"
        )
    return controller, stats


async def _run_async(
    backend: Any,
    controller: Controller,
    n: int,
    attempt: int,
    seed: int,
    concurrency: int,
    limit: int,
    handle: Callable[[Example | None, Plan, Rejected | None], None],
) -> int:
    pending: set[asyncio.Task[tuple[Plan, Example | None, Rejected | None]]] = set()

    async def one(plan: Plan) -> tuple[Plan, Example | None, Rejected | None]:
        try:
            return plan, await backend.produce_async(plan), None
        except Rejected as exc:
            return plan, None, exc

    while controller.accepted < n and (pending or attempt < limit):
        while (
            len(pending) < concurrency
            and attempt < limit
            and (controller.accepted + len(pending) < n + concurrency)
        ):
            pending.add(asyncio.create_task(one(controller.plan(attempt, seed))))
            attempt += 1
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            plan, candidate, error = task.result()
            if controller.accepted < n:
                handle(candidate, plan, error)
    for task in pending:
        task.cancel()
    if hasattr(backend, "aclose"):
        await backend.aclose()
        backend._client = None
    return attempt


class _Bar:
    def __init__(self, total: int, start: int, enabled: bool) -> None:
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, initial=start, desc="examples", unit="ex", file=sys.stderr)

    def update(self, accepted: int, rejected: int) -> None:
        if self.bar is not None and accepted > self.bar.n:
            self.bar.set_postfix(rejected=rejected, refresh=False)
            self.bar.update(accepted - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
