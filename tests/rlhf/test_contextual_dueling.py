"""The contextual linear dueling baselines (`rbx.rlhf.learners.contextual_dueling`): they learn
on a small random contextual instance, one step of each against a NumPy reference written from
its paper at a fixed state, the MLE against SciPy, and the refusals."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import rlhf
from rbx.core import protocol
from rbx.rlhf import dueling
from rbx.rlhf.learners import contextual_dueling as agents
from rbx.rlhf.linear import LinearData

NAMES = ("colstim", "maxinp", "maxminlcb")


def _uniform_pairs(env):
  """E[weak], E[strong] regret a step of uniformly random distinct pairs (ρ uniform)."""
  gaps = np.asarray(dueling.gaps(dueling.r_star(env)))
  pairs = [(a, b) for a, b in itertools.permutations(range(gaps.shape[1]), 2)]
  weak = np.mean([[min(g[a], g[b]) for a, b in pairs] for g in gaps])
  strong = np.mean([[max(g[a], g[b]) for a, b in pairs] for g in gaps])
  return weak, strong


def test_they_learn_on_a_random_contextual_instance():
  """Mean cumulative weak and strong dueling regret over 8 seeds well below uniformly random
  pairs' (measured: 0.10–0.16 and 0.35–0.40 of it at T = 100), and the late steps' strong
  regret a fraction of uniform's (0.15–0.23)."""
  env = rlhf.random_contextual(jax.random.key(1), 6, 5, 3, beta=0.5, r_max=4.0)
  steps = 100
  res = rlhf.sweep(lambda agent: (env, rlhf.get(agent)), {"agent": list(NAMES)}, seeds=8,
                   steps=steps, progress=False)
  weak, strong = (res.metric(m).cumulative[..., -1].mean(axis=-1) for m in dueling.METRICS)
  uniform_weak, uniform_strong = _uniform_pairs(env)
  assert (strong < 0.55 * steps * uniform_strong).all(), (strong, steps * uniform_strong)
  assert (weak < 0.35 * steps * uniform_weak).all(), (weak, steps * uniform_weak)
  late = res.metric("strong_regret").regret[..., -30:].mean(axis=(-2, -1))
  assert (late < 0.4 * uniform_strong).all(), (late, uniform_strong)


# ---- one step against NumPy references written from the papers -------------------------------

PHI = np.array([[[0.9, 0.1, -0.3], [0.2, 0.8, 0.1], [-0.5, 0.3, 0.6], [0.1, -0.7, 0.2]]],
               np.float32)                                     # one prompt, A = 4, d = 3
Z = np.array([[0.7, -0.7, -0.4], [1.4, -0.2, -0.9], [0.6, 0.5, -0.5], [-0.3, 1.5, -0.1],
              [0.7, -0.7, -0.4]], np.float32)                  # signed differences seen


def _state(name, horizon=8):
  """The agent's state after the comparisons `Z` (its own update: V, θ̂ refitted)."""
  spec = rlhf.make_contextual(PHI, [1.0, 0.5, -0.2], beta=0.5, r_max=2.0).spec
  agent = rlhf.get(name, exploration_length=0)
  state = agent.init(jax.random.key(0), spec, horizon)
  data = LinearData(jnp.zeros((horizon, 3)).at[:len(Z)].set(Z), jnp.int32(len(Z)))
  gram = jnp.eye(3) + jnp.asarray(Z.T @ Z)
  theta = agents.fit(jnp.zeros(3), data, 1.0, steps=30)
  return agent, spec, state._replace(data=data, gram=gram, theta=theta,
                                     steps=jnp.int32(len(Z)))


def _numpy_pieces(theta, width):
  phi = PHI[0].astype(np.float64)
  V_inv = np.linalg.inv(np.eye(3) + Z.T.astype(np.float64) @ Z)
  u = phi @ theta
  diff = phi[:, None] - phi[None]
  W = np.sqrt(np.einsum("ijd,de,ije->ij", diff, V_inv, diff))
  own = np.sqrt(np.einsum("id,de,ie->i", phi, V_inv, phi))
  return u, W, own, u[:, None] - u[None]


def _colstim(rng, theta, C, c1):
  u, W, own, _ = _numpy_pieces(theta, c1)
  eps = np.clip(rng.gumbel(size=4), -C, C)
  i = int(np.argmax(u + eps * own))
  return i, int(np.argmax(u + c1 * W[:, i]))


def _maxinp(rng, theta, gamma):
  _, W, _, D = _numpy_pieces(theta, gamma)
  cand = np.flatnonzero((D + gamma * W >= 0).all(axis=1))
  scores = {(i, j): W[i, j] for i in cand for j in cand}
  best = max(scores.values())
  top = [p for p, s in scores.items() if np.isclose(s, best, rtol=1e-5)]
  return top[rng.integers(len(top))]


def _maxminlcb(rng, theta, beta):
  _, W, _, D = _numpy_pieces(theta, beta)
  cand = [i for i in range(4) if all(D[i, j] + beta * W[i, j] > 0 for j in range(4) if j != i)]
  if len(cand) == 1:
    return cand[0], cand[0]
  lcb = D - beta * W
  worst = {i: min(lcb[i, j] for j in cand if j != i) for i in cand}
  i = max(worst, key=worst.get)
  return i, min((j for j in cand if j != i), key=lambda j: lcb[i, j])


@pytest.mark.parametrize("name,width", [("colstim", 1.0), ("maxinp", 0.8), ("maxinp", 3.0),
                                        ("maxminlcb", 0.5), ("maxminlcb", 2.0),
                                        ("maxminlcb", 6.0)])
def test_one_step_chooses_the_papers_pair(name, width):
  """The pair's law at a fixed state (V, θ̂ from five comparisons) against NumPy's."""
  agent, spec, state = _state(name)
  state = state._replace(width=jnp.float32(width))
  theta = np.asarray(state.theta, np.float64)
  # θ̂ is the regularised MLE: its gradient vanishes (SciPy's minimiser agrees)
  from scipy import optimize
  loss = lambda th: np.logaddexp(0.0, -(Z @ th)).sum() + 0.5 * th @ th
  np.testing.assert_allclose(theta, optimize.minimize(loss, np.zeros(3), tol=1e-10).x,
                             atol=1e-4)
  n = 2000
  step = lambda k: agent.act(k, state, rlhf.Prompt(jnp.int32(0)), spec)[1]
  acted = jax.jit(jax.vmap(step))(jax.random.split(jax.random.key(2), n))
  ours = np.zeros((4, 4))
  np.add.at(ours, (np.asarray(acted.a1), np.asarray(acted.a2)), 1.0 / n)
  rng = np.random.default_rng(0)
  reference = {"colstim": lambda: _colstim(rng, theta, float(state.threshold), width),
               "maxinp": lambda: _maxinp(rng, theta, width),
               "maxminlcb": lambda: _maxminlcb(rng, theta, width)}[name]
  theirs = np.zeros((4, 4))
  for _ in range(n):
    theirs[reference()] += 1.0 / n
  assert np.abs(ours - theirs).max() < 0.05, (ours.round(3), theirs.round(3))
  # the deployed policy: the point mass on argmax θ̂ᵀφ
  np.testing.assert_allclose(np.exp(np.asarray(acted.log_pi[0, 0])),
                             np.eye(4)[np.argmax(PHI[0] @ theta)], atol=1e-6)


def test_the_exploration_phase_draws_distinct_uniform_pairs():
  agent = rlhf.get("maxinp")                               # τ = d = 3
  spec = rlhf.make_contextual(PHI, [1.0, 0.5, -0.2], beta=0.5, r_max=2.0).spec
  state = agent.init(jax.random.key(0), spec, 4)
  acted = jax.vmap(lambda k: agent.act(k, state, rlhf.Prompt(jnp.int32(0)), spec)[1])(
      jax.random.split(jax.random.key(3), 2400))
  a1, a2 = np.asarray(acted.a1), np.asarray(acted.a2)
  assert (a1 != a2).all()
  freq = np.bincount(a1 * 4 + a2, minlength=16).reshape(4, 4) / 2400
  np.testing.assert_allclose(freq[~np.eye(4, dtype=bool)], 1 / 12, atol=0.025)
  assert np.all(np.exp(np.asarray(acted.log_pi[0, 0])) == pytest.approx(0.25))  # θ̂ = 0


# ---- bad input -------------------------------------------------------------------------------

def test_bad_input_is_refused_before_compiling():
  tabular = rlhf.make_env([0.0, 1.0, 2.0], [1 / 3] * 3, 0.5, 2.0)
  for name in NAMES:
    with pytest.raises(ValueError, match=f"agent '{name}' needs a contextual preference "
                       "environment.*got PreferenceEnv"):
      rlhf.sweep(lambda: (tabular, rlhf.get(name)), {}, seeds=1, steps=2, progress=False)
  tie = rlhf.make_contextual([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]], [1.0, 1.0], 0.5, 2.0)
  with pytest.raises(ValueError, match=r"no Condorcet winner at prompt 0: answers \[0, 1\]"):
    protocol.check(tie, rlhf.get("maxinp"))
  with pytest.raises(ValueError, match="confidence_width of maxinp must be a number > 0"):
    agents.maxinp(confidence_width=0.0)
  with pytest.raises(ValueError, match="threshold_parameter of colstim must be a number > 0"):
    agents.colstim(threshold_parameter=-1.0)
  with pytest.raises(ValueError, match="exploration_length of colstim must be an integer >= 0"):
    agents.colstim(exploration_length=-1)
  with pytest.raises(ValueError, match="regularization of maxminlcb must be a number > 0"):
    agents.maxminlcb(regularization=0.0)
  tokens = rlhf.sequences.random_sequences(jax.random.key(0), 2, 2, 2, 2, 0.5, 2.0)
  with pytest.raises(ValueError, match="'colstim' needs a contextual preference environment"):
    protocol.check(tokens, rlhf.get("colstim"))
