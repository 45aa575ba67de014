"""`rbx trace` / `rbx.trace`: one seed of a finished run, step by step, by the run's own
programs — its regret is the run's row bit for bit although the traced program keeps every
step's whole `Transition` and its chunks are `--every` steps, not the run's."""
import numpy as np
import pytest

import rbx
from rbx import cli
from rbx.runs import config, experiment
from helpers import example1_sweep

SEEDS, STEPS, CHUNK = 5, 24, 10


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
  path = tmp_path_factory.mktemp("trace") / "run"
  experiment.run(config.loads(example1_sweep(SEEDS, STEPS, CHUNK), out=str(path)),
                 progress=False, echo=lambda text: None)
  return path


def test_a_seed_is_traced_bit_for_bit_with_its_state_every_k_steps(run_dir):
  out = rbx.trace(run_dir, 3, every=7)
  assert out.same_as_run
  res = rbx.load(run_dir)
  np.testing.assert_array_equal(out.steps["regret"], res.regret[:, 3])   # axes (beta, seed, step)
  assert out.axes == ("beta", "step") and list(out.coords["beta"]) == [0.5, 1.0]
  for name in ("obs.x", "action.a1", "action.a2", "feedback", "regret"):
    assert out.steps[name].shape[:2] == (2, STEPS), name
  assert out.steps["action.log_pi"].shape == (2, STEPS, 1, 3)
  # the prompt is Example 1's one prompt; the answers are its 3 actions; the comparison 0/1
  assert (out.steps["obs.x"] == 0).all() and set(np.unique(out.steps["action.a1"])) <= {0, 1, 2}
  assert set(np.unique(out.steps["feedback"])) <= {0, 1}
  assert out.state_steps.tolist() == [7, 14, 21, 24]
  assert out.states and all(v.shape[:2] == (2, 4) for v in out.states.values())
  assert all(k.startswith(("env.", "agent.")) for k in out.states)
  saved = np.load(out.path)
  assert out.path == run_dir / "trace" / "seed_3.npz" and bool(saved["same_as_run"])
  np.testing.assert_array_equal(saved["steps/regret"], out.steps["regret"])
  # Algorithm 1's step counter t in its state is the next step: one past the state's step
  counters = [v for k, v in out.states.items() if k == "agent.t"]
  assert counters and (counters[0] == out.state_steps + 1).all()


def test_the_command_line_traces_and_refuses_a_seed_outside_the_run(run_dir, capsys):
  assert cli.main(["trace", str(run_dir), "--seed", "0"]) == 0
  assert "bit for bit the run's row" in capsys.readouterr().out
  assert cli.main(["trace", str(run_dir), "--seed", str(SEEDS)]) == cli.EXIT_ERROR
  assert f"seed {SEEDS} is not one of the run's seeds (0..{SEEDS - 1})" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    cli.main(["trace", str(run_dir), "--seed", "0", "--every", "0"])
  assert "--every" in capsys.readouterr().err


def test_an_unfinished_run_or_no_run_is_refused(tmp_path, run_dir):
  with pytest.raises(FileNotFoundError, match="not a run directory"):
    rbx.trace(tmp_path, 0)
  meta = (run_dir / "metadata.json").read_text()
  other = tmp_path / "other"
  other.mkdir()
  for name in ("config.toml", "results.json", "results.npz"):
    if (run_dir / name).exists():
      (other / name).write_bytes((run_dir / name).read_bytes())
  (other / "metadata.json").write_text(meta.replace('"status": "complete"', '"status": "interrupted"'))
  with pytest.raises(ValueError, match="not a complete run"):
    rbx.trace(other, 0)
