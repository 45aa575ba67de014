"""A sweep's results on disk and in memory: named axes, a loader, summaries with 95% CIs.

A run directory holds

  config.toml     the config as run
  metadata.json   versions, devices, times, compile time, seed-steps/s, status
  results.npz     the records: `regret` (per step, float32) or `cumulative` (R(t), float64),
                  shape (*grid, seed, step), and every axis's coordinates as `coord.<axis>`
  results.json    the axes, their coordinates and each array's axes, shape and dtype

npz and JSON are readable without rbx (`numpy.load`, any JSON reader).
"""
from __future__ import annotations

import itertools
import json
import os
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rbx.core.grid import Grid, select
from rbx.core.record import Recorder

ARRAYS = "results.npz"
INDEX = "results.json"
METADATA = "metadata.json"
CONFIG = "config.toml"

# Student t quantiles t_{0.975, df} for df = 1..30; beyond, the Cornish–Fisher expansion.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t_quantile_975(df: int) -> float:
  """The 97.5% quantile of Student's t with `df` degrees of freedom (to 1e-3)."""
  if df < 1:
    return float("nan")
  if df <= len(_T975):
    return _T975[df - 1]
  z = 1.959964
  return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def mean_ci(values: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(mean, standard deviation, 95% CI half-width t_{0.975,n−1}·std/√n) over `axis`."""
  n = values.shape[axis]
  mean = values.mean(axis=axis)
  std = values.std(axis=axis, ddof=1) if n > 1 else np.full(mean.shape, np.nan)
  return mean, std, t_quantile_975(n - 1) * std / np.sqrt(n)


class Results(NamedTuple):
  """A sweep's records with named axes (*grid fields, "seed", "step").

  Attributes:
    cumulative: R(t) at the recorded steps `coords["step"]`, float64 (*grid, seed, step).
    axes: the axis names.
    coords: axis -> its values (grid values, seeds, recorded steps t).
    regret: the per-step regret (*grid, seed, T) when every step was recorded, else None.
    config: the config as run (a dict), when loaded from a run directory.
    metadata: the run's metadata, when loaded from a run directory.
  """
  cumulative: np.ndarray
  axes: tuple[str, ...]
  coords: dict[str, np.ndarray]
  regret: np.ndarray | None = None
  config: dict | None = None
  metadata: dict | None = None

  @property
  def grid_axes(self) -> tuple[str, ...]:
    """The grid fields' axes: every axis but "seed" and "step"."""
    return self.axes[:-2]

  def final(self) -> np.ndarray:
    """R(T) per grid point and seed, shape (*grid, seed)."""
    return self.cumulative[..., -1]

  def sel(self, **where) -> "Results":
    """The sub-result at the given grid coordinates or seed, e.g. `res.sel(agent="vpo")`."""
    cum, axes, coords = select(self.cumulative, self.axes, self.coords, where)
    regret = None if self.regret is None else select(self.regret, self.axes, self.coords, where)[0]
    return self._replace(cumulative=cum, axes=axes, coords=coords, regret=regret)

  def summary(self) -> list[dict[str, Any]]:
    """One row per grid point: its coordinates, n seeds, and R(T)'s mean, std and 95% CI."""
    mean, std, half = (x.reshape(-1) for x in mean_ci(self.final(), axis=-1))
    return [{**point, "n": self.final().shape[-1], "mean": float(mean[i]), "std": float(std[i]),
             "ci_low": float(mean[i] - half[i]), "ci_high": float(mean[i] + half[i])}
            for i, point in enumerate(points(self))]


def from_records(grid: Grid, seeds: np.ndarray, recorder: Recorder, data: np.ndarray) -> Results:
  """Results of a finished sweep from its recorder's layout and (gathered) `data`
  (num_combos, G, S, R)."""
  arranged = grid.arrange(data)
  axes = grid.fields + ("seed", "step")
  coords = {**grid.coords(), "seed": np.asarray(seeds), "step": recorder.steps}
  if recorder.name == "regret":
    return Results(np.cumsum(arranged, axis=-1, dtype=np.float64), axes, coords, arranged)
  return Results(arranged, axes, coords)


def save(directory: str | os.PathLike, results: Results, record: str) -> None:
  """Writes results.npz and results.json into `directory`."""
  directory = Path(directory)
  arrays = ({"regret": results.regret} if results.regret is not None
            else {"cumulative": results.cumulative})
  index = {
      "axes": list(results.axes),
      "coords": {a: [_plain(v) for v in results.coords[a]] for a in results.axes},
      "arrays": {k: {"axes": list(results.axes), "shape": list(v.shape), "dtype": str(v.dtype)}
                 for k, v in arrays.items()},
      "record": record,
  }
  np.savez(directory / ARRAYS, **arrays,
           **{f"coord.{a}": np.asarray(results.coords[a]) for a in results.axes})
  write_json(directory / INDEX, index)


def load(directory: str | os.PathLike) -> Results:
  """The `Results` of a finished run directory, with its config and metadata.

  Raises:
    FileNotFoundError: `directory` holds no results (yet), saying what it does hold.
  """
  directory = Path(directory)
  if not (directory / INDEX).is_file():
    status = read_json(directory / METADATA).get("status") if (directory / METADATA).is_file() else None
    why = f"its status is {status!r}" if status else "it is not an rbx run directory"
    raise FileNotFoundError(f"{directory} has no {INDEX}: {why}"
                            + ("; continue it with `rbx run --resume DIR`" if status else ""))
  index = read_json(directory / INDEX)
  axes = tuple(index["axes"])
  coords = {a: np.asarray(index["coords"][a]) for a in axes}
  with np.load(directory / ARRAYS, allow_pickle=False) as f:
    regret = f["regret"] if "regret" in f.files else None
    cumulative = (np.cumsum(regret, axis=-1, dtype=np.float64) if regret is not None
                  else f["cumulative"])
  config = tomllib.loads((directory / CONFIG).read_text()) if (directory / CONFIG).is_file() else None
  metadata = read_json(directory / METADATA) if (directory / METADATA).is_file() else None
  return Results(cumulative, axes, coords, regret, config, metadata)


def scaling_slope(t: np.ndarray, mean_regret: np.ndarray, t_min: float | None = None) -> float:
  """The least-squares slope of log R(t) against log t over t ≥ t_min (default √T)."""
  t = np.asarray(t, np.float64)
  t_min = np.sqrt(t.max()) if t_min is None else t_min
  keep = (t >= t_min) & (mean_regret > 0)
  if keep.sum() < 2:
    return float("nan")
  return float(np.polyfit(np.log(t[keep]), np.log(mean_regret[keep]), 1)[0])


def write_json(path: Path, obj) -> None:
  """JSON written atomically (temporary file, then rename)."""
  tmp = path.with_name(path.name + ".tmp")
  tmp.write_text(json.dumps(obj, indent=2, default=_plain) + "\n")
  os.replace(tmp, path)


def read_json(path: Path) -> dict:
  """The JSON object in the file `path`."""
  return json.loads(Path(path).read_text())


def _plain(v):
  """A JSON-able Python scalar from a NumPy scalar."""
  return v.item() if isinstance(v, np.generic) else v


def points(results: Results) -> list[dict[str, Any]]:
  """Every grid point of `results` as {axis: value}, in C order of the grid axes."""
  axes = results.grid_axes
  return [{a: _plain(results.coords[a][i]) for a, i in zip(axes, index)}
          for index in itertools.product(*(range(len(results.coords[a])) for a in axes))]


def paper_exponent(results: Results, point: dict[str, Any]) -> float | None:
  """(β+1)/(β+2), the RLHF paper's regret exponent (Proposition 3, Theorem 1), for the β of
  `point` or of the config's [env]; None when the run has no β."""
  beta = point.get("beta")
  if beta is None and results.config is not None:
    beta = results.config.get("env", {}).get("beta")
  if beta is None or (results.config or {}).get("family", "rlhf") != "rlhf":
    return None
  return (beta + 1) / (beta + 2)
