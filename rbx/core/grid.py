"""Seeds and the Cartesian hyperparameter grid of a sweep, with named axes.

Numeric grid fields become traced arrays (one flat axis of all their combinations, vmapped);
the others — names, sizes, anything in `static` — are looped over in Python, one compiled
program per combination. `Grid.arrange` puts results back in the fields' order.

A grid may also be a list of such grids, each swept on its own (per-agent grids: Algorithm 1
alone beside ε-greedy at each ε). Its runs are labelled by their fields ("agent=eps_greedy,
epsilon=0.05"), so the results have the axes ("run", "seed", "step") and no cell that was not
run; `run_table` gives each run's fields (the results' per-run coordinates). `Runs` runs
them as a grid does: the runs whose static fields are the same (the same agent, say) are one
static combination, their numeric fields vmapped in one program, however many sub-grids
they come from (three α values of one agent: one program, not three).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from rbx import _checks


def seed_list(seeds: int | Sequence[int]) -> np.ndarray:
  """`seeds` as an int array: n means seeds 0..n-1 (`rbx._checks.num_seeds` checks it)."""
  n = _checks.num_seeds(seeds)
  if isinstance(seeds, (int, np.integer)):
    return np.arange(n)
  return np.asarray(seeds, dtype=np.int64)


class Grid:
  """The Cartesian product of `fields`' values, split into static and numeric fields.

  Attributes:
    fields: the field names in the order given (the results' leading axes).
    values: field -> list of values.
    static: fields looped over in Python (non-numeric values, or named in `static`).
    numeric: fields vmapped over as float32 arrays.
  """

  def __init__(self, grid: Mapping[str, Sequence[Any]], static: Sequence[str] = ()):
    self.fields = tuple(grid)
    self.values = {}
    for f in self.fields:
      self.values[f] = _checks.grid_values(f"grid.{f}", grid[f])
    self.static = tuple(f for f in self.fields
                        if f in static or not all(is_number(x) for x in self.values[f]))
    self.numeric = tuple(f for f in self.fields if f not in self.static)

  @property
  def shape(self) -> tuple[int, ...]:
    """The number of values of every field, in field order."""
    return tuple(len(self.values[f]) for f in self.fields)

  @property
  def num_points(self) -> int:
    """G: the numeric points vmapped in one program (1 when no field is numeric)."""
    return int(np.prod([len(self.values[f]) for f in self.numeric], dtype=int))

  def combos(self) -> list[dict[str, Any]]:
    """The static combinations, one compiled program each."""
    return [dict(zip(self.static, c))
            for c in itertools.product(*(self.values[f] for f in self.static))]

  def points(self, combo: int = 0) -> dict[str, np.ndarray]:
    """Numeric field -> its values over the numeric points of static combination `combo`
    (in a table, the same G for every combination), float32 arrays of shape (G,)."""
    combos = list(itertools.product(*(self.values[f] for f in self.numeric)))
    return {f: np.asarray([c[i] for c in combos], np.float32) for i, f in enumerate(self.numeric)}

  def only(self, combo: int) -> Grid:
    """The grid of static combination `combo` alone (its numeric points as here)."""
    return Grid({**self.values, **{f: [v] for f, v in self.combos()[combo].items()}},
                static=self.static)

  def each(self) -> Iterator[dict[str, Any]]:
    """Every concrete grid point (for validation before anything is traced)."""
    for combo in itertools.product(*(self.values[f] for f in self.fields)):
      yield dict(zip(self.fields, combo))

  def arrange(self, blocks) -> np.ndarray:
    """(num_combos, G, *rest) in (static, numeric) order (an array, or one (G, *rest) array
    per combination) -> (*grid shape, *rest) in field order."""
    blocks = np.stack(blocks) if isinstance(blocks, (list, tuple)) else blocks
    rest = blocks.shape[2:]
    shape = tuple(len(self.values[f]) for f in self.static + self.numeric)
    out = blocks.reshape(shape + rest)
    order = self.static + self.numeric
    return np.moveaxis(out, [order.index(f) for f in self.fields], list(range(len(self.fields))))

  def coords(self) -> dict[str, np.ndarray]:
    """Field -> its values as an array (the results' coordinates)."""
    return {f: np.asarray(self.values[f]) for f in self.fields}


RUN = "run"


class Runs(Grid):
  """The runs of a list of sub-grids (`runs`: label -> fields), on the one axis "run": the
  runs whose static fields (non-numeric values, or named in `static`) and numeric field
  names are the same form one static combination, whose numeric fields are vmapped over its
  own G_c runs (in the order given). `combos()` gives each combination's static fields and
  `points(c)` its runs' numeric values, so `build` receives a run's own fields.

  Attributes (beside `Grid`'s): table: label -> fields; where: each run's (combination,
  index among its points), in label order.
  """

  def __init__(self, table: Mapping[str, Mapping[str, Any]], static: Sequence[str] = ()):
    self.table = dict(table)
    self.fields, self.values, self.static, self.numeric = (RUN,), {RUN: list(table)}, (RUN,), ()
    groups: dict[tuple, list[str]] = {}
    for label, point in self.table.items():
      fixed = tuple((f, v) for f, v in point.items() if f in static or not is_number(v))
      numeric = tuple(f for f in point if f not in dict(fixed))
      groups.setdefault((fixed, numeric), []).append(label)
    self._groups = [(dict(fixed), numeric, labels) for (fixed, numeric), labels in groups.items()]
    at = {label: (c, j) for c, (_, _, labels) in enumerate(self._groups)
          for j, label in enumerate(labels)}
    self.where = [at[label] for label in self.table]

  @property
  def num_points(self) -> int:
    """The most runs vmapped in one program (the largest combination's G_c)."""
    return max(len(labels) for _, _, labels in self._groups)

  def combos(self) -> list[dict[str, Any]]:
    """Each combination's static fields, one compiled program each."""
    return [fixed for fixed, _, _ in self._groups]

  def points(self, combo: int = 0) -> dict[str, np.ndarray]:
    """Numeric field -> its values over combination `combo`'s own G_c runs, (G_c,) float32."""
    _, numeric, labels = self._groups[combo]
    return {f: np.asarray([self.table[label][f] for label in labels], np.float32)
            for f in numeric}

  def only(self, combo: int) -> Grid:
    """Combination `combo`'s runs as a rectangular `Grid` (one value per static field)."""
    fixed, numeric, labels = self._groups[combo]
    return Grid({**{f: [v] for f, v in fixed.items()},
                 **{f: [self.table[label][f] for label in labels] for f in numeric}},
                static=tuple(fixed))

  def each(self) -> Iterator[dict[str, Any]]:
    """Every run as {"run": label}."""
    for label in self.table:
      yield {RUN: label}

  def arrange(self, blocks) -> np.ndarray:
    """(num_combos, ≥ G_c, *rest) (an array padded past each G_c, or one array per
    combination) -> (runs, *rest) in label order."""
    return np.stack([blocks[c][j] for c, j in self.where])


def expand(build, grid, static):
  """(build, grid, static) of a sweep whose grid may be a list of sub-grids (module
  docstring): unchanged for a table; for a list, `build(run=label, **rest)` calls the given
  build with that run's point (and `rest`: an instance's seed), the grid is {"run": labels}
  and "run" is static.

  Raises:
    ValueError: a grid that is neither a table of lists nor a non-empty list of them, a bad
      sub-grid, or a point in two sub-grids.
  """
  if isinstance(grid, Mapping):
    return build, grid, static
  if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid:
    raise ValueError("grid must be a table (field -> list of values) or a non-empty list of "
                     f"them, got {grid!r}")
  table = runs(grid)
  return (None if build is None else lambda run, **rest: build(**table[run], **rest),
          {RUN: list(table)}, (RUN,))


def runs(grids: Sequence[Mapping[str, Sequence[Any]]]) -> dict[str, dict[str, Any]]:
  """Label -> point of every point of every sub-grid of `grids`, in order (see `expand`)."""
  out = {}
  for i, sub in enumerate(grids):
    if not isinstance(sub, Mapping):
      raise ValueError(f"grid[{i}] must be a table (field -> list of values), got {sub!r}")
    for point in Grid(sub).each():
      label = ", ".join(f"{k}={_checks.plain(v)}" for k, v in point.items()) or "defaults"
      if label in out:
        raise ValueError(f"grid[{i}] repeats the run {label!r} of an earlier sub-grid")
      out[label] = point
  return out


def run_table(grid) -> dict[str, dict[str, Any]] | None:
  """Label -> fields of each run of a list of sub-grids (`runs`); None for a table (no "run"
  axis)."""
  return None if isinstance(grid, Mapping) else runs(grid)


def select(array: np.ndarray, axes: Sequence[str], coords: Mapping[str, np.ndarray],
           where: Mapping[str, Any]) -> tuple[np.ndarray, tuple[str, ...], dict[str, np.ndarray]]:
  """`array` (axes `axes`) at the coordinates `where`, axis -> one value (that axis is dropped)
  or a list of values (the axis keeps those, in the order given)."""
  axes, coords = list(axes), dict(coords)
  for name, value in where.items():
    _checks.choice("axis", name, axes)
    i = axes.index(name)
    values = [plain(v) for v in coords[name]]
    many = isinstance(value, (list, tuple, range)) or np.ndim(value) > 0
    wanted = [plain(v) for v in value] if many else [plain(value)]
    for v in wanted:
      if v not in values:
        raise ValueError(f"{name}={v!r} is not on the axis; its values are {values}"
                         + (_checks.did_you_mean(v, values) if isinstance(v, str) else ""))
    index = [values.index(v) for v in wanted]
    if many:
      array = np.take(array, index, axis=i)
      coords[name] = np.asarray(coords[name])[index]
    else:
      array = np.take(array, index[0], axis=i)
      axes.pop(i)
      coords.pop(name)
  return array, tuple(axes), coords


def plain(v):
  """A Python scalar from a NumPy scalar (`np.str_("vpo")` -> "vpo"); anything else as is."""
  return v.item() if isinstance(v, np.generic) else v


def is_number(x) -> bool:
  """True for an int or float (Python or NumPy), not a bool."""
  return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
