"""Video inputs of the multimodal-LLM embedders on tiny random Qwen2-VL / Qwen2.5-VL / Qwen3-VL
checkpoints and generated clips, against each family's reference pipeline.

The references run here: qwen-vl-utils ``fetch_video`` itself (``smart_nframes``, the
``linspace(...).round()`` indices, the frame-list path and the per-frame pixel budget), imported
with stand-in torchvision modules (torchvision does not import beside the CPU torch of these
machines) whose two functions it calls are given the definitions torchvision has:
``io.read_video`` (every frame, decoded with PyAV as torchvision does) and the tensor
``transforms.functional.resize`` (same size: unchanged; else float32 bicubic ``interpolate`` with
antialias, clamped, rounded). VLM2Vec's and Qwen3-VL-Embedding's ``sample_frames`` and the
video processor's ``patchify`` are verbatim copies below. The HF video processor itself needs
torchvision, so the pixel tensors are compared with that copy and the prompt expansion with the
transformers 5.24 ``replace_video_token`` rules restated on token ids.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
av = pytest.importorskip("av")
from PIL import Image  # noqa: E402

from bindkit.embed import load_embedder  # noqa: E402
from bindkit.embed import video as video_module  # noqa: E402
from bindkit.embed.backends.mllm import VIDEO_SETTINGS  # noqa: E402
from bindkit.embed.video import (  # noqa: E402
    VideoRef,
    VideoSettings,
    file_indices,
    folder_indices,
    frame_bounds,
    qwen3_timestamps,
    require_video,
    smart_nframes,
    video_patches,
)
from bindkit.errors import BindkitError  # noqa: E402

pytestmark = pytest.mark.usefixtures("float32_exact")


def load(spec: str, **options: Any) -> Any:
    options.setdefault("dtype", "float32")
    return load_embedder(spec, cache=False, progress=False, **options)


def frame(i: int, width: int = 64, height: int = 48) -> np.ndarray:
    """Moving coloured shapes: a red box sliding right, a green bar sliding left."""
    img = np.zeros((height, width, 3), np.uint8)
    img[:, :, 2] = 40
    img[10:30, 3 * i : 3 * i + 12, 0] = 230
    img[30:44, max(0, 50 - 2 * i) : 60 - 2 * i, 1] = 200
    return img


def write_clip(
    path: Path, count: int = 16, rate: int = 8, width: int = 64, height: int = 48
) -> Path:
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=rate)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(count):
            picture = av.VideoFrame.from_ndarray(frame(i, width, height), format="rgb24")
            for packet in stream.encode(picture):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def write_folder(path: Path, count: int = 11) -> Path:
    path.mkdir()
    for i in range(count):  # frame_2 sorts before frame_10: natural order
        Image.fromarray(frame(i)).save(path / f"frame_{i}.png")
    return path


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_clip(tmp_path_factory.mktemp("clips") / "shapes.mp4")


@pytest.fixture(scope="module")
def frames(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_folder(tmp_path_factory.mktemp("frames") / "shapes")


# -- the references ---------------------------------------------------------------------------
def _read_video(path: str, start_pts: float = 0.0, end_pts: Any = None, **_: Any) -> Any:
    """torchvision.io.read_video: every frame (PyAV), TCHW uint8, and the stream's rate."""
    import torch

    with av.open(path) as container:
        stream = container.streams.video[0]
        rate = float(stream.average_rate)
        pictures = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
    video = torch.from_numpy(np.stack(pictures)).permute(0, 3, 1, 2)
    return video, None, {"video_fps": rate}


def _resize(img: Any, size: list[int], interpolation: Any = None, antialias: bool = True) -> Any:
    """torchvision.transforms.functional.resize on a uint8 tensor (v1: F_t.resize)."""
    import torch

    if list(img.shape[-2:]) == list(size):
        return img
    out = torch.nn.functional.interpolate(
        img.to(torch.float32), size=size, mode="bicubic", align_corners=False, antialias=antialias
    )
    return torch.round(out.clamp(min=0, max=255)).to(img.dtype)


@pytest.fixture(scope="module")
def vision_process() -> Any:
    if importlib.util.find_spec("qwen_vl_utils") is None:
        pytest.skip("qwen-vl-utils is not installed (pip install qwen-vl-utils)")
    from bindkit.embed.backends.open_clip import stand_in_torchvision

    with stand_in_torchvision():
        from qwen_vl_utils import vision_process
    patch = pytest.MonkeyPatch()
    patch.setattr(vision_process, "torchvision", types.SimpleNamespace(__version__="0.28.0"))
    patch.setattr(vision_process, "io", types.SimpleNamespace(read_video=_read_video))
    functional = types.SimpleNamespace(resize=_resize)
    patch.setattr(vision_process, "transforms", types.SimpleNamespace(functional=functional))
    patch.setattr(vision_process, "get_video_reader_backend", lambda: "torchvision")
    yield vision_process
    patch.undo()


def vlm2vec_sample_frames(frames, num_segments):  # type: ignore[no-untyped-def]
    # verbatim: VLM2Vec src/utils/vision_utils/vision_utils.py
    duration = len(frames)
    frame_id_array = np.linspace(0, duration - 1, num_segments, dtype=int)
    frame_id_list = frame_id_array.tolist()
    last_frame_id = frame_id_list[-1]

    sampled_frames = []
    for frame_idx in frame_id_list:
        try:
            single_frame_path = frames[frame_idx]
        except:  # noqa: E722
            break
        sampled_frames.append(single_frame_path)
    # If total frame numbers is less than num_segments, append the last images to achieve
    while len(sampled_frames) < num_segments:
        sampled_frames.append(frames[last_frame_id])
    return sampled_frames


def vlm2vec_process_video_frames(frames, num_frames=None):  # type: ignore[no-untyped-def]
    # VLM2Vec vision_utils.py process_video_frames after its load_frames (frames given here)
    if num_frames == 0:
        return []
    if num_frames is None:
        return frames
    elif num_frames and num_frames <= len(frames):
        frames = vlm2vec_sample_frames(frames, num_segments=num_frames)
    return frames


def qwen3_embedding_sample_frames(frames, max_segments):  # type: ignore[no-untyped-def]
    # verbatim: Qwen3-VL-Embedding src/models/qwen3_vl_embedding.py
    duration = len(frames)
    if duration <= max_segments:
        return frames

    frame_id_array = np.linspace(0, duration - 1, max_segments, dtype=int)
    frame_id_list = frame_id_array.tolist()
    sampled_frames = [frames[frame_idx] for frame_idx in frame_id_list]
    return sampled_frames


def patchify(videos, patch_size, merge_size, temporal_patch_size):  # type: ignore[no-untyped-def]
    # verbatim: transformers 5.24 Qwen2VLVideoProcessor.patchify (the same in Qwen3VL)
    import torch

    batch_size, num_frames, channel, resized_height, resized_width = videos.shape

    if pad := -num_frames % temporal_patch_size:
        repeats = videos[:, -1:].expand(-1, pad, -1, -1, -1)
        videos = torch.cat((videos, repeats), dim=1)
        num_frames += pad

    grid_t = num_frames // temporal_patch_size
    grid_h, grid_w = resized_height // patch_size, resized_width // patch_size

    patches = videos.view(
        batch_size,
        grid_t,
        temporal_patch_size,
        channel,
        grid_h // merge_size,
        merge_size,
        patch_size,
        grid_w // merge_size,
        merge_size,
        patch_size,
    )
    patches = patches.permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
    flatten_patches = patches.reshape(
        batch_size,
        grid_t * grid_h * grid_w,
        channel * temporal_patch_size * patch_size * patch_size,
    )

    return flatten_patches, grid_t, grid_h, grid_w


def processor_pixels(video: Any, mean: list[float], std: list[float], proc: Any) -> Any:
    """The video processor after its (here identity) resize: the fused rescale-and-normalize of
    transformers' TorchvisionBackend, then patchify."""
    import torch

    mean_t = torch.tensor(mean) * (1.0 / (1 / 255))
    std_t = torch.tensor(std) * (1.0 / (1 / 255))
    normalized = (video.to(torch.float32) - mean_t[:, None, None]) / std_t[:, None, None]
    flat, t, h, w = patchify(
        normalized[None], proc.patch_size, proc.merge_size, proc.temporal_patch_size
    )
    return flat[0], (t, h, w)


# -- sampling: hand-computed and against qwen-vl-utils ----------------------------------------
def test_frame_indices_by_hand() -> None:
    # 16 frames at 8 fps = 2 s; 2 fps gives 4 frames: linspace(0, 15, 4) = 0, 5, 10, 15
    assert file_indices(16, 8.0, VideoSettings()) == [0, 5, 10, 15]
    # 100 frames at 25 fps = 4 s: 8 frames, linspace(0, 99, 8) = 0, 14.14, 28.29, 42.43, ...
    assert file_indices(100, 25.0, VideoSettings()) == [0, 14, 28, 42, 57, 71, 85, 99]
    # Qwen3-VL-Embedding: 1 fps, at most 64: a 200 s clip at 30 fps gives 64 frames
    assert len(file_indices(6000, 30.0, VIDEO_SETTINGS["qwen3-vl-embedding"])) == 64
    # the minimum of 4 wins for a 1 s clip at 1 fps; an odd count rounds down to even
    assert smart_nframes(30, 30.0, 1.0, 4, 64) == 4
    assert smart_nframes(75, 25.0, 2.0, 4, 768) == 6
    # VLM2Vec: 100 frames saved as floor(i x 100/64), then 8 by truncated linspace of 64
    saved = [math.floor(i * 100 / 64) for i in range(64)]
    positions = [0, 9, 18, 27, 36, 45, 54, 63]
    assert file_indices(100, 25.0, VIDEO_SETTINGS["vlm2vec"]) == [saved[p] for p in positions]
    # a 5-frame folder for VLM2Vec: every frame (process_video_frames samples only when there
    # are at least 8; sample_frames alone would repeat them: 0, 0, 1, 1, 2, 2, 3, 4)
    assert folder_indices(5, VIDEO_SETTINGS["vlm2vec"]) == [0, 1, 2, 3, 4]
    # a 5-frame file: every saved frame too
    assert file_indices(5, 25.0, VIDEO_SETTINGS["vlm2vec"]) == [0, 1, 2, 3, 4]
    # MomentSeeker's load_frames (VideoRef sample=False): every frame, every saved frame
    assert folder_indices(20, VIDEO_SETTINGS["vlm2vec"], sample=False) == list(range(20))
    assert file_indices(100, 25.0, VIDEO_SETTINGS["vlm2vec"], sample=False) == saved


@pytest.mark.parametrize(
    ("total", "rate", "fps", "low", "high"),
    [
        (16, 8.0, 2.0, 4, 768),
        (100, 25.0, 2.0, 4, 768),
        (6000, 30.0, 1.0, 4, 64),
        (9, 3.0, 2.0, 4, 768),
        (301, 29.97, 1.0, 4, 64),
    ],
)
def test_indices_equal_qwen_vl_utils(
    vision_process: Any, total: int, rate: float, fps: float, low: int, high: int
) -> None:
    import torch

    ele = {"fps": fps, "min_frames": low, "max_frames": high}
    count = vision_process.smart_nframes(ele, total_frames=total, video_fps=rate)
    expected = torch.linspace(0, total - 1, count).round().long().tolist()
    settings = VideoSettings(fps=fps, min_frames=low, max_frames=high)
    assert file_indices(total, rate, settings) == expected


@pytest.mark.parametrize("count", [1, 3, 5, 7, 8, 9, 64, 65, 200])
def test_folder_sampling_equals_the_references(count: int) -> None:
    names = list(range(count))
    vlm2vec = VIDEO_SETTINGS["vlm2vec"]
    assert folder_indices(count, vlm2vec) == vlm2vec_process_video_frames(names, 8)
    assert folder_indices(count, vlm2vec, sample=False) == vlm2vec_process_video_frames(names)
    q3 = VIDEO_SETTINGS["qwen3-vl-embedding"]
    assert folder_indices(count, q3) == qwen3_embedding_sample_frames(names, 64)


def test_per_frame_pixel_budget() -> None:
    # qwen-vl-utils: at most min(768 tokens, total / frames x 2), at least 1.05 x the minimum
    default = VideoSettings()
    assert frame_bounds(4, 28, default, None) == (100352, 602112)  # the 768-token cap
    # 768 frames share 128,000 x 28^2 x 0.9 = 90,316,800 pixels: 235,200 each
    assert frame_bounds(768, 28, default, None) == (100352, 235200.0)
    assert frame_bounds(2000, 28, default, None) == (100352, 105369)  # the 1.05 floor
    q3 = VIDEO_SETTINGS["qwen3-vl-embedding"]
    assert q3 is not None  # a 64-frame folder shares 10 x 768 x 32^2 = 7,864,320
    assert frame_bounds(64, 32, q3, q3.folder_total_pixels) == (131072, 245760.0)


def test_qwen3_timestamps() -> None:
    # frames 0, 5, 10, 15 at 8 fps: patches (0, 5) and (10, 15) -> 0.3125 s and 1.5625 s
    assert qwen3_timestamps([0, 5, 10, 15], 8.0) == [0.3125, 1.5625]
    assert qwen3_timestamps([0, 1, 2], 2.0) == [0.25, 1.0]  # the last frame repeated


def test_patches_equal_the_video_processor_layout() -> None:
    import torch

    rng = np.random.default_rng(0)
    pictures = (rng.random((5, 56, 84, 3)) * 255).astype(np.uint8)
    mean, std = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
    proc = types.SimpleNamespace(patch_size=14, merge_size=2, temporal_patch_size=2)
    expected, grid = processor_pixels(
        torch.from_numpy(pictures).permute(0, 3, 1, 2), mean, std, proc
    )
    flat, got_grid = video_patches(
        pictures, patch_size=14, merge_size=2, temporal_patch_size=2, mean=mean, std=std
    )
    assert got_grid == grid == (3, 4, 6)
    assert torch.equal(flat, expected)


# -- frames against fetch_video ---------------------------------------------------------------
@pytest.mark.parametrize("patch", [14, 16])
def test_file_frames_equal_fetch_video(vision_process: Any, clip: Path, patch: int) -> None:
    for settings, ele in (
        (VideoSettings(), {}),
        (VIDEO_SETTINGS["qwen3-vl-embedding"], {"fps": 1, "max_frames": 64}),
    ):
        assert settings is not None
        (video, meta), sample_fps = vision_process.fetch_video(
            {"video": str(clip), **ele},
            image_patch_size=patch,
            return_video_sample_fps=True,
            return_video_metadata=True,
        )
        got = video_module.prepare_video(VideoRef(clip), settings, 2 * patch)
        assert got.indices == tuple(meta["frames_indices"].tolist())
        assert got.fps == meta["fps"] and got.sample_fps == pytest.approx(sample_fps)
        np.testing.assert_array_equal(got.frames, video.permute(0, 2, 3, 1).numpy())


def test_folder_frames_equal_fetch_video(vision_process: Any, frames: Path) -> None:
    paths = sorted(frames.iterdir(), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
    q3 = VIDEO_SETTINGS["qwen3-vl-embedding"]
    assert q3 is not None
    for settings, ele in (
        (VideoSettings(), {"video": [str(p) for p in paths]}),
        (q3, {"video": [str(p) for p in paths], "total_pixels": q3.folder_total_pixels}),
    ):
        (video, meta), sample_fps = vision_process.fetch_video(
            ele, image_patch_size=16, return_video_sample_fps=True, return_video_metadata=True
        )
        got = video_module.prepare_video(VideoRef(frames), settings, 32)
        assert got.sample_fps == sample_fps == 2.0
        assert len(got.frames) == 12  # 11 frames, the last repeated to an even count
        assert list(got.indices) == meta["frames_indices"] and got.fps == meta["fps"]
        np.testing.assert_array_equal(got.frames, video.permute(0, 2, 3, 1).numpy())


# -- the embedders against the reference forward ------------------------------------------------
def reference_inputs(
    model: Any, prompt_ids: list[int], video: Any, meta: dict[str, Any], sample_fps: float
) -> tuple[dict[str, Any], np.ndarray]:
    """The family's pipeline on reference pieces: processor pixels, the processor's token
    expansion (transformers 5.24), the model's forward, last-token pooling (flip + argmax)."""
    import torch

    proc = model.image_processor
    mean, std = model._video_norm()
    pixels, (t, h, w) = processor_pixels(video, mean, std, proc)
    per_frame = h * w // proc.merge_size**2
    pad = model.video_token_id
    at = prompt_ids.index(pad)
    if model.model_type == "qwen3_vl":
        indices = list(meta["frames_indices"])
        indices = [int(i) for i in indices]
        stamps = qwen3_timestamps(indices, meta["fps"])
        block: list[int] = []
        for i in range(t):
            block += model.tokenizer.encode(f"<{stamps[i]:.1f} seconds>", add_special_tokens=False)
            block += [model.tokenizer.convert_tokens_to_ids("<|vision_start|>")]
            block += [pad] * per_frame
            block += [model.tokenizer.convert_tokens_to_ids("<|vision_end|>")]
    else:
        block = [pad] * (t * per_frame)
    ids = torch.tensor([prompt_ids[:at] + block + prompt_ids[at + 1 :]])
    mask = torch.ones_like(ids)
    extra: dict[str, Any] = {
        "pixel_values_videos": pixels,
        "video_grid_thw": torch.tensor([[t, h, w]]),
    }
    if model.positions == "1d":
        extra["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
    elif model._takes_mm_types:
        extra["mm_token_type_ids"] = 2 * (ids == pad).long()
    if model.model_type == "qwen2_5_vl" and model.positions != "1d":
        extra["second_per_grid_ts"] = torch.tensor([proc.temporal_patch_size / sample_fps])
    with torch.inference_mode():
        hidden = model.model(input_ids=ids, attention_mask=mask, **extra).last_hidden_state
    col = mask.shape[1] - mask.flip(dims=[1]).argmax(dim=1) - 1
    pooled = torch.nn.functional.normalize(hidden[torch.arange(1), col], dim=-1)
    return {"input_ids": ids, **extra}, pooled.numpy()


CASES = [
    pytest.param("mllm", "tiny_qwen2_vl", marks=pytest.mark.slow),
    pytest.param("mllm", "tiny_qwen2_5_vl", marks=pytest.mark.slow),
    ("mllm", "tiny_qwen3_vl"),
    pytest.param("qwen3-vl-embedding", "tiny_qwen3_vl", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("family", "checkpoint"), CASES)
def test_vectors_equal_the_reference_pipeline(
    vision_process: Any, clip: Path, family: str, checkpoint: str, request: pytest.FixtureRequest
) -> None:
    import torch

    model = load(f"{family}:{request.getfixturevalue(checkpoint)}")
    assert "video" in model.modalities
    settings = VIDEO_SETTINGS[family]
    assert settings is not None
    ele = {"fps": settings.fps, "max_frames": settings.max_frames} if family != "mllm" else {}
    (video, meta), sample_fps = vision_process.fetch_video(
        {"video": str(clip), **ele},
        image_patch_size=model.image_processor.patch_size,
        return_video_sample_fps=True,
        return_video_metadata=True,
    )
    video = video.round().to(dtype=torch.uint8)
    if family == "qwen3-vl-embedding":
        messages = [
            {"role": "system", "content": [{"type": "text", "text": "Find the clip."}]},
            {"role": "user", "content": [{"type": "video"}]},
        ]
        text = model.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        instruction: str | None = "Find the clip"
    else:
        text = model.render(None, False, "query", None, video=True)
        instruction = None
    prompt_ids = model.tokenizer.encode(text, add_special_tokens=False)
    reference, expected = reference_inputs(model, prompt_ids, video, meta, sample_fps)
    ref = VideoRef(clip)
    batch = model.collate(
        [(ref, model.video_key(ref))], modality="video", role="query", instruction=instruction
    )
    assert batch["input_ids"].tolist() == reference["input_ids"].tolist()
    for name in ("pixel_values_videos", "video_grid_thw", "position_ids", "mm_token_type_ids"):
        assert (name in batch) == (name in reference), name
        if name in batch:
            assert bool((batch[name] == reference[name]).all()), name
    if "second_per_grid_ts" in reference:
        np.testing.assert_allclose(batch["second_per_grid_ts"], reference["second_per_grid_ts"])
    got = model.embed_videos([clip], instruction=instruction)
    np.testing.assert_allclose(got, expected, atol=1e-5)


# -- VLM2Vec, GME, and the dual encoders ------------------------------------------------------
def test_vlm2vec_video_prompt_frames_and_positions(tiny_qwen2_vl: Path, frames: Path) -> None:
    model = load(f"vlm2vec:{tiny_qwen2_vl}")
    assert model.render(None, False, "document", None, video=True) == (
        "<|video_pad|> Represent the given video."
    )
    assert model.render("a kite", False, "query", "Find the action.", video=True) == (
        "<|video_pad|> Find the action. a kite"
    )
    prepared = model.prepare_video(VideoRef(frames), model.video_key(VideoRef(frames)))
    assert prepared.indices == tuple(vlm2vec_sample_frames(list(range(11)), 8))
    # each frame by the processor's rule, smart_resize(48, 64, 14, 3136, 1003520): rounding
    # gives 42 x 70 = 2,940 < 3,136 pixels, so both sides grow by sqrt(3136 / 3072) and round
    # up: ceil(3.46) x 14 = 56, ceil(4.62) x 14 = 70
    assert prepared.frames.shape == (8, 56, 70, 3)
    batch = model.collate([prepared], modality="video", role="query", instruction=None)
    mask = batch["attention_mask"]
    assert bool((batch["position_ids"] == (mask.cumsum(-1) - 1).clamp(min=0)).all())
    assert model.embed_videos([frames]).shape == (1, 32)


def test_vlm2vec_short_folders_and_every_frame(tiny_qwen2_vl: Path, frames: Path) -> None:
    """Fewer than 8 frames: all of them (process_video_frames); ``VideoRef(sample=False)``:
    all 11 (MomentSeeker's load_frames), under a key of its own."""
    model = load(f"vlm2vec:{tiny_qwen2_vl}")
    names = vlm2vec_load_frames(frames)
    every = VideoRef(frames, sample=False)
    assert model.video_key(every) != model.video_key(VideoRef(frames))
    prepared = model.prepare_video(every, model.video_key(every))
    assert prepared.indices == tuple(range(len(names))) == tuple(range(11))
    assert model.video_tokens(every) > model.video_tokens(VideoRef(frames))
    short = frames.parent / "short"
    short.mkdir()
    for name in names[:5]:
        (short / Path(name).name).write_bytes(Path(name).read_bytes())
    kept = model.prepare_video(VideoRef(short), model.video_key(VideoRef(short)))
    assert kept.indices == (0, 1, 2, 3, 4)
    assert len(vlm2vec_process_video_frames(vlm2vec_load_frames(short), 8)) == 5


def test_vlm2vec_uses_a_composed_instruction_exactly(tiny_qwen2_vl: Path, frames: Path) -> None:
    """MMEB-V2 hands VLM2Vec its loaders' exact strings (``Composed``): the prompt, its cache
    key and the token ids keep every space and newline; another format gets the plain text."""
    from bindkit.embed.prompts import Composed

    model = load(f"vlm2vec:{tiny_qwen2_vl}")
    inst = "Recognize the breakfast type that the person is cooking in the video."
    composed = Composed(inst, " " + inst + " ")
    assert model.render(None, False, "query", composed, video=True) == (
        "<|video_pad|> " + inst + " "
    )
    assert model.prompt_key("video", "query", composed) != model.prompt_key("video", "query", inst)
    page = Composed("Represent the given image.", "\nRepresent the given image.")
    assert model.render(None, True, "document", page) == "<|image_pad|>\nRepresent the given image."
    ref = VideoRef(frames)
    batch = model.collate(
        [(ref, model.video_key(ref))], modality="video", role="query", instruction=composed
    )
    ids = [int(i) for i in batch["input_ids"][0] if int(i) != model.tokenizer.pad_token_id]
    assert model.tokenizer.decode(ids).endswith("in the video. ")
    generic = load(f"mllm:{tiny_qwen2_vl}")
    assert generic.render(None, True, "document", page) == generic.render(
        None, True, "document", "Represent the given image."
    )


def test_gme_and_dual_encoders_refuse_videos(tiny_qwen2_vl: Path, clip: Path) -> None:
    gme = load(f"gme:{tiny_qwen2_vl}")
    assert "video" not in gme.modalities
    with pytest.raises(BindkitError, match="does not embed videos"):
        require_video(gme, "mmeb-v2")
    with pytest.raises(BindkitError, match="cannot embed videos"):
        gme.embed_videos([clip])
    for spec in ("bow:", "builtin:tiny-clip"):
        model = load_embedder(spec, cache=False, progress=False)
        with pytest.raises(BindkitError, match=r"mmeb-v2: .* does not embed videos"):
            require_video(model, "mmeb-v2")
        with pytest.raises(BindkitError, match="cannot embed videos"):
            model.embed_videos([clip])


@pytest.mark.slow
def test_sentence_transformers_refuses_videos(clip: Path) -> None:
    pytest.importorskip("sentence_transformers")
    model = load_embedder("st:default", cache=False, progress=False)
    with pytest.raises(BindkitError, match="does not embed videos"):
        require_video(model, "mmeb-v2")


# -- keys, the frame cache, batches -------------------------------------------------------------
def test_video_keys_follow_content_and_sampling(
    tiny_qwen3_vl: Path, clip: Path, tmp_path: Path
) -> None:
    model = load(f"mllm:{tiny_qwen3_vl}")
    key = model.video_key(VideoRef(clip))
    assert model.video_key(VideoRef(clip)) == key
    other = write_clip(tmp_path / "other.mp4", count=18)
    assert model.video_key(VideoRef(other)) != key
    embedding = load(f"qwen3-vl-embedding:{tiny_qwen3_vl}")  # same weights, fps 1
    assert embedding.video_key(VideoRef(clip)) != key
    model.video_settings = VideoSettings(fps=1.0)
    assert model.video_key(VideoRef(clip)) != key
    # the prompt is the cache's other half: modality, instruction
    assert model.prompt_key("video", "query", None) != model.prompt_key("image", "query", None)
    assert embedding.prompt_key("video", "query", "Find the clip") == (
        "<|im_start|>system\nFind the clip.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|video_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n"
    )


def test_text_and_image_identity_is_unchanged(tiny_qwen2_vl: Path) -> None:
    """Existing cache entries stay valid: nothing about videos enters describe() or the
    text/image prompt keys."""
    model = load(f"mllm:{tiny_qwen2_vl}")
    description = model.describe()
    assert sorted(description) == [
        "adapter",
        "backend",
        "chat_template",
        "dim",
        "dtype",
        "images",
        "layout",
        "max_length",
        "model",
        "pooling",
        "positions",
        "trailing_newline",
        "weights",
    ]
    assert sorted(description["images"]) == [
        "alpha_on_white",
        "exif",
        "longest_edge",
        "mean",
        "merge_size",
        "patch_size",
        "processor_resizes",
        "resample",
        "shortest_edge",
        "square",
        "stages",
        "std",
        "temporal_patch_size",
    ]
    assert "video" not in json.dumps(description) and "fps" not in json.dumps(description)
    assert model.prompt_key("image", "query", None) == model.render(None, True, "query", None)
    assert "video_pad" not in model.prompt_key("image", "document", None)


@pytest.mark.slow
def test_frames_are_decoded_once(
    tiny_qwen2_vl: Path, clip: Path, frames: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    decode = video_module.decode_frames

    def counted(path: Path, indices: Any) -> np.ndarray:
        calls.append(len(indices))
        return decode(path, indices)

    monkeypatch.setattr(video_module, "decode_frames", counted)
    model = load(f"mllm:{tiny_qwen2_vl}")
    model.frame_cache = True
    first = model.embed_videos([clip, frames])
    assert calls == [4]
    stored = list(video_module.frames_dir().glob("*.npz"))
    assert len(stored) >= 2
    again = load(f"mllm:{tiny_qwen2_vl}")  # a new run: no embedding cache, frames on disk
    again.frame_cache = True
    np.testing.assert_allclose(again.embed_videos([clip, frames]), first, atol=1e-6)
    assert calls == [4]
    uncached = load(f"mllm:{tiny_qwen2_vl}")
    uncached.frame_cache = False
    uncached.embed_videos([clip])
    assert calls == [4, 4]


@pytest.mark.slow
def test_batches_are_sized_by_tokens(
    tiny_qwen3_vl: Path, clip: Path, frames: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = load(f"mllm:{tiny_qwen3_vl}", batch_size=8)
    sizes: list[int] = []
    collate = model.collate

    def counted(inputs: Any, **options: Any) -> Any:
        sizes.append(len(inputs))
        return collate(inputs, **options)

    monkeypatch.setattr(model, "collate", counted)
    videos = [clip, frames, clip]
    ref = VideoRef(clip)
    prepared = model.prepare_video(ref, model.video_key(ref))
    t, h, w = (
        len(prepared.frames) // 2,
        prepared.frames.shape[1] // 16,
        prepared.frames.shape[2] // 16,
    )
    assert model.video_tokens(ref) == t * h * w // 4  # frames x tokens per frame (merge 2)
    model.video_batch_tokens = 10**6
    together = model.embed_videos(videos)
    assert sizes == [2]  # two distinct videos, one batch
    model.video_batch_tokens = 1
    sizes.clear()
    one_by_one = model.embed_videos(videos)
    assert sizes == [1, 1]
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    np.testing.assert_allclose(together[0], together[2])


def test_unreadable_videos_fail_in_one_line(tiny_qwen3_vl: Path, tmp_path: Path) -> None:
    model = load(f"mllm:{tiny_qwen3_vl}")
    with pytest.raises(BindkitError, match=r"missing\.mp4: video not found; check the path"):
        model.embed_videos([tmp_path / "missing.mp4"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(BindkitError, match=r"empty: no frame images .*extract the frames first"):
        model.embed_videos([tmp_path / "empty"])
    (tmp_path / "junk.mp4").write_bytes(b"not a video")
    with pytest.raises(BindkitError, match=r"junk\.mp4: not a readable video .*replace the file"):
        model.embed_videos([tmp_path / "junk.mp4"])


def vlm2vec_load_frames(frames_dir: Path) -> list[str]:
    """VLM2Vec ``load_frames``: the frame files in natural order (restated)."""

    def natural_sort_key(filename: str) -> list[Any]:
        return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", filename)]

    names = sorted((p.name for p in frames_dir.iterdir()), key=natural_sort_key)
    return [
        str(frames_dir / n) for n in names if Path(n).suffix.lower() in (".jpg", ".jpeg", ".png")
    ]


@pytest.mark.slow
def test_vlm2vec_vectors_equal_the_reference_pipeline(tiny_qwen2_vl: Path, frames: Path) -> None:
    """MMEB-V2's folder path: load_frames, sample_frames(8), the Qwen2-VL processor's per-frame
    resize (transformers' smart_resize within 3,136..1,003,520 and image_transforms.resize,
    bicubic), normalise + patchify, the bare ``<|video_pad|>`` expanded, 1-D positions, the last
    token."""
    import torch
    from transformers.image_transforms import resize
    from transformers.image_utils import PILImageResampling
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    model = load(f"vlm2vec:{tiny_qwen2_vl}")
    proc = model.image_processor
    paths = vlm2vec_sample_frames(vlm2vec_load_frames(frames), 8)
    pictures = []
    for path in paths:
        array = np.asarray(Image.open(path).convert("RGB"))
        size = smart_resize(
            array.shape[0], array.shape[1], proc.patch_size * proc.merge_size, 3136, 1003520
        )
        pictures.append(resize(array, size, resample=PILImageResampling.BICUBIC))
    video = torch.from_numpy(np.stack(pictures)).permute(0, 3, 1, 2)
    text = "<|video_pad|> Find the action."
    prompt_ids = model.tokenizer.encode(text, add_special_tokens=False)
    meta = {"frames_indices": list(range(8)), "fps": 2.0}
    reference, expected = reference_inputs(model, prompt_ids, video, meta, 2.0)
    ref = VideoRef(frames)
    batch = model.collate(
        [(ref, model.video_key(ref))],
        modality="video",
        role="query",
        instruction="Find the action.",
    )
    for name in ("input_ids", "pixel_values_videos", "video_grid_thw", "position_ids"):
        assert bool((batch[name] == reference[name]).all()), name
    assert "mm_token_type_ids" not in batch and "second_per_grid_ts" not in batch
    got = model.embed_videos([frames], instruction="Find the action.")
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_without_pyav_one_line(clip: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "av", None)  # import av raises ImportError
    with pytest.raises(BindkitError, match=r"need PyAV; pip install 'bindkit\[mllm\]'"):
        video_module.probe_file(clip)


def test_a_frame_folder_digest_follows_every_frame_s_bytes(tmp_path: Path) -> None:
    """A frame folder's cache key reads its frames' bytes, not only their names."""
    from bindkit.embed.video import video_digest

    folders = []
    for name, value in (("a", 10), ("b", 10), ("c", 200)):
        folder = tmp_path / name
        folder.mkdir()
        for i in range(3):
            shade = value if i == 2 else 50
            Image.new("RGB", (8, 8), (shade, shade, shade)).save(folder / f"{i:03d}.png")
        folders.append(video_digest(folder))
    assert folders[0] == folders[1] and folders[0] != folders[2]
