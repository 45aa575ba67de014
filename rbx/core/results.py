"""The one result type of every sweep, in memory: named axes, `.sel`, `.final()`, cumulative
regret, summaries with 95% CIs and quantiles, and exports to pandas and xarray. `print(res)`
gives the axes, their sizes and a summary of R(T); `summary()` and `final(table=True)` are
`Table`s, lists of labelled rows that print aligned and go straight into `pandas.DataFrame`.
On disk (run directories, `rbx.save`, `rbx.load`): `rbx.runs.store`.

`Results.to_dataframe` and `Results.to_xarray` import pandas / xarray only when called
(`pip install 'rbx[analysis]'`).
"""
from __future__ import annotations

import dataclasses
import importlib
import itertools
from typing import Any

import numpy as np

from rbx import _checks
from rbx.core import stats
from rbx.core.grid import RUN, Grid, is_number, plain, select
from rbx.core.record import Recorder

QUANTILES = (0.1, 0.9)          # the spread beside the median: the 10% and 90% quantiles over seeds
INSTANCE = "instance"           # the axis of an environment's instances (`rbx.sweep(instances=)`)
REPR_ROWS = 8                   # grid points summarised in `repr(results)`


def mean_ci(values: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(mean, standard deviation, 95% CI half-width t_{0.975,n−1}·std/√n) over `axis`."""
  n = values.shape[axis]
  mean = values.mean(axis=axis)
  std = values.std(axis=axis, ddof=1) if n > 1 else np.full(mean.shape, np.nan)
  return mean, std, stats.t_quantile(0.975, n - 1) * std / np.sqrt(n)


def ci(values: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(mean, low, high): the mean over `axis` and its 95% Student-t interval, the lower end
  clipped at 0 where every value is ≥ 0 (regret is: the mean then is too, so the clipped
  interval holds it whenever the t-interval does)."""
  mean, _, half = mean_ci(values, axis)
  floor = np.where((values >= 0).all(axis=axis), 0.0, -np.inf)
  return mean, np.maximum(mean - half, floor), mean + half


@dataclasses.dataclass(frozen=True, repr=False)
class Results:
  """A sweep's regret with named axes (*grid fields, "seed", "step"), in memory or loaded;
  a sweep over instances has (*grid fields, "instance", "seed", "step").

  Attributes:
    axes: the axis names: the grid fields in order, then "instance" (a sweep over instances:
      instance i is the environment at seed = i), "seed", "step".
    coords: axis -> its values (grid values, instances' seeds, seeds, the recorded steps t
      from 1).
    regret: the per-step regret r_t, float32 (*grid, seed, T), when every step was recorded;
      else None.
    recorded: R(t) at the recorded steps, float64 (*grid, seed, step), when only some steps
      were recorded (record "log" or "summary"); else None.
    timing: compile_seconds, run_seconds, seed_steps and seed_steps_per_second of the sweep,
      its seed_batch and seed_batch_reason (`rbx.core.batching`).
    complete: False for a sweep stopped early (the rows not run are NaN).
    config: the config as run (a dict), when loaded from a run directory (`rbx.load`).
    metadata: the run's metadata, when loaded from a run directory.
    runs: for per-agent grids (axis "run"), each run's label -> its fields, e.g.
      {"agent": "boltzmann", "temperature": 5.0}; None for a rectangular grid.
    metrics: the environment's named per-step metrics recorded beside the regret (e.g.
      "weak_regret" and "strong_regret" of the RLHF environments:
      `rbx.core.protocol.add_metrics`), name -> an array laid out as `regret` (every step)
      or `recorded` (R(t)) is; None or {} when there are none. `metric(name)` is the Results
      of one of them, with every method of this class.
  """
  axes: tuple[str, ...]
  coords: dict[str, np.ndarray]
  regret: np.ndarray | None = None
  recorded: np.ndarray | None = None
  timing: dict[str, Any] | None = None
  complete: bool = True
  config: dict | None = None
  metadata: dict | None = None
  runs: dict[str, dict[str, Any]] | None = None
  metrics: dict[str, np.ndarray] | None = None

  def __post_init__(self):
    if (self.regret is None) == (self.recorded is None):
      raise ValueError("Results needs exactly one of regret (every step) or recorded (R(t))")

  @property
  def metric_names(self) -> tuple[str, ...]:
    """The names of the recorded per-step metrics beside the regret (`metrics`)."""
    return tuple(self.metrics or ())

  def metric(self, name: str) -> "Results":
    """The Results of the named metric `name` in place of the regret ("regret": the regret
    itself): the same axes and recording, so `summary`, `final`, `sel`, `to_dataframe` and
    the plots read it as they read the regret, e.g. `res.metric("weak_regret").summary()`."""
    _checks.choice("metric", name, ("regret", *self.metric_names))
    if name == "regret":
      return dataclasses.replace(self, metrics=None)
    field = "regret" if self.regret is not None else "recorded"
    return dataclasses.replace(self, metrics=None, **{field: self.metrics[name]})

  @property
  def cumulative(self) -> np.ndarray:
    """R(t) = Σ_{s ≤ t} r_s at the recorded steps `coords["step"]`, float64 (*grid, seed, step)."""
    if self.regret is not None:
      return np.cumsum(self.regret, axis=-1, dtype=np.float64)
    return self.recorded

  @property
  def grid_axes(self) -> tuple[str, ...]:
    """The grid fields' axes: every axis but "instance", "seed" and "step"."""
    return tuple(a for a in self.axes[:-2] if a != INSTANCE)

  @property
  def instances(self) -> int | None:
    """I, the instances of the environment on the "instance" axis; None without one."""
    return len(self.coords[INSTANCE]) if INSTANCE in self.axes else None

  @property
  def fields(self) -> tuple[str, ...]:
    """The names that label a grid point (`points`, tables, legends): the grid axes, with the
    "run" axis of per-agent grids replaced by its runs' fields ("agent", "temperature")."""
    columns = self.run_columns()
    return tuple(f for a in self.grid_axes for f in (columns if a == RUN and columns else (a,)))

  def run_columns(self) -> dict[str, list]:
    """Field -> its value per run along the "run" axis (per-agent grids); a run without the
    field has NaN if the field's values are numbers, else None. {} without such an axis."""
    if self.runs is None or RUN not in self.axes:
      return {}
    points = [self.runs[plain(label)] for label in self.coords[RUN]]
    columns = {}
    for f in dict.fromkeys(k for p in points for k in p):
      missing = np.nan if all(is_number(p[f]) for p in points if f in p) else None
      columns[f] = [p.get(f, missing) for p in points]
    return columns

  def final(self, table: bool = False) -> np.ndarray | Table:
    """R(T) per grid point (instance) and seed: a float64 array (*grid, [instance,] seed), or
    with `table` a `Table` with one row per grid point (instance) and seed, {*grid labels,
    ["instance",] "seed", "final"}."""
    if self.regret is not None:
      final = self.regret.sum(axis=-1, dtype=np.float64)
    else:
      final = self.recorded[..., -1]
    if not table:
      return final
    inner = self.axes[len(self.grid_axes):-1]                 # ("instance",) "seed"
    runs = [dict(zip(inner, c)) for c in itertools.product(
        *([plain(v) for v in self.coords[a]] for a in inner))]
    return Table([{**point, **run, "final": float(v)}
                  for point, row in zip(points(self), final.reshape(-1, len(runs)))
                  for run, v in zip(runs, row)], labels=self.fields + inner)

  def sel(self, **where) -> "Results":
    """The sub-result at the given coordinates: one value drops its axis, a list keeps the
    axis with those values, e.g. `res.sel(agent="vpo", beta=[0.1, 1.0], seed=3)`. A field of
    per-agent grids' runs selects the runs that have it: `res.sel(agent="boltzmann")` keeps
    every Boltzmann run (the "run" axis stays with several, is dropped with one)."""
    field = "regret" if self.regret is not None else "recorded"
    res = self
    for name, value in where.items():
      columns = res.run_columns()
      _checks.choice("axis", name, [*res.axes, *columns])
      if name not in res.axes:
        name, value = RUN, _runs_with(res.coords[RUN], name, value, columns[name])
      array, axes, coords = select(getattr(res, field), res.axes, res.coords, {name: value})
      metrics = {k: select(v, res.axes, res.coords, {name: value})[0]
                 for k, v in (res.metrics or {}).items()}
      res = dataclasses.replace(res, axes=axes, coords=coords, **{field: array},
                                metrics=metrics or res.metrics)
    return res

  def summary(self) -> Table:
    """R(T) per grid point, one `Table` row each: its grid labels, "n" seeds (0 for a point
    an interrupted run has not started), "mean", "std"
    (ddof = 1), the 95% CI "ci_low", "ci_high" (Student t, clipped at 0 for non-negative
    values: `ci`), and "median", "q10", "q90" (the 10% and 90% quantiles over seeds, which
    show a split between seeds that escape and seeds that stay stuck).

    Over instances (an "instance" axis) the statistics are over instances and seeds: after
    "n" (seeds per instance) "instances" I; "mean" over both; the two spreads, "std" between
    seeds (within an instance, pooled: √ of the mean over instances of their variance over
    seeds) and "std_instance" between instances (of the instances' means over their seeds);
    the 95% CI of the mean over instances (Student t over the I instances' means, I − 1
    degrees of freedom); the quantiles over every instance and seed."""
    final = self.final()
    I = self.instances
    runs = final.reshape(len(points(self)), I or 1, final.shape[-1])      # (points, I, S)
    within = mean_ci(runs, axis=-1)[1]                                     # (points, I)
    if I is None:
      (mean, low, high), std, spread = ci(runs[:, 0], axis=-1), within[:, 0], lambda i: {}
    else:
      means = runs.mean(axis=-1)
      (mean, low, high), std = ci(means, axis=-1), np.sqrt((within ** 2).mean(axis=-1))
      between = mean_ci(means, axis=-1)[1]
      spread = lambda i: {"std_instance": float(between[i])}
    median, q10, q90 = np.quantile(runs.reshape(len(runs), -1), (0.5, *QUANTILES), axis=-1)
    n = np.isfinite(runs).all(axis=(-2, -1)) * final.shape[-1]            # 0: not run yet
    count = {} if I is None else {"instances": I}
    return Table([{**point, "n": int(n[i]), **count, "mean": float(mean[i]),
                   "std": float(std[i]), **spread(i),
                   "ci_low": float(low[i]), "ci_high": float(high[i]),
                   "median": float(median[i]), "q10": float(q10[i]), "q90": float(q90[i])}
                  for i, point in enumerate(points(self))], labels=self.fields)

  def instance_means(self) -> "Results":
    """Each instance's mean R(t) over its seeds, with axes (*grid, "instance", "step") (as
    `recorded`): the instances as the samples of a grid point, which the plots and the
    report's fits average over; `self` without an instance or a seed axis."""
    if self.instances is None or "seed" not in self.axes:
      return self
    return dataclasses.replace(
        self, axes=self.axes[:-2] + ("step",), regret=None,
        coords={a: v for a, v in self.coords.items() if a != "seed"},
        recorded=self.cumulative.mean(axis=-2),
        metrics={k: self.metric(k).cumulative.mean(axis=-2) for k in self.metric_names} or None)

  def stuck_fraction(self, threshold: float) -> np.ndarray:
    """The fraction of seeds (over instances, of their instances and seeds) whose regret at
    step t is still r_t ≥ `threshold`, shape (*grid, T): the seeds stuck at a bad policy (e.g.
    Proposition 1's 1/2 on Example 1, Proposition 2's 0.01 on Example 2), which a mean over
    seeds blurs.

    Raises:
      ValueError: only R(t) at some steps was recorded (record "log" or "summary").
    """
    if self.regret is None:
      raise ValueError("stuck_fraction needs every step's regret r_t: run with "
                       "record = \"steps\" (this run recorded R(t) at some steps only)")
    runs = (-3, -2) if self.instances else -2
    return (self.regret >= threshold).mean(axis=runs)

  def to_dataframe(self):
    """A tidy pandas DataFrame: one row per (grid point, seed, recorded step), columns the
    axes, after "run" its runs' fields (`run_columns`: NaN or None where a run has no such
    field), "regret" (when every step was recorded) and "cumulative", and for each named
    metric (`metrics`) its own column (every step) and "cumulative_<name>". Needs pandas."""
    pd = _optional("pandas", "to_dataframe")
    cum = self.cumulative
    index = pd.MultiIndex.from_product([self.coords[a] for a in self.axes], names=self.axes)
    columns = {"cumulative": cum.reshape(-1)}
    if self.regret is not None:
      columns = {"regret": self.regret.reshape(-1), **columns}
    for name in self.metric_names:               # e.g. "weak_regret", "cumulative_weak_regret"
      each = self.metric(name)
      if each.regret is not None:
        columns[name] = each.regret.reshape(-1)
      columns[f"cumulative_{name}"] = each.cumulative.reshape(-1)
    df = pd.DataFrame(columns, index=index).reset_index()
    for j, (f, values) in enumerate(self.run_columns().items()):
      df.insert(self.axes.index(RUN) + 1 + j, f,
                df[RUN].map(dict(zip(self.coords[RUN].tolist(), values))))
    return df

  def to_xarray(self):
    """An xarray Dataset with the named axes as dimensions and coordinates (the runs' fields as
    coordinates along "run": `run_columns`), variables
    "cumulative" (and "regret" when every step was recorded), for each named metric
    "cumulative_<name>" (and "<name>"), the timing as attributes.
    Needs xarray."""
    xr = _optional("xarray", "to_xarray")
    coords = {a: np.asarray(self.coords[a]) for a in self.axes}
    coords.update({f: (RUN, np.asarray(v)) for f, v in self.run_columns().items()})
    data = {"cumulative": (self.axes, self.cumulative)}
    if self.regret is not None:
      data["regret"] = (self.axes, self.regret)
    for name in self.metric_names:
      each = self.metric(name)
      data[f"cumulative_{name}"] = (self.axes, each.cumulative)
      if each.regret is not None:
        data[name] = (self.axes, each.regret)
    return xr.Dataset(data, coords=coords, attrs=dict(self.timing or {}))

  def __repr__(self) -> str:
    """The axes with their sizes and values, how R(t) was recorded, and mean ± std of R(T)
    per grid point (the first `REPR_ROWS`; all of them: `summary()`)."""
    sizes = ", ".join(f"{a}: {len(self.coords[a])}" for a in self.axes)
    kept = ("every step's regret" if self.regret is not None
            else f"R(t) at {len(self.coords['step'])} recorded step(s)")
    lines = [f"Results ({sizes}; {kept}{'' if self.complete else '; partial'})"]
    if self.metric_names:
      lines.append(f"  metrics beside the regret: {', '.join(self.metric_names)} "
                   "(res.metric(name))")
    width = max(len(a) for a in self.axes)
    lines += [f"  {a:<{width}}  {_values(self.coords[a], sep='; ' if a == RUN else ', ')}"
              for a in self.axes]
    rows = self.summary()
    keys = list(self.fields) + ["n", "mean", "std"] + ["std_instance"] * bool(self.instances)
    table = Table([{k: r[k] for k in keys} for r in rows[:REPR_ROWS]], labels=self.fields)
    over = "instances and seeds (std between seeds, std_instance between instances)"
    lines += [f"R(T) over {over if self.instances else 'seeds'}:"]
    lines += ["  " + line for line in repr(table).splitlines()]
    if len(rows) > REPR_ROWS:
      lines.append(f"  … {len(rows) - REPR_ROWS} more grid points: res.summary()")
    return "\n".join(lines)


class Table(list):
  """A table of results: a list of dict rows with the same keys, the label columns (the grid
  axes, "seed") first. `print(table)` aligns the columns and writes every statistic (all in
  the units of R(T)) in one format (`column`); `pandas.DataFrame(table)` or
  `table.to_dataframe()` is a DataFrame.

  Attributes:
    labels: the keys that label a row (written as given), the others being statistics.
  """

  def __init__(self, rows=(), labels: tuple[str, ...] = ()):
    super().__init__(rows)
    self.labels = tuple(labels)

  def __repr__(self) -> str:
    if not self:
      return "(no rows)"
    keys = list(self[0])
    floats = [r[k] for r in self for k in keys if k not in self.labels]  # one format for all
    cells = {k: column([r[k] for r in self], label=k in self.labels, like=floats) for k in keys}
    widths = {k: max(len(k), *map(len, cells[k])) for k in keys}
    right = {k: k not in self.labels or all(isinstance(r[k], (int, float)) for r in self)
             for k in keys}
    align = lambda k, text: text.rjust(widths[k]) if right[k] else text.ljust(widths[k])
    lines = ["  ".join(align(k, k) for k in keys)]
    lines += ["  ".join(align(k, cells[k][i]) for k in keys) for i in range(len(self))]
    return "\n".join(line.rstrip() for line in lines)

  def to_dataframe(self):
    """The rows as a pandas DataFrame. Needs pandas."""
    return _optional("pandas", "to_dataframe").DataFrame(list(self))


def column(values: list, label: bool = False, like: list | None = None) -> list[str]:
  """`values` as text in one format: labels, ints and strings as written (floats as `g`);
  other floats with the decimals that give the largest |value| of `like` (default `values`)
  4 significant digits (0 to 6), so that "99.0" stands beside "101.2"; NaN as ""."""
  finite = [abs(v) for v in (values if like is None else like)
            if isinstance(v, float) and np.isfinite(v)]
  if label or not finite:
    return [cell(v) for v in values]
  top = max(finite)
  decimals = min(6, max(0, 3 - int(np.floor(np.log10(top))))) if top > 0 else 1
  return [f"{v:.{decimals}f}" if isinstance(v, float) and np.isfinite(v) else cell(v)
          for v in values]


def cell(v) -> str:
  """A label as a table cell: a float as `g`, NaN and None (a run without that field) as ""."""
  if v is None:
    return ""
  if isinstance(v, float):
    return f"{v:g}" if np.isfinite(v) else ""
  return str(v)


def _values(coords: np.ndarray, most: int = 6, sep: str = ", ") -> str:
  """An axis's coordinates, shortened past `most`: "0, 1, 2, …, 62, 63"; `sep` between them
  ("; " for runs, whose labels hold commas)."""
  text = [cell(plain(v)) for v in coords]
  if len(text) > most:
    text = text[:3] + ["…"] + text[-2:]
  return sep.join(text)


def _runs_with(labels: np.ndarray, name: str, value, column: list):
  """The run label(s) whose field `name` is `value` (or one of a list): a list when `value` is
  one or several runs match, else the one label (`Results.sel`)."""
  many = isinstance(value, (list, tuple, range)) or np.ndim(value) > 0
  wanted = [plain(v) for v in value] if many else [plain(value)]
  found = [str(label) for label, v in zip(labels, column) if v in wanted]
  if not found:
    values = list(dict.fromkeys(v for v in column if v is not None and v == v))
    raise ValueError(f"{name}={value!r} matches no run; the runs' values of {name} are {values}"
                     + (_checks.did_you_mean(value, values) if isinstance(value, str) else ""))
  return found if many or len(found) > 1 else found[0]


def from_records(grid: Grid, seeds: np.ndarray, recorder: Recorder, data: np.ndarray,
                 instances: np.ndarray | None = None,
                 metrics: dict[str, np.ndarray] | None = None, **extra) -> Results:
  """Results from a recorder's layout and (gathered) `data` (num_combos, G, S, R) — with
  `instances` (their seeds, (I,)) (num_combos, G·I, S, R), the axis "instance" before
  "seed"; `metrics`, the named metrics laid out as `data` (default the recorder's own);
  `extra` sets timing, complete, config, metadata, runs."""
  arranged = arrange(grid, data, instances)
  metrics = recorder.metrics if metrics is None else metrics
  extra["metrics"] = {k: arrange(grid, v, instances) for k, v in metrics.items()} or None
  inner = () if instances is None else (INSTANCE,)
  axes = grid.fields + inner + ("seed", "step")
  coords = {**grid.coords(), **({} if instances is None else {INSTANCE: np.asarray(instances)}),
            "seed": np.asarray(seeds), "step": recorder.steps}
  field = "regret" if recorder.name == "regret" else "recorded"
  return Results(axes, coords, **{field: arranged}, **extra)


def arrange(grid: Grid, blocks, instances: np.ndarray | None = None) -> np.ndarray:
  """`Grid.arrange` of `blocks` (num_combos, G, *rest), or with `instances` (I,) of blocks
  (num_combos, G·I, *rest) (point g's instance i at row g·I + i: `rbx.core.driver.rows`)
  -> (*grid shape, I, *rest)."""
  if instances is None:
    return grid.arrange(blocks)
  split = lambda b: b.reshape(b.shape[0] // len(instances), len(instances), *b.shape[1:])
  if isinstance(blocks, (list, tuple)):
    return grid.arrange([split(b) for b in blocks])
  return grid.arrange(blocks.reshape(blocks.shape[0], -1, len(instances), *blocks.shape[2:]))


def scaling_slope(t: np.ndarray, mean_regret: np.ndarray, t_min: float | None = None) -> float:
  """The least-squares slope of log R(t) against log t over t ≥ t_min (default √T)."""
  t = np.asarray(t, np.float64)
  t_min = np.sqrt(t.max()) if t_min is None else t_min
  keep = (t >= t_min) & (mean_regret > 0)
  if keep.sum() < 2:
    return float("nan")
  return float(np.polyfit(np.log(t[keep]), np.log(mean_regret[keep]), 1)[0])


def scaling_slope_ci(t: np.ndarray, cumulative: np.ndarray, t_min: float | None = None,
                     boots: int = 1000, seed: int = 0, level: float = 0.95):
  """`scaling_slope` of the seeds' mean R(t), with a percentile bootstrap interval over seeds.

  Args:
    t: the steps, shape (T,).
    cumulative: R(t) per seed, shape (..., seeds, T).
    t_min: fit over t ≥ t_min (default √T); boots, seed: the bootstrap's draws and seed.
  Returns:
    (slope, low, high), each of shape (...): the slope of the mean over all seeds and the
    `level` interval of the slopes of `boots` resamples of the seeds (NaN where R ≤ 0).
  """
  t = np.asarray(t, np.float64)
  cum = np.asarray(cumulative, np.float64)
  keep = t >= (np.sqrt(t.max()) if t_min is None else t_min)
  x = np.log(t[keep])
  x = x - x.mean()
  y = cum[..., keep]                                                     # (..., S, K)
  S = y.shape[-2]
  counts = np.random.default_rng(seed).multinomial(S, np.full(S, 1.0 / S), size=boots)
  means = np.concatenate([y.mean(axis=-2, keepdims=True),
                          np.einsum("bs,...sk->...bk", counts / S, y)], axis=-2)
  with np.errstate(divide="ignore", invalid="ignore"):
    logs = np.where(means > 0, np.log(np.where(means > 0, means, 1.0)), np.nan)
  slopes = (logs * x).sum(axis=-1) / (x * x).sum()                      # (..., 1 + boots)
  tail = 100 * (1 - level) / 2
  low, high = np.percentile(slopes[..., 1:], [tail, 100 - tail], axis=-1)
  return slopes[..., 0], low, high


def points(results: Results) -> list[dict[str, Any]]:
  """Every grid point of `results` as {field: value} (`Results.fields`: a run's fields in
  place of its label, NaN or None for those it lacks), in C order of the grid axes."""
  axes = results.grid_axes
  columns = results.run_columns()
  at = lambda a, i: ({f: plain(v[i]) for f, v in columns.items()} if a == RUN and columns
                     else {a: plain(results.coords[a][i])})
  return [{k: v for a, i in zip(axes, index) for k, v in at(a, i).items()}
          for index in itertools.product(*(range(len(results.coords[a])) for a in axes))]


def present(point: dict[str, Any]) -> dict[str, Any]:
  """`point` without the fields its run lacks (None or NaN: `Results.run_columns`)."""
  return {k: v for k, v in point.items()
          if v is not None and not (isinstance(v, float) and np.isnan(v))}


def _optional(module: str, method: str):
  try:
    return importlib.import_module(module)
  except ImportError as e:
    raise ImportError(f"Results.{method} needs {module}: pip install 'rbx[analysis]'") from e
