"""The ``+device=`` option: a device torch can use here, or one line that says why not."""

from __future__ import annotations

from bindkit.errors import BindkitError


def check_device(device: str) -> None:
    """Refuse a device string that this machine's torch cannot run on, in one line.

    ``cuda`` on a CPU-only build of torch is the common case (PyPI's default wheel on a
    machine without a GPU, or a CPU pin): the message says to install a CUDA build of torch
    first, as the README's GPU section does.
    """
    try:
        import torch
    except ImportError:  # the backend itself reports the missing extra
        return
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise BindkitError(
            f"device={device!r}: not a torch device; use cpu, cuda, cuda:N or mps"
        ) from None
    if parsed.type == "cuda":
        if torch.version.cuda is None and not torch.cuda.is_available():
            raise BindkitError(
                f"device={device!r}: this torch {torch.__version__} is a CPU-only build; install "
                "a CUDA build of torch first (see the README's GPU section), or use device=cpu"
            )
        count = torch.cuda.device_count()
        if count == 0:
            raise BindkitError(
                f"device={device!r}: torch sees no GPU (CUDA_VISIBLE_DEVICES, the driver); "
                "check nvidia-smi, or use device=cpu"
            )
        if parsed.index is not None and parsed.index >= count:
            raise BindkitError(
                f"device={device!r}: this machine has {count} GPU(s), cuda:0 to cuda:{count - 1}"
            )
    elif parsed.type == "mps" and not torch.backends.mps.is_available():
        raise BindkitError(f"device={device!r}: MPS is not available here; use device=cpu")
    elif parsed.type not in ("cpu", "cuda", "mps", "xpu"):
        raise BindkitError(f"device={device!r}: bindkit runs on cpu, cuda[:N] or mps")
