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

An environment built from an integer seed may also be swept over instances (`instances=I`):
`build(**point, seed=i)` gets instance i's seed traced, the results get the axis "instance"
before "seed", and instance i is bit for bit the sweep of the environment built at seed = i.

`sweep` is `run(plan(...), seeds, RunOptions(...))`: `plan` checks and plans the sweep once,
before anything compiles — every grid point built, the state a seed measured, the seed batch
chosen (`Plan`) — and `check_memory`, `run` and `trajectory` read that plan. The family
conveniences `rlhf.sweep` and `neural.sweep` are `sweep`; a TOML run (`rbx run`) plans once,
when its config is loaded (`rbx.runs.config.Config.plan`), and `run`s the plan with the
checkpoint hooks `start`, `on_chunk` and `stop`. With several processes (`rbx.core.devices.initialize`) each runs its share of the
seeds and the records are gathered, so every process returns the whole `Results`.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

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
from rbx.core.results import INSTANCE, Results, from_records


class Plan(NamedTuple):
  """A sweep checked and planned once, before anything compiles (`plan`): what its memory
  check, its run (`run`) and a run's metadata read.

  Attributes:
    sweep: the driver's sweep, its seeds unset (`run` sets them).
    runs: label -> fields of each run of a list of sub-grids; None for a table.
    mesh: the ("seed",) mesh the seeds are sharded over (None: one device).
    seed_batch: the seeds vmapped at once per device, and why (`batching.Choice`).
    state_bytes: bytes of carried state a seed and grid point (the largest static
      combination's).
    unchecked: one grid point's (env, agent) of each agent whose protocol is still to be
      traced (`protocol.check`), which `run` and `trajectory` do first; () once checked.
    metrics: the names of the per-step metrics the sweep records beside the regret: those
      its environments declare (`protocol.metric_names`), over every grid point.
  """
  sweep: driver.Sweep
  runs: dict[str, dict[str, Any]] | None
  mesh: Any
  seed_batch: batching.Choice
  state_bytes: int
  unchecked: tuple[tuple[Any, protocol.Agent], ...]
  metrics: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class RunOptions:
  """How a planned sweep runs (`run`): `sweep`'s keywords beyond its plan's.

  Attributes:
    chunk: steps per jitted chunk (progress, checkpoints, Ctrl-C); default all T, or about
      T/20 (a divisor of T) when a bar is shown.
    record: "steps" (every r_t), "log" or "summary" (see `rbx.core.record`).
    log_points: the number of log-spaced steps kept by record = "log".
    seed_block: seeds whose state is held at once (default all).
    progress: a tqdm bar (`rbx.core.progress`): True, False, "plain" (a line at most every
      10 s, no bar), or None (default): shown where someone watches — stderr is a terminal,
      or a Jupyter kernel — once the sweep has run a few seconds.
    start, on_chunk, stop: continue from a driver snapshot, receive one after every chunk,
      and poll for an early stop (see `rbx.core.driver.run`).
    compiles: a list that receives (what, seconds) of every compile.
  """
  chunk: int | None = None
  record: str = "steps"
  log_points: int = 50
  seed_block: int | None = None
  progress: bool | str | None = None
  start: driver.Snapshot | None = None
  on_chunk: Callable[[driver.Snapshot], None] | None = None
  stop: Callable[[], bool] | None = None
  compiles: list | None = None


def sweep(build: Callable[..., tuple[Any, protocol.Agent]], grid: Mapping[str, Sequence[Any]],
          seeds: int | Sequence[int], steps: int, *, static: Sequence[str] | None = None,
          devices: int | None = None, seed_batch: int | batching.Choice | None = None,
          instances: int | None = None, **options) -> Results:
  """Regret of every grid point (and instance) and seed over `steps` steps: `run(plan(build,
  grid, steps, ...), seeds, RunOptions(**options))`.

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
      `batching.Choice` made earlier. The results' timing records it and why.
    instances: I, to sweep the environment over instances 0..I−1 in the same program:
      `build(**point, seed=i)` gets instance i's environment seed, traced, and builds the
      environment from it as from an integer seed (e.g. `rlhf.random_contextual(
      jax.random.key(seed), ...)`), so instance i is bit for bit a sweep of the environment
      built at seed = i. None (default): no instance axis.
    **options: `RunOptions`' fields (chunk, record, log_points, seed_block, progress, start,
      on_chunk, stop, compiles).
  Returns:
    `Results` with axes (*grid fields, "seed", "step") — with instances (*grid fields,
    "instance", "seed", "step") — and the sweep's timing.
  Raises:
    ValueError: a bad grid, seeds or settings, a grid point that its constructors reject,
      instances of an environment that has none (built from data or with NumPy), or a sweep
      whose memory estimate does not fit on this machine (`rbx.core.memory`), before anything
      compiles or is allocated.
  """
  options = RunOptions(**options)
  return run(plan(build, grid, steps, static=static, devices=devices, seed_batch=seed_batch,
                  instances=instances), seeds, options)


def plan(build, grid, steps: int, *, static: Sequence[str] | None = None,
         devices: int | None = None, seed_batch: int | batching.Choice | None = None,
         instances: int | None = None, built: Sequence[tuple[Any, protocol.Agent]] | None = None,
         check: bool = True) -> Plan:
  """The `Plan` of `sweep(build, grid, ..., steps)` (the arguments as there): every grid
  point built concretely (at instance 0) and checked (ValueError for a bad one), the state a
  seed measured and the seed batch chosen; nothing compiles. `built`: the grid points' (env,
  agent), in grid order, where the caller built them already (a config, to name a bad
  point's key). `check`: trace each agent's protocol now, once an agent (`protocol.check`:
  seconds for a large agent), before anything else traces it; False leaves it to `run` (a
  config loaded for a report need not pay it).
  """
  steps = _checks.positive_int("steps", steps)
  by_label, expanded, _ = grid_lib.expand(build, grid, static)
  fields = Grid(expanded)                   # checks the values before `build` sees them
  if instances is not None:
    instances = np.arange(_checks.positive_int("instances", instances))
    _check_instance_fields(grid)
  at = {} if instances is None else {driver.ENV_SEED: 0}
  built = ([_built(by_label, {**point, **at}, check=False, seeded=bool(at))
            for point in fields.each()]
           if built is None else [_checked(env, agent, check=False) for env, agent in built])
  if instances is not None:
    _check_instances(by_label, next(fields.each()), built[0][0])
  first = {}
  for env, agent in built:
    first.setdefault(agent.name, (env, agent))
  if check:
    _check_agents(first.values(), steps)
  envs = [env for env, _ in built]
  family = family_of(envs[0])
  if static is None:
    static = sorted(family.static_names()) if family is not None else ()
  work = _driver_sweep(build, grid, None, steps, static)._replace(instances=instances)
  mesh = devices_lib.seed_mesh(devices)
  state = _state_bytes(work)
  choice = (_seed_batch(work, family, envs, mesh, state, [agent for _, agent in built])
            if seed_batch is None
            else batching.given(seed_batch))
  metrics = tuple(dict.fromkeys(n for env in envs for n in protocol.metric_names(env)))
  return Plan(work, grid_lib.run_table(grid), mesh, choice, state,
              () if check else tuple(first.values()), metrics)


def _check_instance_fields(grid) -> None:
  """ValueError for a grid field that an instance axis sets or names ("seed", "instance")."""
  tables = [grid] if isinstance(grid, Mapping) else grid
  for field in (driver.ENV_SEED, INSTANCE):
    if any(field in table for table in tables):
      raise ValueError(f"grid field {field!r} with instances: instance i is the environment "
                       f"at seed = i, on the results' axis {INSTANCE!r}; sweep instances or "
                       "seed, not both")


def _check_instances(build, point: dict[str, Any], env) -> None:
  """ValueError naming `instances` unless the environment that `build(**point, seed=s)`
  makes is one of an integer seed: another at seed 1 than at seed 0 (`env`), and built by
  JAX from a traced seed. An environment of data, or drawn with NumPy, has no instance axis."""
  name = f"the environment ({type(env).__name__})"
  arrays = lambda e: [x for x in jax.tree.leaves(e) if hasattr(x, "shape")]
  other = _built(build, {**point, driver.ENV_SEED: 1}, check=False, seeded=True)[0]
  if all(np.array_equal(a, b) for a, b in zip(arrays(env), arrays(other))):
    raise ValueError(f"instances: {name} is the same at seed = 0 and seed = 1: it is built "
                     "from data (or build ignores seed=) and has no instance axis; drop "
                     "instances")
  try:
    jax.eval_shape(lambda s: arrays(build(**point, **{driver.ENV_SEED: s})[0]), jnp.int32(0))
  except Exception as e:                   # noqa: BLE001 — whatever stops the trace
    raise ValueError(f"instances: {name} cannot be built from a traced seed — its arrays are "
                     f"not drawn by JAX from the seed (NumPy's generator, or data) — so it has "
                     f"no instance axis; drop instances ({type(e).__name__}: "
                     f"{str(e).splitlines()[0] if str(e) else ''})") from e


def _check_agents(agents, steps: int) -> None:
  """`protocol.check` of each (env, agent) of `agents`: a trace, not a compile."""
  for env, agent in agents:
    protocol.check(env, agent, steps)


def run(plan: Plan, seeds: int | Sequence[int], options: RunOptions = RunOptions()) -> Results:
  """`sweep`'s results of a planned sweep over `seeds` (as in `sweep`), run as `options`
  say, its memory (`check_memory`) and its unchecked agents (`Plan.unchecked`) checked
  first."""
  compile_cache.use()                       # the command line's cache, from Python too
  num_seeds = _checks.num_seeds(seeds)
  check_memory(plan, num_seeds, options, checkpoint=options.on_chunk is not None)
  _check_agents(plan.unchecked, plan.sweep.steps)
  seeds = seed_list(seeds)
  work = plan.sweep._replace(seeds=devices_lib.process_slice(seeds))
  out = _on_devices(lambda m: driver.run(work, _driver_options(plan, options), mesh=m,
                                         start=options.start, on_chunk=options.on_chunk,
                                         stop=options.stop, progress=options.progress),
                    plan.mesh)
  stats, choice = out.stats, plan.seed_batch
  timing = dict(compile_seconds=stats["compile_seconds"], run_seconds=stats["run_seconds"],
                seed_steps=int(stats["seed_steps"]),
                seed_steps_per_second=stats["seed_steps"] / max(stats["run_seconds"], 1e-12),
                seed_batch=choice.seed_batch, seed_batch_reason=choice.reason)
  gather = ((lambda x: x) if not out.complete
            else lambda x: devices_lib.gather(x, seeds.size, axis=2))
  data = gather(out.recorder.data)
  metrics = {k: gather(v) for k, v in out.recorder.metrics.items()}
  if options.compiles is not None:
    options.compiles.extend(out.compiles)
  local = seeds if out.complete else work.seeds
  return from_records(work.grid, local, out.recorder, data, timing=timing,
                      complete=out.complete, runs=plan.runs, instances=work.instances,
                      metrics=metrics)


def _driver_options(plan: Plan, options: RunOptions) -> driver.Options:
  """The driver's options of running `plan` as `options` say (a chunk for a shown bar)."""
  chunk = options.chunk
  if chunk is None and progress_lib.shown(options.progress):
    chunk = progress_lib.chunk_for(plan.sweep.steps)
  return driver.Options(chunk=chunk, record=options.record, log_points=options.log_points,
                        seed_batch=plan.seed_batch.seed_batch, seed_block=options.seed_block)


def trajectory(plan: Plan, seed: int, every: int | None = None
               ) -> tuple[driver.Trajectory, Grid, dict | None]:
  """Seed `seed`'s every step at every grid point of the planned sweep — the whole
  `Transition` (obs, action, feedback, regret) — by the sweep's own programs (the same
  devices, batch width and grid), so its regret is bit for bit the sweep's row of that seed;
  with `every` = K also the carried state (environment, agent) after every K steps. Returns
  (`driver.Trajectory` with one seed, the grid, the runs of a list of sub-grids)."""
  compile_cache.use()
  _check_agents(plan.unchecked, plan.sweep.steps)
  seed = seed_list([seed])
  chunk = None if every is None else _checks.positive_int("every", every)
  options = driver.Options(chunk=chunk, seed_batch=plan.seed_batch.seed_batch)
  out = _on_devices(lambda m: driver.trajectory(plan.sweep._replace(seeds=seed), options,
                                                mesh=m, states=every is not None), plan.mesh)
  return out, plan.sweep.grid, plan.runs


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


def default_seed_batch(build, grid, steps: int, *, static: Sequence[str],
                       envs: Sequence[Any], devices: int | None = None,
                       agents: Sequence[protocol.Agent] | None = None) -> batching.Choice:
  """The default seed batch of a sweep over `grid`, whose grid points' environments are
  `envs` and agents `agents` (None: the family's rule alone) (`rbx.core.batching`: whatever
  the number of seeds); the grid is not validated again."""
  work = _driver_sweep(build, grid, None, steps, static)
  return _seed_batch(work, family_of(envs[0]), envs, devices_lib.seed_mesh(devices),
                     _state_bytes(work), agents)


def _seed_batch(work: driver.Sweep, family: registry.Family | None, envs, mesh,
                state: int, agents=None) -> batching.Choice:
  """`default_seed_batch` of a driver sweep whose state is `state` bytes a seed: a function
  of the config and the device kind, not of the number of seeds (`rbx.core.batching`)."""
  family = family or registry.Family("")
  used = _used(mesh)
  # a batch steps its seeds at every numeric grid point at once (they are vmapped together)
  per_seed = family.working_set(envs, state) * work.grid.num_points
  return batching.choose(used[0].platform, memory.device_total(used), per_seed,
                         family.cpu_choice(envs, agents))


def _used(mesh) -> list:
  """The local devices a sweep on `mesh` (None: one device) runs on."""
  return jax.local_devices()[:1] if mesh is None else list(mesh.devices.flat)


def check_memory(plan: Plan, seeds: int, options: RunOptions = RunOptions(),
                 checkpoint: bool = False) -> memory.Estimate:
  """The memory estimate of running `plan` over `seeds` seeds as `options` say
  (`rbx.core.memory`; `checkpoint`: a checkpoint is written after every chunk); ValueError
  stating it, the limit and the fix when it does not fit on this machine."""
  work, driven = plan.sweep, _driver_options(plan, options)
  seeds = _checks.positive_int("seeds", seeds)
  chunk = work.steps if driven.chunk is None else _checks.positive_int("chunk", driven.chunk)
  block = math.ceil(seeds / jax.process_count())
  if driven.seed_block is not None:
    block = min(block, _checks.positive_int("seed_block", driven.seed_block))
  _checks.choice("record", driven.record, RECORDS)
  recorded = (work.steps if driven.record == "steps"       # not recorded_steps: T may be huge
              else recorded_steps(driven.record, work.steps, driven.log_points).size)
  used = _used(plan.mesh)
  instances = 1 if work.instances is None else work.instances.size
  need = memory.estimate(
      combos=len(work.grid.combos()), points=work.grid.num_points * instances, seeds=seeds,
      recorded=recorded, record=driven.record, block=block, chunk=min(chunk, work.steps),
      state=plan.state_bytes, devices=len(used), seed_batch=driven.seed_batch,
      checkpoint=checkpoint, metrics=len(plan.metrics))
  memory.check(need, used)
  return need


def _driver_sweep(build, grid, seeds, steps, static) -> driver.Sweep:
  """The driver's sweep of `build` over `grid` — a table (`Grid`) or a list of sub-grids
  (`rbx.core.grid.Runs`: `build` receives each run's own fields)."""
  table = grid_lib.run_table(grid)
  fields = Grid(grid, static=static) if table is None else grid_lib.Runs(table, static)
  return driver.Sweep(lambda hp: protocol.pair(*build(**hp), steps), fields, seeds, steps)


def state_bytes(build, grid, steps: int, static: Sequence[str]) -> int:
  """Bytes of carried state per seed and grid point (the largest static combination's; the
  grid is not validated again)."""
  return _state_bytes(_driver_sweep(build, grid, None, steps, static))


def _state_bytes(work: driver.Sweep) -> int:
  return max(driver.state_bytes(work._replace(grid=work.grid.only(c)))
             for c in range(len(work.grid.combos())))


def family_of(env) -> registry.Family | None:
  """The registered family whose environments include `env`'s type, or None."""
  for fam in registry.FAMILIES.values():
    if isinstance(env, fam.env_types):
      return fam
  return None


def _built(build, point: dict[str, Any], check: bool = True, seeded: bool = False):
  """`build(**point)` at a concrete point, `_checked`: (env, agent); `seeded`: the point
  holds an instance's seed (for the message)."""
  try:
    built = build(**point)
  except TypeError as e:
    raise ValueError(f"build(**{point}) failed: {e} (build takes the grid fields as keyword "
                     "arguments" + (", with instances also seed=" if seeded else "")
                     + ", and returns (env, agent))") from e
  if not (isinstance(built, tuple) and len(built) == 2):
    raise ValueError(f"build must return (env, agent), got {type(built).__name__}")
  return _checked(*built, check=check)


def _checked(env, agent, check: bool = True):
  """(env, agent), checked to be an rbx environment and agent of one family (with `check`,
  the agent protocol too, `protocol.check`)."""
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
  work = driver.Sweep(lambda hp: protocol.pair(env, agent, horizon), Grid({}), np.zeros(1), steps)
  mesh = devices_lib.seed_mesh(devices)
  cached = (id(env), agent, steps, horizon, seed_batch, None if mesh is None else mesh.devices.size)
  if cached not in _SIMULATED:              # a loop over seeds plans and compiles once
    choice = (_seed_batch(work, family_of(env), [env], mesh, _state_bytes(work), [agent])
              if seed_batch is None else batching.given(seed_batch))
    if len(_SIMULATED) >= 16:
      _SIMULATED.pop(next(iter(_SIMULATED)))
    _SIMULATED[cached] = (env, choice.seed_batch, {})
  _, width, compiled = _SIMULATED[cached]
  out = driver.trajectory(work, driver.Options(seed_batch=width), mesh=mesh,
                          keys=driver.key_data(jnp.asarray(key)[None]), compiled=compiled)
  return jax.tree.map(lambda x: jnp.asarray(x[0, 0]), out.kept[0])


# `simulate`'s seed batch and compiled programs by (environment object, agent, sizes), the 16
# most recent; each entry holds its environment, so that its id stays its own.
_SIMULATED: dict = {}
