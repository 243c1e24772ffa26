"""User-facing errors: each one is a single line that names the culprit and says what to do."""

from __future__ import annotations


class BindkitError(Exception):
    """An error caused by the user's input (a file, field or option), not by a bug.

    The CLI prints ``bindkit: error: <message>`` on one line and exits with status 2.
    """


class VocabularyError(BindkitError):
    """A vocabulary directory is malformed or too small for the requested options."""


class DataFormatError(BindkitError):
    """A data file (e.g. ``saber.jsonl``) cannot be parsed or does not follow its schema."""
