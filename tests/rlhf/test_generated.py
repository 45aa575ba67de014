"""Contexts drawn from a generator every round (rbx.rlhf.generated): the regret over the pool
against a closed form and an independent NumPy Monte Carlo, the oracle at a drawn context, the
linear and DPO-form agents learning there through `rbx.sweep`, and bad input refused before
anything compiles."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit, log_softmax

from rbx import rlhf
from rbx.rlhf import generated
from rbx.runs import config

A, K = 3, 2                                    # answers; the context's dimension (d = 2K)


def contexts(key):
  """A user's own D: s ~ U[0, 1]^K."""
  return jax.random.uniform(key, (K,))


def features(s):
  """A user's own φ(s, a) = ((a + 1) cos πs, sin πs/(a + 1)), (A, 2K)."""
  a = jnp.arange(1.0, A + 1)[:, None]
  return jnp.concatenate([a * jnp.cos(jnp.pi * s), jnp.sin(jnp.pi * s) / a], axis=-1)


def features_np(s):
  """The same φ in NumPy, float64: s (n, K) -> (n, A, 2K)."""
  a = np.arange(1.0, A + 1)[None, :, None]
  s = s[:, None, :]
  return np.concatenate([a * np.cos(np.pi * s), np.sin(np.pi * s) / a], axis=-1)


THETA_STAR = np.array([1.0, -1.0, 0.5, 2.0])


def _env(**kw):
  return rlhf.generated_contextual(jax.random.key(1), contexts, features, THETA_STAR,
                                   **{"beta": 0.5, "r_max": 8.0, "pool_size": 32, **kw})


def test_the_pool_regret_converges_to_the_closed_form():
  """β = 0, s = ω ~ U[0, 2π), φ(ω, 0) = (cos ω, sin ω), φ(ω, 1) = 0, θ* = e₁: the greedy policy
  of θ at angle ψ answers a = 0 where cos(ω − ψ) > 0, wrong on two arcs of length ψ, and
  E_D[max r* − E_π r*] = (1/2π) · 2 ∫_{π/2}^{π/2+ψ} |cos ω| dω = (1 − cos ψ)/π."""
  psi = 2.0 * np.pi / 3.0
  exact = (1.0 - np.cos(psi)) / np.pi
  angle = lambda key: jax.random.uniform(key, (), maxval=2.0 * np.pi)
  circle = lambda w: jnp.stack([jnp.stack([jnp.cos(w), jnp.sin(w)]), jnp.zeros(2)])
  policy = rlhf.LogLinear(jnp.array([np.cos(psi), np.sin(psi)], jnp.float32))
  errors = []
  for m in (100, 10_000, 200_000):
    env = rlhf.generated_contextual(jax.random.key(m), angle, circle, [1.0, 0.0], beta=0.0,
                                    pool_size=m, reward_scale="none")
    errors.append(abs(float(jax.jit(type(env).regret)(env, policy)) - exact))
    assert errors[-1] < 5 * 0.5 / np.sqrt(m)          # the terms lie in [0, 1]: sd <= 1/2
  assert errors[-1] < errors[0]


def test_the_regret_is_exact_over_the_pool_and_estimates_the_expectation_over_D():
  """β > 0 with the user's φ: the environment's term is (2.6) on its pool's contexts exactly
  (a float64 recomputation), and agrees with an independent NumPy Monte Carlo over D within
  the two estimates' standard errors."""
  beta, m = 0.7, 50_000
  env = _env(beta=beta, pool_size=m, reward_scale="none")
  theta = np.array([0.3, 0.8, -1.0, 0.4])
  pool = jax.vmap(contexts)(jax.random.split(jax.random.key(1), m))
  phi = features_np(np.asarray(pool, np.float64))
  np.testing.assert_allclose(env.pool.features, phi, rtol=1e-5, atol=1e-5)   # drawn from key

  def terms(phi):                              # β KL(π_θ ‖ π*) per context, π_ref uniform
    log_pi, log_star = log_softmax(phi @ theta / beta, -1), log_softmax(phi @ THETA_STAR / beta, -1)
    return beta * (np.exp(log_pi) * (log_pi - log_star)).sum(-1)

  got = float(env.regret(rlhf.LogLinear(jnp.asarray(theta, jnp.float32))))
  assert got == pytest.approx(terms(phi).mean(), rel=1e-4)
  fresh = terms(features_np(np.random.default_rng(0).uniform(size=(400_000, K))))
  se = np.sqrt(terms(phi).var() / m + fresh.var() / fresh.size)
  assert abs(got - fresh.mean()) < 4 * se


def test_a_drawn_context_its_reference_and_the_oracle_there():
  env = _env(deviation=0.0)                          # π_ref = π_HF ∝ e^{r*}
  key = jax.random.key(7)
  _, obs = env.observe(key, ())
  s = contexts(jax.random.split(key)[0])
  np.testing.assert_array_equal(obs.s, s)
  np.testing.assert_allclose(obs.features, features(s), rtol=1e-6)
  r = np.asarray(obs.features, np.float64) @ np.asarray(env.theta_star, np.float64)
  np.testing.assert_allclose(obs.pi_ref, np.exp(log_softmax(r)), rtol=1e-5)
  trap = _env(kappa=6.0)                             # Example 2's trap at the context
  np.testing.assert_allclose(trap.observe(key, ())[1].pi_ref,
                             np.where(np.arange(A) == np.argmin(r), 1 - (A - 1) / 6, 1 / 6),
                             rtol=1e-6)
  a, b = int(np.argmax(r)), int(np.argmin(r))
  query = rlhf.Query(jnp.int32(a), jnp.int32(b), rlhf.LogLinear(jnp.zeros(2 * K)))
  wins = jax.vmap(lambda k: env.feedback(k, (), obs, query)[0])(
      jax.random.split(jax.random.key(8), 3000))
  assert float(wins.mean()) == pytest.approx(expit(r[a] - r[b]), abs=0.025)


def test_linear_and_dpo_form_agents_learn_on_drawn_contexts():
  """`rbx.sweep` over seeds: each agent's regret over the pool falls from π_ref's."""
  env = _env()
  agents = {"linear/xpo": {}, "practical/xpo": {"policy": "loglinear"}}
  res = rlhf.sweep(lambda agent: (env, rlhf.get(agent, **agents[agent])),
                   {"agent": list(agents)}, 4, 60, seed_batch=4)
  r = np.asarray(res.regret)                                     # (agent, seed, step)
  start = float(env.regret(rlhf.LogLinear(jnp.zeros(2 * K))))
  np.testing.assert_allclose(r[:, :, 0], start, rtol=1e-5)       # π^(1) = π_ref
  assert (r[:, :, -10:].mean(axis=(1, 2)) < 0.35 * start).all(), r[:, :, -10:].mean(axis=(1, 2))


def _nonjittable(key):
  return jnp.asarray(np.asarray(jax.random.uniform(key, (K,))))


def _branching(s):
  return features(s) if s[0] > 0.5 else -features(s)


@pytest.mark.parametrize("kw, match", [
    (dict(contexts=_nonjittable), "contexts must be a jittable function"),
    (dict(contexts=np.ones(K)), "contexts must be a jittable function"),
    (dict(contexts=lambda key: (contexts(key), contexts(key))), "must return one array"),
    (dict(contexts=lambda key: jnp.ones(K)), "the same context"),
    (dict(features=_branching), "features must be a jittable function"),
    (dict(features=lambda s: features(s)[0]), r"shape \(A, d\)"),
    (dict(features=lambda s: features(s)[:1]), r"shape \(A, d\) with A >= 2"),
    (dict(pool_size=0), "pool_size must be an integer >= 1"),
    (dict(theta_star=np.ones(3)), "theta_star must have shape"),
    (dict(beta=-1.0), "beta"),
])
def test_bad_input_is_named(kw, match):
  args = dict(contexts=contexts, features=features, theta_star=THETA_STAR, beta=0.5, r_max=8.0,
              pool_size=8)
  with pytest.raises(ValueError, match=match):
    rlhf.generated_contextual(jax.random.key(0), **{**args, **kw})


@pytest.mark.parametrize("agent, kw, error, match", [
    ("practical/xpo", {}, ValueError, "policy='loglinear'"),
    ("practical/xpo", {"policy": "loglinear", "clip": True}, ValueError, "clip"),
    ("practical/xpo", {"policy": "loglinear", "data": "counts"}, ValueError, "data"),
    ("linear/vpo", {"pi_cal": np.full((32, A), 1 / A)}, ValueError, r"pi_cal .* shape \(A,\)"),
    ("xpo", {}, AttributeError, "finite prompt set"),
])
def test_agents_that_cannot_run_on_drawn_contexts_say_why_before_compiling(agent, kw, error,
                                                                           match):
  compiles = []
  with pytest.raises(error, match=match):
    rlhf.sweep(lambda: (_env(), rlhf.get(agent, **kw)), {}, 1, 2, compiles=compiles)
  assert compiles == []


def test_the_registered_environment_from_a_config():
  text = """
family = "rlhf"
seeds = 1
steps = 3
[env]
name = "generated_contextual"
num_actions = 4
context_dim = 3
pool_size = 20
[agent]
name = "practical/xpo"
policy = "loglinear"
"""
  env = config.loads(text).build()[0]
  assert isinstance(env, rlhf.GeneratedContextualEnv)
  assert env.pool.features.shape == (20, 4, 6) and float(env.r_max) == 4.0
  assert np.all((env.pool.features[..., :3] >= -4) & (env.pool.features[..., :3] <= 4))
  with pytest.raises(ValueError, match="contexts"):
    config.loads(text.replace('pool_size = 20', 'pool_size = 20\ncontexts = "unif"'))
