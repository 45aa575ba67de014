"""The learner's box [0, learner_r_max] ⊇ [0, r_max]: what the agents are told, not the truth."""
import jax
import numpy as np
import pytest

from rbx import rlhf
from rbx.runs import config
from rbx.rlhf import contextual

KEY = jax.random.key(0)


@pytest.mark.parametrize("make", [
    lambda lr: rlhf.make_env([0.5, 2.0], [0.5, 0.5], 1.0, 2.0, learner_r_max=lr),
    lambda lr: rlhf.example1(0.0, 0.5, 3.0, learner_r_max=lr),
    lambda lr: rlhf.example2(100.0, 1.0, 6.0, learner_r_max=lr),
    lambda lr: rlhf.random_instance(KEY, 2, 3, 0.5, 2.0, learner_r_max=lr),
    lambda lr: contextual.random_contextual(KEY, 4, 3, 2, 0.5, 2.0, learner_r_max=lr)])
def test_a_box_narrower_than_the_truths_is_an_error_naming_it(make):
  with pytest.raises(ValueError, match=r"learner_r_max must be >= r_max = \d"):
    make(1.5)
  env = make(None)                                  # default: the truth's bound
  assert float(env.spec.r_max) == float(env.r_max) == float(env.learner_r_max)


def test_a_config_sweeps_the_box_and_rejects_one_below_the_truth():
  text = ('family = "rlhf"\nseeds = 2\nsteps = 5\n[env]\nname = "example2"\nr_max = 6.0\n'
          '[agent]\nname = "xpo"\nalpha = 1.0\n[grid]\nlearner_r_max = {}\n')
  c = config.loads(text.format("[6.0, 9.0]"))
  assert "learner_r_max" in c.grid and "learner_r_max" not in c.static()
  with pytest.raises(config.ConfigError, match=r"learner_r_max.*>= r_max = 6"):
    config.loads(text.format("[6.0, 5.0]"))


def test_the_exact_box_runs_bit_for_bit_as_the_default():
  agent = rlhf.algorithm1(alpha=1.0)
  runs = [rlhf.simulate(rlhf.example2(100.0, 1.0, 6.0, learner_r_max=lr), agent, KEY, 30)
          for lr in (None, 6.0)]
  jax.tree.map(np.testing.assert_array_equal, *runs)


def test_a_wider_box_changes_the_solve_not_the_regret_of_a_policy():
  exact, wide = (rlhf.example2(100.0, 1.0, 6.0, learner_r_max=lr) for lr in (6.0, 12.0))
  agent = rlhf.algorithm1(alpha=10.0)
  prompt = rlhf.Prompt(np.int32(0))
  solved = {}
  for name, env in (("exact", exact), ("wide", wide)):
    state = agent.init(KEY, env.spec, 10)
    state, query = agent.act(KEY, state, prompt, env.spec)
    solved[name] = agent.update(KEY, state, prompt, query, True, env.spec)
  r_exact, r_wide = (np.asarray(solved[k].r) for k in ("exact", "wide"))
  # the optimistic solve (3.1a) uses the whole box it is told: its range exceeds the truth's
  assert r_exact.max() <= 6.0 + 1e-5 and 6.5 < r_wide.max() <= 12.0 + 1e-5
  # the regret of a policy is scored against the same r*: equal on both environments
  q = rlhf.Query(np.int32(0), np.int32(1), solved["wide"].log_pi)
  regrets = [float(env.feedback(KEY, (), prompt, q)[1]) for env in (exact, wide)]
  assert regrets[0] == regrets[1] > 0
