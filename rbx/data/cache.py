"""The on-disk cache of preprocessed data sets, so that a load after the first, in any process,
reads one `.npz` file instead of parsing the CSV.

Where. `$RBX_CACHE_DIR` when set; else `.rbx-cache/` beside the CSV file (in the data
directory) if that directory has a write bit and can be written, or else the per-user
`$XDG_CACHE_HOME/rbx/preprocessed` (`~/.cache/rbx/preprocessed`): a data directory without
write bits (a shared, read-only copy) is never written to, by root either. A load looks in each.

Key. A file's name holds a hash of the CSV's resolved path, the preprocessing options and
`FORMAT`, so an option change uses another file; inside, the CSV's SHA-256 is stored and must
match, so a changed file (even one of the same size and time) is parsed again and its cache
file overwritten. Files are written atomically (`rbx._io.atomic_write`), so a reader never sees
half a file; one that cannot be read or does not fit (a crash, a
truncated copy) is ignored and rebuilt.
"""
from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rbx._io import atomic_write
from rbx.data.base import Dataset, Options, dataset_name

ENV_VAR = "RBX_CACHE_DIR"
FORMAT = 1
"""Bumped whenever preprocessing changes, which retires every older cache file."""


def directories(path: Path, writing: bool = False) -> list[Path]:
  """The cache directories for the CSV file `path`, in the order they are tried; for writing,
  the data directory's only if that has a write bit (root would write to it regardless)."""
  if os.environ.get(ENV_VAR):
    return [Path(os.environ[ENV_VAR]).expanduser()]
  user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rbx" / "preprocessed"
  beside = not writing or path.parent.stat().st_mode & 0o222
  return [path.parent / ".rbx-cache", user] if beside else [user]


class Entry(NamedTuple):
  """The cache entry of one CSV file under one set of preprocessing options."""
  path: Path
  name: str
  digest: str

  @classmethod
  def of(cls, path: Path, options: Options) -> Entry:
    """The entry of `path` under `options`: the cache file's name (see the module docstring)
    and the CSV's SHA-256, taken now, before any parse."""
    key = repr((FORMAT, str(path.resolve()), tuple(options)))
    name = f"{dataset_name(path)}.{hashlib.sha256(key.encode()).hexdigest()[:20]}.npz"
    with open(path, "rb") as f:
      return cls(path, name, hashlib.file_digest(f, "sha256").hexdigest())

  def read(self) -> Dataset | None:
    """The cached `Dataset`, or None (no cache file, a stale or an unreadable one)."""
    for directory in directories(self.path):
      try:
        with np.load(directory / self.name, allow_pickle=False) as f:
          arrays = {k: f[k] for k in ("digest", "features", "labels", "classes", "columns")}
      except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        continue
      X, y = arrays["features"], arrays["labels"]
      classes, columns = tuple(arrays["classes"].tolist()), tuple(arrays["columns"].tolist())
      if (str(arrays["digest"]) == self.digest and X.dtype == np.float32 and y.dtype == np.int32
          and X.ndim == 2 and X.shape == (len(y), len(columns)) and len(classes) >= 2
          and (y.size == 0 or 0 <= y.min() <= y.max() < len(classes))):
        return Dataset(dataset_name(self.path), X, y, classes, columns, self.path)
    return None

  def write(self, dataset: Dataset) -> Path | None:
    """Stores `dataset` in the first cache directory that can be written; returns the file,
    or None where none can (the load still succeeds)."""
    for directory in directories(self.path, writing=True):
      try:
        directory.mkdir(parents=True, exist_ok=True)
        with atomic_write(directory / self.name) as f:
          np.savez(f, digest=np.array(self.digest), features=dataset.features,
                   labels=dataset.labels, classes=np.array(dataset.classes, dtype=str),
                   columns=np.array(dataset.columns, dtype=str))
        return directory / self.name
      except OSError:
        continue
    return None
