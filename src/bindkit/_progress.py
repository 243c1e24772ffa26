"""Progress for long loops: a bar on a terminal, a one-line summary now and then elsewhere.

A bar redrawn per batch is right on a terminal but writes hundreds of lines into a CI log or a
``| tee`` file; there this prints one line every ``interval`` seconds and one at the end.
``BINDKIT_PROGRESS=0`` (or ``false``) silences both.

Example:
    >>> bar = progress(3, "demo", enabled=False)
    >>> bar.update(3); bar.close()
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any, Protocol


class Progress(Protocol):
    def update(self, n: int) -> None: ...

    def close(self) -> None: ...


def progress_enabled(flag: bool | None = None) -> bool:
    """``flag`` when given, else on unless ``BINDKIT_PROGRESS`` is ``0`` or ``false``."""
    if flag is not None:
        return flag
    return os.environ.get("BINDKIT_PROGRESS", "").strip().lower() not in ("0", "false")


def progress(
    total: int,
    desc: str,
    *,
    enabled: bool | None = None,
    unit: str = "item",
    interval: float = 30.0,
    stream: IO[str] | None = None,
) -> Progress:
    """A progress reporter for ``total`` units: tqdm on a terminal, :class:`LineProgress`
    elsewhere, nothing when disabled."""
    if not progress_enabled(enabled):
        return _Silent()
    out = stream if stream is not None else sys.stderr
    if out.isatty():
        from tqdm.auto import tqdm

        bar: Progress = tqdm(total=total, desc=desc, unit=unit, leave=False, file=out)
        return bar
    return LineProgress(total, desc, unit=unit, interval=interval, stream=out)


class _Silent:
    def update(self, n: int) -> None: ...

    def close(self) -> None: ...


class LineProgress:
    """Prints ``desc: done/total (pct) rate, ETA`` at most every ``interval`` seconds and once
    when closed (when anything was done)."""

    def __init__(
        self,
        total: int,
        desc: str,
        *,
        unit: str = "item",
        interval: float = 30.0,
        stream: IO[str] | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.done = 0
        self.start = self.last = clock()
        self.closed = False

    def update(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= self.interval and self.done < self.total:
            self.last = now
            self._print(now)

    def close(self) -> None:
        if not self.closed and self.done:
            self._print(self.clock())
        self.closed = True

    def _print(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        line = f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s"
        if self.total:
            line += f" ({100 * self.done / self.total:.0f}%)"
        line += f", {rate:,.0f}/s"
        if self.done < self.total and rate > 0:
            line += f", about {(self.total - self.done) / rate:,.0f} s left"
        else:
            line += f", {elapsed:,.1f} s"
        print(line, file=self.stream, flush=True)
