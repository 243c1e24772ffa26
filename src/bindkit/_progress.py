"""Progress for long loops: a bar on a terminal, a one-line summary now and then elsewhere.

A bar redrawn per batch is right on a terminal but writes hundreds of lines into a CI log or a
``| tee`` file; there this prints one line every ``interval`` seconds and one at the end.
``BINDKIT_PROGRESS=0`` (or ``false``) silences both.

The same policy covers the libraries' bars (transformers' "Loading weights", a training loop's
tqdm): :func:`library_progress`, which the CLI wraps around every command, turns tqdm's ``\r``
redraws on a non-terminal stderr into a line every ``interval`` seconds (and the bar's last
state), and drops them when progress is off.

Example:
    >>> bar = progress(3, "demo", enabled=False)
    >>> bar.update(3); bar.close()
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, Protocol


class Progress(Protocol):
    def update(self, n: int) -> None: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None: ...

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
    initial: int = 0,
) -> Progress:
    """A progress reporter for ``total`` units: tqdm on a terminal, :class:`LineProgress`
    elsewhere, nothing when disabled. ``initial``: units already done (a resumed run)."""
    if not progress_enabled(enabled):
        return _Silent()
    out = stream if stream is not None else sys.stderr
    if out.isatty():
        from tqdm.auto import tqdm

        bar: Progress = tqdm(
            total=total, initial=initial, desc=desc, unit=unit, leave=False, file=out
        )
        return bar
    return LineProgress(total, desc, unit=unit, interval=interval, stream=out, initial=initial)


class _Silent:
    def update(self, n: int) -> None: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None: ...

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
        initial: int = 0,
    ) -> None:
        self.total, self.desc, self.unit, self.interval = total, desc, unit, interval
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.initial = self.done = initial
        self.start = self.last = clock()
        self.closed = False
        self.postfix = ""

    def update(self, n: int) -> None:
        """Count ``n`` more units; ``update(0)`` is a heartbeat (a line when one is due)."""
        self.done += n
        now = self.clock()
        if now - self.last >= self.interval and self.done < self.total:
            self.last = now
            self._print(now)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Text appended to each line, e.g. ``8 requests waiting`` (tqdm's method name)."""
        self.postfix = s

    def close(self) -> None:
        if not self.closed and (self.done > self.initial or self.postfix):
            self._print(self.clock())
        self.closed = True

    def _print(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = (self.done - self.initial) / elapsed
        line = f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s"
        if self.total:
            line += f" ({100 * self.done / self.total:.0f}%)"
        line += f", {rate:,.0f}/s"
        if self.done < self.total and rate > 0:
            line += f", about {(self.total - self.done) / rate:,.0f} s left"
        else:
            line += f", {elapsed:,.1f} s"
        if self.postfix:
            line += f"; {self.postfix}"
        print(line, file=self.stream, flush=True)


# tqdm moves the cursor up to redraw a nested bar (``position`` > 0)
_CURSOR_UP = "\x1b[A"


class RedrawLines:
    """A text stream over ``stream`` (a non-terminal) that turns ``\r`` redraws into lines.

    tqdm redraws a bar by writing ``"\r" + bar``; off a terminal that piles thousands of
    updates into one log line. Here a redraw is written as its own line at most every
    ``interval`` seconds, the last one held back is written when the bar ends (tqdm's closing
    ``"\n"`` or a cleared bar), and with ``silent`` every redraw is dropped. A nested bar's
    cursor-up escapes are dropped. Other text passes through unchanged.
    """

    def __init__(
        self,
        stream: IO[str],
        *,
        interval: float = 30.0,
        silent: bool = False,
        clock: Any = time.monotonic,
    ) -> None:
        self.stream, self.interval, self.silent, self.clock = stream, interval, silent, clock
        self._lock = threading.Lock()
        self._last = float("-inf")
        self._held: str | None = None
        self._after_redraw = False

    def write(self, text: str) -> int:
        with self._lock:
            if text and not text.replace(_CURSOR_UP, ""):
                self._after_redraw = True  # a nested bar moving the cursor: nothing off a terminal
                return len(text)
            if text.startswith("\r"):
                self._after_redraw = True
                shown = text.strip()
                if not shown:  # a bar clearing itself: its last state is the news
                    self._flush()
                elif not self.silent:
                    now = self.clock()
                    if now - self._last >= self.interval:
                        self._emit(shown, now)
                    else:
                        self._held = shown
                return len(text)
            if self._after_redraw and text == "\n":  # a kept bar's end, a nested bar's line
                self._flush()
                return len(text)
            if text:
                self._after_redraw = False
            return self.stream.write(text)

    def _emit(self, line: str, now: float) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()
        self._last, self._held = now, None

    def _flush(self) -> None:
        if self._held is not None:
            self._emit(self._held, self.clock())

    def close(self) -> None:
        """Write a redraw still held back (the stream itself stays open)."""
        with self._lock:
            self._flush()

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ... of the real stream
        return getattr(self.stream, name)


@contextmanager
def library_progress(interval: float = 30.0) -> Iterator[None]:
    """Apply the progress policy to every tqdm bar written to ``sys.stderr`` while inside.

    On a terminal with progress on, nothing changes. Elsewhere ``sys.stderr`` is replaced by
    :class:`RedrawLines` (a line every ``interval`` seconds); with ``BINDKIT_PROGRESS=0``
    redraws are dropped on a terminal too, which silences transformers' "Loading weights" bar.
    """
    enabled = progress_enabled()
    real = sys.stderr
    if enabled and real.isatty():
        yield
        return
    wrapped = RedrawLines(real, interval=interval, silent=not enabled)
    sys.stderr = wrapped
    try:
        yield
    finally:
        wrapped.close()
        if sys.stderr is wrapped:
            sys.stderr = real
