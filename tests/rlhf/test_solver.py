"""solve_optimistic reaches the global maximum of the non-concave (3.1a)/(3.2a) objective."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from rbx import rlhf
import helpers as ref

PROBLEMS = [ref.random_problem(np.random.default_rng(1000 + i), A)
            for A in (2, 3, 4) for i in range(12)]


def _solve_all(config=rlhf.SolverConfig()):
  """rbx's answers for all PROBLEMS from one vmapped, jitted call per action count."""
  out = []
  for A in (2, 3, 4):
    group = [p for p in PROBLEMS if len(p["pi_ref"]) == A]
    stack = {k: jnp.asarray(np.array([p[k] for p in group]), jnp.float32) for k in group[0]}
    fn = jax.jit(jax.vmap(lambda w, pr, pc, b, a, rm: rlhf.solve_optimistic(w, pr, pc, b, a, rm,
                                                                             config=config)))
    out += list(np.asarray(fn(stack["wins"], stack["pi_ref"], stack["pi_cal"], stack["beta"],
                              stack["alpha"], stack["r_max"]), np.float64))
  return out


@pytest.fixture(scope="module")
def solved():
  return _solve_all()


@pytest.fixture(scope="module")
def solved_before():
  """The same with the directions the solver tried before 2026-12-03 (`SolverConfig.newton_f`,
  `dc_gradient`): still options, so still checked."""
  return _solve_all(rlhf.SolverConfig(newton_f=True, dc_gradient=True))


@functools.cache
def _best(i):
  """The brute-force global maximum of PROBLEMS[i], computed once for the tests below."""
  return ref.brute_force_max(**PROBLEMS[i])[0]


def _gap(p, r, best):
  value = ref.objective(r, p["wins"], p["pi_ref"], p["pi_cal"], p["beta"], p["alpha"])
  return (best - value) / max(abs(best), 1e-9)


@pytest.mark.parametrize("i", range(len(PROBLEMS)))
def test_matches_brute_force_global_maximum(solved, solved_before, i):
  p, best = PROBLEMS[i], _best(i)
  for r in (solved[i], solved_before[i]):
    assert np.all(r >= 0) and np.all(r <= p["r_max"] * (1 + 1e-6))
    assert _gap(p, r, best) <= 1e-3


def test_the_instances_are_not_concave():
  # One local run (L-BFGS-B from the centre of the box) misses the global maximum by
  # more than 10% on some of these instances: a single ascent would not pass the test above.
  # (Stops at the first such instance: the claim is that one exists.)
  def local_gap(i):
    p = PROBLEMS[i]
    f = lambda r: -ref.objective(r, p["wins"], p["pi_ref"], p["pi_cal"], p["beta"], p["alpha"])
    A = len(p["pi_ref"])
    local = optimize.minimize(f, np.full(A, p["r_max"] / 2), method="L-BFGS-B",
                              bounds=[(0, p["r_max"])] * A).x
    return _gap(p, local, _best(i))
  assert any(local_gap(i) > 0.1 for i in range(len(PROBLEMS)))


def test_data_free_problem_is_solved_at_a_vertex():
  # No data: F = α J*(r; π_cal) is convex, so the max is the best vertex of the box.
  pi_ref = jnp.array([0.5, 0.3, 0.2])
  pi_cal = jnp.array([0.0, 0.0, 1.0])
  r = rlhf.solve_optimistic(jnp.zeros((3, 3)), pi_ref, pi_cal, 0.2, 1.0, 2.0)
  best = max((ref.objective(np.array(v) * 2.0, np.zeros((3, 3)), pi_ref, pi_cal, 0.2, 1.0), v)
             for v in np.ndindex(2, 2, 2))
  np.testing.assert_allclose(ref.objective(np.asarray(r), np.zeros((3, 3)), pi_ref, pi_cal, 0.2,
                                           1.0), best[0], rtol=1e-5)


def test_alpha_zero_is_the_box_constrained_mle():
  wins = jnp.array([[0.0, 30.0, 5.0], [10.0, 0.0, 40.0], [2.0, 8.0, 0.0]])
  r = np.asarray(rlhf.solve_optimistic(wins, jnp.full(3, 1 / 3), jnp.full(3, 1 / 3), 1.0, 0.0, 10.0))
  g = jax.grad(rlhf.log_likelihood)(jnp.asarray(r), wins)
  np.testing.assert_allclose(g, 0.0, atol=1e-3)           # interior MLE: stationary


def test_large_action_sets_use_threshold_and_one_action_vertices():
  # A above max_vertex_actions: still a valid, finite point in the box that beats every
  # threshold vertex, every one-action vertex and the centre.
  rng = np.random.default_rng(0)
  A = 10
  wins = jnp.asarray(rng.integers(0, 5, (A, A)), jnp.float32)
  pi_ref = jnp.asarray(rng.dirichlet(np.ones(A)), jnp.float32)
  pi_cal = jnp.asarray(rng.dirichlet(np.ones(A)), jnp.float32)
  r = rlhf.solve_optimistic(wins, pi_ref, pi_cal, 0.5, 3.0, 2.0)
  assert r.shape == (A,) and np.all(np.isfinite(r))
  assert np.all((r >= 0) & (r <= 2.0))
  F = lambda x: float(rlhf.objective(jnp.asarray(x, jnp.float32), wins, pi_ref, pi_cal, 0.5, 3.0))
  centre = F(np.ones(A))
  order = np.argsort(-(np.log(pi_ref) - np.log(pi_cal)))
  vertices = [F(2.0 * np.isin(np.arange(A), order[:k])) for k in range(1, A)]
  one_action = [F(2.0 * np.eye(A)[a]) for a in range(A)]
  assert F(r) >= max([centre] + vertices + one_action) - 1e-4


@pytest.mark.slow
def test_pruned_starts_never_do_worse_than_their_best_start(solved):
  # SolverConfig(keep=k) refines only the best k starts after `prune_after` iterations: faster,
  # never below the best candidate start, never above the full solver's value.
  cfg = rlhf.SolverConfig(keep=2, prune_after=2)
  for p, full in zip(PROBLEMS[24:30], solved[24:30]):               # A = 4
    args = [jnp.asarray(p[k], jnp.float32) for k in ("wins", "pi_ref", "pi_cal")]
    r = np.asarray(rlhf.solve_optimistic(*args, p["beta"], p["alpha"], p["r_max"], config=cfg),
                   np.float64)
    F = lambda x: ref.objective(x, p["wins"], p["pi_ref"], p["pi_cal"], p["beta"], p["alpha"])
    A = len(p["pi_ref"])
    starts = [np.full(A, p["r_max"] / 2)] + [np.array(v, float) * p["r_max"]
                                              for v in np.ndindex(*(2,) * A)][1:-1]
    assert F(r) >= max(F(s) for s in starts) - 1e-4 * max(1.0, abs(F(r)))
    assert F(r) <= F(full) + 1e-4 * max(1.0, abs(F(full)))


def test_dc_phase_keeps_a_vertex_start_in_its_basin():
  # From the vertex (0, 0, r_max, 0) a long first step ranked by F jumps to the basin of
  # (·, ·, 0, r_max) and misses the global maximum by ~20%; the DC steps (ranked by the
  # concave minorant of the start's policy) stay in the right basin.
  p = ref.random_problem(np.random.default_rng(5016), 4)
  best, _ = ref.brute_force_max(**p)
  args = [jnp.asarray(p[k], jnp.float32) for k in ("wins", "pi_ref", "pi_cal")]
  value = lambda cfg: ref.objective(
      np.asarray(rlhf.solve_optimistic(*args, p["beta"], p["alpha"], p["r_max"], config=cfg),
                 np.float64), p["wins"], p["pi_ref"], p["pi_cal"], p["beta"], p["alpha"])
  assert (best - value(rlhf.SolverConfig())) / abs(best) <= 1e-4
  assert (best - value(rlhf.SolverConfig(dc_iterations=0))) / abs(best) > 0.1


def test_closed_form_derivatives_match_autodiff():
  from rbx.rlhf.solver import Problem
  p = PROBLEMS[30]
  problem = Problem(*(jnp.asarray(p[k], jnp.float32) for k in ("wins", "pi_ref", "pi_cal")),
                     p["beta"], p["alpha"])
  r = jnp.asarray(np.random.default_rng(0).uniform(0, p["r_max"], 4), jnp.float32)
  grad, lap = problem.derivatives(r)
  np.testing.assert_allclose(grad, jax.grad(problem.log_likelihood)(r), rtol=1e-4, atol=1e-3)
  np.testing.assert_allclose(lap, -jax.hessian(problem.log_likelihood)(r), rtol=1e-4, atol=1e-3)
  np.testing.assert_allclose(problem.slope(r),
                             jax.grad(lambda x: problem.value(x) - problem.log_likelihood(x))(r),
                             rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("r_max", [0.5, 10.0, 88.0, 300.0])
def test_the_likelihood_from_a_exponentials_is_the_dense_one(r_max):
  # For r_max ≤ 88 the solver's ℓ and σ(r_a − r_b) come from the A numbers e^(r − r_max/2)
  # (`Problem.ratios`); above, from the A² e^(r_b − r_a). Both against float64, with the
  # box's corners among the points (the largest spread).
  from rbx.rlhf.solver import Problem
  rng = np.random.default_rng(int(r_max))
  wins = rng.poisson(2.0, (6, 6)).astype(float)
  r = np.concatenate([rng.uniform(0, r_max, (4, 6)), r_max * np.eye(6)[:2]])
  problem = Problem(jnp.asarray(wins, jnp.float32), None, None, 0.5, 1.0, jnp.float32(r_max))
  for x in r:
    d = x[:, None] - x[None, :]
    sigma = 1.0 / (1.0 + np.exp(-d))                                   # σ(r_a − r_b)
    grad = (wins * (1 - sigma)).sum(1) - (wins.T * (1 - sigma.T)).sum(1)
    c = (wins + wins.T) * sigma * (1 - sigma)
    ell, (g, lap) = (f(jnp.asarray(x, jnp.float32))
                     for f in (problem.log_likelihood, problem.derivatives))
    np.testing.assert_allclose(ell, np.sum(wins * -np.logaddexp(0.0, -d)), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(g, grad, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(lap, np.diag(c.sum(1)) - c, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_algorithm1s_solves_along_its_trajectories_reach_the_global_maximum():
  # The solver as the agent uses it (warm start: the last step's r; π_cal = π^(t)), on A = 4
  # at small β (many basins): every step's F within 1e-3 of a long 64-start solve of the same
  # problem. The control, two starts, misses it, so the check can fail (by 0.15 at 9 of the
  # 160 steps when written). The evidence at 64 seeds × 100 steps:
  # benchmarks/accuracy/solver_accuracy.py.
  env = rlhf.random_instance(jax.random.key(5), 1, 4, 0.1, 4.0, deviation=2.0)
  long = rlhf.SolverConfig(iterations=30, dc_iterations=10, line_search=6, starts=64,
                           cg_iterations=64)
  gaps = ref.trajectory_gaps(env, 3.0, 4, 40, rlhf.SolverConfig(), long)
  assert gaps.max() <= 1e-3
  control = ref.trajectory_gaps(env, 3.0, 4, 40, rlhf.SolverConfig(starts=2, keep=2), long)
  assert control.max() > 1e-3


@pytest.mark.slow
def test_the_relaxed_screen_finds_the_basins_of_sparse_data():
  # A = 20, β = 0.1, Algorithm 1's own trajectories (≤ 15 comparisons over 190 pairs): the best
  # basin often starts at a vertex that a few comparisons contradict, so F at the vertex ranks
  # it low. Against refining every candidate, the default screen (F and the relaxed score)
  # misses by > 1e-3 at most 4 of 60 solves; the control, F alone (`screen="value"`, the
  # screen of earlier releases), misses at least 8 (15 when written).
  env = rlhf.random_instance(jax.random.key(20), 1, 20, 0.1, 4.0, deviation=2.0)
  every = rlhf.SolverConfig(starts=100_000)
  gaps = ref.trajectory_gaps(env, 3.0, 4, 15, rlhf.SolverConfig(), every)
  control = ref.trajectory_gaps(env, 3.0, 4, 15, rlhf.SolverConfig(screen="value"), every)
  assert (gaps > 1e-3).sum() <= 4 < 8 <= (control > 1e-3).sum()


def test_an_unknown_screen_is_refused_with_the_allowed_values():
  with pytest.raises(ValueError, match=r"screen must be one of \('both', 'value'\)"):
    rlhf.solve_optimistic(jnp.zeros((3, 3)), jnp.ones(3) / 3, jnp.ones(3) / 3, 0.5, 1.0, 2.0,
                          config=rlhf.SolverConfig(screen="F"))


def test_vertex_values_are_the_objective_at_the_vertices():
  # The screen's closed form (products with W, no transcendental a pair) against F itself, at
  # every vertex of A = 4 and at the all-zero row (the centre: F is shift-invariant).
  from rbx.rlhf.solver import Problem, _vertices
  p = PROBLEMS[30]
  problem = Problem(*(jnp.asarray(p[k], jnp.float32) for k in ("wins", "pi_ref", "pi_cal")),
                     p["beta"], p["alpha"])
  h = jnp.concatenate([jnp.zeros((1, 4)), jnp.asarray(_vertices(4))])
  r_max = jnp.float32(p["r_max"])
  direct = jax.vmap(problem.value)(h * r_max)
  np.testing.assert_allclose(problem.vertex_values(h, r_max)[0], direct, rtol=1e-5,
                             atol=1e-5 * float(jnp.max(jnp.abs(direct))))


def test_tied_maxima_are_broken_alike_at_every_batch_width():
  # At a uniform π_ref every data-free problem has A exactly tied maxima, the one-action
  # vertices r_max·e_a (J* is symmetric). A plain argmax broke the tie by F's last bit, which
  # XLA:CPU rounds differently at different batch widths: vmapped with 64 seeds' prompts the
  # solver returned another vertex than alone, and XPO with a schedule α (every prompt
  # re-solved each step) followed another trajectory from step 1 at seed_batch 64. The tie now
  # goes to the first maximiser in candidate order, whatever the width.
  env = rlhf.random_instance(jax.random.key(1), num_prompts=5, num_actions=3, beta=0.5,
                             r_max=2.0, deviation=1.0)   # the instance: π_ref uniform
  X, A = env.pi_ref.shape
  solve = jax.jit(jax.vmap(lambda p, a: rlhf.solve_optimistic(
      jnp.zeros((A, A)), p, p, env.beta, a, env.r_max, jnp.full(A, 0.5) * env.r_max)))
  by_width = {n: np.asarray(solve(jnp.tile(env.pi_ref, (n, 1)), jnp.tile(2.0 * env.rho, n)))
              .reshape(n, X, A) for n in (1, 64)}
  alone = by_width[1][0]
  np.testing.assert_array_equal(np.sort(alone, axis=1), np.tile([0.0, 0.0, 2.0], (X, 1)))
  for n, out in by_width.items():
    np.testing.assert_array_equal(out, np.broadcast_to(alone, out.shape), err_msg=f"width {n}")
