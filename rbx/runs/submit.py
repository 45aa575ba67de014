"""`rbx submit`: one sweep config as slices of its seeds on a Slurm cluster (or this machine),
through submitit, merged when every slice has ended.

`submit(config, slices=N, executor="slurm", out=DIR, **options)` cuts the config's seeds
into N contiguous ranges, as equal as possible, and submits one task per slice (a Slurm job
array; `executor="local"`: processes on this machine). Slice K is an ordinary run directory,
DIR/slice_K (`rbx run CONFIG --seeds A:B --out DIR/slice_K`, `rbx.runs.experiment`), with
its checkpoint after every chunk; a task that Slurm preempts or times out is requeued and
resumes its slice from the checkpoint (submitit's `checkpoint` protocol). The returned
`Submission` waits (`.wait()`), saying each slice's progress, and merges the slices into
DIR/all (`experiment.merge`), whose results it returns. `resume(DIR)` submits again the
slices that ended unfinished (failed, killed, never started) and not those complete or still
queued or running.

DIR also holds submit.toml (the config as submitted, its paths absolute), submit.json (the
slices with their seeds and job ids, the executor and its options) and submitit/ (the tasks'
pickles and logs: `submitit/<job id>_0_log.err` is a task's stderr).

Everything is checked before anything is submitted: submitit installed (the `cluster` extra),
the executor, the slices (1 to the number of seeds), the config, the options, and DIR empty
or new; a directory that holds anything else is refused, and nothing on disk is changed.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rbx.runs import rundir, store

EXECUTORS = ("slurm", "local")
INSTALL = "pip install 'rbx[cluster]'"
SUBMIT_JSON, SUBMIT_TOML, MERGED, LOGS = "submit.json", "submit.toml", "all", "submitit"
LOCAL_TIMEOUT_MIN = 7 * 24 * 60       # submitit's local default is 2 minutes
_FINISHED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
             "PREEMPTED", "BOOT_FAIL", "DEADLINE", "FINISHED", "INTERRUPTED")


class SubmitError(ValueError):
  """A submission that cannot start, or slices that did not all end complete."""


def submit(config: str | os.PathLike, *, slices: int, out: str | os.PathLike,
           executor: str = "slurm", overrides: dict[str, Any] | None = None,
           imports: list[str] = (), compile_cache: bool = True,
           echo: Callable[[str], None] = print, **options) -> "Submission":
  """Submits the config at `config` as `slices` slices of its seeds into the new directory
  `out`; returns the `Submission` (`.wait()` for the merged `Results`).

  Args:
    config: a sweep config (TOML), as `rbx run` takes it.
    slices: the number of tasks, 1 to the config's number of seeds.
    out: a new or empty directory: slice_K/, all/ (the merge), submit.json, submitit/.
    executor: "slurm" (a job array through sbatch) or "local" (processes on this machine).
    overrides, imports: as `rbx.runs.config.load` (`rbx run --set/--seeds/--steps/--import`).
    compile_cache: False runs the tasks without the compile cache (`--no-compile-cache`).
    **options: submitit's parameters: timeout_min, mem_gb, cpus_per_task, gpus_per_node,
      slurm_partition, slurm_array_parallelism, slurm_account, ... (submitit.AutoExecutor).
  Raises:
    SubmitError: submitit missing, a bad executor, slices or option, or `out` not empty.
    rbx.runs.config.ConfigError: a bad config.
  """
  from rbx.runs import config as config_lib
  _submitit()
  _checks(executor)
  out = Path(out)
  if out.exists() and (not out.is_dir() or any(out.iterdir())):
    held = ("a submission: continue it with `rbx submit --resume "
            f"{out}`" if (out / SUBMIT_JSON).is_file() else "other files")
    raise SubmitError(f"--out {out} already holds {held}; submit into a new or empty directory")
  cfg = config_lib.load(config, overrides=overrides, imports=list(imports))
  ranges = seed_slices(cfg.seeds, slices)
  parameters = _parameters(executor, options)
  _executor(out / LOGS, executor, parameters, check_only=True)
  out.mkdir(parents=True, exist_ok=True)
  (out / SUBMIT_TOML).write_text(cfg.text)
  record = {"config": str(Path(config).absolute()), "submitted": rundir.now(),
            "executor": executor, "options": parameters, "compile_cache": bool(compile_cache),
            "host": socket.gethostname(), "seeds": int(cfg.seeds.size), "steps": cfg.steps,
            "slices": [{"slice": k, "directory": f"slice_{k}", "seeds": seeds, "jobs": []}
                       for k, seeds in enumerate(ranges)]}
  handle = Submission(out, record, echo)
  handle._submit(range(len(ranges)))
  return handle


def resume(directory: str | os.PathLike, echo: Callable[[str], None] = print) -> "Submission":
  """The submission in `directory`, its unfinished slices submitted again: those not
  complete whose task is no longer queued or running (failed, killed, never started) resume
  from their checkpoints.

  Raises:
    SubmitError: submitit missing, or `directory` holds no submission.
  """
  directory = Path(directory)
  path = directory / SUBMIT_JSON
  if not path.is_file():
    raise SubmitError(f"{directory} holds no submission (no {SUBMIT_JSON}): start one with "
                      "`rbx submit CONFIG --slices N --out DIR`")
  _submitit()
  handle = Submission(directory, store.read_json(path), echo)
  again = [k for k in range(len(handle.record["slices"]))
           if not handle._complete(k) and not handle._alive(k)]
  if again:
    echo(f"{directory}: submitting again {', '.join(f'slice_{k}' for k in again)} (the "
         "others are complete, queued or running)")
    handle._submit(again)
  return handle


def seed_slices(seeds: np.ndarray, slices: int) -> list:
  """`seeds` cut into `slices` contiguous runs, as equal as possible (the first ones one
  longer), each as a config's `seeds`: "A:B" when consecutive, else a list."""
  if isinstance(slices, bool) or not isinstance(slices, (int, np.integer)) or not (
      1 <= slices <= seeds.size):
    raise SubmitError(f"slices must be an integer from 1 to the config's number of seeds "
                      f"({seeds.size}), got {slices!r}")
  parts = np.array_split(np.asarray(seeds), int(slices))
  return [f"{int(p[0])}:{int(p[-1]) + 1}" if np.all(np.diff(p) == 1) else [int(s) for s in p]
          for p in parts]


class Submission:
  """A submitted sweep: its slices, their tasks, `status()`, `wait()` and the merge."""

  def __init__(self, directory: Path, record: dict, echo: Callable[[str], None] = print):
    self.directory, self.record, self.echo = Path(directory), record, echo
    self._jobs: dict[int, Any] = {}         # the tasks this process submitted

  @property
  def slices(self) -> list[Path]:
    """The slices' run directories."""
    return [self.directory / s["directory"] for s in self.record["slices"]]

  @property
  def job_ids(self) -> list[str | None]:
    """Each slice's latest task id (None: never submitted)."""
    return [(s["jobs"] or [None])[-1] for s in self.record["slices"]]

  def status(self) -> list[str]:
    """Each slice's state in words: "complete", "running: step t of T", "queued", ...; a
    slice that ended unfinished says why (`rbx.runs.rundir.describe`)."""
    return [self._state(k)[0] for k in range(len(self.slices))]

  def wait(self, poll: float = 10.0, allow_mixed: bool = False):
    """Waits until every slice has ended, saying each one's progress as it changes (`echo`),
    then merges them into DIR/all (once) and returns its `Results`.

    Raises:
      SubmitError: a slice ended unfinished (naming it, why, and `rbx submit --resume`).
      ValueError: the slices do not merge (`rbx.runs.experiment.merge`).
    """
    from rbx.runs import experiment
    merged = self.directory / MERGED
    said = {}
    while True:
      states = [self._state(k) for k in range(len(self.slices))]
      for k, (text, _) in enumerate(states):
        if said.get(k) != text:
          self.echo(f"slice_{k} (seeds {_seeds_text(self.record['slices'][k]['seeds'])}): {text}")
          said[k] = text
      if all(done for _, done in states):
        break
      time.sleep(poll)
    unfinished = [k for k in range(len(self.slices)) if not self._complete(k)]
    if unfinished:
      raise SubmitError(
          f"{len(unfinished)} of {len(self.slices)} slice(s) ended unfinished: " + "; ".join(
              f"slice_{k}: {self._why(k)}" for k in unfinished)
          + f". Submit them again (each resumes from its checkpoint) with `rbx submit --resume "
          f"{self.directory}`")
    if not _is_complete(merged):
      experiment.merge(self.slices, merged, echo=self.echo, allow_mixed=allow_mixed)
    return store.load(merged)

  # -- the slices' states --------------------------------------------------------------------

  def _complete(self, k: int) -> bool:
    return _is_complete(self.slices[k])

  def _state(self, k: int) -> tuple[str, bool]:
    """(words, ended) of slice `k`."""
    directory = self.slices[k]
    if self._complete(k):
      return "complete", True
    if not self._alive(k):
      return f"ended unfinished ({self._why(k)})", True
    meta_path = directory / store.METADATA
    if not meta_path.is_file():
      return "queued or starting", False
    progress = _progress(directory)
    steps = self.record.get("steps", "?")
    return ("running" + (f": work unit {progress['unit'] + 1}, step {progress['t']} of {steps}"
                         if progress else ": compiling or in its first chunk")), False

  def _alive(self, k: int) -> bool:
    """Whether slice `k`'s task is queued or running (or another process runs its directory)."""
    job = self._jobs.get(k)
    if job is not None and not job.done():
      return True
    if rundir.holder(self.slices[k] / rundir.LOCK) is not None:
      return True
    ids = self.record["slices"][k]["jobs"]
    if job is not None or not ids:
      return False
    return _task_alive(self.record, ids[-1], self.directory / LOGS)

  def _why(self, k: int) -> str:
    directory = self.slices[k]
    if (directory / store.METADATA).is_file():
      return rundir.describe(directory)
    ids = self.record["slices"][k]["jobs"]
    if not ids:
      return "never submitted"
    log = self.directory / LOGS / f"{ids[-1]}_0_log.err"
    tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.is_file() else []
    return (f"task {ids[-1]} ended before its run began"
            + (f": {' / '.join(tail)}" if tail else f" (its log: {log})"))

  # -- submitting ----------------------------------------------------------------------------

  def _submit(self, which) -> None:
    """Submits slices `which` as one job array and records their job ids in submit.json."""
    rec = self.record
    executor = _executor(self.directory / LOGS, rec["executor"], rec["options"])
    tasks = {k: SliceTask(str(self.directory / SUBMIT_TOML), str(self.slices[k]),
                          rec["slices"][k]["seeds"], rec.get("compile_cache", True))
             for k in which}
    with executor.batch():
      jobs = {k: executor.submit(task) for k, task in tasks.items()}
    for k, job in jobs.items():
      self._jobs[k] = job
      rec["slices"][k]["jobs"].append(str(job.job_id))
    rec["host"] = socket.gethostname()
    store.write_json(self.directory / SUBMIT_JSON, rec)
    self.echo(f"{self.directory}: submitted {len(jobs)} slice(s) to {rec['executor']} "
              f"(job {', '.join(str(j.job_id) for j in jobs.values())}); logs in "
              f"{self.directory / LOGS}")


class SliceTask:
  """One slice's task: runs the slice's directory, or resumes it when it holds a run (a
  requeued or resubmitted task). submitit calls `checkpoint` when Slurm preempts the task or
  its time runs out; the task it requeues resumes from the last chunk's checkpoint."""

  def __init__(self, config: str, directory: str, seeds, compile_cache: bool = True):
    self.config, self.directory, self.seeds = config, directory, seeds
    self.compile_cache = compile_cache

  def __call__(self) -> str:
    from rbx.core import compile_cache
    from rbx.runs import config as config_lib
    from rbx.runs import experiment
    compile_cache.use(self.compile_cache)
    directory = Path(self.directory)
    if (directory / store.CONFIG).is_file():
      status = experiment.resume(directory, progress="plain")
    else:
      cfg = config_lib.load(self.config, out=str(directory), overrides={"seeds": self.seeds})
      status = experiment.run(cfg, progress="plain")
    if status != experiment.COMPLETE:
      raise RuntimeError(f"{directory} ended {status}: {rundir.describe(directory)}")
    return status

  def checkpoint(self, *args, **kwargs):
    """submitit's checkpoint protocol: the requeued task is this one, which resumes."""
    import submitit
    return submitit.helpers.DelayedSubmission(SliceTask(self.config, self.directory, self.seeds,
                                                        self.compile_cache))


def _submitit():
  try:
    import submitit
  except ImportError:
    raise SubmitError(f"rbx submit needs submitit, which is not installed: {INSTALL}") from None
  return submitit


def _checks(executor: str) -> None:
  if executor not in EXECUTORS:
    raise SubmitError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
  if executor == "slurm" and shutil.which("sbatch") is None:
    raise SubmitError("executor 'slurm' needs Slurm's sbatch, which is not on PATH here; "
                      "submit from a cluster's login node, or use executor 'local' to run the "
                      "slices on this machine")


def _parameters(executor: str, options: dict) -> dict:
  """submitit's parameters of `options` (None values dropped; the local executor's time
  limit raised from submitit's 2 minutes)."""
  parameters = {k: v for k, v in options.items() if v is not None}
  if executor == "local":
    parameters.setdefault("timeout_min", LOCAL_TIMEOUT_MIN)
  parameters.setdefault("name", "rbx")
  return parameters


def _executor(folder: Path, executor: str, parameters: dict, check_only: bool = False):
  """submitit's executor for `executor` with `parameters`; SubmitError naming a bad one.
  `check_only`: checks the parameters and creates nothing on disk."""
  submitit = _submitit()
  import tempfile
  with tempfile.TemporaryDirectory() as scratch:
    try:
      ex = submitit.AutoExecutor(folder=scratch if check_only else folder, cluster=executor)
      ex.update_parameters(**parameters)
    except (NameError, AssertionError, ValueError, TypeError) as e:
      raise SubmitError(f"bad submitit option for executor {executor!r}: {e}") from None
  return ex


def _task_alive(record: dict, job_id: str, folder: Path) -> bool:
  """Whether the task `job_id` of another process's submission is queued or running."""
  if record["executor"] == "local":       # the job id is its controller's pid, on its host
    if record.get("host") != socket.gethostname():
      return False
    try:
      state = Path(f"/proc/{int(job_id)}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
      return False
    return state not in ("Z", "X")
  import submitit
  state = submitit.SlurmJob(folder, job_id).state.upper()
  return not state.startswith(_FINISHED) and state != "UNKNOWN"


def _is_complete(directory: Path) -> bool:
  meta = directory / store.METADATA
  return (meta.is_file() and store.read_json(meta).get("status") == rundir.COMPLETE
          and (directory / store.INDEX).is_file())


def _progress(directory: Path) -> dict | None:
  """{"unit", "t"} of the slice's newest checkpoint (its metadata only), or None."""
  for name in ("checkpoint.npz", "checkpoint.prev.npz"):
    try:
      with np.load(directory / name, allow_pickle=False) as f:
        meta = json.loads(f["__meta__"].tobytes().decode())
      return {"unit": meta["unit"], "t": meta["t"]}
    except Exception:                       # absent, being replaced, or partly written
      continue
  return None


def _seeds_text(seeds) -> str:
  return seeds if isinstance(seeds, str) else f"{len(seeds)} listed"
