"""The library's file and option helpers, public for code that stands on bindkit.

``benchmarks/``, ``scripts/`` and plugins write results and check their options the way the
commands do; they import these names from here, never from the private modules that define
them (``bindkit._io``, ``_checks``, ``_outputs``, ``_lock``, ``_environment``), so the library
can reorganise those freely. Each name is the library's own function, not a copy:

- writing: :func:`atomic_write_text`, :func:`atomic_write_bytes`, :func:`jsonl_bytes`,
  :func:`make_dirs`, :func:`sha256_file`;
- an ``--out`` folder: :func:`check_can_create`, :func:`check_own_output` (refuse another
  command's folder), :func:`directory_lock` (one writer at a time);
- a number option: :func:`check_range` (finite, in range, one line naming the option);
- provenance: :func:`library_versions` (the versions a result records).
"""

from __future__ import annotations

from bindkit._checks import check_range
from bindkit._environment import library_versions
from bindkit._io import (
    atomic_write_bytes,
    atomic_write_text,
    check_can_create,
    jsonl_bytes,
    make_dirs,
    sha256_file,
)
from bindkit._lock import directory_lock
from bindkit._outputs import check_own_output

__all__ = [
    "atomic_write_bytes",
    "atomic_write_text",
    "check_can_create",
    "check_own_output",
    "check_range",
    "directory_lock",
    "jsonl_bytes",
    "library_versions",
    "make_dirs",
    "sha256_file",
]
