"""File-system helpers shared by checkpoints and downloads (atomic writes)."""
from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(directory: Path) -> None:
  """Flushes `directory`'s entries to disk, so a rename into it survives a crash."""
  fd = os.open(directory, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)
