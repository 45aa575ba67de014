"""Nothing crashes, nothing is silent: a sweep too big for the machine is refused before it
allocates, a run that dies says so in its status, one process runs a directory at a time, and
every parameter's effective value is recorded."""
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rbx
from rbx import cli, rlhf
from rbx.core import Agent, memory, registry
from rbx.core import sweep as sweep_lib
from rbx.runs import config, experiment, report, rundir, store
from helpers import example1_sweep

ROOT = Path(__file__).parents[2]
HUGE = example1_sweep(10 ** 9, 240, 3)
SMALL = """
family = "rlhf"
seeds = 2
steps = 8
chunk = 4
[env]
name = "example1"
[agent]
name = "reference"
[grid]
r_max = [3.0, 4.0]
"""                     # no beta: example1's default; a cheap agent, quick to compile


def reference(mix=0.25) -> Agent:
  """Deploys π = (1 − mix) π_ref + mix · uniform and never learns (cheap to compile)."""
  def act(key, state, obs, task):
    log_pi = jnp.log((1.0 - mix) * task.pi_ref + mix / task.pi_ref.shape[-1])
    k1, k2 = jax.random.split(key)
    return state, rlhf.Query(jax.random.categorical(k1, log_pi[obs.x]),
                             jax.random.categorical(k2, log_pi[obs.x]), log_pi)

  return Agent("reference", lambda key, task, horizon: jnp.zeros(()), act,
               lambda key, state, obs, query, a1_wins, task: state)


@pytest.fixture(autouse=True)
def registered():
  rlhf.FAMILY.agent("reference", reference, {"mix": registry.real(0.0, 1.0)})
  yield
  del rlhf.FAMILY.agents["reference"]


def quiet(_):
  pass


# ------------------------------------------------------------------ memory before allocation

def test_a_sweep_too_big_for_the_machine_is_refused_before_it_allocates(tmp_path):
  begin = time.perf_counter()
  with pytest.raises(config.ConfigError, match=r"needs about [\d.]+ TiB \([\d,]+ bytes\) of host "
                     r"memory but .* bytes\) is available .*records.*record = \"log\""):
    config.loads(HUGE)
  small = config.loads(SMALL)
  with pytest.raises(ValueError, match=r"needs about .* bytes\) of host memory"):
    rbx.sweep(small.build, small.grid, 10 ** 9, 240, progress=False)
  assert time.perf_counter() - begin < 10               # not the 20 s and 8 GB of np.arange

  # `rbx run` refuses it before making the directory; `--resume` of one refuses it untouched
  path = tmp_path / "huge.toml"
  path.write_text(HUGE)
  assert cli.main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
  assert not (tmp_path / "out").exists()
  copied = tmp_path / "copied"
  copied.mkdir()
  (copied / store.CONFIG).write_text(HUGE)
  with pytest.raises(config.ConfigError, match="host memory"):
    experiment.resume(copied, progress=False, echo=quiet)
  assert not (copied / store.METADATA).exists()        # no status "running" left


def test_the_estimate_adds_up_the_records_the_state_and_a_chunk():
  need = memory.estimate(combos=2, points=3, seeds=10, recorded=100, record="steps", block=4,
                         chunk=5, state=8, devices=2, seed_batch=1, checkpoint=True)
  assert need.host == 2 * 3 * 10 * 100 * 4 * 2 + 7 * 10 * 8 + 3 * 4 * (8 + 12 * 5)
  assert need.device == 3 * 2 * (8 + 4 * 5) + 3 * 1 * 8

  class Device:                                  # an accelerator with 1 KiB free
    def memory_stats(self):
      return {"bytes_limit": 2048, "bytes_in_use": 1024}

    def __str__(self):
      return "gpu:0"

  with pytest.raises(ValueError, match=r"per device but gpu:0 has 1.0 KiB \(1,024 bytes\) free"
                     r".*seed_block"):
    memory.check(need._replace(device=4096), [Device()])
  memory.check(need, [Device()])                  # 192 bytes per device fit


# ------------------------------------------------------------------ a run that dies says so

def _failing_sweep(monkeypatch, error, after_chunks):
  """A run's sweep (`rbx.core.sweep.run`) raising `error` after `after_chunks` chunks (their
  checkpoints written)."""
  real = sweep_lib.run

  def run(plan, seeds, options):
    seen = []

    def save(snapshot):
      options.on_chunk(snapshot)
      seen.append(1)
      if len(seen) >= after_chunks:
        raise error
    if after_chunks == 0:
      raise error
    return real(plan, seeds, dataclasses.replace(options, on_chunk=save))
  monkeypatch.setattr(experiment.sweep_lib, "run", run)


@pytest.mark.parametrize("error,status", [(RuntimeError("boom"), "failed"),
                                          (MemoryError("Unable to allocate 8 GiB"), "failed"),
                                          (KeyboardInterrupt(), "interrupted")])
def test_a_run_that_dies_records_why(tmp_path, monkeypatch, error, status):
  _failing_sweep(monkeypatch, error, after_chunks=0)
  cfg = config.loads(SMALL, out=str(tmp_path / "run"))
  with pytest.raises(type(error)):
    experiment.run(cfg, progress=False, echo=quiet)
  meta = store.read_json(tmp_path / "run" / store.METADATA)
  assert meta["status"] == status and meta["error"]["type"] == type(error).__name__
  assert meta["error"]["time"] and meta["segments"][-1]["error"] == meta["error"]
  if status == "failed":
    assert meta["error"]["message"] == str(error)
    # nothing to resume from: the report says why and does not suggest --resume
    with pytest.raises(FileNotFoundError, match=f"failed at .*{type(error).__name__}: "
                       f"{error}.*wrote no checkpoint") as e:
      report.write(tmp_path / "run")
    assert "--resume" not in str(e.value)


def test_a_failed_run_with_a_checkpoint_is_reported_and_resumes(tmp_path, monkeypatch):
  _failing_sweep(monkeypatch, RuntimeError("disk on fire"), after_chunks=1)
  out = tmp_path / "run"
  cfg = config.loads(SMALL, out=str(out))
  with pytest.raises(RuntimeError):
    experiment.run(cfg, progress=False, echo=quiet)
  assert store.read_json(out / store.METADATA)["status"] == "failed"
  with pytest.raises(FileNotFoundError, match="RuntimeError: disk on fire; continue it from its "
                     "last checkpoint with `rbx run --resume"):
    report.write(out)
  monkeypatch.undo()
  assert experiment.resume(out, progress=False, echo=quiet) == experiment.COMPLETE
  meta = store.read_json(out / store.METADATA)
  assert meta["status"] == "complete" and "error" not in meta
  assert meta["segments"][0]["error"]["message"] == "disk on fire"      # the history stays
  assert np.isfinite(store.load(out).regret).all()


# ------------------------------------------------------------------ one process per directory

HOLDER = """
import importlib.util, sys, time
spec = importlib.util.spec_from_file_location("rundir", sys.argv[1])
rundir = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rundir)
with rundir.hold(sys.argv[2]):
  print("held", flush=True)
  time.sleep(600)
"""


def test_a_locked_directory_is_refused_and_a_killed_holder_is_detected(tmp_path):
  cfg = config.loads(SMALL, out=str(tmp_path / "run"))
  lock = tmp_path / "run" / rundir.LOCK
  (tmp_path / "run").mkdir()
  with rundir.hold(lock):                          # this process holds it
    with pytest.raises(rundir.LockedError, match=f"run is being run by pid {os.getpid()} on "
                       f"host {socket.gethostname()} since 20"):
      experiment.run(cfg, progress=False, echo=quiet)
  assert rundir.holder(lock) is None
  assert experiment.run(cfg, progress=False, echo=quiet) == experiment.COMPLETE

  # a holder killed with SIGKILL leaves its name but no lock: the next run proceeds, and says so
  proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(ROOT / "rbx/runs/rundir.py"),
                           str(lock)], stdout=subprocess.PIPE, text=True)
  try:
    assert proc.stdout.readline().strip() == "held"
    assert rundir.holder(lock)["pid"] == proc.pid
    assert cli.main(["run", "--resume", str(tmp_path / "run")]) == 2
    with pytest.raises(rundir.LockedError, match=f"pid {proc.pid}"):
      experiment.resume(tmp_path / "run", progress=False, echo=quiet)
  finally:
    proc.send_signal(signal.SIGKILL)
    proc.wait()
  assert rundir.holder(lock) is None and json.loads(lock.read_text())["pid"] == proc.pid
  notes = []
  assert experiment.resume(tmp_path / "run", progress=False, echo=notes.append) == "complete"
  assert any(f"pid {proc.pid}" in n and "without releasing" in n for n in notes), notes
  assert lock.read_text() == ""                    # released cleanly this time


def test_a_killed_run_is_reported_as_killed(tmp_path):
  cfg = config.loads(SMALL, out=str(tmp_path / "run"))
  experiment.run(cfg, progress=False, echo=quiet)
  meta_path = tmp_path / "run" / store.METADATA
  meta = store.read_json(meta_path)
  store.write_json(meta_path, {**meta, "status": "running"})    # as SIGKILL leaves it
  (tmp_path / "run" / store.INDEX).unlink()
  with pytest.raises(FileNotFoundError) as e:
    report.write(tmp_path / "run")
  assert str(e.value).startswith(f"{tmp_path / 'run'} was killed while it ran (by SIGKILL or the "
                                 "out-of-memory killer, say): its status still says 'running', "
                                 "but no process is running it; it wrote no checkpoint, so there "
                                 "is nothing to resume")
  with rundir.hold(tmp_path / "run" / rundir.LOCK):
    with pytest.raises(FileNotFoundError, match=f"still being run by pid {os.getpid()}"):
      report.write(tmp_path / "run")


# ------------------------------------------------------------------ effective values recorded

def test_every_effective_parameter_is_recorded_and_reported(tmp_path):
  cfg = config.loads(SMALL, out=str(tmp_path / "run"))
  assert experiment.run(cfg, progress=False, echo=quiet) == experiment.COMPLETE
  effective = store.read_json(tmp_path / "run" / store.METADATA)["effective"]
  assert effective == {"env": {"name": "example1", "p": 0.0, "beta": 0.5,    # r_max is swept
                               "learner_r_max": None},                    # None: r_max
                       "agent": {"reference": {"mix": 0.25}}}
  text = report.write(tmp_path / "run").read_text()
  assert "env (p = 0.0, beta = 0.5); reference (mix = 0.25)" in text


def test_rbx_run_out_of_memory_is_a_message_and_a_status(tmp_path, monkeypatch, capsys):
  _failing_sweep(monkeypatch, MemoryError("Unable to allocate 8 GiB"), after_chunks=0)
  path = tmp_path / "small.toml"
  path.write_text(SMALL)
  assert cli.main(["run", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 2
  assert "rbx run: out of memory (Unable to allocate 8 GiB)" in capsys.readouterr().err
  assert store.read_json(tmp_path / "run" / store.METADATA)["status"] == "failed"
