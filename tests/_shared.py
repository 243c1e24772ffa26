"""Where the public benchmark files of ../shared/data are, if this machine has them."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve()
SHARED_DATA = next(
    (p / "shared" / "data" for p in _HERE.parents if (p / "shared" / "data").is_dir()),
    _HERE.parents[2] / "shared" / "data",
)
