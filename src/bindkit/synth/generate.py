"""Crash-safe, resumable generation: plan → backend → complete → validate → admit → append.

``OUT/examples.jsonl`` gets every accepted example and ``OUT/rejected.jsonl`` every rejection
(with its rule), one flushed line each. A restart reads both back, rebuilds the controller
(caps, avoid lists, duplicate sets) and continues to the target: a killed run loses at most the
requests in flight, and never duplicates or loses an accepted example.

:func:`bindkit.synth.command.run` is the whole ``bindkit synth generate`` command around this
loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bindkit.errors import BindkitError, DataFormatError
from bindkit.synth.backends.base import AsyncBackend, Backend, Rejected
from bindkit.synth.diversity import Controller, Plan
from bindkit.synth.example import Example, complete
from bindkit.synth.example_rules import validate_example
from bindkit.synth.rundir import (
    EXAMPLES,
)

REJECTED = "rejected.jsonl"
MAX_N = 10_000_000
DEADLINE = 600.0  # seconds without any answer from an endpoint before a run stops


@dataclass
class Stats:
    accepted: Counter[str] = field(default_factory=Counter)  # by type
    rejected: Counter[str] = field(default_factory=Counter)  # by rule
    failures: int = 0  # backend transport failures, all of them
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


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` per line of a run's JSONL file; a bad line is one error."""
    fix = "delete that line (a run rewrites it) or start a new --out"
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                obj = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise DataFormatError(f"{path}:{lineno}: not UTF-8 text; {fix}") from None
            except json.JSONDecodeError as exc:
                raise DataFormatError(
                    f"{path}:{lineno}: corrupt JSON ({exc.msg} at column {exc.colno}); {fix}"
                ) from None
            if not isinstance(obj, dict):
                raise DataFormatError(f"{path}:{lineno}: not a JSON object; {fix}")
            yield lineno, obj


def _attempt(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DataFormatError(
            f"{where}: 'attempt' must be a non-negative integer; start a new --out"
        )
    return value


def resume(out: Path) -> tuple[Controller, int, Stats]:
    """Rebuild the controller and the attempt counter from what ``out`` already holds.

    Raises:
        DataFormatError: a corrupt line (naming file:line) or an example id seen twice.
    """
    controller = Controller()
    stats = Stats()
    attempts = 0
    for name in (EXAMPLES, REJECTED):
        _truncate_partial_line(out / name)
    if (out / EXAMPLES).exists():
        first_line: dict[str, int] = {}
        for lineno, obj in _rows(out / EXAMPLES):
            where = f"{out / EXAMPLES}:{lineno}"
            ex = Example.from_json(obj, where)
            if ex.id in first_line:
                raise DataFormatError(
                    f"{where}: duplicate id {ex.id!r} (also on line {first_line[ex.id]}); two "
                    "runs wrote into this directory: start a new --out"
                )
            first_line[ex.id] = lineno
            controller.record(ex)
            attempts = max(attempts, _attempt(ex.source.get("attempt", 0), where) + 1)
            stats.accepted[ex.type] += 1
    if (out / REJECTED).exists():
        for lineno, row in _rows(out / REJECTED):
            where = f"{out / REJECTED}:{lineno}"
            if not isinstance(row.get("rule"), str):
                raise DataFormatError(f"{where}: 'rule' must be a string; start a new --out")
            stats.rejected[row["rule"]] += 1
            attempts = max(attempts, _attempt(row.get("attempt", 0), where) + 1)
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


Outcome = tuple[Plan, Example | None, Rejected | None]


def generate(
    out: str | Path,
    n: int,
    backend: Backend | AsyncBackend,
    *,
    seed: int = 0,
    concurrency: int = 8,
    max_attempts: int | None = None,
    max_failures: int = 20,
    progress: bool = True,
    on_accept: Callable[[Example], None] | None = None,
    on_start: Callable[[], None] | None = None,
    deadline: float = DEADLINE,
) -> tuple[Controller, Stats]:
    """Generate until ``OUT/examples.jsonl`` holds ``n`` accepted examples (resuming).

    This is the loop alone: :func:`run` adds the lock, the manifest and the splits.
    ``on_start`` runs once the existing files have been read and accepted, before anything is
    generated: a refused resume (a corrupt line, a duplicate id) has changed no file by then.
    ``deadline``: an endpoint backend (openai) that gives no answer for this many seconds
    stops the run, however many requests are still waiting or being retried.

    Raises:
        BindkitError: fewer than ``n`` examples after ``max_attempts`` attempts, or
            ``max_failures`` transport failures in a row (the server is down or unreachable),
            or no answer within ``deadline`` seconds.
    """
    if n < 1:
        raise BindkitError(f"--n {n}: must be at least 1")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    controller, attempt, stats = resume(out)
    if on_start is not None:
        on_start()
    limit = max_attempts if max_attempts is not None else max(1000, 50 * n)
    bar = _Bar(n, controller.accepted, progress)
    in_a_row = 0
    with (
        (out / EXAMPLES).open("a", encoding="utf-8") as good,
        (out / REJECTED).open("a", encoding="utf-8") as bad,
    ):

        def handle(outcome: Outcome) -> None:
            nonlocal in_a_row
            plan, candidate, error = outcome
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
                if error is not None and error.transport:
                    stats.failures += 1
                    in_a_row += 1
                    if in_a_row >= max_failures:
                        bar.close()
                        host = backend.host if isinstance(backend, AsyncBackend) else backend.name
                        raise BindkitError(
                            f"{host}: {in_a_row} requests in a row failed (last: {error}); check "
                            "that the server is running and reachable at --base-url"
                        )
                else:
                    in_a_row = 0
            else:
                in_a_row = 0
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
            bar.update(controller.accepted, sum(stats.rejected.values()), stats.failures)

        if isinstance(backend, AsyncBackend):
            watch = _Deadline(deadline, backend.host, bar, stats)
            attempt = asyncio.run(
                _run_async(backend, controller, n, attempt, seed, concurrency, limit, handle, watch)
            )
        else:
            while controller.accepted < n and attempt < limit:
                plan = controller.plan(attempt, seed)
                attempt += 1
                try:
                    handle((plan, backend.produce(plan), None))
                except Rejected as exc:
                    handle((plan, None, exc))
    bar.close()
    if controller.accepted < n:
        raise BindkitError(
            f"stopped after {attempt} attempts with {controller.accepted}/{n} examples; see "
            f"{out / REJECTED} for the rules that rejected the rest"
        )
    return controller, stats


async def _run_async(
    backend: AsyncBackend,
    controller: Controller,
    n: int,
    attempt: int,
    seed: int,
    concurrency: int,
    limit: int,
    handle: Callable[[Outcome], None],
    watch: _Deadline,
) -> int:
    pending: set[asyncio.Task[Outcome]] = set()

    async def one(plan: Plan) -> Outcome:
        try:
            return plan, await backend.produce_async(plan), None
        except Rejected as exc:
            return plan, None, exc

    try:
        while controller.accepted < n and (pending or attempt < limit):
            while (
                len(pending) < concurrency
                and attempt < limit
                and (controller.accepted + len(pending) < n + concurrency)
            ):
                pending.add(asyncio.create_task(one(controller.plan(attempt, seed))))
                attempt += 1
            done, pending = await asyncio.wait(
                pending, timeout=watch.wait_for(len(pending)), return_when=asyncio.FIRST_COMPLETED
            )
            watch.waiting(len(pending))
            # collect every outcome (and so every exception) before acting on any of them
            outcomes = [(task.exception(), task) for task in done]
            for exc, _ in outcomes:
                if exc is not None:
                    raise exc
            for _, task in outcomes:
                watch.outcome(task.result())
                if controller.accepted < n:
                    handle(task.result())
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await backend.aclose()
    return attempt


class _Bar:
    """Accepted examples as the bar (bindkit's progress policy: a bar on a terminal, a line
    every 30 s elsewhere); rejections, failures and waiting requests as they happen."""

    def __init__(self, total: int, start: int, enabled: bool) -> None:
        from bindkit._progress import Progress, progress

        self.bar: Progress | None = (
            progress(total, "examples", unit="example", initial=start) if enabled else None
        )
        self.n = start
        self.shown = 0.0
        self.rejected = self.failed = self.pending = 0

    def update(self, accepted: int, rejected: int, failed: int) -> None:
        self.rejected, self.failed = rejected, failed
        self._refresh()
        if self.bar is not None and accepted > self.n:
            self.bar.update(accepted - self.n)
            self.n = accepted

    def waiting(self, pending: int) -> None:
        """``pending`` requests are in flight: shown, and a heartbeat line when one is due."""
        self.pending = pending
        self._refresh()
        if self.bar is not None:
            self.bar.update(0)

    def _refresh(self) -> None:
        now = time.monotonic()
        if self.bar is not None and now - self.shown > 0.2:  # failures show before progress
            self.shown = now
            text = f"rejected={self.rejected}, failed={self.failed}"
            if self.pending:
                text += f", {self.pending} requests waiting"
            self.bar.set_postfix_str(text)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class _Deadline:
    """The total deadline of an endpoint: the run stops when no answer came for ``seconds``.

    An answer is any response the server sent back (an example, or one the rules rejected);
    timeouts, refused connections and retried 5xx are not. Waiting requests are shown.
    """

    def __init__(self, seconds: float, host: str, bar: _Bar, stats: Stats) -> None:
        self.seconds, self.host, self.bar, self.stats = seconds, host, bar, stats
        self.last = time.monotonic()

    def outcome(self, outcome: Outcome) -> None:
        error = outcome[2]
        if error is None or not error.transport:
            self.last = time.monotonic()

    def wait_for(self, pending: int) -> float:
        """Seconds to wait for the next outcome (at most 5, so the progress stays alive)."""
        left = self.seconds - (time.monotonic() - self.last)
        if left <= 0:
            self.bar.close()
            raise BindkitError(
                f"{self.host}: no answer in {self.seconds:g} s ({pending} requests waiting, "
                f"{self.stats.failures} failed); check that the server at --base-url is up and "
                "answering, or raise --deadline; rerun the same command to resume"
            )
        return min(left, 5.0)

    def waiting(self, pending: int) -> None:
        self.bar.waiting(pending)
