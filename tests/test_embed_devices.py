"""``+device=``: a device this machine's torch cannot use is one line, before any weights load."""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

from bindkit.embed import load_embedder  # noqa: E402
from bindkit.embed.devices import check_device  # noqa: E402
from bindkit.errors import BindkitError  # noqa: E402


def _machine(monkeypatch: pytest.MonkeyPatch, cuda_build: str | None, gpus: int) -> None:
    monkeypatch.setattr(torch.version, "cuda", cuda_build)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)


@pytest.mark.parametrize(
    ("device", "cuda_build", "gpus", "message"),
    [
        ("cuda", None, 0, "CPU-only build; install a CUDA build of torch first"),
        ("cuda:0", "12.4", 0, "torch sees no GPU"),
        ("cuda:2", "12.4", 2, "this machine has 2 GPU(s), cuda:0 to cuda:1"),
        ("tpu", "12.4", 2, "not a torch device"),
        ("meta", "12.4", 2, "bindkit runs on cpu, cuda[:N] or mps"),
    ],
)
def test_unusable_devices_are_one_line(
    monkeypatch: pytest.MonkeyPatch, device: str, cuda_build: str | None, gpus: int, message: str
) -> None:
    _machine(monkeypatch, cuda_build, gpus)
    with pytest.raises(BindkitError, match=re.escape(message)):
        check_device(device)


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_usable_devices_pass(monkeypatch: pytest.MonkeyPatch, device: str) -> None:
    _machine(monkeypatch, "12.4", 2)
    check_device(device)
    check_device("cpu")


def test_load_embedder_checks_the_device_before_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, None, 0)
    with pytest.raises(BindkitError, match="CPU-only build"):
        load_embedder("st:/no/such/model+device=cuda", cache=False)
