"""Number checks for command options: finite, in range, the range in the one-line message.

Every command checks its numbers here, in its config layer, before any model or data is loaded,
so ``--lr inf`` or ``--size 0`` fails in milliseconds instead of training or rendering garbage.

Example:
    >>> check_range("--size", 512, 64, 4096)
    >>> check_range("--size", 0, 64, 4096)
    Traceback (most recent call last):
    ...
    bindkit.errors.BindkitError: --size 0: must be from 64 to 4096
"""

from __future__ import annotations

import math

from bindkit.errors import BindkitError


def _show(value: float) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return repr(value)
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    return f"{value:g}"


def check_range(
    option: str,
    value: float | None,
    low: float,
    high: float,
    *,
    low_open: bool = False,
) -> None:
    """Raise a one-line :class:`BindkitError` unless ``value`` is a finite number in range.

    Args:
        option: the option's name as the user typed it, e.g. ``--timeout``.
        value: the value; ``None`` (an unset optional option) passes.
        low, high: the allowed range, both ends included (``low_open``: ``low`` excluded).
    """
    if value is None:
        return
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (low < value if low_open else low <= value)
        and value <= high
    )
    if not ok:
        lower = f"more than {_show(low)}" if low_open else f"from {_show(low)}"
        joint = " and at most " if low_open else " to "
        raise BindkitError(f"{option} {_show(value)}: must be {lower}{joint}{_show(high)}")
