"""The one sweep: seeds × hyperparameter grid × steps of any family, as `rbx.sweep`.

`sweep(build, grid, seeds, steps)` calls `build(**point) -> (env, agent)` for every grid point
(numeric fields arrive traced), pairs them (`rbx.core.protocol.pair`) and runs everything with
the chunked driver (`rbx.core.driver`): traced fields vmapped in one program, static fields
(names, sizes, anything in `static`) looped over, one compiled program per combination, the
seeds mapped in batches of `seed_batch` and sharded over `devices`. Which fields are static
defaults from the registry of the environment's family (`rbx.core.registry`): a field that
any of its environments or agents declares static (e.g. "width", "train_steps"); strings are
always static. The family also gives what the default `seed_batch` is made from
(`rbx.core.batching`: on a CPU its cache rule, on an accelerator the device's total memory
over the per-seed working set). `simulate` (one seed) and `trajectory` (one seed of a sweep,
every step, for `rbx trace`) run the sweep's own programs, so a seed is the same bits in all
of them (docs/reproducibility.md).

The family conveniences `rlhf.sweep` and `neural.sweep` are this function. TOML runs
(`rbx run`, `rbx.runs.experiment`) call it too, with the checkpoint hooks `start`, `on_chunk` and
`stop`. With several processes (`rbx.core.devices.initialize`) each runs its share of the
seeds and the records are gathered, so every process returns the whole `Results`.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.core import devices as devices_lib
from rbx.core import batching, compile_cache, driver, memory, protocol, registry
from rbx.core import progress as progress_lib
from rbx.core import grid as grid_lib
from rbx.core.grid import Grid, seed_list
from rbx.core.record import RECORDS, recorded_steps
from rbx.core.results import Results, from_records


def sweep(build: Callable[..., tuple[Any, protocol.Agent]], grid: Mapping[str, Sequence[Any]],
          seeds: int | Sequence[int], steps: int, *, static: Sequence[str] | None = None,
          devices: int | None = None, seed_batch: int | batching.Choice | None = None,
          chunk: int | None = None,
          record: str = "steps", log_points: int = 50, seed_block: int | None = None,
          progress: bool | str | None = None, start: driver.Snapshot | None = None,
          on_chunk: Callable[[driver.Snapshot], None] | None = None,
          stop: Callable[[], bool] | None = None,
          compiles: list | None = None) -> Results:
  """Regret of every grid point and seed over `steps` steps.

  Args:
    build: `build(**point) -> (env, agent)`; numeric grid fields arrive traced, so build
      from them with the library's constructors (e.g.
      `lambda beta, alpha: (rlhf.example2(100, beta, 6.0), rlhf.algorithm1(alpha))`).
    grid: field -> values; their Cartesian product is swept ({} for one point). Or a list of
      such grids, each swept on its own (per-agent grids, `rbx.core.grid.expand`): the
      results' grid axis is then "run", labelled by each run's fields.
    seeds: n (seeds 0..n−1) or a list of seeds; seed s uses `jax.random.key(s)`.
    steps: T, steps per run.
    static: fields looped over in Python; default: the fields the family declares static.
    devices: local devices to shard the seeds over (default all, however few the seeds).
    seed_batch: seeds vmapped at once per device, every batch full (the last padded), so a
      seed's bits do not depend on the number of seeds (default: `rbx.core.batching`'s for
      this sweep and device kind — a CPU: the family's cache rule for the grid's
      environments, the smallest of them; an accelerator: what fits in half its memory); or a
      `batching.Choice` made earlier (`rbx.runs.config`). The results' timing records it and why.
    chunk: steps per jitted chunk (progress, checkpoints, Ctrl-C); default all T, or about
      T/20 (a divisor of T) when a bar is shown.
    record: "steps" (every r_t), "log" or "summary" (see `rbx.core.record`).
    log_points: the number of log-spaced steps kept by record = "log".
    seed_block: seeds whose state is held at once (default all).
    progress: a tqdm bar (`rbx.core.progress`): True, False, "plain" (a line at most every
      10 s, no bar), or None (default): shown where
      someone watches — stderr is a terminal, or a Jupyter kernel — once the sweep has run a
      few seconds.
    start, on_chunk, stop: continue from a driver snapshot, receive one after every chunk,
      and poll for an early stop (see `rbx.core.driver.run`).
    compiles: a list that receives (what, seconds) of every compile.
  Returns:
    `Results` with axes (*grid fields, "seed", "step") and the sweep's timing.
  Raises:
    ValueError: a bad grid, seeds or settings, a grid point that its constructors reject, or
      a sweep whose memory estimate does not fit on this machine (`rbx.core.memory`), before
      anything compiles or is allocated.
  """
  compile_cache.use()                       # the command line's cache, from Python too
  steps = _checks.positive_int("steps", steps)
  num_seeds = _checks.num_seeds(seeds)
  plan, runs, mesh, choice, state = _setup(build, grid, steps, static, devices, seed_batch)
  if chunk is None and progress_lib.shown(progress):
    chunk = progress_lib.chunk_for(steps)
  options = driver.Options(chunk=chunk, record=record, log_points=log_points,
                           seed_batch=choice.seed_batch, seed_block=seed_block)
  _check_memory(plan, options, num_seeds, mesh, checkpoint=on_chunk is not None, state=state)
  seeds = seed_list(seeds)
  plan = plan._replace(seeds=devices_lib.process_slice(seeds))
  out = _on_devices(lambda m: driver.run(plan, options, mesh=m, start=start, on_chunk=on_chunk,
                                         stop=stop, progress=progress), mesh)
  stats = out.stats
  timing = dict(compile_seconds=stats["compile_seconds"], run_seconds=stats["run_seconds"],
                seed_steps=int(stats["seed_steps"]),
                seed_steps_per_second=stats["seed_steps"] / max(stats["run_seconds"], 1e-12),
                seed_batch=choice.seed_batch, seed_batch_reason=choice.reason)
  data = out.recorder.data if not out.complete else devices_lib.gather(out.recorder.data,
                                                                       seeds.size, axis=2)
  if compiles is not None:
    compiles.extend(out.compiles)
  local = seeds if out.complete else plan.seeds
  return from_records(plan.grid, local, out.recorder, data, timing=timing,
                      complete=out.complete, runs=runs)


def trajectory(build: Callable[..., tuple[Any, protocol.Agent]],
               grid: Mapping[str, Sequence[Any]], seed: int, steps: int, *,
               static: Sequence[str] | None = None, devices: int | None = None,
               seed_batch: int | batching.Choice | None = None, every: int | None = None
               ) -> tuple[driver.Trajectory, Grid, dict | None]:
  """Seed `seed`'s every step at every grid point of `sweep(build, grid, ..., steps)` — the
  whole `Transition` (obs, action, feedback, regret) — by the sweep's own programs (the same
  devices, batch width and grid), so its regret is bit for bit the sweep's row of that seed;
  with `every` = K also the carried state (environment, agent) after every K steps. Returns
  (`driver.Trajectory` with one seed, the grid, the runs of a list of sub-grids)."""
  compile_cache.use()
  steps = _checks.positive_int("steps", steps)
  seed = seed_list([seed])
  plan, runs, mesh, choice, _ = _setup(build, grid, steps, static, devices, seed_batch)
  chunk = None if every is None else _checks.positive_int("every", every)
  options = driver.Options(chunk=chunk, seed_batch=choice.seed_batch)
  out = _on_devices(lambda m: driver.trajectory(plan._replace(seeds=seed), options, mesh=m,
                                                states=every is not None), mesh)
  return out, plan.grid, runs


def _setup(build, grid, steps, static, devices, seed_batch):
  """(driver sweep without seeds, runs of a list of sub-grids, mesh, seed batch `Choice`,
  state bytes a seed) of a sweep, every grid point checked."""
  build, expanded, static = grid_lib.expand(build, grid, static)
  runs = grid_lib.run_table(grid)
  plan, family, envs = _plan(build, expanded, steps, static)
  mesh = devices_lib.seed_mesh(devices)
  state = _state_bytes(plan)
  choice = (_seed_batch(plan, family, envs, mesh, state) if seed_batch is None
            else batching.given(seed_batch))
  return plan, runs, mesh, choice, state


def _on_devices(go, mesh):
  """`go(mesh)`, or `go(None)` — one device — when the program calls CPU LAPACK kernels
  (`driver.NeedsOneDevice`), with a warning: the same choice for every run of a config."""
  try:
    return go(mesh)
  except driver.NeedsOneDevice as e:
    warnings.warn(f"{e}: they deadlock when several CPU devices call them at once (jaxlib "
                  f"0.10), so this sweep runs on one CPU device instead of {mesh.devices.size}",
                  stacklevel=3)
    return go(None)


def _plan(build, grid, steps, static) -> tuple[driver.Sweep, registry.Family | None, list]:
  """The driver's sweep (seeds None: the caller sets them once their memory is checked),
  every grid point built concretely first (ValueError for a bad one), the environment's
  family and every grid point's environment."""
  fields = Grid(grid)                       # checks the values before `build` sees them
  built = [_built(build, point, check=False) for point in fields.each()]
  first = {}
  for env, agent in built:
    first.setdefault(agent.name, (env, agent))
  for env, agent in first.values():
    protocol.check(env, agent, steps)       # once an agent: a trace, not a compile
  envs = [env for env, _ in built]
  family = family_of(envs[0])
  if static is None:
    static = sorted(family.static_names()) if family is not None else ()
  return _driver_sweep(build, grid, None, steps, static), family, envs


def default_seed_batch(build, grid, steps: int, *, static: Sequence[str],
                       envs: Sequence[Any], devices: int | None = None) -> batching.Choice:
  """The default seed batch of a sweep over `grid`, whose grid points' environments are
  `envs` (`rbx.core.batching`: whatever the number of seeds); the grid is not validated again."""
  build, grid, static = grid_lib.expand(build, grid, static)
  plan = _driver_sweep(build, grid, None, steps, static)
  return _seed_batch(plan, family_of(envs[0]), envs, devices_lib.seed_mesh(devices),
                     _state_bytes(plan))


def _seed_batch(plan: driver.Sweep, family: registry.Family | None, envs, mesh,
                state: int) -> batching.Choice:
  """`default_seed_batch` of a plan whose state is `state` bytes a seed: a function of the
  config and the device kind, not of the number of seeds (`rbx.core.batching`)."""
  family = family or registry.Family("")
  used = _used(mesh)
  # a batch steps its seeds at every numeric grid point at once (they are vmapped together)
  per_seed = family.working_set(envs, state) * plan.grid.num_points
  return batching.choose(used[0].platform, memory.device_total(used), per_seed,
                         family.cpu_choice(envs))


def _used(mesh) -> list:
  """The local devices a sweep on `mesh` (None: one device) runs on."""
  return jax.local_devices()[:1] if mesh is None else list(mesh.devices.flat)


def check_memory(build, grid, seeds: int, steps: int, *, static: Sequence[str],
                 devices: int | None = None, seed_batch: int | batching.Choice = 64,
                 chunk: int | None = None, record: str = "steps", log_points: int = 50,
                 seed_block: int | None = None, checkpoint: bool = False) -> memory.Estimate:
  """The memory estimate of sweeping `seeds` seeds (`rbx.core.memory`; `checkpoint`: a
  checkpoint is written after every chunk); ValueError stating it, the limit and the fix when
  it does not fit on this machine. The grid is not validated again."""
  options = driver.Options(chunk=chunk, record=record, log_points=log_points,
                           seed_batch=batching.given(seed_batch).seed_batch,
                           seed_block=seed_block)
  build, grid, static = grid_lib.expand(build, grid, static)
  plan = _driver_sweep(build, grid, None, steps, static)
  return _check_memory(plan, options, _checks.positive_int("seeds", seeds),
                       devices_lib.seed_mesh(devices), checkpoint, _state_bytes(plan))


def _check_memory(plan: driver.Sweep, options: driver.Options, num_seeds: int, mesh,
                  checkpoint: bool, state: int) -> memory.Estimate:
  chunk = plan.steps if options.chunk is None else _checks.positive_int("chunk", options.chunk)
  block = math.ceil(num_seeds / jax.process_count())
  if options.seed_block is not None:
    block = min(block, _checks.positive_int("seed_block", options.seed_block))
  _checks.choice("record", options.record, RECORDS)
  recorded = (plan.steps if options.record == "steps"       # not recorded_steps: T may be huge
              else recorded_steps(options.record, plan.steps, options.log_points).size)
  used = _used(mesh)
  need = memory.estimate(
      combos=len(plan.grid.combos()), points=plan.grid.num_points, seeds=num_seeds,
      recorded=recorded, record=options.record, block=block, chunk=min(chunk, plan.steps),
      state=state, devices=len(used), seed_batch=options.seed_batch,
      checkpoint=checkpoint)
  memory.check(need, used)
  return need


def _driver_sweep(build, grid, seeds, steps, static) -> driver.Sweep:
  return driver.Sweep(lambda hp: protocol.pair(*build(**hp), steps), Grid(grid, static=static),
                      seeds, steps)


def state_bytes(build, grid, steps: int, static: Sequence[str]) -> int:
  """Bytes of carried state per seed and grid point (the largest static combination's; the
  grid is not validated again)."""
  build, grid, static = grid_lib.expand(build, grid, static)
  return _state_bytes(_driver_sweep(build, grid, None, steps, static))


def _state_bytes(plan: driver.Sweep) -> int:
  grid = plan.grid
  return max(driver.state_bytes(plan._replace(grid=Grid(
      {**grid.values, **{f: [v] for f, v in combo.items()}}, static=grid.static)))
             for combo in grid.combos())


def family_of(env) -> registry.Family | None:
  """The registered family whose environments include `env`'s type, or None."""
  for fam in registry.FAMILIES.values():
    if isinstance(env, fam.env_types):
      return fam
  return None


def _built(build, point: dict[str, Any], check: bool = True):
  """`build(**point)` at a concrete point, checked (with `check`, the agent protocol too,
  `protocol.check`): (env, agent)."""
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
  family = family_of(env)
  others = [f.name for f in registry.FAMILIES.values()
            if f is not family and agent.name in f.agents]
  if family is not None and agent.name not in family.agents and others:
    raise ValueError(f"agent {agent.name!r} is of family {others[0]!r} and env "
                     f"({type(env).__name__}) of family {family.name!r}, whose agents are "
                     f"{list(family.agents)}")
  if check:
    _check_protocol(env, agent)
  return env, agent


_CHECKED: set = set()


def _check_protocol(env, agent: protocol.Agent) -> None:
  """`protocol.check` once per agent and environment type (`simulate` in a loop over seeds)."""
  try:
    key = (agent, type(env))
    if key in _CHECKED:
      return
  except TypeError:                         # an agent of unhashable parts: checked every time
    key = None
  protocol.check(env, agent)
  if key is not None:
    if len(_CHECKED) >= 64:
      _CHECKED.clear()
    _CHECKED.add(key)


def simulate(env, agent: protocol.Agent, key, steps: int, horizon: int | None = None, *,
             devices: int | None = None, seed_batch: int | None = None):
  """One seed's run as stacked `Transition`s (obs, action, feedback, regret; leading axis
  steps); `horizon` (default `steps`) is what `agent.init` is told. It runs the sweep's own
  program (`rbx.core.driver.trajectory`: the seed padded to a full batch on every device), so
  seed s of `sweep(lambda: (env, agent), {}, seeds, steps)` is bit for bit
  `simulate(env, agent, jax.random.key(s), steps)` on the same kind of device; `devices` and
  `seed_batch` as in `sweep` (set them as the sweep set them)."""
  steps = _checks.positive_int("steps", steps)
  if horizon is not None:
    _checks.positive_int("horizon", horizon)
  env, agent = _built(lambda: (env, agent), {})
  horizon = steps if horizon is None else horizon
  plan = driver.Sweep(lambda hp: protocol.pair(env, agent, horizon), Grid({}), np.zeros(1), steps)
  mesh = devices_lib.seed_mesh(devices)
  cached = (id(env), agent, steps, horizon, seed_batch, None if mesh is None else mesh.devices.size)
  if cached not in _SIMULATED:              # a loop over seeds plans and compiles once
    choice = (_seed_batch(plan, family_of(env), [env], mesh, _state_bytes(plan))
              if seed_batch is None else batching.given(seed_batch))
    if len(_SIMULATED) >= 16:
      _SIMULATED.pop(next(iter(_SIMULATED)))
    _SIMULATED[cached] = (env, choice.seed_batch, {})
  _, width, compiled = _SIMULATED[cached]
  out = driver.trajectory(plan, driver.Options(seed_batch=width), mesh=mesh,
                          keys=driver.key_data(jnp.asarray(key)[None]), compiled=compiled)
  return jax.tree.map(lambda x: jnp.asarray(x[0, 0]), out.kept[0])


# `simulate`'s seed batch and compiled programs by (environment object, agent, sizes), the 16
# most recent; each entry holds its environment, so that its id stays its own.
_SIMULATED: dict = {}
