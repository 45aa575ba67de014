"""rbx.rlhf objectives against closed forms, brute force and finite differences."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit, log_expit

from rbx import rlhf
import helpers as ref


def _instance(seed, A=4):
  rng = np.random.default_rng(seed)
  r = rng.uniform(0, 3, A)
  pi_ref = rng.dirichlet(np.ones(A))
  pi_cal = rng.dirichlet(np.ones(A))
  wins = rng.integers(0, 20, (A, A)).astype(float)
  return r, pi_ref, pi_cal, wins


@pytest.mark.parametrize("seed", range(3))
def test_log_likelihood_equals_the_sum_over_comparisons(seed):
  r, _, _, wins = _instance(seed)
  naive = sum(wins[a, b] * log_expit(r[a] - r[b]) for a in range(4) for b in range(4))
  np.testing.assert_allclose(rlhf.log_likelihood(jnp.asarray(r), jnp.asarray(wins)), naive,
                             rtol=1e-5)


def test_log_likelihood_of_a_dataset_of_triples():
  # (2.2) over an explicit dataset D = {(a+, a-)} equals the win-count form.
  rng = np.random.default_rng(0)
  data = rng.integers(0, 3, (50, 2))
  r = np.array([0.3, 1.2, 2.0])
  wins = np.zeros((3, 3))
  for a, b in data:
    wins[a, b] += 1
  direct = np.sum(log_expit(r[data[:, 0]] - r[data[:, 1]]))
  np.testing.assert_allclose(rlhf.log_likelihood(jnp.asarray(r), jnp.asarray(wins)), direct,
                             rtol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_J_star_is_J_at_the_optimal_policy_and_its_maximum(seed):
  r, pi_ref, pi_cal, _ = _instance(seed)
  beta = 0.7
  pi_r = rlhf.optimal_policy(r, pi_ref, beta)
  np.testing.assert_allclose(pi_r.sum(), 1.0, rtol=1e-6)
  j_star = rlhf.J_star(r, pi_ref, pi_cal, beta)
  np.testing.assert_allclose(rlhf.J(pi_r, r, pi_ref, pi_cal, beta), j_star, rtol=1e-5, atol=1e-6)
  # π_r maximises J(·, r): random policies and perturbations of π_r do worse.
  rng = np.random.default_rng(seed)
  for pi in list(rng.dirichlet(np.ones(4), 200)) + [
      np.asarray(pi_r) * np.exp(rng.normal(0, 0.05, 4)) for _ in range(50)]:
    pi = pi / pi.sum()
    assert rlhf.J(jnp.asarray(pi), r, pi_ref, pi_cal, beta) <= j_star + 1e-6


def test_gradients_against_finite_differences_and_closed_forms():
  r, pi_ref, pi_cal, wins = _instance(7)
  beta = 0.4
  f = lambda x: rlhf.J_star(x, pi_ref, pi_cal, beta)
  # Danskin: ∇_r J*(r; π_cal) = π_r − π_cal.
  np.testing.assert_allclose(jax.grad(f)(jnp.asarray(r)),
                             rlhf.optimal_policy(r, pi_ref, beta) - pi_cal, atol=1e-5)
  # ∂ℓ/∂r_a = Σ_b wins[a,b] σ(r_b − r_a) − wins[b,a] σ(r_a − r_b).
  d = r[:, None] - r[None, :]
  closed = (wins * expit(-d)).sum(1) - (wins.T * expit(d)).sum(1)
  g = jax.grad(rlhf.log_likelihood)(jnp.asarray(r), jnp.asarray(wins))
  np.testing.assert_allclose(g, closed, rtol=1e-4, atol=1e-4)
  # Central finite differences in float64 of the reference objective.
  F = lambda x: ref.objective(x, wins, pi_ref, pi_cal, beta, 2.0)
  h = 1e-6
  fd = np.array([(F(r + h * e) - F(r - h * e)) / (2 * h) for e in np.eye(4)])
  auto = jax.grad(rlhf.objective)(jnp.asarray(r), wins, pi_ref, pi_cal, beta, 2.0)
  np.testing.assert_allclose(auto, fd, rtol=1e-3, atol=1e-3)


def test_regret_identity_and_sign():
  r_star, pi_ref, pi_cal, _ = _instance(3)
  beta = 0.3
  pi_star = rlhf.optimal_policy(r_star, pi_ref, beta)
  rng = np.random.default_rng(1)
  for pi in rng.dirichlet(np.ones(4), 20):
    pi = jnp.asarray(pi)
    direct = (rlhf.J(pi_star, r_star, pi_ref, pi_cal, beta) - rlhf.J(pi, r_star, pi_ref, pi_cal, beta))
    got = rlhf.regret(pi, r_star, pi_ref, beta)
    assert got >= 0
    np.testing.assert_allclose(got, direct, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(rlhf.regret(pi_star, r_star, pi_ref, beta), 0.0, atol=1e-6)


@pytest.mark.parametrize("beta,r_max", [(1e-3, 0.5), (1e-3, 0.001), (0.01, 5.0), (1.0, 500.0)])
def test_log_space_is_finite_and_exact_at_extremes(beta, r_max):
  # r_max / β up to 500: e^(r/β) overflows float32, the log-space forms must not.
  r = jnp.array([r_max, 0.0, 0.5 * r_max])
  pi_ref = jnp.array([0.2, 0.5, 0.3])
  pi_cal = jnp.array([0.0, 1.0, 0.0])
  pi_r = rlhf.optimal_policy(r, pi_ref, beta)
  lp = np.log(np.array([0.2, 0.5, 0.3])) + np.array([r_max, 0.0, 0.5 * r_max]) / beta
  expected = np.exp(lp - np.logaddexp.reduce(lp))
  np.testing.assert_allclose(pi_r, expected, rtol=1e-5, atol=1e-30)
  j = rlhf.J_star(r, pi_ref, pi_cal, beta)
  assert np.isfinite(j)
  np.testing.assert_allclose(j, beta * np.logaddexp.reduce(lp) - 0.0, rtol=1e-5)
  np.testing.assert_allclose(rlhf.J(pi_r, r, pi_ref, pi_cal, beta), j, rtol=1e-4, atol=1e-5)
  reg = rlhf.regret(jnp.array([0.0, 1.0, 0.0]), r, pi_ref, beta)   # pick the worst action
  assert np.isfinite(reg)
  np.testing.assert_allclose(reg, beta * (0.0 - np.log(expected[1] + 1e-300)), rtol=1e-4)
  assert np.isfinite(rlhf.log_likelihood(r * 1e3, jnp.ones((3, 3)) * 1e4))


def test_bradley_terry_frequencies():
  env = rlhf.make_env(jnp.array([[0.0, 1.0, 2.5]]), jnp.full(3, 1 / 3), 1.0, 3.0)
  n = 20000
  keys = jax.random.split(jax.random.key(0), n)
  for a1, a2 in itertools.permutations(range(3), 2):
    wins = jax.vmap(lambda k: rlhf.preference(k, env, 0, a1, a2))(keys)
    p = expit(float(env.r_star[0, a1] - env.r_star[0, a2]))
    se = np.sqrt(p * (1 - p) / n)
    assert abs(float(wins.mean()) - p) < 4 * se


def test_likelihood_gradient_is_exact_where_rewards_tie():
  # At r_a = r_b the derivative of w_ab log σ(d) + w_ba log σ(−d) is (w_ab − w_ba)/2.
  wins = jnp.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
  g = jax.grad(rlhf.log_likelihood)(jnp.array([3.0, 3.0, 0.0]), wins)
  np.testing.assert_allclose(g, [-0.5, 0.5, 0.0], atol=1e-6)
