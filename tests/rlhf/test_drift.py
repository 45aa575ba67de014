"""Preferences that drift (rbx.rlhf.drift) and likelihoods that forget (rbx.rlhf.forgetting): the
θ*_t schedules against their closed forms, the dynamic regret and the oracle against NumPy at
drifted rounds, the discounted and windowed likelihoods against brute force, γ = 1, w = ∞ bit
for bit today's agents, and bad input refused before anything compiles."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit, log_softmax

from rbx import rlhf
from rbx.rlhf import drift, linear
from rbx.rlhf.forgetting import forgetting
from rbx.rlhf.learners import practical
from rbx.runs import config

X, A, D, T = 6, 4, 3, 12
THETA0, THETA1 = np.array([1.0, -2.0, 0.5]), np.array([0.0, 1.0, 3.0])


def test_the_schedules_are_their_closed_forms():
  switch = drift.drift("switch", THETA0, THETA1, start=5)
  for t in (1, 4, 5, 9):
    np.testing.assert_array_equal(switch.at(t), np.float32(THETA0 if t < 5 else THETA1))
  n = 10                                          # the peer's linear_rparams: λ = i/T at t = i + 1
  line = drift.drift("linear", THETA0, THETA1, start=1, end=n + 1)
  for i in range(n):
    np.testing.assert_allclose(line.at(i + 1), (1 - i / n) * THETA0 + i / n * THETA1, atol=1e-6)
  np.testing.assert_array_equal(line.at(50), np.float32(THETA1))
  k = 2                                           # the peer's rotation's end points
  u0, u1 = np.array([1.0, 0.0] * k) / np.sqrt(k), np.array([0.0, 1.0] * k) / np.sqrt(k)
  turn = drift.drift("rotation", u0, u1, start=4, end=8)
  for t in range(1, 11):
    lam = np.clip((t - 4) / 4, 0, 1)
    np.testing.assert_allclose(turn.at(t), np.cos(lam * np.pi / 2) * u0
                               + np.sin(lam * np.pi / 2) * u1, atol=1e-6)
  a, b = np.array([2.0, 0.0, 0.0]), np.array([3.0, 3.0, 0.0]) / np.sqrt(2)   # ω = π/4, norms 2, 3
  oblique = drift.drift("rotation", a, b, start=1, end=5)
  for t in range(1, 6):
    lam = (t - 1) / 4
    np.testing.assert_allclose(oblique.at(t), (2 + lam) * np.array(
        [np.cos(lam * np.pi / 4), np.sin(lam * np.pi / 4), 0.0]), atol=1e-5)


def _np_regret(phi, theta, log_pi, pi_ref, beta, r_max=None):
  """Σ_x ρ(x) [J(π*) − J(π)] under r = θᵀφ (range-scaled into [0, r_max] when given), uniform ρ,
  float64."""
  score = np.asarray(phi, float) @ theta
  r = score if r_max is None else r_max * (score - score.min()) / (score.max() - score.min())
  log_ref = np.log(np.asarray(pi_ref, float))
  J = lambda lp: (np.exp(lp) * (r - beta * (lp - log_ref))).sum(-1)
  return np.mean(J(log_softmax(log_ref + r / beta, axis=-1)) - J(np.asarray(log_pi, float)))


def test_a_run_scores_the_dynamic_regret_under_the_round_truth():
  """A run's regret at drifted rounds is (2.6) under θ*_t, recomputed in NumPy from the policy
  it deployed; under θ*₀ it would be another number."""
  env = rlhf.random_contextual(jax.random.key(0), X, A, D, beta=0.5, r_max=4.0, drift="linear",
                               drift_start=3, drift_end=9)
  run = rlhf.simulate(env, rlhf.get("practical/algorithm1", policy="loglinear", alpha=1.0,
                                    discount=0.8), jax.random.key(1), T)
  th0, th1 = np.asarray(env.drift.theta0, float), np.asarray(env.drift.theta1, float)
  pi_ref, phi = env.spec.pi_ref, env.spec.features
  for t in (2, 6, 12):
    lam = np.clip((t - 3) / 6, 0, 1)
    log_pi = run.action.log_pi[t - 1]
    got = float(run.regret[t - 1])
    assert got == pytest.approx(_np_regret(phi, (1 - lam) * th0 + lam * th1, log_pi, pi_ref,
                                           0.5, 4.0), rel=1e-4, abs=1e-6)
    if t > 3:
      assert abs(got - _np_regret(phi, th0, log_pi, pi_ref, 0.5, 4.0)) > 1e-2


def test_the_generated_environment_drifts_over_its_pool():
  """Contexts from a generator, rewards as given: the pool's regret at round t under θ*_t, the
  truth's bound the widest over the schedule, π_ref(·|s) θ*₀'s at every round."""
  uniform = lambda key: jax.random.uniform(key, (2,))
  schedule = drift.drift("rotation", [1.0, 0.0, 1.0, 0.0], [0.0, 2.0, 0.0, 1.0], 2, 6)
  env = rlhf.generated_contextual(jax.random.key(3), uniform, rlhf.generated.cos_sin(A),
                                  schedule, beta=0.5, pool_size=40, reward_scale="none")
  assert isinstance(env, rlhf.DriftingEnv)
  phi, pi_ref = env.env.pool.features, env.env.pool.base.pi_ref
  widest = [np.ptp(np.asarray(phi) @ np.asarray(schedule.at(t)), axis=-1).max() for t in range(1, 8)]
  assert float(env.r_max) >= max(widest) * (1 - 1e-6)
  theta = jnp.array([0.3, -0.2, 0.1, 0.4])
  log_pi = log_softmax(np.log(np.asarray(pi_ref, float)) + np.asarray(phi) @ np.asarray(theta) / 0.5,
                       axis=-1)
  for t in (1, 4, 7):
    expect = _np_regret(phi, np.asarray(schedule.at(t), float), log_pi, pi_ref, 0.5)
    assert float(env.regret(rlhf.LogLinear(theta), t)) == pytest.approx(expect, rel=1e-4)
  state = env.reset(jax.random.key(0))
  for _ in range(5):
    state, obs = env.observe(jax.random.key(5), state)
  assert int(state.t) == 5
  np.testing.assert_array_equal(obs.pi_ref, env.env.observe(jax.random.key(5), ())[1].pi_ref)


def test_the_oracle_compares_under_the_round_truth():
  """θ*₁ = −θ*₀ from round 4: the preference for a over b is σ(r*_t(a) − r*_t(b)), flipped."""
  phi = np.asarray(jax.random.normal(jax.random.key(2), (X, A, D)))
  env = rlhf.make_contextual(phi, drift.drift("switch", THETA0, -THETA0, 4), beta=0.5, r_max=4.0)
  query = rlhf.Query(jnp.int32(0), jnp.int32(1), jnp.zeros((X, A)))
  for t, sign in ((3, 1.0), (4, -1.0)):
    state = drift.DriftState((), jnp.int32(t))
    wins = jax.vmap(lambda k: env.feedback(k, state, rlhf.Prompt(jnp.int32(2)), query)[0])(
        jax.random.split(jax.random.key(t), 4000))
    score = sign * phi[2] @ THETA0
    r = 4.0 * (score - (sign * phi @ THETA0).min()) / np.ptp(phi @ THETA0)
    assert float(wins.mean()) == pytest.approx(expit(r[0] - r[1]), abs=0.025)


def test_a_schedule_that_has_not_moved_is_the_stationary_environment():
  """The same trajectory bit for bit; the regret to float32 rounding (r*_t is computed inside
  the program, where XLA may fuse its arithmetic differently)."""
  still = rlhf.random_contextual(jax.random.key(0), X, A, D, beta=0.5, r_max=4.0)
  later = rlhf.random_contextual(jax.random.key(0), X, A, D, beta=0.5, r_max=4.0, drift="switch",
                                 drift_start=T + 1)
  agent = rlhf.get("practical/xpo", policy="loglinear", alpha=1.0)
  a, b = (rlhf.simulate(e, agent, jax.random.key(4), T) for e in (still, later))
  for field in ("a1", "a2", "log_pi"):
    np.testing.assert_array_equal(getattr(a.action, field), getattr(b.action, field))
  np.testing.assert_array_equal(a.feedback, b.feedback)
  np.testing.assert_allclose(a.regret, b.regret, rtol=1e-6)


def test_gamma_one_and_no_window_are_todays_agents():
  """discount = 1, window = None: no forgetting in the state, so the agents' program of before
  (tests/rlhf/test_schemes.py holds every agent's recorded regret, bit for bit); γ swept
  (traced, the weights 1^(t−s) in the likelihood) the same run to float32 rounding."""
  env = rlhf.random_contextual(jax.random.key(0), X, A, D, beta=0.5, r_max=4.0)
  for name, kw in (("linear/algorithm1", {}), ("practical/xpo", {"data": "buffer"})):
    state = rlhf.get(name, discount=1.0, window=None, **kw).init(jax.random.key(0), env.spec, T)
    assert state.data.forget is None, name
  name = "linear/algorithm1"
  today = rlhf.sweep(lambda: (env, rlhf.get(name, alpha=1.0)), {}, 2, T)
  swept = rlhf.sweep(lambda discount: (env, rlhf.get(name, alpha=1.0, discount=discount)),
                     {"discount": [1.0, 0.5]}, 2, T)
  np.testing.assert_allclose(np.asarray(swept.regret)[0], today.regret, rtol=1e-4, atol=1e-6)
  assert np.abs(np.asarray(swept.regret)[1] - today.regret).max() > 1e-3


def _comparisons(n, capacity):
  rng = np.random.default_rng(0)
  return rng.normal(size=(n, D)).astype(np.float32), capacity


def test_the_discounted_likelihood_is_the_weighted_sum():
  z, cap = _comparisons(7, 10)
  theta = np.array([0.4, -0.3, 0.8], np.float32)
  data = linear.LinearData(jnp.zeros((cap, D)), jnp.int32(0), forgetting(0.7))
  for row in z:
    data = data.add(jnp.asarray(row))
  ages = np.arange(6, -1, -1)
  brute = np.sum(0.7 ** ages * np.log(expit(z.astype(float) @ theta)))
  assert float(data.log_likelihood(jnp.asarray(theta))) == pytest.approx(brute, rel=1e-5)
  # the DPO form: the buffer's rows weighed, and win counts decayed by γ each round, alike
  rng = np.random.default_rng(1)
  xs, w, l = rng.integers(0, X, 7), rng.integers(0, A, 7), rng.integers(0, A, 7)
  log_pi = jnp.asarray(log_softmax(rng.normal(size=(X, A)), axis=-1), jnp.float32)
  log_ref = jnp.full((X, A), -np.log(A), jnp.float32)
  buffer = practical.Comparisons.empty(cap)._replace(forget=forgetting(0.7))
  wins = jnp.zeros((X, A, A))
  for x_, w_, l_ in zip(xs, w, l):
    buffer = buffer.add(x_, w_, l_)
    wins = buffer.forget.decay(wins).at[x_, w_, l_].add(1.0)
  r = 0.5 * (np.asarray(log_pi, float) - np.asarray(log_ref, float))
  brute = -np.sum(0.7 ** ages * np.log(expit(r[xs, w] - r[xs, l])))
  loss = practical.dpo_loss_buffer(log_pi[buffer.x], log_ref[buffer.x], buffer, 0.5)
  assert float(loss) == pytest.approx(brute, rel=1e-5)
  assert float(practical.dpo_loss(log_pi, log_ref, wins, 0.5)) == pytest.approx(brute, rel=1e-5)


def test_the_window_is_the_likelihood_of_the_last_w_comparisons():
  """w = 3: the likelihood, and the linear step's search, of the last three comparisons."""
  z, cap = _comparisons(7, 10)
  windowed = linear.LinearData(jnp.zeros((cap, D)), jnp.int32(0), forgetting(1.0, 3))
  last = linear.LinearData(jnp.zeros((cap, D)), jnp.int32(0))
  for i, row in enumerate(z):
    windowed = windowed.add(jnp.asarray(row))
    if i >= 4:
      last = last.add(jnp.asarray(row))
  theta = jnp.array([0.4, -0.3, 0.8])
  assert float(windowed.log_likelihood(theta)) == pytest.approx(float(last.log_likelihood(theta)),
                                                                rel=1e-6)
  env = rlhf.random_contextual(jax.random.key(0), X, A, D, beta=0.5, r_max=4.0)
  task = env.spec
  problem = lambda data: linear.LinearProblem(task.features, jnp.log(task.pi_ref), task.rho,
                                              task.beta, jnp.float32(1.0), task.r_max, data,
                                              jnp.zeros(D))
  ends = [linear.solve_linear(problem(d), jnp.zeros(D)) for d in (windowed, last)]
  np.testing.assert_allclose(ends[0], ends[1], atol=1e-5)
  assert float(jnp.max(jnp.abs(ends[0]))) > 0.1                 # the data moved θ


def test_win_counts_decay_as_the_buffer_discounts():
  """The DPO-form agent with the discounted likelihood: counts and buffer, the same run."""
  env = rlhf.random_contextual(jax.random.key(0), X, A, D, beta=0.5, r_max=4.0, drift="switch",
                               drift_start=6)
  runs = [rlhf.simulate(env, rlhf.get("practical/xpo", alpha=1.0, discount=0.6, data=data),
                        jax.random.key(2), T) for data in ("counts", "buffer")]
  np.testing.assert_allclose(runs[0].regret, runs[1].regret, rtol=2e-4, atol=1e-6)


@pytest.mark.parametrize("agent, kw, match", [
    ("linear/xpo", {"discount": 0.0}, r"discount must lie in \(0, 1\]"),
    ("linear/xpo", {"discount": 1.5}, r"discount must lie in \(0, 1\]"),
    ("practical/greedy", {"discount": float("nan")}, "discount"),
    ("linear/algorithm1", {"window": 0}, r"window must lie in \[1, inf\]"),
    ("practical/xpo", {"window": 2.5}, "window must be an integer"),
    ("practical/xpo", {"window": 3, "data": "counts"}, "needs the comparisons one by one"),
])
def test_bad_forgetting_is_refused_before_compiling(agent, kw, match):
  env = rlhf.random_contextual(jax.random.key(0), X, A, D, beta=0.5, r_max=4.0)
  compiles = []
  with pytest.raises(ValueError, match=match):
    rlhf.sweep(lambda: (env, rlhf.get(agent, **kw)), {}, 1, 2, compiles=compiles)
  assert compiles == []


PHI = np.ones((X, A, D))


@pytest.mark.parametrize("build, match", [
    (lambda: rlhf.make_contextual(PHI, drift.drift("linear", np.ones(4), np.zeros(4), 1, 5), 0.5,
                                  4.0), "theta_star: the schedule's θ\\*_t has dimension 4"),
    (lambda: rlhf.generated_contextual(
        jax.random.key(0), lambda k: jax.random.uniform(k, (2,)), rlhf.generated.cos_sin(A),
        drift.drift("switch", np.ones(3), np.zeros(3), 2), 0.5, 4.0, pool_size=8),
     "dimension 3, the features d = 4"),
    (lambda: drift.drift("linear", THETA0, np.ones(4), 1, 5), r"theta1 \(θ\*₁\) must have"),
    (lambda: drift.drift("linear", THETA0, THETA1, 5, 5), "end must be > start"),
    (lambda: drift.drift("linear", THETA0, THETA1, 5), "end=\\? is needed"),
    (lambda: drift.drift("switch", THETA0, THETA1, 5, 9), "end is for the linear"),
    (lambda: drift.drift("switch", THETA0, THETA1, 0), "start must lie in"),
    (lambda: drift.drift("rotate", THETA0, THETA1, 1, 5), "did you mean 'rotation'"),
    (lambda: drift.drift("rotation", THETA0, -2 * THETA0, 1, 5), "not opposite"),
    (lambda: rlhf.FAMILY.load_env("contextual", {"drift": "switch"}), "drift_start=\\?"),
])
def test_bad_schedules_are_named(build, match):
  with pytest.raises(ValueError, match=match):
    build()


def test_a_drifting_environment_from_a_config():
  text = """
family = "rlhf"
seeds = 1
steps = 3
[env]
name = "contextual"
num_prompts = 5
num_actions = 3
dim = 2
drift = "rotation"
drift_start = 2
drift_end = 4
[agent]
name = "linear/xpo"
discount = 0.9
window = 2
"""
  env = config.loads(text).build()[0]
  assert isinstance(env, rlhf.DriftingEnv) and env.drift.kind == "rotation"
  with pytest.raises(ValueError, match="drift"):
    config.loads(text.replace('"rotation"', '"spin"'))
  with pytest.raises(ValueError, match="window"):
    config.loads(text.replace("window = 2", "window = 0"))
