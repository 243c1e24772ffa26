"""What embedding videos costs: frames, visual tokens and seconds per 1,000 clips, per family.

Generated clips (``--seconds`` long, 30 fps, 320 x 240, moving coloured shapes, MPEG-4) go
through each family's video path on the test suite's tiny random checkpoints (Qwen3-VL geometry:
patch 16, merge 2; Qwen2.5-VL geometry: patch 14, merge 2), so frames and tokens per clip are
what the real models get, and the seconds are decoding + resizing (the part that does not depend
on the model) plus a tiny model's forward. Reported per family: frames and merged visual tokens
per clip, then seconds per 1,000 clips for a cold run (decode, resize, embed), for the frames
alone (decode + resize, no model), and for a second run whose frames come from the frame cache.

Run: ``python benchmarks/bench_video.py [--clips 20] [--seconds 4]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

TESTS = Path(__file__).resolve().parents[1] / "tests"


def write_clip(path: Path, seconds: float, seed: int) -> Path:
    import av

    rng = np.random.default_rng(seed)
    width, height, rate = 320, 240, 30
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        x0, y0 = (int(v) for v in rng.integers(0, 100, size=2))
        for i in range(int(seconds * rate)):
            img = np.full((height, width, 3), 40, np.uint8)
            x, y = (x0 + 3 * i) % (width - 40), (y0 + 2 * i) % (height - 40)
            img[y : y + 40, x : x + 40, 0] = 230
            img[height - y - 40 : height - y, x : x + 30, 1] = 200
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    sys.path.insert(0, str(TESTS))
    from tiny_models import build_qwen2_5_vl, build_qwen3_vl

    work = Path(tempfile.mkdtemp(prefix="bench-video-"))
    os.environ["BINDKIT_CACHE_DIR"] = str(work / "cache")
    os.environ.setdefault("BINDKIT_PROGRESS", "0")
    from bindkit.embed import load_embedder
    from bindkit.embed.video import VideoRef, prepare_video

    checkpoints = {
        "qwen3_vl": build_qwen3_vl(work / "qwen3-vl"),
        "qwen2_5_vl": build_qwen2_5_vl(work / "qwen2.5-vl"),
    }
    clips = [write_clip(work / f"clip{i}.mp4", args.seconds, i) for i in range(args.clips)]
    per_1000 = 1000 / len(clips)
    print(
        f"{len(clips)} clips of {args.seconds:g} s, 30 fps, 320x240; "
        f"torch threads {torch.get_num_threads()}"
    )
    print(
        "| family | checkpoint | frames/clip | tokens/clip | cold s/1k | frames s/1k "
        "| cached s/1k |"
    )
    print("|---|---|---|---|---|---|---|")
    for family, kind in (
        ("mllm", "qwen3_vl"),
        ("mllm", "qwen2_5_vl"),
        ("qwen3-vl-embedding", "qwen3_vl"),
        ("vlm2vec", "qwen2_5_vl"),
    ):
        model = load_embedder(
            f"{family}:{checkpoints[kind]}", cache=False, progress=False, dtype="float32"
        )
        model.frame_cache = True
        refs = [VideoRef(c) for c in clips]
        settings = model.video_settings
        start = time.perf_counter()
        prepared = [
            prepare_video(r, settings, model.video_factor, model._frame_resample) for r in refs
        ]
        frames_s = time.perf_counter() - start
        start = time.perf_counter()
        model.embed_videos(refs)  # decode (into the frame cache) + embed
        cold = time.perf_counter() - start
        again = load_embedder(
            f"{family}:{checkpoints[kind]}", cache=False, progress=False, dtype="float32"
        )
        again.frame_cache = True
        start = time.perf_counter()
        again.embed_videos(refs)
        cached = time.perf_counter() - start
        frames = np.mean([len(p.frames) for p in prepared])
        tokens = np.mean([model.video_tokens(r) for r in refs])
        print(
            f"| {family} | tiny {kind} | {frames:.0f} | {tokens:.0f} | {cold * per_1000:.0f} "
            f"| {frames_s * per_1000:.0f} | {cached * per_1000:.0f} |"
        )


if __name__ == "__main__":
    main()
