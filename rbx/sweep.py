"""Seeds × hyperparameter-grid sweeps in memory, with named result axes.

Shared by both families. A family supplies `build(hp) -> Run` (`rbx.core.loop.Run`) for one
grid point `hp` (a dict of scalars); `grid_sweep` runs it over seeds and the Cartesian product
of the grid with the chunked driver `rbx.core.driver` as one chunk of all steps: numeric grid
fields vmapped, non-numeric (static) fields such as agent names looped over, one compiled
program per combination. For checkpoints, progress and results on disk, see `rbx run`
(`rbx.experiment`).

Seed `s` always uses `jax.random.key(s)`, so a seed's trajectory does not depend on which
other seeds or grid points share its batch. Seeds run in vmapped batches of `seed_batch`
(`jax.lax.map(..., batch_size=...)`), which keeps the working set in cache: one vmap over
1024 seeds is slower per seed than 16 batches of 64 on a CPU, and needs 16× the memory.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from rbx import _checks
from rbx.core import devices as devices_lib
from rbx.core import driver, loop
from rbx.core.grid import Grid, seed_list, select

__all__ = ["SweepResult", "grid_sweep", "seed_list"]


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
    regret, axes, new_coords = select(self.regret, self.axes, self.coords, coords)
    return SweepResult(regret, axes, new_coords, self.timing)


def grid_sweep(build: Callable[[dict[str, Any]], loop.Run], grid: Mapping[str, Sequence[Any]],
               seeds: int | Sequence[int], steps: int,
               validate: Callable[[dict[str, Any]], None] | None = None,
               seed_batch: int = 64, devices: int | None = None) -> SweepResult:
  """Runs `build(hp)` for every grid point and seed for `steps` steps.

  Args:
    build: `hp -> Run`, traceable in the numeric fields of `hp`.
    grid: field name -> list of values. Numeric fields are vmapped; other fields
      (strings, objects) are looped over, one compiled program per combination.
    seeds: number of seeds, or the list of seeds.
    steps: steps per run.
    validate: called with every concrete grid point before anything is traced; it should
      raise `ValueError` for a bad one.
    seed_batch: seeds vmapped at once (the rest run sequentially inside the same program).
    devices: local devices to shard the seeds over (`rbx.core.devices.seed_mesh`; default
      all, e.g. every GPU, or the CPU devices set by `jax_num_cpu_devices`).

  Returns:
    `SweepResult` with axes `(*grid fields, "seed", "step")`.
  """
  seeds = seed_list(seeds)
  _checks.positive_int("seed_batch", seed_batch)
  _checks.positive_int("steps", steps)
  g = Grid(grid)
  mesh = devices_lib.seed_mesh(devices)
  if validate is not None:
    for point in g.each():
      validate(point)
  out = driver.run(driver.Sweep(build, g, seeds, steps), driver.Options(seed_batch=seed_batch),
                   mesh=mesh)
  regret = g.arrange(out.recorder.data)
  coords = {**g.coords(), "seed": seeds, "step": out.recorder.steps}
  timing = dict(compile_seconds=out.stats["compile_seconds"], run_seconds=out.stats["run_seconds"],
                seed_steps_per_second=out.stats["seed_steps"] / max(out.stats["run_seconds"], 1e-12))
  return SweepResult(regret, g.fields + ("seed", "step"), coords, timing)
