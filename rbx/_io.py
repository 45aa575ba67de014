"""Atomic file writes, shared by run directories, checkpoints, the data cache and downloads:
a reader sees the old file or the whole new one, never half of one."""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, keep: str | os.PathLike | None = None
                 ) -> Iterator[BinaryIO]:
  """A binary file to write `path` through: a temporary file beside it (".NAME.*.part"),
  which on a clean exit is fsynced and renamed onto `path` (then the directory is fsynced, so
  the rename survives a crash) and on an error removed. `keep`: where the file being replaced
  is moved first (a checkpoint's previous one)."""
  path = Path(path)
  fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
  temporary = Path(name)
  try:
    with os.fdopen(fd, "wb") as f:
      yield f
      f.flush()
      os.fsync(f.fileno())
    os.chmod(temporary, 0o644)                             # (mkstemp's is 0o600)
    if keep is not None and path.exists():
      os.replace(path, keep)
    os.replace(temporary, path)
  finally:
    temporary.unlink(missing_ok=True)
  _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
  """Flushes `directory`'s entries to disk, so a rename into it survives a crash."""
  fd = os.open(directory, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)
