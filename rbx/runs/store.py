"""Results on disk: `save` and `load` (`rbx.save`, `rbx.load`), and a run directory's JSON files.

A run directory holds

  config.toml     the config as run
  metadata.json   versions, devices, times, compile time, seed-steps/s, status
  results.npz     the records: `regret` (per step, float32) or `cumulative` (R(t), float64),
                  shape (*grid, seed, step), the named per-step metrics recorded beside it
                  (`Results.metrics`) as `metric.<name>` in the same layout, and every
                  axis's coordinates as `coord.<axis>`
  results.json    the axes, their coordinates and each array's axes, shape and dtype; for
                  per-agent grids also "runs", each run's label -> its fields

npz and JSON are readable without rbx (`numpy.load`, any JSON reader). Every file is written
atomically (`rbx._io.atomic_write`).
"""
from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import numpy as np

from rbx._io import atomic_write
from rbx.core.grid import RUN, plain, run_table
from rbx.core.results import Results
from rbx.runs import rundir

ARRAYS = "results.npz"
INDEX = "results.json"
METADATA = rundir.METADATA
CONFIG = "config.toml"


def save(results: Results, directory: str | os.PathLike, overwrite: bool = False) -> Path:
  """Writes results.npz and results.json into `directory` (see the module docstring) and
  returns its path; read them back with `load`.

  Raises:
    FileExistsError: `directory` already holds results, unless `overwrite`.
  """
  directory = Path(directory)
  if not overwrite and any((directory / f).exists() for f in (ARRAYS, INDEX)):
    raise FileExistsError(f"{directory} already holds results ({INDEX}, {ARRAYS}): save "
                          "elsewhere, or pass overwrite=True to replace them")
  directory.mkdir(parents=True, exist_ok=True)
  arrays = ({"regret": results.regret} if results.regret is not None
            else {"cumulative": results.recorded})
  arrays.update({f"metric.{k}": v for k, v in (results.metrics or {}).items()})
  index = {
      "axes": list(results.axes),
      "coords": {a: [plain(v) for v in results.coords[a]] for a in results.axes},
      "arrays": {k: {"axes": list(results.axes), "shape": list(v.shape), "dtype": str(v.dtype)}
                 for k, v in arrays.items()},
      "complete": results.complete,
      "timing": results.timing,
  }
  if results.run_columns():
    index["runs"] = {plain(label): results.runs[plain(label)] for label in results.coords[RUN]}
  with atomic_write(directory / ARRAYS) as f:
    np.savez(f, **arrays, **{f"coord.{a}": np.asarray(results.coords[a]) for a in results.axes})
  write_json(directory / INDEX, index)
  return directory


def load(directory: str | os.PathLike) -> Results:
  """The `Results` of a finished run directory (or of `save`), with its config and metadata
  (`rbx.load`). An interrupted run's records so far: `rbx.runs.report.load`.

  Raises:
    FileNotFoundError: `directory` holds no results (yet), saying why (`rundir.describe`).
  """
  directory = Path(directory)
  if not (directory / INDEX).is_file():
    raise FileNotFoundError(f"no {INDEX} in {directory}: {rundir.describe(directory)}")
  index = read_json(directory / INDEX)
  axes = tuple(index["axes"])
  coords = {a: np.asarray(index["coords"][a]) for a in axes}
  with np.load(directory / ARRAYS, allow_pickle=False) as f:
    arrays = {"regret" if "regret" in f.files else "recorded":
              f["regret"] if "regret" in f.files else f["cumulative"]}
    metrics = {k[len("metric."):]: f[k] for k in f.files if k.startswith("metric.")}
  config = tomllib.loads((directory / CONFIG).read_text()) if (directory / CONFIG).is_file() else None
  metadata = read_json(directory / METADATA) if (directory / METADATA).is_file() else None
  runs = index.get("runs")
  if runs is None and RUN in axes and config is not None:     # saved before "runs" was
    runs = run_table(config.get("grid", {}))
    if runs is not None and not set(coords[RUN].tolist()) <= set(runs):
      runs = None
  return Results(axes, coords, **arrays, timing=index.get("timing"),
                 complete=index.get("complete", True), config=config, metadata=metadata,
                 runs=runs, metrics=metrics or None)


def write_json(path: Path, obj) -> None:
  """`obj` as JSON in the file `path`, written atomically."""
  with atomic_write(path) as f:
    f.write((json.dumps(obj, indent=2, default=plain) + "\n").encode())


def read_json(path: Path) -> dict:
  """The JSON object in the file `path`."""
  return json.loads(Path(path).read_text())
