"""Classification data sets as arrays for `rbx.neural.classification`: find, read, preprocess.

File format. A CSV file, gzip-compressed (`.csv.gz`) or plain (`.csv`), with a header row; one
column holds the class (`label` unless told otherwise: `load(..., label=...)`, or `label = ...`
in a config's `[env]` table), every other column is a feature.

Cells. After stripping spaces, a cell is missing (`""`, `?`, `NA`, `NaN`, `null`, any case), a
number (a finite float as Python's `float` reads it) or neither — a *bad cell* (`x`, `inf`,
`red`). A column of numbers and missing cells is numeric; a column with no number at all is
categorical. A column with both numbers and bad cells is ambiguous (a typo in a numeric column,
or numeric-looking codes in a categorical one) and is never silently typed: `bad_cells` says
what it is, for every column or per column (`bad_cells_by_column`):

  * "error" (the default): `load` raises, naming each such column, its count of bad cells and
    the first one's data row and value;
  * "missing": the bad cells are missing values, the column is numeric;
  * "categorical": the column is categorical, every distinct value (numbers too) a category.

Preprocessing:

  * numeric columns are kept as they are; a missing numeric value becomes −1;
  * categorical columns are, with `categorical="onehot"` (the default), one-hot encoded over
    their sorted values (a missing value is a category of its own, as a one-hot encoder of the
    raw strings treats `?`); with `categorical="ordinal"`, replaced by the index of the value
    among the column's sorted present values (0, 1, …), a missing value becoming −1;
  * every row is scaled to unit L2 norm (the paper's ‖x‖ ≤ 1, section 2.1), zero rows stay zero;
  * classes are sorted (numerically when every class is a number) and become labels 0..K−1.

The public NeuralUCB/NeuralTS code (`data_multi.py` in uclaml/NeuralUCB and ZeroWeight/NeuralTS)
does not one-hot encode: `fetch_openml` (scikit-learn 0.22, its pinned version) hands it each
nominal column as ordinal codes, it sets NaN (a missing value) to −1 and scales every row to
unit norm — `categorical="ordinal"` (Mushroom: d' = 22, against 117 one-hot). Its codes follow
the order of the values in OpenML's ARFF header; ours follow the sorted values, which is the
same encoding up to a relabelling of each column's codes only if that header lists them sorted
(not checked here: OpenML cannot be reached from this project's machines).

Data directory. A name such as "mushroom" is looked up as `<data_dir>/mushroom.csv.gz` (or
`.csv`). The directory is, in order: the `data_dir` argument, the environment variable
`RBX_DATA_DIR`, or the per-user default `$XDG_CACHE_HOME/rbx/datasets` (`~/.cache/rbx/datasets`).
`rbx data download NAME` fills it from OpenML.

Parsing. With pandas installed, its C parser reads the file (integer columns straight to
numbers, every other column as strings); without it, or on any problem, Python's `csv` module
does (it also words the errors). Both give the same arrays.

Cache. A load keeps its arrays in memory per (file, modification time, size, options) and on
disk (`rbx.data.cache`: keyed by the file's SHA-256 and the options), so a load after the first,
in any process, reads one `.npz` file instead of parsing the CSV.
"""
from __future__ import annotations

import csv
import gzip
import io
import itertools
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from rbx import _checks
from rbx.data import cache as disk
from rbx.data.base import (
  DATASETS,
  ENV_VAR,
  SUFFIXES,
  Dataset,
  Options,
  data_home,
  dataset_name,
)

MISSING = frozenset({"", "?", "na", "nan", "null"})
_MISSING_SPELLINGS = sorted({"".join(s) for m in MISSING
                             for s in itertools.product(*({c, c.upper()} for c in m))})


def is_path(name_or_path: str | os.PathLike) -> bool:
  """Whether a data set is given by path (a .csv or .gz file, or any path with a folder)
  rather than by a name in the data directory."""
  given = Path(name_or_path).expanduser()
  return given.suffix in (".csv", ".gz") or len(given.parts) > 1


def find(name_or_path: str | os.PathLike, data_dir: str | os.PathLike | None = None) -> Path:
  """The file of a data set given by name (looked up in the data directory) or by path
  (`is_path`).

  Raises:
    FileNotFoundError: naming the places looked in (a missing file by its absolute path) and
      how to fill the data directory.
  """
  given = Path(name_or_path).expanduser()
  if is_path(given):
    if given.is_file():
      return given
    raise FileNotFoundError(f"data file {str(given.absolute())!r} does not exist")
  root = data_home(data_dir)
  tried = [root / f"{given.name}{s}" for s in SUFFIXES]
  for path in tried:
    if path.is_file():
      return path
  present = sorted({p.name.split(".")[0] for p in root.glob("*.csv*")} if root.is_dir() else ())
  hint = _checks.did_you_mean(given.name, present + list(DATASETS))
  if hint and given.name not in DATASETS:
    raise FileNotFoundError(f"data set {given.name!r} not found in {root}{hint}")
  near = _checks.did_you_mean(given.name, present)
  raise FileNotFoundError(
      f"data set {given.name!r} not found: looked for {', '.join(str(p) for p in tried)}"
      + (f"{near}; the data directory holds {present}" if near else "") + ". Put a"
      f" gzip CSV with a 'label' column there, pass data_dir= (or set {ENV_VAR}), or run"
      f" `rbx data download {given.name}`")


_CACHE: dict[tuple, Dataset] = {}


def load(name_or_path: str | os.PathLike, *, data_dir: str | os.PathLike | None = None,
         label: str = "label", bad_cells: str = "error",
         bad_cells_by_column: Mapping[str, str] | None = None, categorical: str = "onehot",
         cache: bool = True) -> Dataset:
  """Reads and preprocesses a classification data set (see the module docstring).

  Args:
    name_or_path: a data set name in the data directory ("mushroom"), or a path to a CSV file.
    data_dir: the data directory (default: `$RBX_DATA_DIR` or the per-user default).
    label: the name of the class column.
    bad_cells: one of `rbx.data.BAD_CELLS`: what a column of numbers with bad cells (`x`, `inf`) is.
    bad_cells_by_column: {column: one of `rbx.data.BAD_CELLS`}, overriding `bad_cells` per column.
    categorical: one of `rbx.data.CATEGORICAL`: "onehot" (default) or "ordinal" (the public
      NeuralUCB/NeuralTS code's encoding; see the module docstring).
    cache: reuse the arrays of an earlier load of the same unchanged file with the same
      options, in memory and on disk (`rbx.data.cache`); False reads and writes no cache.
  Returns:
    A `Dataset`; `rbx.neural.classification(ds.features, ds.labels)` makes it a bandit.
  Raises:
    FileNotFoundError: no such data set or file.
    ValueError: a corrupt or malformed file (bad gzip, no label column, ragged rows, one
      class, no rows, bad cells under bad_cells="error"), naming the file and the problem; an
      unknown option value.
  """
  options = Options.of(label, bad_cells, bad_cells_by_column, categorical)
  path = find(name_or_path, data_dir)
  stat = path.stat()
  key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, options)
  if cache and key in _CACHE:
    return _CACHE[key]
  entry = disk.Entry.of(path, options) if cache else None
  dataset = entry.read() if cache else None
  if dataset is None:
    header, columns = read_columns(path, label)
    dataset = preprocess_columns(header, columns, options, path)
    if cache:
      entry.write(dataset)
  if cache:
    _CACHE[key] = dataset
  return dataset


def read_columns(path: Path, label: str = "label") -> tuple[list[str], list[np.ndarray]]:
  """The header and columns of a (gzip) CSV file, each column an array of strings or, for an
  integer feature column that pandas read, of float64. By pandas when installed, else (or on
  anything unusual) by `read_csv`.

  Raises:
    ValueError: as `read_csv`.
  """
  fast = _read_with_pandas(path, label)
  if fast is not None:
    return fast
  header, rows = read_csv(path)
  return header, _columns(header, rows)


def _read_with_pandas(path: Path, label: str) -> tuple[list[str], list[np.ndarray]] | None:
  """`read_columns` by pandas' C parser, or None without pandas or for anything unusual (then
  `read_csv` reads the file and words the error). Integer feature columns become numbers; the
  label and every column pandas read as neither integers nor strings (floats, booleans) are
  read again as the strings they were. pandas pads a short row with empty strings, so every
  row must have the header's number of commas (checked in total, as pandas rejects long rows;
  not countable in a file with quotes, which `read_csv` reads)."""
  try:
    import pandas as pd
  except ImportError:
    return None
  types = pd.api.types

  def frame(raw: bytes, again=None):
    """The header and the data frame: `again`'s columns as strings, or every column with the
    label as strings."""
    with io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", newline="") as f:
      header = [h.strip() for h in next(row for row in csv.reader(f) if row)]
      strings = [i for i, h in enumerate(header) if h == label] if again is None else again
      return header, pd.read_csv(
          f, header=None, names=range(len(header)), index_col=False, na_filter=False,
          dtype=dict.fromkeys(strings, str), usecols=again, engine="c")

  try:
    with (gzip.open if path.name.endswith(".gz") else open)(path, "rb") as f:
      raw = f.read()
    if b'"' in raw:
      return None
    header, first = frame(raw)
    if len(first) == 0 or raw.count(b",") != (len(header) - 1) * (len(first) + 1):
      return None
    again = [i for i in first if not (types.is_integer_dtype(first[i])
                                      or types.is_string_dtype(first[i]))]
    second = frame(raw, again)[1] if again else first
  except (ValueError, OSError, EOFError, StopIteration, zlib.error, csv.Error):
    return None
  columns = [(second if i in again else first)[i] for i in range(len(header))]
  return header, [c.to_numpy(np.float64) if types.is_integer_dtype(c) else c.to_numpy(str)
                  for c in columns]


def _columns(header: list[str], rows: Sequence[Sequence[str]]) -> list[np.ndarray]:
  """The columns of `rows` as arrays of strings."""
  if not rows:
    return [np.zeros(0, str) for _ in header]
  return [np.asarray(c, dtype=str) for c in zip(*rows)]


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
  """The header and rows of a (gzip) CSV file by Python's `csv` module, every row as long as
  the header.

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
  rows = [r for r in rows if len(r) > 1 or r and r[0].strip()]    # blank lines (or spaces)
  if not rows:
    raise ValueError(f"{path}: empty file (no header row)")
  header, body = [h.strip() for h in rows[0]], rows[1:]
  for i, row in enumerate(body):
    if len(row) != len(header):
      raise ValueError(f"{path}: ragged rows: data row {i + 1} has {len(row)} fields, the header"
                       f" has {len(header)}")
  return header, body


def preprocess(header: list[str], rows: Sequence[Sequence[str]], label: str = "label",
               path: str | os.PathLike = "<data>", **options) -> Dataset:
  """Features and labels from parsed CSV rows (see the module docstring for the steps);
  `options` are `load`'s `bad_cells`, `bad_cells_by_column` and `categorical`.

  Raises:
    ValueError: as `preprocess_columns`.
  """
  return preprocess_columns(header, _columns(header, rows), Options.of(label, **options), path)


def preprocess_columns(header: list[str], columns: list[np.ndarray], options: Options,
                       path: str | os.PathLike = "<data>") -> Dataset:
  """`preprocess` of the columns `read_columns` gives.

  Raises:
    ValueError: naming `path`, for a missing label column (with the option that names it), no
      rows, a missing class value, fewer than two classes, an unknown column in
      `bad_cells_by_column`, or columns with bad cells under the policy "error".
  """
  path, label = Path(path), options.label
  if label not in header:
    raise ValueError(
        f"{path}: no label column {label!r}{_checks.did_you_mean(label, header)}; the columns"
        f" are {header}. Name the class column with label= (rbx.data.load(..., label='...')),"
        " or in a config with label = \"...\" in the [env] table")
  if not len(columns[0]):
    raise ValueError(f"{path}: no data rows")
  names = [h for h in header if h != label]
  by_column = dict(options.bad_cells_by_column)
  for column in by_column:
    if column not in names:
      raise ValueError(f"bad_cells_by_column names {column!r}, not a feature column of {path}"
                       f"{_checks.did_you_mean(column, names)}; the feature columns are {names}")
  labels, classes = _labels(np.char.strip(columns[header.index(label)]), label, path)

  blocks, out_names, bad = [], [], []
  for name, col in zip(header, columns):
    if name == label:
      continue
    values, numbers, is_bad = _cells(col)
    mixed = is_bad.any() and np.isfinite(numbers).any()
    policy = by_column.get(name, options.bad_cells)
    if mixed and policy == "error":
      bad.append((name, _describe(name, values, is_bad)))
    elif not is_bad.any() or (mixed and policy == "missing"):
      blocks.append(np.where(np.isnan(numbers), -1.0, numbers).astype(np.float32)[:, None])
      out_names.append(name)
    elif options.categorical == "ordinal":
      present = ~_missing(values)
      codes = np.full(len(values), -1.0, np.float32)
      codes[present] = np.unique(values[present], return_inverse=True)[1]
      blocks.append(codes[:, None])
      out_names.append(name)
    else:
      cats, codes = np.unique(values, return_inverse=True)
      onehot = np.zeros((len(codes), len(cats)), np.float32)
      onehot[np.arange(len(codes)), codes] = 1.0
      blocks.append(onehot)
      out_names += [f"{name}={c}" for c in cats.tolist()]
  if bad:
    first = bad[0][0]
    raise ValueError(
        f"{path}: {'; '.join(d for _, d in bad)}. Say what such cells are:"
        " bad_cells='missing' (missing values, -1) or bad_cells='categorical' (the column is"
        " one-hot encoded, every value a category), for every column, or per column as"
        f" bad_cells_by_column={{{first!r}: 'missing'}}; in a config's [env] table:"
        f' bad_cells = "missing" or bad_cells_by_column = {{ "{first}" = "missing" }}')
  X = np.concatenate(blocks, axis=1) if blocks else np.zeros((len(labels), 0), np.float32)
  norm = np.linalg.norm(X, axis=1, keepdims=True)
  X = (X / np.where(norm > 0, norm, 1.0)).astype(np.float32)
  return Dataset(dataset_name(path), X, labels, tuple(classes), tuple(out_names), path)


def _cells(col: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(stripped values, float64 numbers with NaN for missing and bad cells, bad-cell mask) of a
  column; one that pandas read as numbers has no bad cell."""
  if col.dtype.kind == "f":
    return col, col, np.zeros(len(col), bool)
  values = np.char.strip(col)
  numbers = np.full(len(values), np.nan)
  present = ~_missing(values)
  try:
    numbers[present] = np.asarray(values[present].tolist(), np.float64)    # (faster than astype)
  except ValueError:                                      # parse each distinct value once
    distinct, index = np.unique(values[present], return_inverse=True)
    numbers[present] = np.array([_number(v) for v in distinct.tolist()])[index]
  numbers[~np.isfinite(numbers)] = np.nan                  # inf: a bad cell, as `x`
  return values, numbers, present & np.isnan(numbers)


def _missing(values: np.ndarray) -> np.ndarray:
  """Which of the stripped `values` are missing: compared with `MISSING` spelt in every case
  (faster than lower-casing the column)."""
  return np.isin(values, _MISSING_SPELLINGS)


def _number(text: str) -> float:
  try:
    return float(text)
  except ValueError:
    return np.nan


def _describe(name: str, values: np.ndarray, is_bad: np.ndarray) -> str:
  """"column 'b' has numbers, but 2 of its 8 cells are neither numbers nor missing (first:
  data row 3, 'x')"."""
  first, count = int(np.argmax(is_bad)), int(is_bad.sum())
  return (f"column {name!r} has numbers, but {count} of its {len(values)} cells"
          f" {'are' if count > 1 else 'is'} neither numbers nor missing (first: data row"
          f" {first + 1}, {str(values[first])!r})")


def _labels(y_raw: np.ndarray, label: str, path: Path) -> tuple[np.ndarray, list[str]]:
  """Labels 0..K−1 and the K sorted classes of the stripped class column."""
  if _missing(y_raw).any():
    raise ValueError(f"{path}: the label column {label!r} has missing values")
  values, codes = np.unique(y_raw, return_inverse=True)
  values = values.tolist()
  classes = sorted(values, key=_class_order(values))
  if len(classes) < 2:
    raise ValueError(f"{path}: the label column {label!r} has one class ({classes[0]!r}); a"
                     " bandit needs at least two")
  rank = np.array([classes.index(v) for v in values], np.int32)
  return rank[codes], classes


def _class_order(values: list[str]):
  """Numeric order when every class is a number, else string order."""
  try:
    for v in values:
      float(v)
  except ValueError:
    return str
  return float
