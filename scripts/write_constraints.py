"""Write ``constraints.txt``: the installed versions of everything the README's install pulls in.

Walks the requirements of ``bindkit[EXTRAS]`` (the extras the README's first command names) and
of the ``--no-deps`` packages it adds, through the installed distributions' metadata, and prints
one ``name==version`` line per distribution (local labels such as ``+cpu`` dropped), sorted.
Run it in the environment that made the tables::

    python scripts/write_constraints.py > constraints.txt

``tests/test_constraints.py`` checks that the README and ``.ci/run`` install with the file and
that every library of ``bindkit._environment.PINNED`` is pinned there to the same version.
"""

from __future__ import annotations

import argparse
import sys
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

#: the extras of the README's first command
EXTRAS = ("st", "mllm", "report", "llm", "mining", "benchmarks", "builtin", "sweep", "hf", "mteb")
#: what the README's first command installs with --no-deps beside them
NO_DEPS = ("open_clip_torch", "ftfy", "wcwidth")

HEADER = """\
# The versions every table in the README and docs was made under (pip's constraints file).
# Install with it, as the README's first command does:
#   pip install -c constraints.txt "torch==2.13.0" -e ".[...]"
# Regenerate after an upgrade, from the environment that made the tables:
#   python scripts/write_constraints.py > constraints.txt
# (then rerun the tables; bindkit prints one line when a table's command runs under other
# versions of the libraries that move numbers: bindkit._environment.PINNED)
"""


def closure(root: str, extras: tuple[str, ...], more: tuple[str, ...]) -> dict[str, str]:
    """``{distribution name: installed version}`` for ``root[extras]`` and ``more``."""
    found: dict[str, tuple[str, str, set[str]]] = {}

    def walk(name: str, wanted: set[str]) -> None:
        key = canonicalize_name(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return
        if key in found and wanted <= found[key][2]:
            return
        found.setdefault(key, (dist.metadata["Name"], dist.version, set()))[2].update(wanted)
        environments = [{"extra": extra} for extra in sorted(wanted)] + [{"extra": ""}]
        for line in dist.requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate(env) for env in environments):
                walk(requirement.name, set(requirement.extras))

    walk(root, set(extras))
    for name in more:
        walk(name, set())
    found.pop(canonicalize_name(root), None)
    return {name: version.split("+")[0] for name, version, _ in found.values()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--extras",
        default=",".join((*EXTRAS, "dev", "docs")),
        help="bindkit's extras to walk, comma-separated (default: the README's, dev and docs)",
    )
    args = parser.parse_args(argv)
    extras = tuple(e for e in args.extras.split(",") if e)
    try:
        metadata.distribution("bindkit")
    except metadata.PackageNotFoundError:
        parser.error("bindkit is not installed here: install it as the README says first")
    pins = closure("bindkit", extras, NO_DEPS)
    sys.stdout.write(HEADER)
    for name in sorted(pins, key=canonicalize_name):
        sys.stdout.write(f"{name}=={pins[name]}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
