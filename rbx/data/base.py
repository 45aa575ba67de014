"""The bottom of `rbx.data`: the types, names and paths that its parsing (`rbx.data.loader`),
its cache (`rbx.data.cache`) and its downloads (`rbx.data.openml`) share, none of which this
module imports.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rbx import _checks

ENV_VAR = "RBX_DATA_DIR"
SUFFIXES = (".csv.gz", ".csv")
BAD_CELLS = ("error", "missing", "categorical")
"""What a bad cell in a column of numbers makes of it (see `rbx.data.loader`)."""
CATEGORICAL = ("onehot", "ordinal")
"""How a categorical column is encoded (see `rbx.data.loader`)."""

DATASETS: dict[str, tuple[str, int]] = {
    "adult": ("adult", 2),
    "covertype": ("covertype", 3),
    "magic": ("MagicTelescope", 1),
    "mnist": ("mnist_784", 1),
    "mushroom": ("mushroom", 1),
    "shuttle": ("shuttle", 1),
}
"""The paper's data sets that `rbx data download` fetches (`rbx.data.openml`): our name ->
(OpenML name, version), as the reference implementations fetch them."""


class Dataset(NamedTuple):
  """A preprocessed classification data set. Shapes: n rows, d features after encoding.

  Attributes:
    name: the file's name without its suffix.
    features: (n, d) float32, rows of unit L2 norm (or zero).
    labels: (n,) int32 in [0, K).
    classes: the K original class values; label k is `classes[k]`.
    columns: the d feature names (`column=value` for one-hot columns).
    path: the file it was read from.
  """
  name: str
  features: np.ndarray
  labels: np.ndarray
  classes: tuple[str, ...]
  columns: tuple[str, ...]
  path: Path

  @property
  def num_classes(self) -> int:
    """K, the number of classes."""
    return len(self.classes)


class Options(NamedTuple):
  """The preprocessing options of `load` (hashable: part of the cache keys)."""
  label: str = "label"
  bad_cells: str = "error"
  bad_cells_by_column: tuple[tuple[str, str], ...] = ()
  categorical: str = "onehot"

  @classmethod
  def of(cls, label: str = "label", bad_cells: str = "error",
         bad_cells_by_column: Mapping[str, str] | None = None,
         categorical: str = "onehot") -> Options:
    """Checked options; ValueError naming the option and the allowed values."""
    _checks.choice("bad_cells", bad_cells, BAD_CELLS)
    _checks.choice("categorical", categorical, CATEGORICAL)
    by_column = dict(bad_cells_by_column or {})
    for column, policy in by_column.items():
      _checks.choice(f"bad_cells_by_column[{column!r}]", policy, BAD_CELLS)
    return cls(label, bad_cells, tuple(sorted(by_column.items())), categorical)


def data_home(data_dir: str | os.PathLike | None = None) -> Path:
  """The data directory: `data_dir`, else `$RBX_DATA_DIR`, else `$XDG_CACHE_HOME/rbx/datasets`
  (default `~/.cache/rbx/datasets`). It need not exist yet."""
  if data_dir is not None:
    return Path(data_dir).expanduser()
  if os.environ.get(ENV_VAR):
    return Path(os.environ[ENV_VAR]).expanduser()
  cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
  return Path(cache) / "rbx" / "datasets"


def dataset_name(path: Path) -> str:
  """The data set's name: its file's name without `.csv` or `.csv.gz`."""
  return path.name.removesuffix(".gz").removesuffix(".csv")


def write_csv(fileobj, header: list[str], rows) -> None:
  """Writes a header and rows as gzip-compressed CSV (the format `rbx.data.load` reads) to a
  binary file."""
  with gzip.GzipFile(fileobj=fileobj, mode="wb", mtime=0) as gz:
    with io.TextIOWrapper(gz, encoding="utf-8", newline="") as text:
      writer = csv.writer(text, lineterminator="\n")
      writer.writerow(header)
      writer.writerows(rows)
