"""Video inputs: what a video is to an embedder, and the protocol of embedders that take them.

A video is a file (decoded by the backend) or a folder of frame images in name order (the way
MMEB-V2 releases its clips). Embedders that take videos list ``"video"`` in ``modalities`` and
implement :class:`VideoEmbedder`; the others are refused in one line by :func:`require_video`.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from bindkit._io import atomic_write_bytes
from bindkit.embed.images import smart_resize, to_rgb
from bindkit.embed.protocol import Role
from bindkit.errors import BindkitError


@dataclass(frozen=True)
class VideoRef:
    """A video file, or a folder whose image files are the frames in name order.

    ``sample=False`` asks for every frame where the family's reference samples a fixed count
    (VLM2Vec's ``num_frames``): MMEB-V2's MomentSeeker loads its clips with ``load_frames``,
    which keeps them all. Other sampling (fps, frame caps) is unchanged.
    """

    path: Path
    sample: bool = True


VideoInput = str | Path | VideoRef


def as_video_ref(video: VideoInput) -> VideoRef:
    return video if isinstance(video, VideoRef) else VideoRef(Path(video))


@runtime_checkable
class VideoEmbedder(Protocol):
    """An embedder that also maps videos to float32, L2-normalised vectors."""

    def embed_videos(
        self,
        videos: Sequence[VideoInput],
        *,
        role: Role = "query",
        instruction: str | None = None,
    ) -> np.ndarray: ...


def require_video(embedder: object, where: str) -> VideoEmbedder:
    """``embedder`` as a :class:`VideoEmbedder`, or a one-line error naming ``where``."""
    modalities: frozenset[str] = getattr(embedder, "modalities", frozenset())
    if "video" not in modalities or not isinstance(embedder, VideoEmbedder):
        name = getattr(embedder, "spec", type(embedder).__name__)
        raise BindkitError(
            f"{where}: {name} does not embed videos; use an mllm: model "
            "(Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GME, VLM2Vec, Qwen3-VL-Embedding)"
        )
    return embedder


# -- sampling, decoding and resizing (the reference pipelines, restated) ------------------------
#: frame files a folder may hold (VLM2Vec's ``IMAGE_EXTENSIONS`` plus the other common ones)
FRAME_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
FRAME_FACTOR = 2  # qwen-vl-utils: frame counts are multiples of 2 (the temporal patch)


@dataclass(frozen=True)
class VideoSettings:
    """How one family's reference turns a video into frames (see the README's video table).

    Attributes:
        fps, min_frames, max_frames: Video files: frames sampled per second, bounded (qwen-vl-utils
            ``smart_nframes``; indices ``linspace(0, total - 1, n).round()``).
        min_tokens, max_tokens: Per-frame bounds in merged tokens (pixels = tokens x factor^2).
        seq_len: qwen-vl-utils ``MODEL_SEQ_LEN``: without ``total_pixels`` the whole video gets
            ``seq_len x factor^2 x 0.9`` pixels and each frame at most ``total / frames x 2``.
        total_pixels, folder_total_pixels: That budget given outright, for files and folders.
        folder_max_frames: A folder with more frames is first cut to this many with
            ``np.linspace(0, n - 1, k, dtype=int)`` (Qwen3-VL-Embedding ``sample_frames``).
        folder_fps: The frame rate a folder is taken to have (qwen-vl-utils ``sample_fps``).
        num_frames: A fixed frame count (VLM2Vec ``sample_frames``: ``linspace`` truncated);
            replaces ``fps`` sampling for files and folders.
        saved_frames: VLM2Vec's ``save_frames`` cap: a longer file first keeps the frames
            ``floor(i x total / saved)``.
        resize: ``qwen-vl-utils`` (one ``smart_resize`` for the whole video, torch bicubic with
            antialias, as ``fetch_video``) or ``processor`` (each frame by the image processor's
            rule and PIL bicubic within ``min_pixels``..``max_pixels``, as VLM2Vec's processor).
    """

    fps: float = 2.0
    min_frames: int = 4
    max_frames: int = 768
    min_tokens: int = 128
    max_tokens: int = 768
    seq_len: int = 128000
    total_pixels: int | None = None
    folder_total_pixels: int | None = None
    folder_max_frames: int | None = None
    folder_fps: float = 2.0
    num_frames: int | None = None
    saved_frames: int | None = None
    resize: str = "qwen-vl-utils"
    min_pixels: int | None = None
    max_pixels: int | None = None


def _round_by(value: float, factor: int) -> int:
    return round(value / factor) * factor


def smart_nframes(
    total_frames: int, video_fps: float, fps: float, min_frames: int, max_frames: int
) -> int:
    """qwen-vl-utils ``smart_nframes``: ``fps`` frames a second, within the bounds, even.

    Example:
        >>> smart_nframes(16, 8.0, 2.0, 4, 768)  # 2 s at 2 fps = 4 frames
        4
    """
    low = math.ceil(min_frames / FRAME_FACTOR) * FRAME_FACTOR
    high = math.floor(min(max_frames, total_frames) / FRAME_FACTOR) * FRAME_FACTOR
    wanted = total_frames / video_fps * fps
    count = math.floor(min(min(max(wanted, low), high), total_frames) / FRAME_FACTOR) * FRAME_FACTOR
    if not FRAME_FACTOR <= count <= total_frames:
        raise ValueError(f"{total_frames} frames at {video_fps} fps give {count} to sample")
    return count


def linspace_round(start: int, end: int, count: int) -> list[int]:
    """``torch.linspace(start, end, count).round()`` (float32, round half to even)."""
    import torch

    return [int(i) for i in torch.linspace(start, end, count).round().long().tolist()]


def linspace_trunc(length: int, count: int) -> list[int]:
    """``np.linspace(0, length - 1, count, dtype=int)`` (VLM2Vec's and Qwen3-VL-Embedding's)."""
    return [int(i) for i in np.linspace(0, length - 1, count, dtype=int).tolist()]


def file_indices(
    total_frames: int, video_fps: float, settings: VideoSettings, sample: bool = True
) -> list[int]:
    """The frames of a video file each family's reference decodes, in order (``sample=False``:
    every saved frame instead of ``num_frames`` of them)."""
    if settings.num_frames is None:
        count = smart_nframes(
            total_frames, video_fps, settings.fps, settings.min_frames, settings.max_frames
        )
        return linspace_round(0, total_frames - 1, count)
    saved = list(range(total_frames))
    if settings.saved_frames is not None and total_frames > settings.saved_frames:
        step = total_frames / settings.saved_frames
        saved = [math.floor(i * step) for i in range(settings.saved_frames)]
    if not sample:
        return saved
    return [saved[i] for i in vlm2vec_sample(len(saved), settings.num_frames)]


def vlm2vec_sample(length: int, count: int) -> list[int]:
    """VLM2Vec ``process_video_frames``: ``sample_frames``' truncated ``linspace`` positions
    when there are at least ``count`` frames, else every frame (it samples only when
    ``num_frames <= len(frames)``)."""
    if count > length:
        return list(range(length))
    return linspace_trunc(length, count)


def folder_indices(count: int, settings: VideoSettings, sample: bool = True) -> list[int]:
    """Which frames of a folder of ``count`` each reference keeps (before the even padding);
    ``sample=False``: every frame instead of ``num_frames`` of them (VLM2Vec ``load_frames``)."""
    if settings.num_frames is not None:
        return vlm2vec_sample(count, settings.num_frames) if sample else list(range(count))
    if settings.folder_max_frames is not None and count > settings.folder_max_frames:
        return linspace_trunc(count, settings.folder_max_frames)
    return list(range(count))


def frame_bounds(
    frames: int, factor: int, settings: VideoSettings, total_pixels: int | None
) -> tuple[int, float]:
    """qwen-vl-utils ``fetch_video``'s per-frame pixel bounds: at most ``total / frames x 2``
    and ``max_tokens`` tokens' worth, at least 1.05 x the ``min_tokens`` floor.

    Example:
        >>> frame_bounds(4, 28, VideoSettings(), None)  # the per-frame cap wins
        (100352, 602112)
    """
    low = settings.min_tokens * factor * factor
    budget = total_pixels if total_pixels is not None else settings.seq_len * factor * factor * 0.9
    high = max(
        min(settings.max_tokens * factor * factor, budget / frames * FRAME_FACTOR), int(low * 1.05)
    )
    return low, high


def resize_frames(frames: np.ndarray, height: int, width: int) -> np.ndarray:
    """torchvision's tensor ``resize`` (bicubic, antialias) of uint8 ``(T, H, W, 3)`` frames, as
    qwen-vl-utils calls it: float32 ``interpolate``, clamped to 0..255, rounded back to uint8;
    frames already of that size are returned unchanged."""
    import torch

    if frames.shape[1:3] == (height, width):
        return frames
    video = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).to(torch.float32)
    out = torch.nn.functional.interpolate(
        video, size=[height, width], mode="bicubic", align_corners=False, antialias=True
    )
    out = torch.round(out.clamp(min=0, max=255)).to(torch.uint8)
    return np.ascontiguousarray(out.permute(0, 2, 3, 1).numpy())


def list_frames(folder: Path) -> list[Path]:
    """The image files of a frame folder, in natural name order (``frame_2`` before
    ``frame_10``, as VLM2Vec's ``load_frames``)."""

    def natural(name: str) -> list[Any]:
        return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]

    try:
        names = [p for p in folder.iterdir() if p.suffix.lower() in FRAME_SUFFIXES]
    except OSError as exc:
        raise BindkitError(f"{folder}: cannot list frames ({exc.strerror}); check it") from exc
    if not names:
        raise BindkitError(
            f"{folder}: no frame images ({', '.join(FRAME_SUFFIXES)}); extract the frames first"
        )
    return sorted(names, key=lambda p: natural(p.name))


def video_digest(video: VideoInput) -> str:
    """sha256 of a video file's bytes, or of a frame folder's frame files (names and bytes, in
    order): the part of a cache key that says which video it is."""
    ref = as_video_ref(video)
    digest = hashlib.sha256()
    try:
        if ref.path.is_dir():
            for frame in list_frames(ref.path):
                digest.update(frame.name.encode() + b"\0")
                digest.update(hashlib.sha256(frame.read_bytes()).digest())
        else:
            with ref.path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    except FileNotFoundError as exc:
        raise BindkitError(f"{ref.path}: video not found; check the path") from exc
    except OSError as exc:
        raise BindkitError(f"{ref.path}: cannot read video ({exc.strerror}); check it") from exc
    return digest.hexdigest()


@dataclass(frozen=True)
class VideoProbe:
    """What sampling needs to know of a video before decoding it."""

    frames: int
    fps: float
    height: int
    width: int


def _import_av() -> Any:
    try:
        import av
    except ImportError as exc:
        raise BindkitError("video files need PyAV; pip install 'bindkit[mllm]'") from exc
    return av


def probe_file(path: Path) -> VideoProbe:
    """Frame count, average frame rate and size of a video file's first video stream (PyAV)."""
    av = _import_av()

    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            frames = int(stream.frames)
            if frames <= 0:  # no count in the header: count by decoding
                frames = sum(1 for _ in container.decode(stream))
            rate = stream.average_rate or stream.guessed_rate
            return VideoProbe(frames, float(rate or 0), stream.height, stream.width)
    except FileNotFoundError as exc:
        raise BindkitError(f"{path}: video not found; check the path") from exc
    except (av.FFmpegError, IndexError) as exc:
        raise BindkitError(f"{path}: not a readable video ({exc}); replace the file") from exc


def decode_frames(path: Path, indices: Sequence[int]) -> np.ndarray:
    """The frames at ``indices`` (decode order, repeats allowed) as uint8 ``(T, H, W, 3)``."""
    av = _import_av()

    wanted = set(indices)
    found: dict[int, np.ndarray] = {}
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            for position, frame in enumerate(container.decode(stream)):
                if position in wanted:
                    found[position] = frame.to_ndarray(format="rgb24")
                if len(found) == len(wanted):
                    break
    except (av.FFmpegError, IndexError) as exc:
        raise BindkitError(f"{path}: not a readable video ({exc}); replace the file") from exc
    missing = sorted(wanted - set(found))
    if missing:
        raise BindkitError(
            f"{path}: frame {missing[0]} could not be decoded ({len(found)} read); re-encode it"
        )
    return np.stack([found[i] for i in indices])


T = TypeVar("T")


def pad_even(frames: list[T]) -> list[T]:
    """qwen-vl-utils: a frame list of odd length repeats its last frame."""
    return frames + frames[-1:] * (len(frames) % FRAME_FACTOR)


@dataclass(frozen=True)
class PreparedVideo:
    """Frames ready for the patch embedding: uint8 ``(T, H, W, 3)``, already resized.

    ``indices`` are the source frame numbers (positions in a folder), ``fps`` the source frame
    rate (a folder's assumed one), ``sample_fps`` the frames per second actually sampled.
    """

    frames: np.ndarray
    indices: tuple[int, ...]
    fps: float
    sample_fps: float


def prepare_video(
    video: VideoInput, settings: VideoSettings, factor: int, resample_frame: Any = None
) -> PreparedVideo:
    """Decode, sample and resize one video as ``settings``' reference does.

    ``factor`` is the model's patch size x merge size. ``resample_frame(image) -> image`` is the
    per-frame resize of ``resize="processor"`` (the image processor's rule).
    """
    ref = as_video_ref(video)
    if ref.path.is_dir():
        files = list_frames(ref.path)
        keep = folder_indices(len(files), settings, ref.sample)
        pictures = [_open_frame(files[i]) for i in keep]
        if settings.resize == "qwen-vl-utils":
            # fetch_video hands each frame to fetch_image with image_patch_size=factor, so the
            # frames are first fitted to multiples of 2 x factor within its image bounds
            pictures = [_fetch_image_resize(p, 2 * factor) for p in pictures]
            pictures = pad_even(pictures)
        frames = np.stack([np.asarray(p.convert("RGB"), dtype=np.uint8) for p in pictures])
        indices, fps = tuple(range(len(frames))), settings.folder_fps
        if settings.num_frames is not None:
            indices = tuple(keep)
        sample_fps, total = settings.folder_fps, settings.folder_total_pixels
    else:
        info = probe_file(ref.path)
        if info.frames < FRAME_FACTOR or info.fps <= 0:
            raise BindkitError(
                f"{ref.path}: {info.frames} frames at {info.fps} fps; a video needs at least 2"
            )
        picked = file_indices(info.frames, info.fps, settings, ref.sample)
        frames = decode_frames(ref.path, picked)
        indices, fps = tuple(picked), info.fps
        sample_fps = len(picked) / max(info.frames, 1e-6) * info.fps
        total = settings.total_pixels
    if settings.resize == "processor":
        if resample_frame is None:
            raise ValueError("resize='processor' needs resample_frame")
        from PIL import Image

        frames = np.stack([np.asarray(resample_frame(Image.fromarray(f))) for f in frames])
    else:
        low, high = frame_bounds(len(frames), factor, settings, total)
        height, width = smart_resize(frames.shape[1], frames.shape[2], factor, low, high)
        frames = resize_frames(frames, height, width)
    return PreparedVideo(np.ascontiguousarray(frames), indices, float(fps), float(sample_fps))


def _open_frame(path: Path) -> Any:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as handle:
            return to_rgb(handle, alpha_on_white=True)  # qwen-vl-utils to_rgb
    except (UnidentifiedImageError, OSError) as exc:
        raise BindkitError(f"{path}: unreadable frame ({exc}); replace the file") from exc


def _fetch_image_resize(picture: Any, factor: int) -> Any:
    """qwen-vl-utils ``fetch_image``'s resize with its default bounds (4..16,384 tokens)."""
    height, width = smart_resize(
        picture.height, picture.width, factor, 4 * factor * factor, 16384 * factor * factor
    )
    return picture.resize((width, height))  # PIL's default filter (bicubic), as fetch_image


# -- the frame cache ------------------------------------------------------------------------
def frames_dir() -> Path:
    """``$BINDKIT_CACHE_DIR/frames`` (default ``~/.cache/bindkit/frames``)."""
    root = os.environ.get("BINDKIT_CACHE_DIR") or Path.home() / ".cache" / "bindkit"
    return Path(root) / "frames"


def cached_prepare(
    video: VideoInput,
    settings: VideoSettings,
    factor: int,
    key: str,
    resample_frame: Any = None,
    *,
    enabled: bool = True,
) -> PreparedVideo:
    """:func:`prepare_video`, kept on disk under :func:`frames_dir` as ``<key>.npz`` (uint8
    frames plus indices and rates) so that a second run does not decode again."""
    path = frames_dir() / f"{key}.npz"
    if enabled and path.is_file():
        try:
            with np.load(path) as stored:
                return PreparedVideo(
                    stored["frames"],
                    tuple(int(i) for i in stored["indices"]),
                    float(stored["fps"]),
                    float(stored["sample_fps"]),
                )
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            pass  # a damaged entry is decoded again and rewritten
    prepared = prepare_video(video, settings, factor, resample_frame)
    if enabled:
        buffer = io.BytesIO()
        np.savez(
            buffer,
            frames=prepared.frames,
            indices=np.asarray(prepared.indices, dtype=np.int64),
            fps=np.float64(prepared.fps),
            sample_fps=np.float64(prepared.sample_fps),
        )
        atomic_write_bytes(path, buffer.getvalue())
    return prepared


# -- patches --------------------------------------------------------------------------------
def video_patches(
    frames: np.ndarray,
    *,
    patch_size: int,
    merge_size: int,
    temporal_patch_size: int,
    mean: Sequence[float],
    std: Sequence[float],
) -> tuple[Any, tuple[int, int, int]]:
    """The Qwen-VL video processor without its resize: fused rescale-and-normalise
    (``(x - 255 mean) / (255 std)`` in float32), the last frame repeated up to a multiple of the
    temporal patch, and the flat patch layout; returns ``(pixel_values_videos, (t, h, w))``."""
    import torch

    video = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).to(torch.float32)
    scale = 1.0 / (1 / 255)
    mean_t = (torch.tensor(list(mean)) * scale)[:, None, None]
    std_t = (torch.tensor(list(std)) * scale)[:, None, None]
    video = ((video - mean_t) / std_t)[None]
    _, count, channels, height, width = video.shape
    if pad := -count % temporal_patch_size:
        video = torch.cat((video, video[:, -1:].expand(-1, pad, -1, -1, -1)), dim=1)
        count += pad
    grid_t, grid_h, grid_w = count // temporal_patch_size, height // patch_size, width // patch_size
    patches = video.view(
        1,
        grid_t,
        temporal_patch_size,
        channels,
        grid_h // merge_size,
        merge_size,
        patch_size,
        grid_w // merge_size,
        merge_size,
        patch_size,
    ).permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)
    flat = patches.reshape(
        grid_t * grid_h * grid_w, channels * temporal_patch_size * patch_size * patch_size
    )
    return flat, (grid_t, grid_h, grid_w)


def qwen3_timestamps(indices: Sequence[int], fps: float, merge: int = 2) -> list[float]:
    """Qwen3-VL's frame timestamps: ``index / fps``, the last index repeated up to a multiple of
    the temporal patch, each patch the mean of its first and last frame's time."""
    padded = list(indices) + [indices[-1]] * (-len(indices) % merge)
    times = [i / fps for i in padded]
    return [(times[i] + times[i + merge - 1]) / 2 for i in range(0, len(times), merge)]
