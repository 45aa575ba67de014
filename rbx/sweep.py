"""Seeds × hyperparameter-grid sweeps as one jitted program, with named result axes.

Shared by both families. A family supplies `run_one(hp, key) -> regret (steps,)`, a pure
function of one grid point `hp` (a dict of scalars) and one PRNG key; `grid_sweep` vmaps it
over seeds and over the Cartesian product of the numeric grid fields, and runs one compiled
program per combination of the non-numeric (static) fields, such as agent names.

Seed `s` always uses `jax.random.key(s)`, so a seed's trajectory does not depend on which
other seeds or grid points share its batch. Seeds run in vmapped batches of `seed_batch`
(`jax.lax.map(..., batch_size=...)`), which keeps the working set in cache: one vmap over
1024 seeds is slower per seed than 16 batches of 64 on a CPU, and needs 16× the memory.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks


class SweepResult(NamedTuple):
  """Per-step regret with named axes.

  Attributes:
    regret: array of shape `(*grid_shape, num_seeds, steps)`.
    axes: the names of `regret`'s axes: the grid fields in order, then "seed", "step".
    coords: for every axis, the values along it ("step" counts from 1).
    timing: `compile_seconds`, `run_seconds` and `seed_steps_per_second` of the sweep.
  """
  regret: np.ndarray
  axes: tuple[str, ...]
  coords: dict[str, np.ndarray]
  timing: dict[str, float] | None = None

  def cumulative(self) -> np.ndarray:
    """Cumulative regret R(t) = Σ_{s≤t} regret_s, same shape and axes as `regret`."""
    return np.cumsum(self.regret, axis=-1)

  def final(self) -> np.ndarray:
    """Cumulative regret at the last step, shape `(*grid_shape, num_seeds)`."""
    return self.regret.sum(axis=-1)

  def sel(self, **coords) -> "SweepResult":
    """The sub-result at the given coordinates, e.g. `res.sel(agent="vpo", beta=0.1)`."""
    out, axes, new_coords = self.regret, list(self.axes), dict(self.coords)
    for name, value in coords.items():
      _checks.choice("axis", name, axes)
      i = axes.index(name)
      values = list(new_coords[name])
      if value not in values:
        raise ValueError(f"{name}={value!r} is not on the axis; values are {values}")
      out = np.take(out, values.index(value), axis=i)
      axes.pop(i)
      new_coords.pop(name)
    return SweepResult(out, tuple(axes), new_coords, self.timing)


def seed_list(seeds: int | Sequence[int]) -> np.ndarray:
  """`seeds` as an int array: n means seeds 0..n-1."""
  if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
    return np.arange(_checks.positive_int("seeds", seeds))
  arr = np.asarray(list(seeds))
  if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
    raise ValueError(f"seeds must be a positive int or a non-empty list of ints, got {seeds!r}")
  return arr


def grid_sweep(run_one: Callable[[dict[str, Any], jax.Array], jax.Array],
               grid: Mapping[str, Sequence[Any]],
               seeds: int | Sequence[int],
               validate: Callable[[dict[str, Any]], None] | None = None,
               seed_batch: int = 64) -> SweepResult:
  """Runs `run_one` for every grid point and seed.

  Args:
    run_one: `(hp, key) -> (steps,)` per-step regret, traceable in the numeric fields of `hp`.
    grid: field name -> list of values. Numeric fields are vmapped; other fields
      (strings, objects) are looped over, one compiled program per combination.
    seeds: number of seeds, or the list of seeds.
    validate: called with every concrete grid point before anything is traced; it should
      raise `ValueError` for a bad one.
    seed_batch: seeds vmapped at once (the rest run sequentially inside the same program).

  Returns:
    `SweepResult` with axes `(*grid fields, "seed", "step")`.
  """
  seeds = seed_list(seeds)
  seed_batch = min(_checks.positive_int("seed_batch", seed_batch), seeds.size)
  fields = list(grid)
  values = {}
  for f in fields:
    v = list(grid[f])
    if not v:
      raise ValueError(f"grid field {f!r} has no values")
    values[f] = v
  static = [f for f in fields if not all(_is_number(x) for x in values[f])]
  numeric = [f for f in fields if f not in static]

  if validate is not None:
    for combo in itertools.product(*(values[f] for f in fields)):
      validate(dict(zip(fields, combo)))

  keys = jax.vmap(jax.random.key)(jnp.asarray(seeds))
  points = list(itertools.product(*(values[f] for f in numeric)))
  flat = {f: jnp.asarray([p[i] for p in points], jnp.float32) for i, f in enumerate(numeric)}
  flat = flat or {_NO_FIELD: jnp.zeros(1)}        # vmap needs an axis even for an empty grid
  num_shape = tuple(len(values[f]) for f in numeric)

  blocks, compile_s, run_s = [], 0.0, 0.0
  for combo in itertools.product(*(values[f] for f in static)):
    fixed = dict(zip(static, combo))

    def over_seeds(hp, fixed=fixed):
      hp = {f: v for f, v in hp.items() if f != _NO_FIELD}
      return jax.lax.map(lambda k: run_one({**fixed, **hp}, k), keys, batch_size=seed_batch)

    start = time.perf_counter()
    program = jax.jit(jax.vmap(over_seeds)).lower(flat).compile()
    compile_s += time.perf_counter() - start
    start = time.perf_counter()
    out = np.asarray(program(flat))                              # (G, S, T)
    run_s += time.perf_counter() - start
    blocks.append(out.reshape(num_shape + out.shape[1:]))
  stacked = np.stack(blocks).reshape(
      tuple(len(values[f]) for f in static) + blocks[0].shape)  # (*static, *numeric, S, T)
  order = static + numeric
  regret = np.moveaxis(stacked, [order.index(f) for f in fields], list(range(len(fields))))

  coords = {f: np.asarray(values[f]) for f in fields}
  coords["seed"] = seeds
  coords["step"] = np.arange(1, regret.shape[-1] + 1)
  timing = dict(compile_seconds=compile_s, run_seconds=run_s,
                seed_steps_per_second=regret.size / max(run_s, 1e-12))
  return SweepResult(regret, tuple(fields) + ("seed", "step"), coords, timing)


_NO_FIELD = "__no_numeric_field__"


def _is_number(x) -> bool:
  return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
