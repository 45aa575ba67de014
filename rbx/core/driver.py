"""The chunked sweep driver: seeds × grid × steps as jitted chunks with state carried between.

A sweep is split into work units — one per static grid combination and block of at most
`seed_block` seeds — run one after another. A unit's state, shape (G, S_block, ...) per leaf
(G numeric grid points), lives on the devices from its `init` program through
⌈T / chunk⌉ calls of one compiled chunk program (steps t0..t0+chunk−1, t0 traced, so one
compile serves every chunk; a shorter last chunk compiles once more). Between chunks, in
Python, the driver records the chunk's regret and the environment's named per-step metrics
(`rbx.core.protocol.add_metrics`, returned by the same program) on the host (`Recorder`),
advances the progress bar, hands a `Snapshot` of everything to `on_chunk` (the checkpoint) and
asks `stop()` whether to end early (Ctrl-C); it asks again after every compile, so a stop
asked for while XLA compiles takes effect as soon as the compile returns, before anything else
compiles or runs (`rbx run`'s Ctrl-C handler stops at once instead while `compiling()`).
Resuming from a snapshot repeats exactly the same programs on exactly the same inputs, so the
results are bit-identical to an uninterrupted run.

Inside a program the G grid points are vmapped (with an instance axis each point's I
environment seeds run one after another through `lax.map`, the carry's leading axis G·I:
`_over_points`) and the seeds run through `lax.map(..., batch_size=seed_batch)`, every batch full (the seeds padded to a multiple of
devices × seed_batch, so a seed's program does not depend on the number of seeds); with a mesh (`rbx.core.devices.seed_mesh`) the seed
axis is split over its devices with `jax.shard_map` (each device maps its own seeds). Seed s
uses `jax.random.key(s)` wherever it runs. The shard_map runs with `check_vma=False`: every
input and output is split over "seed" and no collective runs inside, so JAX's check of which
values vary over the seed axis guards nothing here, and with it an agent written as plain JAX
(a `lax.fori_loop`/`scan` whose carry starts from a constant, e.g. `jnp.zeros(())`, and
becomes seed-dependent) would fail to trace on several devices ("carry input and carry output
must have equal types ... {V:seed}").

Memory (bytes): device ≈ G·S_block·(state per seed) + G·S_block·chunk·4 (the chunk's regret)
+ the working set of G·seed_batch seeds per device; host ≈ the records (see
`rbx.core.record`) + G·S·8 (R(t) so far) + one unit's state while a checkpoint is written.
"""
from __future__ import annotations

import functools

import math
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

from rbx import _checks
from rbx.core import protocol
from rbx.core.grid import Grid
from rbx.core.progress import Progress
from rbx.core.record import Recorder


class Sweep(NamedTuple):
  """What to run: `build(point) -> Run` (`rbx.core.protocol.pair`) for a grid point (numeric
  fields traced), the grid, the seeds (int array) and the number of steps T; `instances`, the
  environment seeds of an instance axis (int array of I), each given to `build` as its
  point's traced "seed" (None: no instance axis)."""
  build: Callable[[dict[str, Any]], protocol.Run]
  grid: Grid
  seeds: np.ndarray
  steps: int
  instances: np.ndarray | None = None


class Options(NamedTuple):
  """How to run it.

  Attributes:
    chunk: steps per jitted chunk (None: all T in one chunk).
    record: "steps", "log" or "summary" (see `rbx.core.record`).
    log_points: the number of log-spaced steps kept by record = "log".
    seed_batch: seeds vmapped at once per device; more run in sequence in the same program
      (1: each seed's step runs unbatched, one seed after another).
    seed_block: seeds whose state is held at once (None: all); blocks run one after another.
  """
  chunk: int | None = None
  record: str = "steps"
  log_points: int = 50
  seed_batch: int = 64
  seed_block: int | None = None


class Snapshot(NamedTuple):
  """The sweep between two chunks: work unit `unit` has run `t` steps with state `carry`
  (host copies of the leaves; None between units), the records so far (the recorder's own
  arrays: copy them to keep them past the next chunk) and the statistics (compile_seconds,
  run_seconds, seed_steps)."""
  unit: int
  t: int
  carry: list[np.ndarray] | None
  records: dict[str, np.ndarray]
  stats: dict[str, float]


class Outcome(NamedTuple):
  """The records, the statistics, the compiles (what, seconds) and whether every unit finished."""
  recorder: Recorder
  stats: dict[str, float]
  compiles: list[tuple[str, float]]
  complete: bool


class NeedsOneDevice(RuntimeError):
  """The program calls CPU LAPACK kernels (`calls`), which deadlock in jaxlib 0.10 when several
  CPU devices call them at once (e.g. `jnp.linalg.solve` on matrices above ~100 × 100): such
  a sweep must run on one CPU device. Raised before any step runs."""

  def __init__(self, calls: list[str]):
    super().__init__(f"the program calls CPU LAPACK kernels ({', '.join(calls)})")
    self.calls = calls


def run(sweep: Sweep, options: Options = Options(), *, mesh=None, start: Snapshot | None = None,
        on_chunk: Callable[[Snapshot], None] | None = None, stop: Callable[[], bool] | None = None,
        progress: bool | str | None = False) -> Outcome:
  """Runs (or, from `start`, continues) `sweep`; see the module docstring.

  Args:
    sweep: what to run.
    options: chunk size, what to record, seed batching.
    mesh: a ("seed",) mesh to shard the seeds over, or None for one device.
    start: a snapshot to continue from (from `on_chunk` of an earlier run of the same sweep).
    on_chunk: called after every chunk with the snapshot (e.g. to write a checkpoint).
    stop: polled after every chunk; True ends the run early (`complete=False`).
    progress: a tqdm bar on stderr, or plain lines (`rbx.core.progress.Progress`).
  """
  T, chunk, seed_batch = _sizes(sweep, options)
  S = sweep.seeds.size
  block = S if options.seed_block is None else _checks.positive_int("seed_block", options.seed_block)
  combos = sweep.grid.combos()
  points = [_points(sweep, c) for c in range(len(combos))]
  sizes = [rows(p) for p in points]                               # G_c·I of each combination
  recorder = Recorder(options.record, T, (len(combos), max(sizes), S), options.log_points)
  stats = dict(compile_seconds=0.0, run_seconds=0.0, seed_steps=0)
  if start is not None:
    recorder.restore(start.records)
    stats = dict(start.stats)
  bar = Progress(sum(sizes) * S * T, int(stats["seed_steps"]), enabled=progress)
  programs = _Programs(mesh, stats, bar)
  try:
    units = _units(sweep, combos, block, seed_batch, mesh, start)
    # Every program is lowered first (here, in order) and compiled in the background
    # (`_Programs`): a unit runs while later ones compile, and programs of the same text
    # compile once.
    for unit in units:
      _lower(programs, unit, points[unit.c], T, chunk)
    for unit in units:
      hp = points[unit.c]
      if unit.restored is None:
        carry = programs.get(("init", unit.c, unit.seeds.size), stop)(hp, unit.keys)
      else:
        carry = _restore(jax.eval_shape(unit.init, hp, unit.keys), unit.restored, mesh)
      t_done = unit.t
      while t_done < T:
        length = min(chunk, T - t_done)
        step = programs.get(("chunk", unit.c, unit.seeds.size, length), stop)
        begin = time.perf_counter()
        carry, (regret, metrics) = step(hp, unit.keys, carry, jnp.int32(t_done + 1))
        regret = np.asarray(regret)[:, :unit.hi - unit.lo]
        metrics = {k: np.asarray(v)[:, :unit.hi - unit.lo] for k, v in metrics.items()}
        stats["run_seconds"] += time.perf_counter() - begin
        recorder.add(unit.c, slice(unit.lo, unit.hi), t_done + 1, regret, metrics)
        t_done += length
        stats["seed_steps"] += regret.size
        bar.advance(regret.size, f"{unit.label} seeds {unit.lo}..{unit.hi - 1} t={t_done}/{T}")
        last = t_done == T
        if on_chunk is not None:
          leaves = None if last else [np.array(x) for x in jax.tree.leaves(carry)]
          on_chunk(Snapshot(unit.u + 1 if last else unit.u, 0 if last else t_done, leaves,
                            recorder.state(), dict(stats)))
        if stop is not None and stop() and not (last and unit is units[-1]):
          return Outcome(recorder, stats, programs.compiles, False)
  except _Stopped:
    return Outcome(recorder, stats, programs.compiles, False)
  finally:
    programs.close()
    bar.close()
  return Outcome(recorder, stats, programs.compiles, True)


class _Unit(NamedTuple):
  """Work unit `u`: static combination `c` (`label`) and seeds lo..hi−1, padded to a multiple
  of devices × seed_batch (`seeds`; `keys`, their key data on the devices), its programs'
  functions (`init_and_chunk`), and where it starts: after step `t`, from the carry's host
  leaves `restored` (None: from its init program)."""
  u: int
  c: int
  lo: int
  hi: int
  label: str
  seeds: np.ndarray
  keys: Any
  init: Callable
  chunk: Callable
  t: int
  restored: list[np.ndarray] | None


def _units(sweep: Sweep, combos: list[dict[str, Any]], block: int, seed_batch: int, mesh,
           start: Snapshot | None) -> list[_Unit]:
  """The work units of `sweep` still to run, in order — one per static combination and
  block of at most `block` seeds — from `start`'s on, which continues from its step and
  carry."""
  S = sweep.seeds.size
  bounds = [(c, lo, min(lo + block, S)) for c in range(len(combos)) for lo in range(0, S, block)]
  first = 0 if start is None else start.unit
  n_dev = 1 if mesh is None else mesh.devices.size
  units = []
  for u in range(first, len(bounds)):
    c, lo, hi = bounds[u]
    resumed = start is not None and u == first
    seeds = _pad(sweep.seeds[lo:hi], n_dev * seed_batch)
    init_fn, chunk_fn = init_and_chunk(sweep.build, combos[c], seed_batch, mesh)
    label = ", ".join(f"{k}={v}" for k, v in combos[c].items()) or "sweep"
    units.append(_Unit(u, c, lo, hi, label, seeds, _put(key_data(seeds), mesh, P("seed")),
                       init_fn, chunk_fn, start.t if resumed else 0,
                       start.carry if resumed else None))
  return units


def _lower(programs: "_Programs", unit: _Unit, points, T: int, chunk: int) -> None:
  """Lowers (and starts compiling) the programs `unit` runs: its init unless it is restored,
  and its chunks from step `unit.t` on (a shorter last one apart)."""
  size = unit.seeds.size
  if unit.restored is None:
    programs.lower(("init", unit.c, size), f"init for {unit.label} ({size} seeds)",
                   lambda: (unit.init, (points, unit.keys), ()))
  full, rest = divmod(T - unit.t, chunk)
  for length in [chunk] * bool(full) + [rest] * bool(rest):
    programs.lower(("chunk", unit.c, size, length),
                   f"chunk for {unit.label} ({size} seeds x {length} steps)",
                   lambda length=length: (
                       lambda h, s, x, t: unit.chunk(h, s, x, t, length),
                       (points, unit.keys,
                        _sharded(programs.out_info.get(("init", unit.c, size))
                                 or jax.eval_shape(unit.init, points, unit.keys), programs.mesh),
                        jnp.int32(unit.t + 1)), (2,)))


def _sizes(sweep: Sweep, options: Options) -> tuple[int, int, int]:
  """(T, chunk, seed_batch) of running `sweep` as `options` say, checked."""
  T = _checks.positive_int("steps", sweep.steps)
  chunk = T if options.chunk is None else min(_checks.positive_int("chunk", options.chunk), T)
  return T, chunk, _checks.positive_int("seed_batch", options.seed_batch)


def _points(sweep: Sweep, combo: int = 0) -> dict[str, np.ndarray]:
  """The numeric grid points vmapped in static combination `combo`'s program (one dummy
  point when it has no numeric field), shape (G,) each; with instances also `ENV_SEED`, the
  environment seeds of every point, int32 (G, I)."""
  points = sweep.grid.points(combo) or {NO_FIELD: np.zeros(1, np.float32)}
  if sweep.instances is None:
    return points
  G = next(iter(points.values())).shape[0]
  return {**points, ENV_SEED: np.tile(np.asarray(sweep.instances, np.int32), (G, 1))}


def rows(points: dict[str, np.ndarray]) -> int:
  """The leading axis of a program's carry and records over `points` (`_points`): G, or G·I
  with instances (point g's instance i at row g·I + i)."""
  return int(np.prod(points[ENV_SEED].shape) if ENV_SEED in points
             else next(iter(points.values())).shape[0])


class Trajectory(NamedTuple):
  """`trajectory`'s record, one entry per static combination: `kept` every step's
  `keep(Transition)` (leaves (G, S, T, ...)) and `states` the carry (environment state, agent
  state; leaves (G, S, ...)) after every chunk, as (t, carry) pairs."""
  kept: list[Any]
  states: list[list[tuple[int, Any]]]


def trajectory(sweep: Sweep, options: Options = Options(), *, mesh=None, keys=None,
               keep: Callable[[protocol.Transition], Any] = lambda transition: transition,
               states: bool = False, compiled: dict | None = None) -> Trajectory:
  """A few seeds' every step, by the programs `run` compiles — the same batch width, devices
  and chunks; only what the chunk returns differs (`keep`, by default the whole
  `Transition`), which leaves the arithmetic as it was — so seed s's regret here is bit for
  bit its regret in any `run` of the sweep on the same kind of device (tested). `keys`
  (S, *key shape) replaces the seeds' own keys (`key_data(sweep.seeds)`); `states` keeps the
  carry after every chunk (`options.chunk` steps: the trace's --every). `compiled` keeps the
  compiled programs between calls of the same sweep, options and mesh (`simulate` in a loop
  over seeds). Held in memory: for traces, not sweeps."""
  T, chunk, batch = _sizes(sweep, options)
  n_dev = 1 if mesh is None else mesh.devices.size
  keys = key_data(sweep.seeds) if keys is None else np.asarray(keys)
  S = keys.shape[0]
  keys = _put(_pad(keys, n_dev * batch), mesh, P("seed"))
  kept, snapshots = [], []
  compiled = {} if compiled is None else compiled

  def program(key, f, *args):
    if key not in compiled:
      lowered, hoisted = lower_hoisted(f, args)
      _check_lapack(lowered, mesh)
      compiled[key] = functools.partial(lowered.compile(), *hoisted)
    return compiled[key]

  for c, combo in enumerate(sweep.grid.combos()):
    points = _points(sweep, c)
    init_fn, chunk_fn = init_and_chunk(sweep.build, combo, batch, mesh, keep)
    carry = program((c, "init"), init_fn, points, keys)(points, keys)
    pieces, saved, t = [], [], 0
    while t < T:
      length = min(chunk, T - t)
      step = program((c, length), lambda h, s, x, t0, n=length: chunk_fn(h, s, x, t0, n),
                     points, keys, carry, jnp.int32(t + 1))
      carry, out = step(points, keys, carry, jnp.int32(t + 1))
      pieces.append(jax.tree.map(lambda x: np.asarray(x)[:, :S], out))
      t += length
      if states:
        saved.append((t, jax.tree.map(lambda x: np.asarray(x)[:, :S], carry)))
    kept.append(jax.tree.map(lambda *x: np.concatenate(x, axis=2), *pieces))
    snapshots.append(saved)
  return Trajectory(kept, snapshots)


_COMPILING: list[str] = []       # what the drivers of this process are compiling now


def compiling() -> bool:
  """Whether a driver is lowering or compiling a program now (a Ctrl-C handler may then stop
  at once: nothing since the last checkpoint would be lost)."""
  return bool(_COMPILING)


class _Stopped(Exception):
  """`stop()` said True after a compile: the run ends before the compiled program runs."""


class _Programs:
  """A sweep's compiled programs by key: `lower` traces one in the calling thread (the CPU
  LAPACK check runs on its text) and starts its XLA compile on a thread pool; `get` waits for
  it. XLA compiles outside the GIL, so the programs of several agents or seed blocks compile
  on several cores at once, and two keys whose lowered programs are the same text (e.g. two
  agents that differ only in data they carry) share one compile. stats["compile_seconds"]
  counts the time the driver spent lowering and waiting, not the sum of the compiles;
  `compiles` lists each program's own (what, lowering + compile seconds; no compile seconds
  for a shared one)."""

  def __init__(self, mesh, stats, bar):
    self.mesh, self.stats, self.bar = mesh, stats, bar
    self.ready, self.pending, self.compiles, self.out_info = {}, {}, [], {}
    self.by_text, self.reported = {}, set()     # lowered text -> its compile; compiles seen
    platform = (jax.local_devices()[0] if mesh is None else mesh.devices.flat[0]).platform
    self.pool = ThreadPoolExecutor(max_workers=_compile_workers(platform),
                                   thread_name_prefix="rbx-compile")

  def lower(self, key, what, lower) -> None:
    """Lowers `f` at `args` (`lower_hoisted`) for `lower() -> (f, args, donated argument
    positions)`, unless `key` has been; its outputs' shapes go to `out_info[key]`."""
    if key in self.ready or key in self.pending:
      return
    begin = time.perf_counter()
    _COMPILING.append(what)
    try:
      f, args, donate = lower()
      lowered, hoisted = lower_hoisted(f, args, donate)
      _check_lapack(lowered, self.mesh)
    finally:
      _COMPILING.pop()
    text = lowered.as_text()
    if text not in self.by_text:        # a program already lowered (e.g. another agent's of
      self.by_text[text] = self.pool.submit(_timed_compile, lowered)   # the same settings)
    seconds = time.perf_counter() - begin   # is compiled once
    self.stats["compile_seconds"] += seconds
    self.out_info[key] = lowered.out_info
    self.pending[key] = (what, seconds, self.by_text[text], hoisted)

  def get(self, key, stop):
    """The compiled program of `key`; raises `_Stopped` when `stop()` says so after a wait."""
    if key not in self.ready:
      what, lowering, future, hoisted = self.pending.pop(key)
      begin = time.perf_counter()
      _COMPILING.append(what)
      try:
        compiled, seconds = future.result()
      finally:
        _COMPILING.pop()
      self.ready[key] = functools.partial(compiled, *hoisted) if hoisted else compiled
      self.stats["compile_seconds"] += time.perf_counter() - begin
      if future in self.reported:        # the same program as an earlier key: not compiled again
        seconds = 0.0
      self.reported.add(future)
      self.compiles.append((what, lowering + seconds))
      self.bar.compiled(what, lowering + seconds)
      if stop is not None and stop():       # asked while XLA compiled: stop before running it
        raise _Stopped
    return self.ready[key]

  def close(self) -> None:
    """Drops the compiles not yet started (a stopped sweep); those under way finish."""
    self.pool.shutdown(wait=False, cancel_futures=True)


HOIST_BYTES = 1 << 16
"""Arrays a program captures (an environment's: features, tables) of at least this many bytes
are passed to it as arguments instead of compiled into it as constants (`lower_hoisted`)."""


def lower_hoisted(f: Callable, args: tuple, donate: tuple[int, ...] = ()):
  """(`jax.jit(f, donate_argnums=donate).lower(*args)`, ()) — or, where f captures arrays of
  `HOIST_BYTES` or more (the environment a sweep's `build` returns), (the program of
  g(hoisted, *args) = f(*args) with those arrays as its first argument, (hoisted,)): call the
  compiled program with `*hoisted` first. Compiled in, large constants cost XLA constant
  folding and the persistent cache hashing and writing them (and their size on disk); a program
  that captures none is lowered as before (the same text, the same bits)."""
  traced = jax.jit(f, donate_argnums=donate).trace(*args)
  consts = list(traced.jaxpr.consts)
  big = [i for i, c in enumerate(consts) if getattr(c, "nbytes", 0) >= HOIST_BYTES]
  if not big:
    return traced.lower(), ()
  jaxpr, out_tree = traced.jaxpr.jaxpr, jax.tree.structure(traced.out_info)

  def g(hoisted, *a):
    values = list(consts)
    for i, v in zip(big, hoisted):
      values[i] = v
    return jax.tree.unflatten(out_tree, jax.core.eval_jaxpr(jaxpr, values, *jax.tree.leaves(a)))

  hoisted = [consts[i] for i in big]
  return jax.jit(g, donate_argnums=tuple(d + 1 for d in donate)).lower(hoisted, *args), (hoisted,)


def _check_lapack(lowered, mesh) -> None:
  """`NeedsOneDevice` when `lowered` calls CPU LAPACK kernels and `mesh` has several CPU devices."""
  if mesh is not None and mesh.devices.size > 1 and mesh.devices.flat[0].platform == "cpu":
    calls = sorted(set(re.findall(r"@(lapack_\w+)", lowered.as_text())))
    if calls:
      raise NeedsOneDevice(calls)


def _timed_compile(lowered):
  begin = time.perf_counter()
  return lowered.compile(), time.perf_counter() - begin


def _compile_workers(platform: str) -> int:
  """Compiles at once: `RBX_COMPILE_THREADS`, else 1 on a CPU (XLA:CPU already compiles one
  program on every core: two at once compiled the README hello world in 4.6 s against 4.0 on
  2 cores, benchmarks/README.md, "compile_time.py"), else the cores this process may use
  (≤ 8; on an accelerator's host unmeasured until benchmarks/throughput/gpu.py runs there)."""
  wanted = os.environ.get("RBX_COMPILE_THREADS", "")
  if wanted:
    return _checks.positive_int("RBX_COMPILE_THREADS", int(wanted) if wanted.isdigit() else wanted)
  if platform == "cpu":
    return 1
  cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
  return max(1, min(8, cores or 1))


def _sharded(out, mesh):
  """The carry's shapes and dtypes `out` with the shardings the driver gives its leaves, to
  lower a chunk before init has run."""
  if mesh is None:
    return out
  sharding = NamedSharding(mesh, P(None, "seed"))
  return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), out)


NO_FIELD = "__no_numeric_field__"      # vmap needs an axis even when no grid field is numeric
ENV_SEED = "seed"                      # the build's keyword of an instance's environment seed


def _records(transition: protocol.Transition):
  """What a sweep keeps of a step: (the regret, the environment's named metrics; {} for a
  hand-made `Run` whose steps carry a regret only)."""
  return transition.regret, getattr(transition, "metrics", {})


def init_and_chunk(build, fixed, batch, mesh, keep: Callable = _records):
  """(init(points, keys) -> carry, chunk(points, keys, carry, t0, length) -> (carry, kept))
  over (G, S): `keys` the seeds' key data (`key_data`), `kept` is `keep(Transition)` of every
  step, leaves (G, S, length, ...); per device when `mesh` is given. The seeds run through
  `lax.map` in vmapped batches of exactly `batch` (S per device a multiple of it)."""
  def point(hp):
    return build({**fixed, **{k: v for k, v in hp.items() if k != NO_FIELD}})

  def init(points, seeds):
    return _over_points(lambda hp: protocol.batched_map(
        lambda s: point(hp).init(jax.random.wrap_key_data(s)), seeds, batch), points)

  def chunk(points, seeds, carry, t0, length):
    def one(hp, s, c):
      return protocol.scan(point(hp), jax.random.wrap_key_data(s), c, t0, length, keep=keep)
    return _over_points(lambda hp, cs: protocol.batched_map(lambda a: one(hp, *a), (seeds, cs),
                                                            batch), points, carry)

  if mesh is None:
    return init, chunk
  sharded = P(None, "seed")
  init_s = jax.shard_map(init, mesh=mesh, in_specs=(P(), P("seed")), out_specs=sharded,
                         check_vma=False)

  def chunk_s(points, seeds, carry, t0, length):
    return jax.shard_map(lambda h, s, x, t: chunk(h, s, x, t, length), mesh=mesh,
                         in_specs=(P(), P("seed"), sharded, P()),
                         out_specs=(sharded, sharded), check_vma=False)(points, seeds, carry, t0)
  return init_s, chunk_s


def _over_points(f, points, *args):
  """`jax.vmap(f)(points, *args)` over the G grid points (the leading axis of `points`' and
  `args`' leaves); with one point, f of that point with the axis added back, so a size-1 axis
  costs no batching pass over the whole program (results are bit for bit the same:
  tests/rlhf/test_schemes.py). With instances (`ENV_SEED` in `points`, (G, I)) `args`' leading
  axis is G·I (`rows`) and a point's I instances run one after another (`lax.map`), each f
  of one environment seed: the seed batch already fills the vector units, and an unbatched
  environment keeps instance i's program a run's at seed i, bit for bit
  (tests/core/test_instances.py)."""
  G = next(iter(points.values())).shape[0]
  if ENV_SEED in points:
    each = f
    f = lambda hp, *a: jax.lax.map(lambda xs: each({**hp, ENV_SEED: xs[0]}, *xs[1:]),
                                   (hp[ENV_SEED], *a))
    args = jax.tree.map(lambda x: x.reshape(G, -1, *x.shape[1:]), args)
  if G > 1:
    out = jax.vmap(f)(points, *args)
  else:
    first = lambda tree: jax.tree.map(lambda x: x[0], tree)
    out = jax.tree.map(lambda x: x[None], f(first(points), *map(first, args)))
  if ENV_SEED in points:
    out = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), out)
  return out


def _pad(seeds: np.ndarray, n: int) -> np.ndarray:
  """`seeds` (or their key data, seeds along axis 0) with its last seed repeated to a
  multiple of n (the padding's results are dropped): every batch of every device then holds exactly `seed_batch` seeds, whatever the
  number of seeds, so a seed's program is the same in any run (docs/reproducibility.md)."""
  return np.concatenate([seeds, np.repeat(seeds[-1:], -len(seeds) % n, axis=0)])


def key_data(seeds) -> np.ndarray:
  """The key data of `jax.random.key(s)` for every seed s, (S, *key shape) uint32: what the
  programs take, so that a sweep's seeds and `simulate`'s key run the same program."""
  if jax.dtypes.issubdtype(getattr(seeds, "dtype", None), jax.dtypes.prng_key):
    return np.asarray(jax.random.key_data(seeds))        # typed keys (`simulate`'s)
  seeds = np.asarray(seeds)
  if seeds.dtype == np.uint32 and seeds.ndim == 2:
    return seeds                                          # raw keys (jax.random.PRNGKey)
  return np.asarray(jax.random.key_data(jax.vmap(jax.random.key)(seeds.astype(np.int32))))


def _put(x, mesh, spec):
  return jnp.asarray(x) if mesh is None else jax.device_put(x, NamedSharding(mesh, spec))


def _restore(abstract, leaves: list[np.ndarray], mesh):
  """The carry of shape `abstract` from host `leaves`; ValueError if they do not match."""
  want, treedef = jax.tree.flatten(abstract)
  if len(leaves) != len(want) or any(a.shape != w.shape or a.dtype != w.dtype
                                     for a, w in zip(leaves, want)):
    raise ValueError("the saved state does not match this sweep's state: "
                     f"{[(a.shape, str(a.dtype)) for a in leaves]} vs "
                     f"{[(w.shape, str(w.dtype)) for w in want]}")
  return treedef.unflatten([_put(a, mesh, P(None, "seed")) for a in leaves])


def state_bytes(sweep: Sweep) -> int:
  """Bytes of carried state per seed and grid point (the first static combination)."""
  combo = sweep.grid.combos()[0]
  points = {k: v[:1, :1] if k == ENV_SEED else v[:1] for k, v in _points(sweep).items()}
  init, _ = init_and_chunk(sweep.build, combo, 1, None)
  leaves = jax.tree.leaves(jax.eval_shape(init, points, key_data(np.zeros(1, np.int32))))
  return int(sum(math.prod(x.shape) * x.dtype.itemsize for x in leaves))
