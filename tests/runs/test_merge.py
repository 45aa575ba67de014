"""Slices of a sweep's seeds (`rbx run --seeds START:STOP`, one per job-array task) merged
with `rbx merge` equal one run over all the seeds bit for bit with the default settings
(docs/reproducibility.md), and report and plot like one; merge refuses other configs,
overlapping seeds, unfinished runs and a directory that holds files."""
import shutil

import numpy as np
import pytest

import rbx
from rbx import cli
from rbx.runs import experiment, store

# Example 1, two agents; the default seed batch and devices: every slice padded to full batches.
CONFIG = """
family = "rlhf"
seeds = 4
steps = 6
chunk = 3
[env]
name = "example1"
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


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  """The whole run over seeds 0:4 and its two slices 0:2 and 2:4, run by `rbx run`."""
  root = tmp_path_factory.mktemp("slices")
  cfg = root / "sweep.toml"
  cfg.write_text(CONFIG)
  dirs = {}
  for seeds in ("0:4", "0:2", "2:4"):
    dirs[seeds] = root / seeds.replace(":", "_")
    assert cli.main(["run", str(cfg), "--seeds", seeds, "--out", str(dirs[seeds]),
                     "--no-progress"]) == 0
  return dirs


def test_merged_slices_equal_one_run_over_all_the_seeds_bit_for_bit(runs, tmp_path, capsys):
  merged = tmp_path / "merged"
  assert cli.main(["merge", str(runs["2:4"]), str(runs["0:2"]), "--out", str(merged)]) == 0
  assert "R(T)" in capsys.readouterr().out
  whole, res = rbx.load(runs["0:4"]), rbx.load(merged)
  assert res.axes == whole.axes == ("agent", "seed", "step")
  np.testing.assert_array_equal(res.coords["seed"], [0, 1, 2, 3])
  assert np.isfinite(res.regret).all() and res.regret.dtype == whole.regret.dtype
  np.testing.assert_array_equal(res.regret, whole.regret)
  assert res.config["seeds"] == "0:4" and res.metadata["status"] == "complete"
  assert [s["seeds"] for s in res.metadata["merged"]["from"]] == ["2:4", "0:2"]
  assert res.metadata["merged"]["from"][0]["directory"] == str(runs["2:4"].resolve())
  assert res.metadata["sizes"]["seeds"] == 4
  assert cli.main(["report", str(merged)]) == 0
  assert "| algorithm1 | 4 |" in (merged / "report.md").read_text()
  assert cli.main(["plot", str(merged)]) == 0
  assert (merged / "plots" / "cumulative.png").is_file()


def test_merge_refuses_another_config(runs, tmp_path):
  other = shutil.copytree(runs["2:4"], tmp_path / "other")
  text = (other / store.CONFIG).read_text()
  (other / store.CONFIG).write_text(text.replace("steps = 6", "steps = 7"))
  with pytest.raises(ValueError, match=r"configs differ in steps \(slices of one run differ in "
                                       r"seeds only\)"):
    experiment.merge([runs["0:2"], other], tmp_path / "merged")


def test_merge_refuses_slices_whose_bits_differ_and_not_other_device_counts(runs, tmp_path):
  # the same bits on another number of devices (two or more): merged, no note
  other = shutil.copytree(runs["2:4"], tmp_path / "other")
  meta = store.read_json(other / store.METADATA)
  assert meta["bits"]["sharded"] and meta["bits"]["seed_batch_rule"] == "default"
  store.write_json(other / store.METADATA, {**meta, "local_devices_used": 8})
  said = []
  experiment.merge([runs["0:2"], other], tmp_path / "merged", echo=said.append)
  assert len(said) == 1 and said[0].endswith(": 2 run(s), seeds 0, 1, 2, 3")
  # another kind of device: refused, naming the setting, unless allowed
  store.write_json(other / store.METADATA,
                   {**meta, "bits": {**meta["bits"], "device_kind": "gpu NVIDIA H200"}})
  with pytest.raises(ValueError, match="device_kind"):
    experiment.merge([runs["0:2"], other], tmp_path / "refused")
  assert not (tmp_path / "refused").exists()
  experiment.merge([runs["0:2"], other], tmp_path / "mixed", echo=said.append, allow_mixed=True)
  assert "device_kind" in store.read_json(tmp_path / "mixed" / store.METADATA)["merged"]["mixed"]


def test_merge_refuses_overlapping_seeds(runs, tmp_path):
  with pytest.raises(ValueError, match=r"both ran seed\(s\) 0, 1; slices must not overlap"):
    experiment.merge([runs["0:2"], runs["0:4"]], tmp_path / "merged")


def test_merge_refuses_an_unfinished_run_and_takes_it_resumed(runs, tmp_path, monkeypatch, capsys):
  polls = iter([False, False])             # Ctrl-C during the first chunk (as test_cli)
  monkeypatch.setattr(experiment._StopOnSignal, "__call__", lambda self: next(polls, True))
  stopped = tmp_path / "stopped"
  assert cli.main(["run", str(runs["2:4"] / store.CONFIG), "--out", str(stopped),
                   "--no-progress"]) == cli.EXIT_INTERRUPTED
  assert cli.main(["merge", str(runs["0:2"]), str(stopped), "--out", str(tmp_path / "m")]) == 2
  err = capsys.readouterr().err
  assert f"cannot merge {stopped}: it is not a complete run ({stopped} was interrupted" in err
  assert "rbx run --resume" in err and not (tmp_path / "m").exists()
  monkeypatch.undo()               # resumed (its config.toml says seeds = "2:4"), it merges
  assert cli.main(["run", "--resume", str(stopped), "--no-progress"]) == 0
  experiment.merge([runs["0:2"], stopped], tmp_path / "m")
  np.testing.assert_array_equal(rbx.load(tmp_path / "m").regret, rbx.load(runs["0:4"]).regret)


def test_merge_refuses_a_directory_that_holds_files(runs, tmp_path):
  (tmp_path / "note.txt").write_text("mine")
  with pytest.raises(FileExistsError, match="exists and is not empty"):
    experiment.merge([runs["0:2"], runs["2:4"]], tmp_path)


def test_a_seed_range_on_the_command_line_is_checked_before_anything_runs(capsys):
  with pytest.raises(SystemExit):
    cli.main(["run", "sweep.toml", "--seeds", "4:2"])
  assert "--seeds: must be N (seeds 0..N-1" in capsys.readouterr().err
