"""`rbx run`: a config into a run directory, checkpointed after every chunk, resumable.

`run(config)` creates the directory (config.toml, metadata.json), runs the sweep with the
chunked driver and writes the results (`rbx.runs.store`); after every chunk the whole
state — the carried agent states, the records and the statistics — is saved atomically to
checkpoint.npz (`rbx.runs.checkpoint`). Ctrl-C (SIGINT) or SIGTERM stops after the current
chunk with everything saved (a second Ctrl-C, or one while XLA compiles, stops at once, the
last checkpoint intact);
`resume(directory)` continues from the newest good checkpoint, and the results are
bit-identical to an uninterrupted run. With several processes (`rbx.core.devices.initialize`)
each runs its share of the seeds with its own checkpoint.p<i>.npz, and process 0 writes the
gathered results.

`merge(directories, out)` joins complete runs of one config over disjoint seeds (`rbx run
CONFIG --seeds START:STOP`, one slice per task of a job array) into one run directory, as if
one run had run all their seeds.

One process runs a directory at a time: `run` and `resume` hold its lock (`rbx.runs.rundir`,
released by the kernel however the process ends), and a second is refused with the holder's
pid, host and start time. metadata.json's status is "running" while it runs and then
"complete", "interrupted" (Ctrl-C or SIGTERM) or "failed", with the error's type, message and
time, whatever ended it (an exception, MemoryError, a second Ctrl-C); it also records the
effective value of every parameter, defaults included (`rbx.runs.config.Config.effective`,
resolved when the config was loaded).
"""
from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

import jax
import jaxlib
import numpy as np
import tomli_w

from rbx._version import __version__
from rbx.core import driver, reproducibility
from rbx.core import sweep as sweep_lib
from rbx.core.results import Results
from rbx.runs import checkpoint, rundir, store
from rbx.runs import config as config_lib

COMPLETE, INTERRUPTED, RUNNING, FAILED = (rundir.COMPLETE, rundir.INTERRUPTED, rundir.RUNNING,
                                         rundir.FAILED)


def run(config: config_lib.Config, *, progress: bool | str = True, echo: Callable[[str], None] = print,
        overwrite: bool = False) -> str:
  """Runs `config` into the new directory `config.out`; returns the status (complete or
  interrupted). `overwrite`: a run already in the directory (not being run) is deleted
  first — its config, metadata, results, checkpoints, report and plots; other files stay.

  Raises:
    FileExistsError: the directory already holds a run (and not `overwrite`).
    rundir.LockedError: another process is running the directory.
  """
  directory = Path(config.out)
  if not overwrite:
    _refuse_a_run(directory, config)        # before the lock touches the directory
  directory.mkdir(parents=True, exist_ok=True)
  with _locked(directory, echo):
    if overwrite:
      _delete_run(directory)
    _refuse_a_run(directory, config)        # another process may have run it meanwhile
    if jax.process_index() == 0:
      (directory / store.CONFIG).write_text(config.text)
    return _execute(config, directory, None, progress, echo)


RUN_FILES = (store.CONFIG, store.METADATA, store.ARRAYS, store.INDEX,
             "report.md", "checkpoint*.npz*")


def _delete_run(directory: Path) -> None:
  """Deletes the run in `directory` (`RUN_FILES` and plots/), for `overwrite`."""
  if jax.process_index() == 0:
    for pattern in RUN_FILES:
      for path in directory.glob(pattern):
        path.unlink()
    shutil.rmtree(directory / "plots", ignore_errors=True)


def _refuse_a_run(directory: Path, config: config_lib.Config) -> None:
  """A FileExistsError when `directory` holds a run (process 0 only): of another config (one
  that differs in what determines the results), to be run elsewhere or overwritten; else
  the same config's, to be resumed or overwritten."""
  meta = directory / store.METADATA
  if jax.process_index() != 0 or not meta.exists():
    return
  try:
    theirs = config_lib.results_keys((directory / store.CONFIG).read_text())
  except (OSError, tomllib.TOMLDecodeError):
    theirs = None
  ours = config_lib.results_keys(config.text)
  if theirs != ours:
    keys = ("" if theirs is None else " (it differs in " + ", ".join(
        sorted(k for k in theirs.keys() | ours.keys() if theirs.get(k) != ours.get(k))) + ")")
    raise FileExistsError(f"{directory} already holds the run of another config{keys}: run "
                          "this one into another directory with --out, or delete that run "
                          "with --overwrite")
  if store.read_json(meta).get("status") == COMPLETE:
    raise FileExistsError(f"{directory} already holds a complete run: run it again with "
                          "--overwrite, or into another directory with --out")
  raise FileExistsError(f"{directory} already holds a run of this config: continue it with "
                        f"`rbx run --resume {directory}`, start it again with --overwrite, or "
                        "choose another directory with --out")


def resume(directory: str | os.PathLike, *, progress: bool | str = True,
           echo: Callable[[str], None] = print) -> str:
  """Continues the run in `directory` from its newest good checkpoint; returns the status.

  Raises:
    FileNotFoundError: `directory` is not a run directory.
    rundir.LockedError: another process is running the directory.
    checkpoint.CheckpointError: every checkpoint is corrupt or belongs to another config.
  """
  directory = Path(directory)
  if not (directory / store.CONFIG).is_file():
    raise FileNotFoundError(f"{directory} is not a run directory (no {store.CONFIG})")
  with _locked(directory, echo):
    return _resume(directory, progress, echo)


def _resume(directory: Path, progress, echo) -> str:
  config = config_lib.loads((directory / store.CONFIG).read_text(), out=str(directory))
  meta_path = directory / store.METADATA
  if meta_path.is_file() and store.read_json(meta_path).get("status") == COMPLETE:
    echo(f"{directory} is already complete")
    return COMPLETE
  path = checkpoint_path(directory)
  if not path.exists() and not checkpoint.previous(path).exists():
    echo(f"{directory} has no checkpoint yet: starting from the beginning")
    return _execute(config, directory, None, progress, echo)
  arrays, meta, problems = checkpoint.load_latest(path)
  for problem in problems:
    echo(f"warning: rejected {problem}; using the previous checkpoint")
  if meta["digest"] != config.digest():
    raise checkpoint.CheckpointError(f"{path} was written by a different config than "
                                     f"{directory / store.CONFIG}")
  n_dev = _num_devices(config.plan.mesh)
  if meta["devices"] != n_dev or meta["processes"] != jax.process_count():
    raise checkpoint.CheckpointError(
        f"{path} was written with {meta['devices']} device(s) x {meta['processes']} process(es); "
        f"resume with the same (set devices = {meta['devices']} in the config)")
  carry = [arrays[f"carry.{i}"] for i in range(meta["leaves"])] if meta["leaves"] else None
  start = driver.Snapshot(meta["unit"], meta["t"], carry,
                          {k[len("records."):]: v for k, v in arrays.items()
                           if k.startswith("records.")}, meta["stats"])
  echo(f"resuming {directory} at work unit {start.unit}, step {start.t}")
  return _execute(config, directory, start, progress, echo)


def _execute(config, directory: Path, start, progress, echo) -> str:
  path = checkpoint_path(directory)
  meta_path = directory / store.METADATA
  metadata = (store.read_json(meta_path) if start is not None and meta_path.is_file()
              else _environment(config))
  segment = {"started": rundir.now()}
  metadata.setdefault("segments", []).append(segment)
  metadata["status"] = RUNNING
  metadata.pop("error", None)
  _write_metadata(meta_path, metadata)
  begin = time.perf_counter()
  compiles = []
  digest, n_dev = config.digest(), _num_devices(config.plan.mesh)

  def save(snapshot: driver.Snapshot) -> None:
    arrays = {f"carry.{i}": leaf for i, leaf in enumerate(snapshot.carry or [])}
    arrays.update({f"records.{k}": v for k, v in snapshot.records.items()})
    checkpoint.save(path, arrays, {
        "unit": snapshot.unit, "t": snapshot.t, "leaves": len(snapshot.carry or []),
        "stats": snapshot.stats, "digest": digest, "devices": n_dev,
        "processes": jax.process_count()})

  try:
    with _StopOnSignal(echo) as stop:
      res = sweep_lib.run(config.plan, config.seeds, config.run_options(
          progress=progress, start=start, on_chunk=save, stop=stop, compiles=compiles))
    if res.complete and jax.process_index() == 0:
      store.save(res, directory, overwrite=True)           # the run's own directory
  except BaseException as e:       # whatever ends the run, its status says so
    _record_end(meta_path, metadata, segment, begin, e, echo)
    raise
  stats = res.timing
  segment.update(finished=rundir.now(), wall_seconds=time.perf_counter() - begin,
                 compiles=[{"what": w, "seconds": s} for w, s in compiles])
  metadata.update(
      finished=segment["finished"],
      wall_seconds=sum(s.get("wall_seconds", 0.0) for s in metadata["segments"]),
      **{k: stats[k] for k in ("compile_seconds", "run_seconds", "seed_steps",
                               "seed_steps_per_second")})
  if not res.complete:
    metadata["status"] = INTERRUPTED
    _write_metadata(meta_path, metadata)
    echo(f"stopped after a chunk with everything saved; continue with `rbx run --resume {directory}`")
    return INTERRUPTED
  metadata["status"] = COMPLETE
  _write_metadata(meta_path, metadata)
  for p in (path, checkpoint.previous(path)):
    p.unlink(missing_ok=True)
  echo(f"{directory}: {stats['seed_steps']:,} seed-steps in {stats['run_seconds']:.1f}s "
       f"({metadata['seed_steps_per_second']:,.0f} seed-steps/s) + {stats['compile_seconds']:.1f}s "
       "compiling")
  return COMPLETE


class _StopOnSignal:
  """SIGINT/SIGTERM ask the driver to stop after the current chunk; a second SIGINT, or one
  while the driver compiles (nothing since the last checkpoint would be lost; a compile can
  take a minute), raises KeyboardInterrupt at once. Installed only in the main thread."""

  def __init__(self, echo):
    self.echo, self.requested, self.previous = echo, False, {}

  def __call__(self) -> bool:
    return self.requested

  def _handle(self, signum, frame):
    if signum == signal.SIGINT and (self.requested or driver.compiling()):
      raise KeyboardInterrupt
    self.requested = True
    self.echo(f"\n{signal.Signals(signum).name}: stopping after this chunk (Ctrl-C again to stop now)")

  def __enter__(self):
    import threading
    if threading.current_thread() is threading.main_thread():
      for sig in (signal.SIGINT, signal.SIGTERM):
        self.previous[sig] = signal.signal(sig, self._handle)
    return self

  def __exit__(self, *exc):
    for sig, handler in self.previous.items():
      signal.signal(sig, handler)


def _record_end(path: Path, metadata: dict, segment: dict, begin: float, error: BaseException,
                echo) -> None:
  """Records in metadata.json that `error` ended the run: "interrupted" for a
  KeyboardInterrupt (the last checkpoint intact), "failed" for anything else."""
  stopped = isinstance(error, KeyboardInterrupt)
  end = {"time": rundir.now(), "type": type(error).__name__,
         "message": "stopped at once by Ctrl-C (a second one, or one during a compile)"
                    if stopped else str(error)}
  segment.update(finished=end["time"], wall_seconds=time.perf_counter() - begin, error=end)
  metadata.update(status=INTERRUPTED if stopped else FAILED, finished=end["time"], error=end)
  try:
    _write_metadata(path, metadata)
  except Exception as e:            # the original error matters more; say why it is not recorded
    echo(f"warning: could not record the status in {path}: {e}")


@contextlib.contextmanager
def _locked(directory: Path, echo):
  """Holds this process's lock on `directory`, saying so when its last holder was killed."""
  name = rundir.LOCK if jax.process_count() == 1 else f"run.p{jax.process_index()}.lock"
  with rundir.hold(directory / name) as stale:
    if stale:
      echo(f"note: the last run of {directory} (pid {stale.get('pid')} on host "
           f"{stale.get('host')} since {stale.get('since')}) ended without releasing its lock "
           "(killed?)")
    yield


def checkpoint_path(directory: Path) -> Path:
  """This process's checkpoint file in the run `directory` (checkpoint.p<i>.npz with several)."""
  if jax.process_count() == 1:
    return directory / "checkpoint.npz"
  return directory / f"checkpoint.p{jax.process_index()}.npz"


def _num_devices(mesh) -> int:
  return 1 if mesh is None else int(mesh.devices.size)


def _environment(config) -> dict:
  """metadata.json's start: where and with what `config` runs, read from its plan."""
  plan = config.plan
  grid, mesh = plan.sweep.grid, plan.mesh
  return {
      "title": config.title, "family": config.family, "status": RUNNING, "started": rundir.now(),
      "versions": {"rbx": __version__, "rbx_source": reproducibility.source_digest(),
                   "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                   "numpy": np.__version__, "python": sys.version.split()[0]},
      "bits": reproducibility.conditions(config.seed_batch, config.seed_batch_reason,
                                         _num_devices(mesh),
                                         None if mesh is None else mesh.devices.flat[0]),
      "platform": platform.platform(), "backend": jax.default_backend(),
      "devices": [str(d) for d in jax.devices()], "local_devices_used": _num_devices(mesh),
      "processes": jax.process_count(),
      "sizes": {"grid": list(grid.shape), "grid_fields": list(grid.fields),
                "instances": config.instances,
                "seeds": int(config.seeds.size), "steps": config.steps, "chunk": config.chunk,
                "seed_batch": config.seed_batch,
                "seed_batch_reason": config.seed_batch_reason, "seed_block": config.seed_block,
                "record": config.record, "state_bytes_per_seed": plan.state_bytes},
      "effective": config.effective, "imports": config.imports,
  }


def _write_metadata(path: Path, metadata: dict) -> None:
  if jax.process_index() == 0:
    store.write_json(path, metadata)


def merge(directories, out: str | os.PathLike, echo: Callable[[str], None] = print,
          allow_mixed: bool = False) -> Path:
  """Joins complete runs of one config over disjoint seeds — the slices of a job array
  (`rbx run CONFIG --seeds START:STOP`, docs/runs.md) — into the new run directory `out`:
  the results of one run over all their seeds, ordered by seed, bit for bit
  (docs/reproducibility.md); config.toml with the joined seeds ("START:STOP" when contiguous, else a
  list); metadata.json with the slices' times and statistics added up, and under "merged"
  when and from which directories (each with its seeds, devices and seed_batch).

  Slices whose reproducibility settings (metadata.json's "bits": device kind, seed_batch and
  its rule, rbx, jax and jaxlib versions, XLA flags, ...; none recorded, an older run, is a
  setting of its own) differ are refused, as their seeds' bits may differ from one run's;
  `allow_mixed` merges them anyway, with a note and the settings under "merged"/"mixed".

  Raises:
    ValueError: no directory, a directory that is not a complete run (running,
      interrupted, failed: its checkpoints are not results), configs that differ in anything
      but `seeds` and `out`, slices that share seeds, or (not `allow_mixed`) slices whose
      reproducibility settings differ.
    FileExistsError: `out` exists and is not empty.
  """
  sources = [Path(d) for d in directories]
  if not sources:
    raise ValueError("merge needs at least one run directory")
  out = Path(out)
  if out.exists() and (not out.is_dir() or any(out.iterdir())):
    raise FileExistsError(f"{out} exists and is not empty: merge into a new directory")
  configs, slices = [], []
  for d in sources:
    meta_path = d / store.METADATA
    status = store.read_json(meta_path).get("status") if meta_path.is_file() else None
    if status != COMPLETE or not (d / store.INDEX).is_file():
      raise ValueError(f"cannot merge {d}: it is not a complete run ({rundir.describe(d)})")
    configs.append(tomllib.loads((d / store.CONFIG).read_text()))
    slices.append(store.load(d))
  common = [{k: v for k, v in c.items() if k not in ("seeds", "out")} for c in configs]
  for d, c in zip(sources[1:], common[1:]):
    if c != common[0]:
      keys = sorted(k for k in c.keys() | common[0].keys() if c.get(k) != common[0].get(k))
      raise ValueError(f"cannot merge {d} with {sources[0]}: their configs differ in "
                       f"{', '.join(keys)} (slices of one run differ in seeds only)")
  owner = {}
  for d, res in zip(sources, slices):
    shared = [int(s) for s in res.coords["seed"] if int(s) in owner]
    if shared:
      raise ValueError(f"cannot merge {d} with {owner[shared[0]]}: both ran seed(s) "
                       f"{_seed_text(shared)}; slices must not overlap")
    owner.update({int(s): d for s in res.coords["seed"]})
  mixed = mixed_bits(sources, [res.metadata for res in slices])
  if mixed and not allow_mixed:
    raise ValueError(f"cannot merge: the slices ran with different reproducibility settings, "
                     f"so their seeds' bits may differ from one run's: {_mixed_text(mixed)}; "
                     "merge them anyway with --allow-mixed (Python: allow_mixed=True)")

  seeds = np.concatenate([res.coords["seed"] for res in slices])
  order = np.argsort(seeds, kind="stable")
  field = "regret" if slices[0].regret is not None else "recorded"
  axis = slices[0].axes.index("seed")
  join = lambda arrays: np.take(np.concatenate(arrays, axis=axis), order, axis=axis)
  joined = join([getattr(res, field) for res in slices])
  metrics = {k: join([res.metrics[k] for res in slices]) for k in slices[0].metric_names
             if all(k in res.metric_names for res in slices)} or None
  metas = [res.metadata for res in slices]
  timing = {k: sum(res.timing[k] for res in slices)
            for k in ("compile_seconds", "run_seconds", "seed_steps")}
  timing["seed_steps_per_second"] = timing["seed_steps"] / max(timing["run_seconds"], 1e-12)
  merged = Results(slices[0].axes, {**slices[0].coords, "seed": seeds[order]},
                               **{field: joined}, timing=timing, runs=slices[0].runs,
                               metrics=metrics)

  config = {**configs[0], "seeds": _seeds_value(seeds[order])}
  config.pop("out", None)
  metadata = {
      **metas[0], "status": COMPLETE,
      "started": min(m["started"] for m in metas), "finished": max(m["finished"] for m in metas),
      "segments": [s for m in metas for s in m.get("segments", [])],
      "wall_seconds": sum(m.get("wall_seconds", 0.0) for m in metas), **timing,
      "sizes": {**metas[0]["sizes"], "seeds": int(seeds.size)},
      "merged": {"time": rundir.now(), "from": [
          {"directory": str(d.resolve()), "seeds": _seeds_value(np.sort(res.coords["seed"])),
           "local_devices_used": m.get("local_devices_used"),
           "seed_batch": m.get("sizes", {}).get("seed_batch"), "backend": m.get("backend")}
          for d, res, m in zip(sources, slices, metas)]},
  }
  if mixed:
    metadata["merged"]["mixed"] = mixed
    echo(f"note: merged with --allow-mixed: {_mixed_text(mixed)} (recorded in metadata.json "
         "under merged.mixed)")
  out.mkdir(parents=True, exist_ok=True)
  (out / store.CONFIG).write_text(tomli_w.dumps(config))
  store.save(merged, out)
  store.write_json(out / store.METADATA, metadata)
  echo(f"{out}: {len(sources)} run(s), seeds {_seed_text(seeds[order])}")
  return out


NO_BITS = "none recorded (an older run)"


def mixed_bits(directories, metadatas) -> dict[str, dict[str, object]]:
  """{key: {directory: value}} of every reproducibility setting (metadata["bits"]) whose
  value differs between the runs; a run without "bits" has `NO_BITS` for each key, and
  "bits" itself when no run records any key."""
  bits = [m.get("bits") for m in metadatas]
  keys = sorted({k for b in bits if isinstance(b, dict) for k in b}) or ["bits"]
  mixed = {}
  for key in keys:
    values = {str(d): (b.get(key, "not recorded") if isinstance(b, dict) else NO_BITS)
              for d, b in zip(directories, bits)}
    if len({json.dumps(v, sort_keys=True, default=str) for v in values.values()}) > 1:
      mixed[key] = values
  return mixed


def _mixed_text(mixed: dict) -> str:
  return "; ".join(
      f"{key} differs ({', '.join(f'{d}: {v!r}' for d, v in values.items())})"
      for key, values in mixed.items())


def _seeds_value(seeds: np.ndarray):
  """Sorted `seeds` as a config's `seeds`: "START:STOP" when contiguous, else a list."""
  if seeds[-1] - seeds[0] + 1 == seeds.size:
    return f"{int(seeds[0])}:{int(seeds[-1]) + 1}"
  return [int(s) for s in seeds]


def _seed_text(seeds) -> str:
  """Seeds for a message: "3, 4, 5" or, past six, "0, 1, 2, …, 998, 999 (1000 seeds)"."""
  seeds = [int(s) for s in seeds]
  if len(seeds) <= 6:
    return ", ".join(map(str, seeds))
  return f"{', '.join(map(str, seeds[:3]))}, …, {seeds[-2]}, {seeds[-1]} ({len(seeds)} seeds)"
