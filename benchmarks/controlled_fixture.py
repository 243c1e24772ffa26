"""Score the built-in models on a CLEVR-binding set in the publisher's layout, drawn here.

Run: ``python benchmarks/controlled_fixture.py [--scenes 400] [--models builtin:tiny-clip]``.
It writes ``output_2obj.csv`` and ``images_2obj/`` (the layout of Koishigarina et al.'s 2-object
zip) with scenes drawn by bindkit's procedural renderer, two solids of the CLEVR shapes (cube,
sphere, cylinder) in CLEVR colours that renderer can paint (blue, green, purple, red, yellow),
then runs ``bindkit eval --task clevr_binding`` on every split. These are not the publisher's
CLEVR renders (not reachable here); the numbers say how the task runs end to end and how the
built-in models, trained on this renderer's scenes, bind colour to shape in two-object scenes.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

from bindkit.cli import main as bindkit_main
from bindkit.saber.render.procedural import draw_scene, layout

SHAPES = ("cube", "sphere", "cylinder")
COLOURS = ("blue", "green", "purple", "red", "yellow")  # CLEVR's, as the renderer paints them


def write_set(folder: Path, scenes: int, seed: int, size: int) -> None:
    """``scenes`` two-object scenes in CLEVR-binding's published layout."""
    import numpy as np
    from PIL import Image

    rng = random.Random(seed)
    (folder / "images_2obj").mkdir(parents=True)
    lines = []
    for i in range(scenes):
        o1, o2 = rng.sample(SHAPES, 2)
        a1, a2 = rng.choice(COLOURS), rng.choice(COLOURS)
        name = f"CLEVR_2obj_{i:06d}.png"
        placements = layout(
            [(o1, a1, {}), (o2, a2, {})], size, size, np.random.default_rng(seed * 100003 + i)
        )
        Image.fromarray(draw_scene(placements, size, size), "RGB").save(
            folder / "images_2obj" / name
        )
        lines.append(f"{name},{o1},{a1},{o2},{a2}\n")
    (folder / "output_2obj.csv").write_text("".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=400, help="scenes to draw (default 400)")
    parser.add_argument("--seed", type=int, default=0, help="layout and choice seed (default 0)")
    parser.add_argument("--size", type=int, default=128, help="image side in pixels (default 128)")
    parser.add_argument(
        "--models", default="builtin:tiny-clip", help="comma-separated model specs to score"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp) / "clevr_binding", Path(tmp) / "results"
        write_set(data, args.scenes, args.seed, args.size)
        for spec in args.models.split(","):
            argv = ["eval", "--model", spec, "--task", "clevr_binding", "--data", str(data)]
            argv += ["--subsets", "test,val,train", "--out", str(out), "--no-report", "-q"]
            if bindkit_main(argv) != 0:
                raise SystemExit(f"{spec}: bindkit eval failed")
        for path in sorted(out.rglob("it.json")):
            record = json.loads(path.read_text())
            counts, accuracy = record["counts"], record["scores"]["accuracy"]
            print(
                f"{record['model']['spec']}\t{record['subset']}\taccuracy {accuracy:.3f}\t"
                f"scored {counts['scored']} (same colour left out: {counts['same_colour']})"
            )


if __name__ == "__main__":
    main()
