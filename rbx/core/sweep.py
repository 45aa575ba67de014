"""The one sweep: seeds × hyperparameter grid × steps of any family, as `rbx.sweep`.

`sweep(build, grid, seeds, steps)` calls `build(**point) -> (env, agent)` for every grid point
(numeric fields arrive traced), pairs them (`rbx.core.protocol.pair`) and runs everything with
the chunked driver (`rbx.core.driver`): traced fields vmapped in one program, static fields
(names, sizes, anything in `static`) looped over, one compiled program per combination, the
seeds mapped in batches of `seed_batch` and sharded over `devices`. Which fields are static
defaults from the registry of the environment's family (`rbx.core.registry`): a field that
any of its environments or agents declares static (e.g. "width", "train_steps"); strings are
always static. The family also gives the default `seed_batch`.

The family conveniences `rlhf.sweep` and `neural.sweep` are this function. TOML runs
(`rbx run`, `rbx.experiment`) call it too, with the checkpoint hooks `start`, `on_chunk` and
`stop`. With several processes (`rbx.core.devices.initialize`) each runs its share of the
seeds and the records are gathered, so every process returns the whole `Results`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from rbx import _checks
from rbx.core import devices as devices_lib
from rbx.core import driver, protocol, registry
from rbx.core.grid import Grid, seed_list
from rbx.core.results import Results, from_records


def sweep(build: Callable[..., tuple[Any, protocol.Agent]], grid: Mapping[str, Sequence[Any]],
          seeds: int | Sequence[int], steps: int, *, static: Sequence[str] | None = None,
          devices: int | None = None, seed_batch: int | None = None, chunk: int | None = None,
          record: str = "steps", log_points: int = 50, seed_block: int | None = None,
          progress: bool = False, start: driver.Snapshot | None = None,
          on_chunk: Callable[[driver.Snapshot], None] | None = None,
          stop: Callable[[], bool] | None = None,
          compiles: list | None = None) -> Results:
  """Regret of every grid point and seed over `steps` steps.

  Args:
    build: `build(**point) -> (env, agent)`; numeric grid fields arrive traced, so build
      from them with the library's constructors (e.g.
      `lambda beta, alpha: (rlhf.example2(100, beta, 6.0), rlhf.algorithm1(alpha))`).
    grid: field -> values; their Cartesian product is swept ({} for one point).
    seeds: n (seeds 0..n−1) or a list of seeds; seed s uses `jax.random.key(s)`.
    steps: T, steps per run.
    static: fields looped over in Python; default: the fields the family declares static.
    devices: local devices to shard the seeds over (default all).
    seed_batch: seeds vmapped at once per device (default: the family's).
    chunk: steps per jitted chunk (progress, checkpoints, Ctrl-C); default all T.
    record: "steps" (every r_t), "log" or "summary" (see `rbx.core.record`).
    log_points: the number of log-spaced steps kept by record = "log".
    seed_block: seeds whose state is held at once (default all).
    progress: show a tqdm bar.
    start, on_chunk, stop: continue from a driver snapshot, receive one after every chunk,
      and poll for an early stop (see `rbx.core.driver.run`).
    compiles: a list that receives (what, seconds) of every compile.
  Returns:
    `Results` with axes (*grid fields, "seed", "step") and the sweep's timing.
  Raises:
    ValueError: a bad grid, seeds or settings, or a grid point that its constructors reject,
      before anything compiles.
  """
  steps = _checks.positive_int("steps", steps)
  seeds = seed_list(seeds)
  plan, family = _plan(build, grid, seeds, steps, static)
  if seed_batch is None:
    seed_batch = family.seed_batch() if family is not None else 64
  options = driver.Options(chunk=chunk, record=record, log_points=log_points,
                           seed_batch=_checks.positive_int("seed_batch", seed_batch),
                           seed_block=seed_block)
  mesh = devices_lib.seed_mesh(devices)
  plan = plan._replace(seeds=devices_lib.process_slice(seeds))
  out = driver.run(plan, options, mesh=mesh, start=start, on_chunk=on_chunk, stop=stop,
                   progress=progress)
  stats = out.stats
  timing = dict(compile_seconds=stats["compile_seconds"], run_seconds=stats["run_seconds"],
                seed_steps=int(stats["seed_steps"]),
                seed_steps_per_second=stats["seed_steps"] / max(stats["run_seconds"], 1e-12))
  data = out.recorder.data if not out.complete else devices_lib.gather(out.recorder.data,
                                                                       seeds.size, axis=2)
  if compiles is not None:
    compiles.extend(out.compiles)
  local = seeds if out.complete else plan.seeds
  return from_records(plan.grid, local, out.recorder, data, timing=timing,
                      complete=out.complete)


def _plan(build, grid, seeds, steps, static) -> tuple[driver.Sweep, registry.Family | None]:
  """The driver's sweep, every grid point built concretely first (ValueError for a bad one),
  and the environment's family."""
  fields = Grid(grid)                       # checks the values before `build` sees them
  points = list(fields.each())
  env, _ = _built(build, points[0])
  family = family_of(env)
  if static is None:
    static = sorted(family.static_names()) if family is not None else ()
  for point in points[1:]:
    _built(build, point)
  return _driver_sweep(build, grid, seeds, steps, static), family


def _driver_sweep(build, grid, seeds, steps, static) -> driver.Sweep:
  return driver.Sweep(lambda hp: protocol.pair(*build(**hp), steps), Grid(grid, static=static),
                      seeds, steps)


def state_bytes(build, grid, steps: int, static: Sequence[str]) -> int:
  """Bytes of carried state per seed and grid point (the first static combination; the grid
  is not validated again)."""
  return driver.state_bytes(_driver_sweep(build, grid, np.zeros(1, np.int32), steps, static))


def family_of(env) -> registry.Family | None:
  """The registered family whose environments include `env`'s type, or None."""
  for fam in registry.FAMILIES.values():
    if isinstance(env, fam.env_types):
      return fam
  return None


def _built(build, point: dict[str, Any]):
  """`build(**point)` at a concrete point, checked: (env, agent)."""
  try:
    built = build(**point)
  except TypeError as e:
    raise ValueError(f"build(**{point}) failed: {e} (build takes the grid fields as keyword "
                     "arguments and returns (env, agent))") from e
  if not (isinstance(built, tuple) and len(built) == 2):
    raise ValueError(f"build must return (env, agent), got {type(built).__name__}")
  env, agent = built
  if not isinstance(agent, protocol.Agent):
    raise ValueError(f"agent must be an rbx.core.Agent (e.g. from rbx.rlhf.get or "
                     f"rbx.neural.get), got {type(agent).__name__}")
  missing = [m for m in ("spec", "reset", "observe", "feedback") if not hasattr(env, m)]
  if missing:
    raise ValueError(f"env must be an rbx environment (spec, reset, observe, feedback; e.g. "
                     f"rbx.rlhf.example1(), rbx.neural.synthetic()), got {type(env).__name__}")
  return env, agent


def simulate(env, agent: protocol.Agent, key, steps: int, horizon: int | None = None):
  """One seed's run as stacked `Transition`s (obs, action, feedback, regret; leading axis
  steps), jitted; `horizon` (default `steps`) is what `agent.init` is told. Seed s of a sweep
  is `simulate(..., jax.random.key(s), T)`."""
  steps = _checks.positive_int("steps", steps)
  if horizon is not None:
    _checks.positive_int("horizon", horizon)
  _built(lambda: (env, agent), {})
  return _jitted(agent, steps, horizon)(env, key)


@functools.lru_cache(maxsize=64)
def _jitted(agent, steps, horizon):
  return jax.jit(lambda env, k: protocol.rollout(env, agent, k, steps, horizon))
