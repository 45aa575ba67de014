"""`rbx submit` / `rbx.submit` (`rbx.runs.submit`): slices of a sweep's seeds as submitit
tasks — here submitit's local executor, real processes — merged into DIR/all, equal to one run
over all the seeds; --no-wait and --resume; the bad input refused before anything runs; and
`rbx merge` refusing slices whose reproducibility settings ("bits") differ."""
import json
import shutil
import sys
import time

import numpy as np
import pytest

import rbx
from rbx import cli
from rbx.runs import config as config_lib
from rbx.runs import experiment, store
from rbx.runs import submit as submit_lib

pytest.importorskip("submitit")

# Example 1, two agents, a small solver; the defaults for seed_batch and devices.
CONFIG = """
family = "rlhf"
seeds = 4
steps = 20
chunk = 10
[env]
name = "example1"
p = 0.0
beta = 0.5
r_max = 4.0
[agent]
alpha = 3.0
[agent.solver]
starts = 2
iterations = 2
line_search = 2
keep = 2
[grid]
agent = ["algorithm1", "xpo"]
"""


@pytest.fixture
def cfg(tmp_path):
  path = tmp_path / "sweep.toml"
  path.write_text(CONFIG)
  return path


def test_the_seeds_are_cut_into_contiguous_slices_as_equal_as_possible():
  assert submit_lib.seed_slices(np.arange(10), 3) == ["0:4", "4:7", "7:10"]
  assert submit_lib.seed_slices(np.arange(100, 104), 4) == ["100:101", "101:102", "102:103",
                                                             "103:104"]
  assert submit_lib.seed_slices(np.array([3, 5, 6, 7]), 2) == [[3, 5], "6:8"]
  for bad in (0, 5, -1, 2.0, True):
    with pytest.raises(submit_lib.SubmitError, match=r"slices must be an integer from 1 to the "
                                                     r"config's number of seeds \(4\)"):
      submit_lib.seed_slices(np.arange(4), bad)


def _refused(argv, capsys, *match):
  assert cli.main(argv) == cli.EXIT_ERROR
  err = capsys.readouterr().err
  for m in match:
    assert m in err, err
  return err


def test_bad_input_is_refused_before_anything_runs(cfg, tmp_path, capsys, monkeypatch):
  new = tmp_path / "new"
  local = ["--executor", "local", "--out", str(new)]
  _refused(["submit", str(cfg), "--slices", "5", *local], capsys,
           "slices must be an integer from 1 to the config's number of seeds (4), got 5")
  with pytest.raises(SystemExit):
    cli.main(["submit", str(cfg), "--slices", "0", *local])
  assert "argument --slices: must be an integer >= 1, got 0" in capsys.readouterr().err
  _refused(["submit", str(cfg), "--slices", "2", "--executor-option", "slurm_bogus=1", *local],
           capsys, "bad submitit option for executor 'local'", "bogus")
  _refused(["submit", str(cfg), "--slices", "2", "--set", "steps=0", *local], capsys, "steps")
  with pytest.raises(submit_lib.SubmitError, match="executor must be one of slurm, local, got 'pbs'"):
    rbx.submit(cfg, slices=2, executor="pbs", out=new)
  if shutil.which("sbatch") is None:
    _refused(["submit", str(cfg), "--slices", "2", "--out", str(new)], capsys,
             "executor 'slurm' needs Slurm's sbatch", "executor 'local'")
  monkeypatch.setitem(sys.modules, "submitit", None)           # not installed
  _refused(["submit", str(cfg), "--slices", "2", *local], capsys,
           "rbx submit needs submitit", "pip install 'rbx[cluster]'")
  monkeypatch.undo()
  assert not new.exists()                                      # nothing was made

  other = tmp_path / "other"
  other.mkdir()
  (other / "notes.txt").write_text("mine")
  _refused(["submit", str(cfg), "--slices", "2", "--executor", "local", "--out", str(other)],
           capsys, f"--out {other} already holds other files")
  assert [p.name for p in other.iterdir()] == ["notes.txt"]     # nothing lost or added
  (other / submit_lib.SUBMIT_JSON).write_text("{}")
  _refused(["submit", str(cfg), "--slices", "2", "--executor", "local", "--out", str(other)],
           capsys, f"already holds a submission: continue it with `rbx submit --resume {other}`")
  _refused(["submit", "--resume", str(tmp_path)], capsys, "holds no submission")
  with pytest.raises(SystemExit):
    cli.main(["submit", "--resume", str(other), "--slices", "2"])
  assert "--resume continues a submission as it was made: no --slices" in capsys.readouterr().err


def test_a_requeued_task_resumes_its_slice(cfg, tmp_path):
  task = submit_lib.SliceTask(str(cfg), str(tmp_path / "slice_1"), "2:4")
  delayed = task.checkpoint()                     # what submitit requeues on preemption
  again = delayed.function
  assert isinstance(again, submit_lib.SliceTask) and (again.directory, again.seeds) == (
      task.directory, "2:4")
  assert task() == experiment.COMPLETE
  assert rbx.load(tmp_path / "slice_1").coords["seed"].tolist() == [2, 3]
  assert again() == experiment.COMPLETE           # the run is there: resumed, not rerun
  assert len(store.read_json(tmp_path / "slice_1" / store.METADATA)["segments"]) == 1


@pytest.fixture(scope="module")
def slices(tmp_path_factory):
  """Seeds 0:2 and 2:4 of CONFIG, run in this process."""
  root = tmp_path_factory.mktemp("bits")
  (root / "sweep.toml").write_text(CONFIG)
  out = []
  for seeds in ("0:2", "2:4"):
    directory = root / f"slice_{seeds[0]}"
    config = config_lib.load(root / "sweep.toml", out=str(directory),
                             overrides={"seeds": seeds})
    assert experiment.run(config, progress=False) == experiment.COMPLETE
    out.append(directory)
  return out


def _with_bits(directory, bits, where):
  copy = shutil.copytree(directory, where)
  meta = store.read_json(copy / store.METADATA)
  if bits is None:
    meta.pop("bits", None)
  else:
    meta["bits"] = bits
  store.write_json(copy / store.METADATA, meta)
  return copy


BITS = {"device_kind": "cpu", "seed_batch": 2, "seed_batch_rule": "fixed", "rbx": "abc",
        "jax": "0.10.2", "jaxlib": "0.10.2", "xla_flags": ""}


def test_merge_refuses_slices_whose_bits_differ_unless_allowed(slices, tmp_path, capsys):
  a = _with_bits(slices[0], BITS, tmp_path / "a")
  b = _with_bits(slices[1], {**BITS, "device_kind": "NVIDIA H100", "jax": "0.11"}, tmp_path / "b")
  err = _refused(["merge", str(a), str(b), "--out", str(tmp_path / "m")], capsys,
                 "different reproducibility settings", "device_kind differs", "jax differs",
                 f"{a}: 'cpu'", f"{b}: 'NVIDIA H100'", "--allow-mixed")
  assert "jaxlib differs" not in err and not (tmp_path / "m").exists()
  assert cli.main(["merge", str(a), str(b), "--out", str(tmp_path / "m"), "--allow-mixed"]) == 0
  mixed = rbx.load(tmp_path / "m").metadata["merged"]["mixed"]
  assert mixed["device_kind"] == {str(a): "cpu", str(b): "NVIDIA H100"} and set(mixed) == {
      "device_kind", "jax"}
  assert "note: merged with --allow-mixed" in capsys.readouterr().out
  old = _with_bits(slices[1], None, tmp_path / "old")          # an older run: no bits
  with pytest.raises(ValueError, match=r"rbx differs \(.*none recorded \(an older run\)"):
    experiment.merge([a, old], tmp_path / "m2")
  same = _with_bits(slices[1], BITS, tmp_path / "same")
  experiment.merge([a, same], tmp_path / "m3")                 # equal bits merge as before
  assert "mixed" not in rbx.load(tmp_path / "m3").metadata["merged"]


def _xfail_unless_bits(merged, whole):
  """Exact equality; a difference within 1e-5 only is the seed-invariance work (issue 53,
  part 1) not done yet: xfail."""
  if not np.array_equal(merged, whole) and np.allclose(merged, whole, rtol=0, atol=1e-5):
    pytest.xfail("the slices agree with one run to 1e-5 but not bit for bit: seed "
                 "invariance of the default seed_batch/devices (issue 53, part 1) pending")
  np.testing.assert_array_equal(merged, whole)


@pytest.mark.slow
def test_local_slices_no_wait_resume_and_a_failed_slice_merge_to_one_run(cfg, tmp_path, capsys):
  out, whole = tmp_path / "sliced", tmp_path / "whole"
  local = ["--executor", "local", "--poll", "0.5"]
  assert cli.main(["submit", str(cfg), "--slices", "2", "--out", str(out), "--no-wait",
                   *local]) == 0
  record = json.loads((out / submit_lib.SUBMIT_JSON).read_text())
  assert [s["seeds"] for s in record["slices"]] == ["0:2", "2:4"]
  assert [len(s["jobs"]) for s in record["slices"]] == [1, 1] and record["executor"] == "local"
  assert "rbx submit --resume" in capsys.readouterr().out
  one = rbx.submit(cfg, slices=1, executor="local", out=whole)   # the same way, one slice

  assert cli.main(["submit", "--resume", str(out), "--poll", "0.5"]) == 0    # waits, merges
  said = capsys.readouterr().out
  assert "submitting again" not in said                      # both were queued or running
  assert "slice_1 (seeds 2:4): complete" in said and "R(T)" in said
  record = json.loads((out / submit_lib.SUBMIT_JSON).read_text())
  assert [len(s["jobs"]) for s in record["slices"]] == [1, 1]
  reference = one.wait(poll=0.5)
  merged = rbx.load(out / "all")
  np.testing.assert_array_equal(merged.coords["seed"], [0, 1, 2, 3])
  assert merged.config["seeds"] == "0:4"

  # slice_1 failed (e.g. its node died): --resume submits it alone again, and it resumes. Its
  # first task's process may still be exiting after its run completed (on a loaded machine):
  # a task still alive is not submitted again, so wait for it to be gone first.
  record = json.loads((out / submit_lib.SUBMIT_JSON).read_text())
  deadline = time.monotonic() + 120
  while (submit_lib._task_alive(record, record["slices"][1]["jobs"][-1], out / submit_lib.LOGS)
         and time.monotonic() < deadline):
    time.sleep(0.5)
  shutil.rmtree(out / "all")
  meta = store.read_json(out / "slice_1" / store.METADATA)
  meta.update(status="failed", error={"time": meta["finished"], "type": "RuntimeError",
                                      "message": "the node died"})
  store.write_json(out / "slice_1" / store.METADATA, meta)
  (out / "slice_1" / store.INDEX).unlink()
  handle = submit_lib.resume(out)
  assert handle.status()[0] == "complete"
  again = handle.wait(poll=0.5)
  record = json.loads((out / submit_lib.SUBMIT_JSON).read_text())
  assert [len(s["jobs"]) for s in record["slices"]] == [1, 2]
  assert "submitting again slice_1" in capsys.readouterr().out
  np.testing.assert_array_equal(again.regret, merged.regret)
  _xfail_unless_bits(merged.regret, reference.regret)


@pytest.mark.slow
def test_a_preempted_task_is_requeued_and_resumes_from_its_checkpoint(tmp_path):
  import os
  import signal
  import time

  from rbx.runs import rundir
  cfg = tmp_path / "long.toml"
  cfg.write_text(CONFIG.replace("seeds = 4", "seeds = 2").replace("steps = 20", "steps = 2000")
                 .replace("chunk = 10", "chunk = 20"))
  handle = rbx.submit(cfg, slices=1, executor="local", out=tmp_path / "out")
  directory, begin = handle.slices[0], time.monotonic()
  while not (directory / "checkpoint.npz").exists():
    assert time.monotonic() - begin < 300, handle.status()
    time.sleep(0.1)
  holder = rundir.holder(directory / rundir.LOCK)
  if holder is None:
    pytest.skip("the slice ended before it could be preempted")
  os.kill(holder["pid"], signal.SIGUSR2)       # Slurm's warning before preemption or timeout
  res = handle.wait(poll=0.5)
  segments = store.read_json(directory / store.METADATA)["segments"]
  assert len(segments) == 2 and segments[0]["error"]["type"] == "SystemExit"   # requeued,
  assert res.regret.shape[1] == 2                                              # resumed
  log = (tmp_path / "out" / "submitit" / f"{handle.job_ids[0]}_0_log.err").read_text()
  assert "this job is preempted" in log
