"""Argument types the benchmark drivers share."""

from __future__ import annotations

import argparse


def positive(text: str) -> int:
    """An argparse type: an integer of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: use 1 or more")
    return value
