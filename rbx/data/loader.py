"""Classification data sets as arrays for `rbx.neural.classification`: find, read, preprocess.

File format. A CSV file, gzip-compressed (`.csv.gz`) or plain (`.csv`), with a header row; one
column holds the class (`label` unless told otherwise), every other column is a feature, numeric
or categorical (any value that is not a number makes the column categorical). Missing values are
empty fields, `?`, `NA`, `NaN` or `null`.

Preprocessing (as the reference implementations of NeuralUCB/NeuralTS do with OpenML data):

  * numeric columns are kept as they are; a missing numeric value becomes −1;
  * categorical columns are one-hot encoded over their sorted values (a missing value is a
    category of its own, as a one-hot encoder of the raw strings treats `?`);
  * every row is scaled to unit L2 norm (the paper's ‖x‖ ≤ 1, section 2.1), zero rows stay zero;
  * classes are sorted (numerically when every class is a number) and become labels 0..K−1.

Data directory. A name such as "mushroom" is looked up as `<data_dir>/mushroom.csv.gz` (or
`.csv`). The directory is, in order: the `data_dir` argument, the environment variable
`RBX_DATA_DIR`, or the per-user default `$XDG_CACHE_HOME/rbx/datasets` (`~/.cache/rbx/datasets`).
`rbx data download NAME` fills it from OpenML.

Cache. Loaded arrays are kept in memory per (file, modification time, size, label column), so a
second `load` of the same file returns at once.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rbx import _checks

ENV_VAR = "RBX_DATA_DIR"
MISSING = frozenset({"", "?", "na", "nan", "null"})
SUFFIXES = (".csv.gz", ".csv")


class Dataset(NamedTuple):
  """A preprocessed classification data set. Shapes: n rows, d features after one-hot encoding.

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


def data_home(data_dir: str | os.PathLike | None = None) -> Path:
  """The data directory: `data_dir`, else `$RBX_DATA_DIR`, else `$XDG_CACHE_HOME/rbx/datasets`
  (default `~/.cache/rbx/datasets`). It need not exist yet."""
  if data_dir is not None:
    return Path(data_dir).expanduser()
  if os.environ.get(ENV_VAR):
    return Path(os.environ[ENV_VAR]).expanduser()
  cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
  return Path(cache) / "rbx" / "datasets"


def find(name_or_path: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> Path:
  """The file of a data set given by name (looked up in the data directory) or by path.

  Raises:
    FileNotFoundError: naming the places looked in and how to fill the data directory.
  """
  given = Path(name_or_path).expanduser()
  if given.suffix in (".csv", ".gz") or len(given.parts) > 1:
    if given.is_file():
      return given
    raise FileNotFoundError(f"data file {str(given)!r} does not exist")
  root = data_home(data_dir)
  tried = [root / f"{given.name}{s}" for s in SUFFIXES]
  for path in tried:
    if path.is_file():
      return path
  from rbx.data import openml                # (openml imports this module)
  present = sorted({p.name.split(".")[0] for p in root.glob("*.csv*")} if root.is_dir() else ())
  hint = _checks.did_you_mean(given.name, present + list(openml.DATASETS))
  if hint and given.name not in openml.DATASETS:
    raise FileNotFoundError(f"data set {given.name!r} not found in {root}{hint}")
  raise FileNotFoundError(
      f"data set {given.name!r} not found: looked for {', '.join(str(p) for p in tried)}. Put a"
      f" gzip CSV with a 'label' column there, pass data_dir= (or set {ENV_VAR}), or run"
      f" `rbx data download {given.name}`")


_CACHE: dict[tuple, Dataset] = {}


def load(name_or_path: str | os.PathLike, *, data_dir: str | os.PathLike | None = None,
         label: str = "label", cache: bool = True) -> Dataset:
  """Reads and preprocesses a classification data set (see the module docstring).

  Args:
    name_or_path: a data set name in the data directory ("mushroom"), or a path to a CSV file.
    data_dir: the data directory (default: `$RBX_DATA_DIR` or the per-user default).
    label: the name of the class column.
    cache: reuse the arrays of an earlier load of the same unchanged file.
  Returns:
    A `Dataset`; `rbx.neural.classification(ds.features, ds.labels)` makes it a bandit.
  Raises:
    FileNotFoundError: no such data set or file.
    ValueError: a corrupt or malformed file (bad gzip, no label column, ragged rows, one
      class, no rows), naming the file and the problem.
  """
  path = find(name_or_path, data_dir)
  stat = path.stat()
  key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, label)
  if cache and key in _CACHE:
    return _CACHE[key]
  header, rows = read_csv(path)
  dataset = preprocess(header, rows, label, path)
  if cache:
    _CACHE[key] = dataset
  return dataset


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
  """The header and rows of a (gzip) CSV file, every row as long as the header.

  Raises:
    ValueError: naming the file, for a bad gzip stream, undecodable text, an empty file or a
      row with the wrong number of fields (with its line number).
  """
  opener = gzip.open if path.name.endswith(".gz") else open
  try:
    with opener(path, "rt", encoding="utf-8", newline="") as f:
      rows = list(csv.reader(f))
  except (OSError, EOFError, zlib.error) as e:
    raise ValueError(f"{path}: not a readable gzip file ({e})") from e
  except UnicodeDecodeError as e:
    raise ValueError(f"{path}: not UTF-8 text ({e})") from e
  except csv.Error as e:
    raise ValueError(f"{path}: malformed CSV ({e})") from e
  rows = [r for r in rows if r]                            # blank lines
  if not rows:
    raise ValueError(f"{path}: empty file (no header row)")
  header, body = [h.strip() for h in rows[0]], rows[1:]
  for i, row in enumerate(body):
    if len(row) != len(header):
      raise ValueError(f"{path}: ragged rows: data row {i + 1} has {len(row)} fields, the header"
                       f" has {len(header)}")
  return header, body


def preprocess(header: list[str], rows: list[list[str]], label: str = "label",
               path: str | os.PathLike = "<data>") -> Dataset:
  """Features and labels from parsed CSV rows (see the module docstring for the steps).

  Raises:
    ValueError: naming `path`, for a missing label column, no rows, a missing class value or
      fewer than two classes.
  """
  path = Path(path)
  if label not in header:
    raise ValueError(f"{path}: no label column {label!r}; the columns are {header}")
  if not rows:
    raise ValueError(f"{path}: no data rows")
  columns = [list(c) for c in zip(*rows)]
  y_raw = [v.strip() for v in columns.pop(header.index(label))]
  names = [h for h in header if h != label]
  if any(v.lower() in MISSING for v in y_raw):
    raise ValueError(f"{path}: the label column {label!r} has missing values")
  classes = sorted(set(y_raw), key=_class_order(y_raw))
  if len(classes) < 2:
    raise ValueError(f"{path}: the label column {label!r} has one class ({classes[0]!r}); a"
                     " bandit needs at least two")
  index = {c: k for k, c in enumerate(classes)}
  labels = np.fromiter((index[v] for v in y_raw), np.int32, len(y_raw))

  blocks, out_names = [], []
  for name, col in zip(names, columns):
    values = [v.strip() for v in col]
    numeric = _as_numbers(values)
    if numeric is not None:
      blocks.append(numeric[:, None])
      out_names.append(name)
    else:
      cats = sorted(set(values))
      code = {c: i for i, c in enumerate(cats)}
      onehot = np.zeros((len(values), len(cats)), np.float32)
      onehot[np.arange(len(values)), [code[v] for v in values]] = 1.0
      blocks.append(onehot)
      out_names += [f"{name}={c}" for c in cats]
  X = np.concatenate(blocks, axis=1) if blocks else np.zeros((len(rows), 0), np.float32)
  norm = np.linalg.norm(X, axis=1, keepdims=True)
  X = (X / np.where(norm > 0, norm, 1.0)).astype(np.float32)
  return Dataset(path.name.removesuffix(".gz").removesuffix(".csv"), X, labels, tuple(classes),
                 tuple(out_names), path)


def _as_numbers(values: list[str]) -> np.ndarray | None:
  """The column as float32 with missing values as −1, or None if it is categorical."""
  missing = np.fromiter((v.lower() in MISSING for v in values), bool, len(values))
  present = [v for v, m in zip(values, missing) if not m]
  try:
    parsed = np.asarray(present, dtype=np.float64)
  except ValueError:
    return None
  if not np.isfinite(parsed).all():
    return None
  out = np.full(len(values), -1.0, np.float32)
  out[~missing] = parsed
  return out


def _class_order(values: list[str]):
  """Numeric order when every class is a number, else string order."""
  try:
    for v in set(values):
      float(v)
  except ValueError:
    return str
  return float


def write_csv(fileobj, header: list[str], rows) -> None:
  """Writes a header and rows as gzip-compressed CSV (the format `load` reads) to a binary file."""
  with gzip.GzipFile(fileobj=fileobj, mode="wb", mtime=0) as gz:
    with io.TextIOWrapper(gz, encoding="utf-8", newline="") as text:
      writer = csv.writer(text, lineterminator="\n")
      writer.writerow(header)
      writer.writerows(rows)
