"""β = 0, the unregularised problem of the discussion after Theorem 1: the greedy π_r, J, J*,
the regret, the exact solver (the best of A concave problems) and Algorithm 1 with its
α_t ≍ A log T + sqrt(t / (A r_max)) schedule."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize
from scipy.special import log_expit

from rbx import rlhf, schedules
import helpers as ref


def test_objectives_at_beta0_are_the_greedy_closed_forms():
  pi_ref = jnp.array([0.1, 0.2, 0.3, 0.4])
  pi_cal = jnp.array([0.4, 0.3, 0.2, 0.1])
  # a tie, and a second one within float32 rounding (1e-7) of the max: mass split equally
  for r, greedy in (([1.0, 2.0, 2.0, 0.5], [0, 0.5, 0.5, 0]),
                    ([2.0, 1.0, 2.0 + 1e-7, 2.0], [1 / 3, 0, 1 / 3, 1 / 3])):
    r = jnp.asarray(r)
    pi_r = rlhf.optimal_policy(r, pi_ref, 0.0)
    np.testing.assert_allclose(pi_r, greedy, atol=1e-7)
    assert np.all(np.isfinite(rlhf.log_optimal_policy(r, pi_ref, 0.0)))
    j_star = float(np.max(r) - pi_cal @ r)
    np.testing.assert_allclose(rlhf.J_star(r, pi_ref, pi_cal, 0.0), j_star, rtol=1e-6)
    np.testing.assert_allclose(rlhf.J(pi_r, r, pi_ref, pi_cal, 0.0), j_star, rtol=1e-6)
    for pi in np.random.default_rng(0).dirichlet(np.ones(4), 20):
      pi = jnp.asarray(pi, jnp.float32)
      J = rlhf.J(pi, r, pi_ref, pi_cal, 0.0)
      np.testing.assert_allclose(J, (pi - pi_cal) @ r, rtol=1e-5, atol=1e-6)   # no KL term
      assert J <= j_star + 1e-6
      regret = rlhf.regret(pi, r, pi_ref, 0.0)
      np.testing.assert_allclose(regret, np.max(r) - pi @ r, rtol=1e-5, atol=1e-6)
      np.testing.assert_allclose(regret, j_star - J, rtol=1e-4, atol=1e-6)
  # 0 · KL with KL = ∞ (π off π_ref's support) is no NaN; nor are gradients at β = 0
  r = jnp.array([1.0, 2.0, 2.0, 0.5])
  pi = jnp.array([0.0, 0.5, 0.5, 0.0])
  np.testing.assert_allclose(rlhf.J(pi, r, jnp.array([0.5, 0.0, 0.0, 0.5]), pi_cal, 0.0),
                             (pi - pi_cal) @ r, rtol=1e-6)
  for f, args in ((rlhf.J_star, (r, pi_ref, pi_cal)), (rlhf.regret, (pi_cal, r, pi_ref)),
                  (rlhf.J, (pi_cal, r, pi_ref, pi_cal))):
    grads = jax.grad(f, argnums=(0, 1, len(args)))(*args, 0.0)
    assert all(np.all(np.isfinite(g)) for g in grads)
  np.testing.assert_allclose(jax.grad(rlhf.J_star)(r, pi_ref, pi_cal, 0.0),
                             np.array([0, 0.5, 0.5, 0]) - pi_cal, atol=1e-6)


def test_small_beta_is_close_to_beta0_and_beta_may_be_traced():
  rng = np.random.default_rng(1)
  r = jnp.array([0.3, 2.1, 1.4, 2.6, 0.9])               # a unique max, 0.5 above the next
  pi_ref = jnp.asarray(rng.dirichlet(np.ones(5)), jnp.float32)
  pi_cal = jnp.asarray(rng.dirichlet(np.ones(5)), jnp.float32)
  pi = jnp.asarray(rng.dirichlet(np.ones(5)), jnp.float32)

  def all_of(beta):
    return (rlhf.optimal_policy(r, pi_ref, beta), rlhf.J_star(r, pi_ref, pi_cal, beta),
            rlhf.regret(pi, r, pi_ref, beta), rlhf.J(pi, r, pi_ref, pi_cal, beta))

  zero, small = all_of(0.0), all_of(1e-3)
  np.testing.assert_allclose(small[0], zero[0], atol=1e-4)
  for a, b in zip(small[1:], zero[1:]):              # |β log π_ref(a*)|, β KL: O(β log)
    np.testing.assert_allclose(a, b, atol=1e-2)
  traced = jax.jit(jax.vmap(all_of))(jnp.array([0.0, 1e-3, 0.5]))
  for t, z, s, h in zip(traced, zero, small, all_of(0.5)):
    np.testing.assert_allclose(t, np.stack([z, s, h]), rtol=1e-5, atol=1e-6)


# ------------------------------------------------ the solver against a float64 brute force

def _objective0(r, wins, pi_cal, alpha):
  """F(r) = ℓ(r) + α (max r − π_cal·r) in float64; r may carry leading batch axes."""
  r = np.asarray(r, np.float64)
  d = r[..., :, None] - r[..., None, :]
  return np.sum(wins * log_expit(d), axis=(-1, -2)) + alpha * (np.max(r, -1) - r @ pi_cal)


def _brute_force0(wins, pi_cal, alpha, r_max):
  """Global max of F over [0, r_max]^A: a dense grid (L-BFGS-B from its best points and every
  vertex, on F itself) and, independently, L-BFGS-B on each concave ℓ + α (e_a − π_cal)·r."""
  A = len(pi_cal)
  axis = np.linspace(0.0, r_max, {2: 401, 3: 81, 4: 31}[A])
  pts = np.array(list(itertools.product(axis, repeat=A - 1)))
  pts = np.concatenate([np.zeros((len(pts), 1)), pts], axis=1)
  pts = np.concatenate([pts, r_max - pts])
  vals = _objective0(pts, wins, pi_cal, alpha)
  best = vals.max()
  starts = list(pts[np.argsort(-vals)[:12]])
  starts += [np.array(v, float) * r_max for v in itertools.product([0, 1], repeat=A)]
  bounds = [(0.0, r_max)] * A
  for s in starts:
    res = optimize.minimize(lambda x: -_objective0(x, wins, pi_cal, alpha), s, method="L-BFGS-B",
                            bounds=bounds, options=dict(maxiter=2000, ftol=1e-15, gtol=1e-12))
    best = max(best, _objective0(res.x, wins, pi_cal, alpha))
  for a in range(A):
    slope = alpha * (np.eye(A)[a] - pi_cal)
    f = lambda x: -(_objective0(x, wins, np.zeros(A), 0.0) + slope @ x)
    for s in (np.full(A, r_max / 2), np.eye(A)[a] * r_max):
      res = optimize.minimize(f, s, method="L-BFGS-B", bounds=bounds,
                              options=dict(maxiter=2000, ftol=1e-15, gtol=1e-12))
      best = max(best, _objective0(res.x, wins, pi_cal, alpha))
  return best


PROBLEMS = [ref.random_problem(np.random.default_rng(2000 + i), A)
            for A in (2, 3, 4) for i in range(7)]


@pytest.fixture(scope="module")
def solved():
  """rbx's β = 0 answers for PROBLEMS: one jitted, vmapped call (β unbatched) per A."""
  solve = jax.jit(jax.vmap(lambda w, pr, pc, a, rm: rlhf.solve_optimistic(w, pr, pc, 0.0, a, rm)))
  out = []
  for A in (2, 3, 4):
    group = [p for p in PROBLEMS if len(p["pi_ref"]) == A]
    stack = {k: jnp.asarray(np.array([p[k] for p in group]), jnp.float32) for k in group[0]}
    out += list(np.asarray(solve(stack["wins"], stack["pi_ref"], stack["pi_cal"], stack["alpha"],
                                 stack["r_max"]), np.float64))
  return out


@pytest.mark.parametrize("i", range(len(PROBLEMS)))
def test_solver_at_beta0_reaches_the_brute_force_global_maximum(solved, i):
  p, r = PROBLEMS[i], solved[i]
  assert np.all(r >= 0) and np.all(r <= p["r_max"] * (1 + 1e-6))
  best = _brute_force0(p["wins"], p["pi_cal"], p["alpha"], p["r_max"])
  value = _objective0(r, p["wins"], p["pi_cal"], p["alpha"])
  assert (best - value) / max(abs(best), 1e-9) <= 1e-3


def test_solver_with_a_batched_beta_runs_both_branches_correctly(solved):
  # β vmapped (as in a sweep over a β grid): the cond becomes a select of both paths.
  p = PROBLEMS[-1]
  args = [jnp.asarray(p[k], jnp.float32) for k in ("wins", "pi_ref", "pi_cal")]
  both = jax.jit(jax.vmap(lambda b: rlhf.solve_optimistic(*args, b, p["alpha"], p["r_max"])))(
      jnp.array([0.0, 0.5]))
  np.testing.assert_allclose(_objective0(np.asarray(both[0]), p["wins"], p["pi_cal"], p["alpha"]),
                             _objective0(solved[-1], p["wins"], p["pi_cal"], p["alpha"]),
                             rtol=1e-5)
  f = lambda r: ref.objective(r, p["wins"], p["pi_ref"], p["pi_cal"], 0.5, p["alpha"])
  np.testing.assert_allclose(f(np.asarray(both[1])), ref.brute_force_max(
      p["wins"], p["pi_ref"], p["pi_cal"], 0.5, p["alpha"], p["r_max"])[0], rtol=1e-3)


# ------------------------------------------------------------------------ agents at β = 0

def test_algorithm1_with_the_beta0_schedule_learns():
  A, T, r_max = 3, 300, 2.0
  env = rlhf.random_instance(jax.random.key(4), 1, A, 0.0, r_max)
  assert float(env.beta) == 0.0
  res = rlhf.sweep(lambda: (env, rlhf.algorithm1(schedules.theorem1_beta0(A, T, r_max))), {},
                   seeds=8, steps=T, seed_batch=8)
  regret = np.asarray(res.regret)                       # (seed, step)
  assert np.all(np.isfinite(regret)) and np.all(regret >= 0)
  gap = float(np.max(env.r_star) - np.mean(env.r_star))
  np.testing.assert_allclose(regret[:, 0], gap, rtol=1e-5)     # π^(1) = π_ref, uniform
  assert regret[:, -50:].mean() < 0.5 * regret[:, :10].mean()       # 0.066 against 0.20


def test_greedy_and_examples_at_beta0():
  for env in (rlhf.example1(beta=0.0), rlhf.example2(beta=0.0),
              rlhf.make_env([0.5, 1.0], [0.5, 0.5], 0.0, 2.0)):
    assert float(env.beta) == 0.0
  env = rlhf.example1(beta=0.0)
  tiny = rlhf.SolverConfig(iterations=3, starts=4, keep=4)
  run = rlhf.simulate(env, rlhf.greedy(solver=tiny), jax.random.key(0), 40, seed_batch=1)
  assert np.all(np.isfinite(run.regret)) and np.all(run.regret >= 0)
  # after π^(1) = π_ref the deployed policies are greedy: uniform on their support
  for pi in np.exp(np.asarray(run.action.log_pi))[1:, 0]:
    np.testing.assert_allclose(pi[pi > 1e-6], 1.0 / np.sum(pi > 1e-6), rtol=1e-6)


def test_negative_beta_and_practical_agents_at_beta0_are_rejected():
  for make in (lambda: rlhf.make_env([0.5, 1.0], [0.5, 0.5], -0.1, 2.0),
               lambda: rlhf.example1(beta=-1.0), lambda: rlhf.example2(beta=-1.0),
               lambda: rlhf.random_instance(jax.random.key(0), 2, 3, -0.5, 1.0)):
    with pytest.raises(ValueError, match="beta"):
      make()
  env = rlhf.example1(beta=0.0)
  with pytest.raises(ValueError, match="beta"):
    rlhf.get("practical/xpo").init(None, env.spec, 10)
  with pytest.raises(ValueError, match="beta"):             # the env closed over: concrete β
    rlhf.sweep(lambda: (env, rlhf.get("practical/greedy")), {}, seeds=1, steps=2)
  # a contextual instance at β = 0 builds (its tabular and linear agents run on it,
  # tests/rlhf/test_linear.py); the classes that need β > 0 say so by name before compiling
  ctx = rlhf.random_contextual(jax.random.key(0), 3, 3, 2, 0.0, 2.0)
  with pytest.raises(ValueError, match="finite and >= 0"):
    rlhf.random_contextual(jax.random.key(0), 3, 3, 2, -0.5, 2.0)
  with pytest.raises(ValueError, match=r"beta must be > 0 for practical/xpo \(.*r_θ = β log "
                                       r"π_θ/π_ref\), got 0.*tabular/\.\.\., linear/"):
    rlhf.get("practical/xpo").init(None, ctx.spec, 10)
  assert float(ctx.beta) == 0.0 and rlhf.greedy().init(jax.random.key(0), ctx.spec, 5) is not None
  assert rlhf.get("linear/xpo").init(jax.random.key(0), ctx.spec, 5) is not None
