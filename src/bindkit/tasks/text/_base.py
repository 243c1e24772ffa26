"""What the one-file text tasks share: ``--data`` is required, the file's stem names the data and
its bytes identify it."""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from bindkit._io import sha256_file
from bindkit.errors import DataFormatError
from bindkit.tasks.base import Dataset, Task


class TextFileTask(Task):
    """A benchmark whose data is one text file, checked as it is read."""

    needs: ClassVar[str] = "FILE"  # what --data must be, in the error when it is not given
    makes: ClassVar[str] = ""  # "; the command that writes such a file", for the same error

    @abstractmethod
    def read(self, path: Path) -> Any:
        """The file's rows, checked (a one-line error naming file and line otherwise)."""

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        if data is None:
            name = self.metadata.name
            how = (
                f"; `bindkit fetch {name}` downloads it" if self.metadata.fetchable else self.makes
            )
            raise DataFormatError(f"--task {name} needs --data {self.needs}{how}")
        rows = self.read(data)  # read first: a missing or bad file is named by the reader
        return Dataset(data.stem, sha256_file(data), str(data), rows)
