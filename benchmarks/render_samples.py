"""Draw the sample contact sheet (procedural renderer, shapes vocabulary).

Run: ``python benchmarks/render_samples.py`` (writes ``benchmarks/out/saber-shapes-sample.png``);
``--out docs/images/saber-shapes-sample.png`` refreshes the README's copy on purpose. Rows: one
MCQ each at N = 2, 4, 7 and 10 (query and its four candidates, flips applied as on disk); the
captions are printed for the README.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber
from bindkit.saber.render.procedural import ProceduralBackend
from bindkit.saber.render.renderer import render_saber

OUT = Path(__file__).resolve().parent / "out" / "saber-shapes-sample.png"  # scratch, not tracked
ROLES = ("query", "1 preserving", "2 attr swap", "3 obj swap", "4 joint swap")


def main() -> None:
    from PIL import Image, ImageDraw

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the PNG to write (default {OUT})")
    target: Path = parser.parse_args().out

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "saber"
        generate_saber(out, vocab="shapes", per_n=2, avoid_color_collisions=True)
        render_saber(out, ProceduralBackend(size=256), progress=False)
        data = read_saber(out)
        rows = [
            next(m for m in data.mcqs if m.n == n and m.kind == "independent")
            for n in (2, 4, 7, 10)
        ]
        tile, label = 256, 22
        sheet = Image.new("RGB", (5 * tile, len(rows) * (tile + label)), "white")
        draw = ImageDraw.Draw(sheet)
        for r, mcq in enumerate(rows):
            top = r * (tile + label)
            for c, item in enumerate(mcq.items):
                with Image.open(out / str(item.image)) as image:
                    sheet.paste(image, (c * tile, top + label))
                draw.text((c * tile + 6, top + 5), f"{mcq.id} {ROLES[c]}", fill="black")
            for item in mcq.items:
                print(f"{item.id}: {item.generation_text}")
        target.parent.mkdir(parents=True, exist_ok=True)
        sheet.save(target, optimize=True)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
