"""The optimistic step over a shared linear reward (`rbx.rlhf.linear`) and its agents."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import rlhf
from rbx.rlhf import linear
from rbx.rlhf.solver import SolverConfig

# More starts and iterations than the agents' defaults: the brute-force test checks what the
# search can reach (the defaults trade accuracy for speed, docs/linear_rlhf.md).
THOROUGH = linear.LINEAR_SOLVER._replace(starts=16, iterations=12, dc_iterations=4,
                                         line_search=3)


def _problem(key, X, A, d, n, alpha, beta=0.5, r_max=3.0, features=None, capacity=None):
  """A random instance with n random comparisons in a buffer of `capacity` (default n + 2:
  two unused slots)."""
  k = jax.random.split(key, 5)
  phi = jax.random.normal(k[0], (X, A, d)) / np.sqrt(d) if features is None else features
  x = jax.random.randint(k[1], (n,), 0, X)
  a, b = jax.random.randint(k[2], (n,), 0, A), jax.random.randint(k[3], (n,), 0, A)
  capacity = n + 2 if capacity is None else capacity
  z = jnp.concatenate([phi[x, a] - phi[x, b], jnp.zeros((capacity - n, d))])
  log_ref = jax.nn.log_softmax(jax.random.normal(k[4], (X, A)))
  rho = jnp.full(X, 1.0 / X)
  cal_mean = jnp.einsum("xa,xad->d", rho[:, None] * jnp.exp(log_ref), phi)
  data = linear.LinearData(z, jnp.asarray(n))
  return linear.LinearProblem(phi, log_ref, rho, beta, alpha, r_max, data, cal_mean), (x, a, b)


@jax.jit
def _values_in_K(problem, thetas):
  """F at each θ of `thetas` inside K, −∞ outside: one program per shape, not per problem."""
  inside = lambda t: jnp.where(problem.gauge(problem.features @ t) <= 1.0,
                               problem.value(problem.embed(t)), -jnp.inf)
  return jax.vmap(inside)(thetas)


@jax.jit
def _radius(problem, dirs):
  """K's widest extent along the unit directions `dirs`."""
  return jnp.max(1.0 / jax.vmap(lambda u: problem.gauge(problem.features @ u))(dirs))


def _grid_max(problem, d, points):
  """max of F over a dense grid of θ in K (the grid spans K's widest extent)."""
  dirs = np.random.default_rng(0).normal(size=(2000, d)).astype(np.float32)
  dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
  radius = float(_radius(problem, dirs))
  g = np.linspace(-radius, radius, points, dtype=np.float32)
  thetas = jnp.asarray(np.stack(np.meshgrid(*[g] * d), -1).reshape(-1, d))
  return float(jnp.max(_values_in_K(problem, thetas)))


@pytest.mark.parametrize("d, n, points, beta", [(2, 0, 400, 0.5), (2, 5, 400, 0.5),
                                                (3, 5, 60, 0.5), (2, 5, 400, 0.0)])
def test_the_global_maximum_matches_brute_force(d, n, points, beta):
  # β = 0: J*'s convex part is Σ_x ρ(x) max_a r_θ, piecewise linear (β is data: one program)
  solve = jax.jit(lambda p: linear.solve_linear(p, jnp.zeros(d), THOROUGH))
  for seed in range(3):
    problem, _ = _problem(jax.random.key(seed), 6, 4, d, n, alpha=1.0 + n / 5, beta=beta,
                          capacity=7)                     # one program per d
    theta = solve(problem)
    assert float(problem.gauge(problem.features @ theta)) <= 1.0 + 1e-5      # in K
    found = float(problem.value(problem.embed(theta)))
    assert found >= _grid_max(problem, d, points) - 1e-2, (seed, found)


@pytest.mark.parametrize("beta", [0.5, 0.0])
def test_one_hot_features_are_the_tabular_problem(beta):
  """φ(a) = e_a: θ = r, K is the box up to a shift, and the maximum is the tabular solver's
  (at β = 0 too, where the tabular solver takes its exact β = 0 path)."""
  A, r_max = 3, 3.0
  tabular_solve = jax.jit(rlhf.solve_optimistic)
  solve = jax.jit(lambda p: linear.solve_linear(p, jnp.zeros(A), THOROUGH))
  for seed, n, alpha in ((0, 0, 1.0), (1, 4, 2.0), (2, 12, 3.0)):
    problem, (_, a, b) = _problem(jax.random.key(seed), 1, A, A, n, alpha, beta, r_max,
                                  features=jnp.eye(A)[None], capacity=14)   # one compile
    wins = jnp.zeros((A, A)).at[a, b].add(1.0)
    pi_ref = jnp.exp(problem.log_ref[0])
    r = tabular_solve(wins, pi_ref, pi_ref, beta, alpha, r_max)
    theta = solve(problem)
    tabular = float(rlhf.objective(r, wins, pi_ref, pi_ref, beta, alpha))
    ours = float(rlhf.objective(theta - theta.min(), wins, pi_ref, pi_ref, beta, alpha))
    assert float(jnp.ptp(theta)) <= r_max * (1 + 1e-5)
    assert ours == pytest.approx(tabular, abs=1e-3), seed
    if beta > 0:              # at β = 0 tied maxima may deploy different greedy policies
      np.testing.assert_allclose(rlhf.optimal_policy(theta, pi_ref, beta),
                                 rlhf.optimal_policy(r, pi_ref, beta), atol=2e-2)


def test_the_search_keeps_its_warm_starts_and_returns_distinct_points_best_first():
  """The agents' tracking step: every warm start is refined (the result is no worse than the
  best of them, in K), end points come best first by F, and a repeated warm start does not
  take a start (the first two end points differ)."""
  problem, _ = _problem(jax.random.key(4), 20, 5, 6, 8, alpha=2.0)
  warm = jax.random.normal(jax.random.key(5), (3, 6))
  warm = warm.at[2].set(warm[0])                                 # a repeat: its start goes
  search = jax.jit(lambda p, w: linear.search_linear(p, w, linear.LINEAR_SOLVER))
  ends = search(problem, warm)
  F = jax.vmap(lambda t: problem.value(problem.embed(t)))
  inside = lambda t: t / jnp.maximum(1.0, problem.gauge(problem.features @ t))
  assert ends.shape == (linear.LINEAR_SOLVER.starts, 6)
  assert float(F(ends)[0]) >= float(jnp.max(F(jax.vmap(inside)(warm)))) - 1e-5
  values = np.asarray(F(ends))
  assert values[0] >= values.max() - 1e-3 and values[1] >= values[2:].max() - 1e-3, values
  assert float(jnp.max(jnp.abs(ends[0] - ends[1]))) > 1e-4
  assert all(float(problem.gauge(problem.features @ t)) <= 1.0 + 1e-5 for t in ends)


@pytest.mark.slow
def test_the_linear_agents_learn_across_prompts():
  """|X| = 60 prompts, T = 40: the tabular greedy agent (one bandit per prompt) cannot
  generalise; the linear agents, sharing θ, cut π_ref's regret by more than half — at β = 0.5
  and at β = 0, the unregularised problem."""
  def run(beta, agents):
    env = rlhf.random_contextual(jax.random.key(3), 60, 4, 3, beta, 4.0, deviation=1.0)
    res = rlhf.sweep(lambda agent: (env, rlhf.get(agent)), {"agent": agents}, seeds=8,
                     steps=40, seed_batch=8, progress=False)
    return res.regret[..., 0].mean(), res.regret[..., -10:].mean(axis=(-1, -2))   # (agent,)

  start, late = run(0.5, ["linear_xpo", "linear_greedy", "greedy"])
  assert late[0] < 0.5 * start, late                     # linear XPO halves π_ref's regret
  # greedy explores by chance only (measured 0.154 of π_ref's 0.341 here): it must learn from
  # the shared features, well below the feature-blind tabular control
  assert late[1] < 0.75 * start and late[1] < 0.6 * late[2], late
  assert late[2] > 0.8 * start, late                           # the control does not learn
  # β = 0 (the two linear rows: one program): XPO still halves π_ref's regret (0.19 of 0.79
  # measured); greedy's two answers are one argmax once θ breaks the ties, so its comparisons
  # say nothing and it stalls (0.57)
  start, late = run(0.0, ["linear_xpo", "linear_greedy"])
  assert late[0] < 0.5 * start and late[0] < 0.5 * late[1], (start, late)


def test_validation():
  with pytest.raises(ValueError, match="features"):
    rlhf.get("linear_xpo").init(jax.random.key(0), rlhf.example2(10.0, 1.0, 3.0).spec, 5)
  with pytest.raises(ValueError, match="solver"):
    rlhf.learners.linear.make("algorithm1", solver={"starts": 2})
  with pytest.raises(ValueError, match="solver.tolerance must be >= 0"):
    rlhf.get("linear/xpo", solver=SolverConfig(tolerance=-1e-4))
  assert isinstance(linear.LINEAR_SOLVER, SolverConfig)


def test_the_config_keys_are_the_tabular_agents():
  env_params = dict(num_prompts=5, num_actions=3, dim=2)
  for name in ("linear_algorithm1", "linear_vpo", "linear_xpo", "linear_greedy"):
    params = {"solver": {"starts": 2}} | ({} if name == "linear_greedy" else {
        "schedule": "power", "nu": 2.0, "n": 0.5})
    _, agent = rlhf.FAMILY.build("contextual", env_params, name, params, steps=10)
    assert agent.name == name.replace("_", "/", 1)          # today's name: an alias
  with pytest.raises(ValueError, match="agent.solver key"):
    rlhf.FAMILY.build("contextual", env_params, "linear_xpo", {"solver": {"strats": 2}}, 10)


def test_adding_past_the_capacity_is_reported():
  # Two rows of capacity, three comparisons, under jit and vmap: the third is dropped (the
  # rows keep the first two) and `dropped` counts it.
  z = jnp.arange(6.0).reshape(3, 2)

  @jax.jit
  @jax.vmap
  def fill(scale):
    data = linear.LinearData(jnp.zeros((2, 2)), jnp.zeros((), jnp.int32))
    for row in z:
      data = data.add(scale * row)
    return data, data.dropped, data.mask()
  data, dropped, mask = fill(jnp.array([1.0, 2.0]))
  np.testing.assert_array_equal(data.z, jnp.stack([z[:2], 2 * z[:2]]))
  np.testing.assert_array_equal(data.count, [3, 3])
  np.testing.assert_array_equal(dropped, [1, 1])
  np.testing.assert_array_equal(mask, jnp.ones((2, 2)))
  full = linear.LinearData(jnp.zeros((2, 2)), jnp.zeros((), jnp.int32)).add(z[0]).add(z[1])
  assert int(full.dropped) == 0 and int(full.count) == 2            # at capacity: none lost


# The certificate (`SolverConfig.tolerance`): `iterations` a cap of 48 and the model's predicted
# gain ≤ 1e-4, where the default's 6 steps a round miss the first steps at d = 16 by 0.53–0.98
# (benchmarks/README.md, "Where exactness and speed pull apart")
CERTIFICATE = linear.LINEAR_SOLVER._replace(iterations=48, tolerance=1e-4)


@pytest.mark.parametrize("d, steps, tolerance, solver", [
    (4, (20, 40), 1e-3, None), (16, (60,), 1e-2, None),
    pytest.param(16, (2, 5, 10), 1e-2, CERTIFICATE, marks=pytest.mark.slow, id="certificate")])
def test_the_agents_steps_reach_scipys_multistart_optimum(d, steps, tolerance, solver):
  """Along linear_algorithm1's own run on a trap instance (the evidence's d), its step is the
  optimum SciPy's SLSQP finds from 12 starts, to the tolerance docs/linear_rlhf.md states: at
  d = 4 from the start, at d = 16 once the tracked starts have settled (early steps can miss:
  on this instance 0.02–0.04 at t = 20–30 and 0.017 at t = 40 under the suite's XLA flags,
  ≤ 0.002 from t = 50; docs/linear_rlhf.md), and with the certificate in the first steps at
  d = 16 too. The one-face search before the active set missed SciPy's optimum at d = 16 on
  every step (issue 38's audit: 0.39–0.66 at |X| = 50)."""
  linear_global = pytest.importorskip("benchmarks.accuracy.linear_global")
  scipy_linear = pytest.importorskip("benchmarks.reference.scipy_linear")
  env = rlhf.random_contextual(jax.random.key(0), 20, 6, d, 0.5, 4.0, kappa=30.0)
  spec = env.spec
  z, thetas, means = linear_global.trajectory(env, "linear_algorithm1", 1.0, 0, max(steps),
                                              solver)
  task = [np.asarray(a, np.float64) for a in (spec.features, np.log(spec.pi_ref), spec.rho)]
  task += [float(spec.beta), 1.0]
  for t in steps:
    data = [z[:t].astype(np.float64), means[t - 1].astype(np.float64)]
    best, _ = scipy_linear.solve(*task, float(spec.r_max), *data, starts=12)
    found = scipy_linear.value(np.asarray(thetas[t - 1], np.float64), *task, *data)
    assert found >= best - tolerance, (t, found, best)
    assert scipy_linear.gauge(np.asarray(thetas[t - 1], np.float64), task[0], 4.0) <= 1 + 1e-5
