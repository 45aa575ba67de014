"""Contextual environments' rewards: scaled into [0, r_max] ("range") or as the user gives them
("none"), checked against NumPy, and the bad input named before anything is built."""
import jax
import numpy as np
import pytest
from scipy.special import expit, logsumexp

from rbx import rlhf
from rbx.runs import config

SIZES = dict(num_prompts=6, num_actions=4, dim=3, beta=0.5)


def _raw(env):
  """θ*ᵀφ in float64 from the environment's own φ and θ*, (X, A)."""
  return np.asarray(env.features, np.float64) @ np.asarray(env.theta_star, np.float64)


def _regret(r, pi, pi_ref, beta):
  """Σ_x ρ_x [J(π*_x) − J(π_x)] in float64 for uniform ρ: the regret term (2.6)."""
  j_star = beta * logsumexp(np.log(pi_ref) + r / beta, axis=-1)
  j_pi = (pi * r).sum(-1) - beta * (pi * np.log(pi / pi_ref)).sum(-1)
  return float(np.mean(j_star - j_pi))


def test_rewards_as_given_keep_theta_star_and_every_preference():
  key = jax.random.key(4)
  scaled = rlhf.random_contextual(key, **SIZES, r_max=2.0)
  given = rlhf.random_contextual(key, **SIZES, reward_scale="none")
  raw = np.asarray(given.features, np.float64) @ np.asarray(
      jax.random.normal(jax.random.split(key)[1], (3,)), np.float64)    # the drawn θ*, unscaled
  np.testing.assert_allclose(_raw(given), raw, rtol=1e-6, atol=1e-6)     # θ* as drawn
  r = np.asarray(given.base.r_star, np.float64)
  # every pair's Bradley–Terry probability is σ(θ*ᵀ(φ_a − φ_b)): the same differences
  np.testing.assert_allclose(r[:, :, None] - r[:, None, :],
                             raw[:, :, None] - raw[:, None, :], atol=2e-6)
  assert float(given.r_max) == pytest.approx(np.ptp(raw, axis=-1).max(), rel=1e-6)
  assert float(given.learner_r_max) == float(given.r_max)
  # the environment's regret term of a policy is (2.6) on the raw rewards (offsets cancel)
  pi = np.asarray(jax.nn.softmax(jax.random.normal(jax.random.key(5), (6, 4))), np.float64)
  pi_ref = np.asarray(given.base.pi_ref, np.float64)
  got = float(given.feedback(jax.random.key(0), (), rlhf.env.Prompt(np.int32(0)),
                             rlhf.env.Query(0, 1, np.log(pi)))[1])
  assert got == pytest.approx(_regret(raw, pi, pi_ref, 0.5), rel=1e-4)
  # the scaled instance: r* = r_max (θ*ᵀφ − m)/(M − m), θ* scaled with it
  s = _raw(scaled)
  np.testing.assert_allclose(scaled.base.r_star, 2.0 * (raw - raw.min()) / np.ptp(raw), atol=2e-6)
  np.testing.assert_allclose(s - s.min(), scaled.base.r_star, atol=2e-6)
  # the oracle draws at σ(r*_a − r*_b) as given
  x, a, b = 2, int(np.argmax(raw[2])), int(np.argmin(raw[2]))
  query = rlhf.env.Query(a, b, np.log(pi))
  wins = jax.vmap(lambda k: given.feedback(k, (), rlhf.env.Prompt(np.int32(x)), query)[0])(
      jax.random.split(jax.random.key(6), 4000))
  assert float(wins.mean()) == pytest.approx(expit(raw[2, a] - raw[2, b]), abs=0.025)


def test_a_bound_given_with_rewards_as_given_must_hold_them():
  env = rlhf.random_contextual(jax.random.key(4), **SIZES, reward_scale="none")
  wider = rlhf.random_contextual(jax.random.key(4), **SIZES, r_max=float(env.r_max) + 1.0,
                                 reward_scale="none")
  np.testing.assert_array_equal(wider.base.r_star, env.base.r_star)
  assert float(wider.r_max) == pytest.approx(float(env.r_max) + 1.0)
  with pytest.raises(ValueError, match="r_max must be >= .* widest prompt's range"):
    rlhf.random_contextual(jax.random.key(4), **SIZES, r_max=0.5 * float(env.r_max),
                           reward_scale="none")
  with pytest.raises(ValueError, match="learner_r_max must be >="):
    rlhf.random_contextual(jax.random.key(4), **SIZES, learner_r_max=0.1, reward_scale="none")
  with pytest.raises(ValueError, match=r"reward_scale='raw' is not one of \['range', 'none'\]"):
    rlhf.random_contextual(jax.random.key(4), **SIZES, r_max=2.0, reward_scale="raw")
  with pytest.raises(ValueError, match="r_max=\\? is needed with reward_scale='range'"):
    rlhf.random_contextual(jax.random.key(4), **SIZES)
  with pytest.raises(ValueError, match="differ at some prompt"):
    rlhf.make_contextual(np.ones((2, 3, 2)), np.ones(2), 0.5, reward_scale="none")


def test_a_config_sets_the_reward_scale():
  text = """
family = "rlhf"
seeds = 2
steps = 3
[env]
name = "contextual"
num_prompts = 5
num_actions = 3
dim = 2
reward_scale = "none"
[agent]
name = "practical/xpo"
"""
  env = config.loads(text).build()[0]
  assert float(env.r_max) == pytest.approx(np.ptp(_raw(env), axis=-1).max(), rel=1e-6)
  assert float(config.loads(text.replace('"none"', '"range"')).build()[0].r_max) == 4.0
  with pytest.raises(ValueError, match="reward_scale"):
    config.loads(text.replace('"none"', '"raw"'))
