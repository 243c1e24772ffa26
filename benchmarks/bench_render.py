"""Time the procedural render of the full default shapes SABER (9,000 images, 256x256).

Run: ``python benchmarks/bench_render.py [--workers 1]``; paste the table into docs/experiments/.
CPU seconds (user + system of this process and its workers) are reported next to wall time, as
wall time on a shared machine measures the neighbours too. The peer in the same run is the cost
of the unavoidable part: encoding the same 9,000 images as PNG and reading them back.
"""

from __future__ import annotations

import argparse
import io
import resource
import tempfile
import time
from pathlib import Path

from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber
from bindkit.saber.render.procedural import ProceduralBackend
from bindkit.saber.render.renderer import is_valid_image, render_saber


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "saber"
        generate_saber(out, vocab="shapes", avoid_color_collisions=True)
        wall, cpu = time.perf_counter(), cpu_seconds()
        summary = render_saber(out, ProceduralBackend(), workers=args.workers, progress=False)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        again = time.perf_counter()
        resumed = render_saber(out, ProceduralBackend(), progress=False)
        again = time.perf_counter() - again
        # peer: decode + re-encode every image (PNG I/O alone, no drawing)
        from PIL import Image

        data = read_saber(out)
        peer_wall, peer_cpu = time.perf_counter(), cpu_seconds()
        for item in (i for m in data.mcqs for i in m.items):
            with Image.open(out / str(item.image)) as image:
                image.save(io.BytesIO(), format="PNG", compress_level=3)
        peer_wall, peer_cpu = time.perf_counter() - peer_wall, cpu_seconds() - peer_cpu
        assert all(is_valid_image(out / str(i.image)) for m in data.mcqs for i in m.items)
        size = sum(p.stat().st_size for p in (out / "images").iterdir())
    n = summary.rendered
    head = f"step ({n:,} images, {size / 1e6:.0f} MB, workers {args.workers})"
    print(f"| {head} | wall (s) | CPU (s) | CPU ms/image |")
    print("|---|---|---|---|")
    print(f"| render (draw + PNG encode + write) | {wall:.1f} | {cpu:.1f} | {1000 * cpu / n:.1f} |")
    peer = f"{peer_wall:.1f} | {peer_cpu:.1f} | {1000 * peer_cpu / n:.1f}"
    print(f"| peer: PNG decode + encode only | {peer} |")
    print(f"| resume of a finished render ({resumed.kept:,} kept, 0 drawn) | {again:.1f} | | |")
    print(f"\nrender / peer CPU ratio: {cpu / peer_cpu:.2f}")


if __name__ == "__main__":
    main()
