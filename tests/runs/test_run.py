"""The chunked driver and `rbx run`: chunks compose to the uncut run, records are consistent,
a sweep killed with SIGKILL or stopped with Ctrl-C resumes to bit-identical results, and bad
checkpoints are reported, never used."""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx.core import driver, protocol
from rbx.core.grid import Grid
from rbx.runs import checkpoint, config, experiment, store
from helpers import example1_sweep

ROOT = Path(__file__).parents[2]


class Info(NamedTuple):
  regret: jax.Array


def toy(hp):
  """A cheap Run whose regret depends on the key, t, the carry and a traced grid value."""
  def init(key):
    return {"x": jax.random.uniform(key), "n": jnp.zeros((), jnp.int32)}

  def step(c, key, t):
    r = jax.random.uniform(jax.random.fold_in(key, t)) * hp["scale"] + 0.01 * c["x"]
    return {"x": c["x"] + r, "n": c["n"] + 1}, Info(r + 0.0 * (hp["kind"] == "b"))

  return protocol.Run(init, step)


def toy_sweep(seeds=5, steps=10):
  return driver.Sweep(toy, Grid({"kind": ["a", "b"], "scale": [1.0, 2.0, 0.5]}),
                      np.arange(seeds), steps)


def test_chunks_seed_blocks_and_batches_compose_to_the_uncut_run():
  whole = driver.run(toy_sweep(), driver.Options(seed_batch=64))
  cut = driver.run(toy_sweep(), driver.Options(chunk=3, seed_batch=2, seed_block=2))
  assert whole.complete and cut.complete
  np.testing.assert_array_equal(whole.recorder.data, cut.recorder.data)
  # seed_batch = 1 maps the unbatched step over the seeds: another batch shape, so equal to
  # float32 rounding (XLA fuses the batched and unbatched sums differently)
  single = driver.run(toy_sweep(), driver.Options(chunk=5, seed_batch=1))
  np.testing.assert_allclose(whole.recorder.data, single.recorder.data, rtol=1e-6)
  assert whole.recorder.data.shape == (2, 3, 5, 10) and np.isfinite(whole.recorder.data).all()
  # 2 combos x (init + one chunk) vs 2 combos x (init + 3 and 1 steps): the seed blocks (2, 2,
  # 1 seeds, the last padded to a full batch) share their programs
  assert len(whole.compiles) == 4 and len(cut.compiles) == 2 * 3 and len(single.compiles) == 4
  # a seed's run does not depend on its batch: seed 3 alone
  alone = driver.run(toy_sweep()._replace(seeds=np.array([3])), driver.Options(chunk=4))
  np.testing.assert_array_equal(alone.recorder.data[:, :, 0], whole.recorder.data[:, :, 3])


def test_log_and_summary_records_are_the_cumulative_regret():
  steps = driver.run(toy_sweep(steps=40), driver.Options(chunk=7))
  cum = np.cumsum(steps.recorder.data, axis=-1, dtype=np.float64)
  log = driver.run(toy_sweep(steps=40), driver.Options(chunk=7, record="log", log_points=8))
  np.testing.assert_array_equal(log.recorder.steps, [1, 2, 3, 5, 8, 14, 24, 40])
  np.testing.assert_allclose(log.recorder.data, cum[..., log.recorder.steps - 1], rtol=1e-12)
  summary = driver.run(toy_sweep(steps=40), driver.Options(chunk=40, record="summary"))
  np.testing.assert_allclose(summary.recorder.data[..., 0], cum[..., -1], rtol=1e-12)


def test_resuming_from_any_snapshot_gives_the_same_records():
  # 2 combos x 2 seed blocks of 3 = 4 work units of 3 chunks each
  sweep, options = toy_sweep(seeds=6, steps=12), driver.Options(chunk=4, seed_block=3)
  whole = driver.run(sweep, options)
  snaps = []

  def keep(snap):    # records are the live arrays until the next chunk: copy them
    snaps.append(snap._replace(records={k: v.copy() for k, v in snap.records.items()}))

  stopped = driver.run(sweep, options, on_chunk=keep, stop=lambda: len(snaps) == 4)
  assert not stopped.complete and [(s.unit, s.t) for s in snaps] == [(0, 4), (0, 8), (1, 0), (1, 4)]
  assert snaps[2].carry is None                      # between two work units
  for snap in (snaps[3], snaps[2], snaps[0]):
    out = driver.run(sweep, options, start=snap)
    np.testing.assert_array_equal(out.recorder.data, whole.recorder.data)
  bad = snaps[3]._replace(carry=[leaf[:, :1] for leaf in snaps[3].carry])
  with pytest.raises(ValueError, match="saved state does not match"):
    driver.run(sweep, options, start=bad)


# ------------------------------------------------------------------ a real sweep, killed

CONFIG = example1_sweep(4, 240, 3)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
  """The config file and its uninterrupted results."""
  root = tmp_path_factory.mktemp("run")
  path = root / "sweep.toml"
  path.write_text(CONFIG)
  assert experiment.run(config.load(path, out=str(root / "ref")), progress=False,
                        echo=lambda s: None) == experiment.COMPLETE
  return path, store.load(root / "ref")


def test_the_run_records_its_seed_batch_and_why(reference):
  res = reference[1]
  why = (16, "cpu cache rule: seeds × |X| × A² ≤ 2^16")     # rlhf's on a CPU
  assert (res.metadata["sizes"]["seed_batch"], res.metadata["sizes"]["seed_batch_reason"]) == why
  assert (res.timing["seed_batch"], res.timing["seed_batch_reason"]) == why


def _start(cfg: Path, out: Path) -> subprocess.Popen:
  return subprocess.Popen([sys.executable, "-m", "rbx.cli", "run", str(cfg), "--out", str(out),
                           "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)


def _wait_for_checkpoint(proc: subprocess.Popen, out: Path, name="checkpoint.npz", timeout=240.0):
  end = time.time() + timeout
  while not (out / name).exists():
    assert proc.poll() is None, proc.stdout.read().decode()
    assert time.time() < end, f"no {name} appeared"
    time.sleep(0.01)


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_is_bit_identical(reference, tmp_path):
  cfg, ref = reference
  out = tmp_path / "killed"
  proc = _start(cfg, out)
  _wait_for_checkpoint(proc, out)
  proc.send_signal(signal.SIGKILL)
  assert proc.wait() == -signal.SIGKILL
  assert not (out / "results.json").exists()           # it really died mid-run
  assert experiment.resume(out, progress=False, echo=lambda s: None) == experiment.COMPLETE
  res = store.load(out)
  assert res.axes == ("beta", "seed", "step") and res.regret.shape == (2, 4, 240)
  np.testing.assert_array_equal(res.regret, ref.regret)
  assert len(res.metadata["segments"]) == 2 and res.metadata["status"] == "complete"
  assert not (out / "checkpoint.npz").exists()


@pytest.mark.slow
def test_ctrl_c_stops_after_a_chunk_and_bad_checkpoints_are_reported(reference, tmp_path):
  cfg, ref = reference
  out = tmp_path / "stopped"
  proc = _start(cfg, out)
  # two checkpoints saved, so there is a previous one to fall back to below (a SIGINT right
  # after the first save could otherwise stop the run with only that one)
  _wait_for_checkpoint(proc, out, "checkpoint.prev.npz")
  proc.send_signal(signal.SIGINT)
  log = proc.communicate(timeout=120)[0].decode()
  assert proc.returncode == 130, log
  assert "stopping after this chunk" in log and "--resume" in log
  assert store.read_json(out / "metadata.json")["status"] == "interrupted"
  with pytest.raises(FileNotFoundError, match="was interrupted at .*--resume"):
    store.load(out)

  # a changed config, and both checkpoints corrupt, are refused before anything runs
  changed = tmp_path / "changed"
  shutil.copytree(out, changed)
  (changed / "config.toml").write_text(CONFIG.replace("steps = 240", "steps = 241"))
  with pytest.raises(checkpoint.CheckpointError, match="different config"):
    experiment.resume(changed, progress=False, echo=lambda s: None)
  broken = tmp_path / "broken"
  shutil.copytree(out, broken)
  for p in (broken / "checkpoint.npz", broken / "checkpoint.prev.npz"):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
  cli = subprocess.run([sys.executable, "-m", "rbx.cli", "run", "--resume", str(broken)], cwd=ROOT,
                       capture_output=True, text=True)
  assert cli.returncode == 2 and "no good checkpoint" in cli.stderr and "truncated" in cli.stderr

  # a corrupt newest checkpoint is reported and the previous one used
  newest = out / "checkpoint.npz"
  assert checkpoint.load(checkpoint.previous(newest))[1]["t"] < checkpoint.load(newest)[1]["t"]
  data = bytearray(newest.read_bytes())
  data[len(data) // 2] ^= 0xFF
  newest.write_bytes(bytes(data))
  notes = []
  assert experiment.resume(out, progress=False, echo=notes.append) == experiment.COMPLETE
  assert any("rejected" in n and "checkpoint.npz" in n for n in notes), notes
  np.testing.assert_array_equal(store.load(out).regret, ref.regret)


def test_ctrl_c_stops_after_the_chunk_it_arrives_in(tmp_path, monkeypatch):
  cfg = config.loads(example1_sweep(2, 60, 1), out=str(tmp_path / "run"))
  saved, sent, save = [], [], checkpoint.save

  def ctrl_c():                              # a real SIGINT, from another thread, mid-run
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)

  def saving(path, arrays, meta):
    saved.append((time.perf_counter(), meta["t"]))
    if len(saved) == 3:
      threading.Thread(target=ctrl_c).start()
    save(path, arrays, meta)

  monkeypatch.setattr(checkpoint, "save", saving)
  notes = []
  assert experiment.run(cfg, progress=False, echo=notes.append) == experiment.INTERRUPTED
  after = [t for when, t in saved if when > sent[0]]
  assert len(after) <= 1, f"chunks saved after the SIGINT: {after}"     # the current one only
  assert checkpoint.load(tmp_path / "run" / "checkpoint.npz")[1]["t"] == saved[-1][1] < 60
  assert any("SIGINT: stopping after this chunk" in n for n in notes), notes


@pytest.mark.slow                                 # a real `rbx run` in a subprocess
def test_a_closed_pipe_neither_fails_the_run_nor_ends_the_command_with_an_error(tmp_path):
  cfg = tmp_path / "sweep.toml"
  cfg.write_text(example1_sweep(2, 4, 2))
  out = tmp_path / "run"
  # `rbx run ... 2>&1 | head -0`: the reader is gone before the first line is written
  proc = subprocess.Popen([sys.executable, "-m", "rbx.cli", "run", str(cfg), "--out", str(out),
                           "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)
  proc.stdout.close()
  assert proc.wait(timeout=300) == 0                 # no traceback, no exit-time flush error
  meta = store.read_json(out / store.METADATA)
  assert meta["status"] == "complete", meta.get("error")
  assert store.load(out).regret.shape == (2, 2, 4)


def test_run_refuses_a_directory_that_holds_a_run(reference):
  cfg, ref = reference
  with pytest.raises(FileExistsError,
                     match="already holds a complete run: run it again with --overwrite"):
    experiment.run(config.load(cfg, out=str(Path(ref.metadata and cfg.parent / "ref"))),
                   progress=False)


def test_a_directory_that_holds_another_configs_run_is_refused_as_such(reference, tmp_path):
  cfg, _ = reference
  out = tmp_path / "run"
  shutil.copytree(cfg.parent / "ref", out)
  meta = store.read_json(out / store.METADATA)
  store.write_json(out / store.METADATA, {**meta, "status": "interrupted"})    # unfinished
  other = config.loads(CONFIG.replace("steps = 240", "steps = 241").replace("seeds = 4",
                                                                            "seeds = 3"),
                       out=str(out))
  with pytest.raises(FileExistsError) as e:
    experiment.run(other, progress=False)
  assert str(e.value) == (f"{out} already holds the run of another config (it differs in seeds, "
                          "steps): run this one into another directory with --out, or delete "
                          "that run with --overwrite")
  with pytest.raises(FileExistsError, match=r"holds a run of this config: continue it with "
                     rf"`rbx run --resume {out}`"):
    experiment.run(config.load(cfg, out=str(out)), progress=False)
