"""Instances as an axis (`rbx.sweep(instances=I)`, a config's `instances = I`): instance i is
the environment at seed = i, bit for bit; the results' "instance" axis, the summary and the
report over instances and seeds; environments without instances refused before anything
compiles."""
import numpy as np
import pytest

import rbx
from rbx import neural, rlhf
from rbx.core import plots
from rbx.runs import config, experiment, report, store

TOML = """
family = "rlhf"
seeds = 2
steps = 6
seed_batch = 2
devices = 1
{top}
[env]
name = "random_instance"
num_prompts = 2
num_actions = 3
{env}
[agent]
name = "online_dpo"
[grid]
beta = [0.5, 1.0]
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
  """The config over 3 instances, run (`rbx run`), and its results."""
  out = tmp_path_factory.mktemp("instances") / "run"
  cfg = config.loads(TOML.format(top="instances = 3", env=""), out=str(out))
  assert experiment.run(cfg, progress=False, echo=lambda s: None) == experiment.COMPLETE
  return store.load(out)


def test_instance_i_is_the_run_at_seed_i_bit_for_bit(run):
  assert run.axes == ("beta", "instance", "seed", "step")
  np.testing.assert_array_equal(run.coords["instance"], [0, 1, 2])
  for i in range(3):
    cfg = config.loads(TOML.format(top="", env=f"seed = {i}"))
    alone = rbx.core.sweep.run(cfg.plan, cfg.seeds, cfg.run_options())
    np.testing.assert_array_equal(run.sel(instance=i).regret, alone.regret, err_msg=f"{i}")
  assert np.ptp(run.final().mean(axis=-1)[0]) > 0                 # the instances differ


def test_the_summary_and_report_average_over_instances_and_seeds(run):
  final = run.final()                                             # (beta, instance, seed)
  row = run.summary()[1]
  assert (row["beta"], row["n"], row["instances"]) == (1.0, 2, 3)
  means = final[1].mean(axis=-1)
  assert row["mean"] == pytest.approx(final[1].mean())
  assert row["std_instance"] == pytest.approx(means.std(ddof=1))
  assert row["std"] == pytest.approx(np.sqrt(final[1].var(axis=-1, ddof=1).mean()))
  t = 0.95 / np.sqrt(2 * 0.975 * 0.025)           # t_{0.975, 2} in closed form: (2q − 1)/√(2q(1 − q))
  assert row["ci_high"] - row["mean"] == pytest.approx(t * means.std(ddof=1) / np.sqrt(3))
  assert len(run.final(table=True)) == 2 * 3 * 2
  assert run.final(table=True)[-1].keys() == {"beta", "instance", "seed", "final"}
  assert run.instance_means().axes == ("beta", "instance", "step")
  assert run.stuck_fraction(0.5).shape == (2, 6)
  assert "std_instance" in repr(run)
  text = report.markdown(run, {})
  assert "3 instances (the environment at seed = 0..2) × 2 seeds" in text
  assert "| beta | instances | n | mean | std (seeds) | std (instances) | 95% CI |" in text
  assert "mean and 95% CI over 3 instances" in plots.cumulative(run, band="ci").axes[0].get_title()
  assert run.to_dataframe().columns[:4].tolist() == ["beta", "instance", "seed", "step"]


def test_environments_without_instances_are_refused_before_compiling():
  X, y = np.eye(4, dtype=np.float32), np.arange(4) % 2
  data = lambda seed: (neural.classification(X, y), neural.get("neural_ucb", width=4))
  with pytest.raises(ValueError, match="instances: the environment \\(ClassificationEnv\\) is "
                                       "the same at seed = 0 and seed = 1.*no instance axis"):
    rbx.sweep(data, {}, seeds=1, steps=1, instances=2)
  numpy = lambda seed: (neural.synthetic(seed=seed), neural.get("neural_ucb", width=4))
  with pytest.raises(ValueError, match="instances: the environment \\(SyntheticEnv\\) cannot "
                                       "be built from a traced seed.*no instance axis"):
    rbx.sweep(numpy, {}, seeds=1, steps=1, instances=2)
  seeded = lambda seed: (rlhf.FAMILY.load_env("contextual", {"seed": seed}), rlhf.get("vpo"))
  with pytest.raises(ValueError, match="grid field 'seed' with instances"):
    rbx.sweep(seeded, {"seed": [1, 2]}, seeds=1, steps=1, instances=2)
  for bad in (0, 1.5, True, "2"):
    with pytest.raises(ValueError, match=f"instances must be an integer >= 1, got {bad!r}"):
      rbx.sweep(seeded, {}, seeds=1, steps=1, instances=bad)


@pytest.mark.parametrize("top, env, message", [
    ("instances = 0", "", "config instances must be an integer >= 1, got 0"),
    ('instances = "3"', "", "config instances must be an integer, got '3'"),
    ("instances = 2", "seed = 1", "config env.seed: with instances = 2, instance i is the "
                                  "environment at seed = i"),
])
def test_bad_instances_in_a_config(top, env, message):
  with pytest.raises(config.ConfigError, match=message):
    config.loads(TOML.format(top=top, env=env))


def test_a_config_names_environments_without_instances():
  head = 'family = "{}"\nseeds = 1\nsteps = 2\ninstances = 2\n[env]\nname = "{}"\n[agent]\n'
  with pytest.raises(config.ConfigError, match="environment 'example1' has no instance axis"):
    config.loads(head.format("rlhf", "example1") + 'name = "vpo"')
  with pytest.raises(config.ConfigError, match="SyntheticEnv.*no instance axis; drop instances"):
    config.loads(head.format("neural", "synthetic") + 'name = "neural_ucb"\nwidth = 4')
