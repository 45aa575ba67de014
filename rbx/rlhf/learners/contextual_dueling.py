"""The contextual linear dueling-bandit baselines as `rbx.core.Agent`s on the contextual
preference environments (`rbx.rlhf.contextual`): CoLSTIM, MaxInP and MaxMinLCB.

Each keeps one linear utility estimate θ̂ ∈ R^d for all prompts, as the shared-linear agents
(`rbx.rlhf.learners.linear`) keep θ, and at the observed prompt x_t chooses a pair of its
answers from their features φ(x_t, a) ∈ R^d — the contextual dueling bandit of the three
papers with context X_t = (φ(x_t, 1), …, φ(x_t, A)) and K = A arms. Under the Bradley–Terry
oracle (2.1) P(a ≻ b | x) = σ(θ*ᵀ(φ(x, a) − φ(x, b))), the logistic link of the papers' linear
stochastic transitivity / BTL models, so the model is well specified. Like the K-armed
dueling agents (`rbx.rlhf.learners.dueling`) they ignore π_ref, β and the reward bound.

*Shared statistics* (the three papers' notation, here with a ridge λ = `regularization`):
the comparisons as signed feature differences z_s = φ(x_s, winner) − φ(x_s, loser)
(`rbx.rlhf.linear.LinearData`, capacity T), the design matrix V_t = λ I + Σ_s z_s z_sᵀ, and
the regularised maximum-likelihood estimate of the logistic (BTL) model

    θ̂_t = argmin_θ  Σ_s ln(1 + e^{−θᵀz_s}) + (λ/2)‖θ‖²,

refitted after every comparison by `NEWTON_STEPS` damped Newton steps warm-started at the
previous θ̂ (`fit`; strictly convex, so the steps converge to the one minimiser). The
pair widths ‖φ_i − φ_j‖_{V⁻¹} of the answers at x_t are the papers' confidence widths. A
comparison of an answer with itself carries no information and is not recorded.

*Exploration phase.* CoLSTIM's and MaxInP's first τ = `exploration_length` comparisons are
uniformly random pairs of distinct answers, as both papers' algorithms begin (τ large enough
for V to be well conditioned; default d, the rank V needs). MaxMinLCB has no such phase (its
default τ is 0).

*The deployed policy.* The regret (2.6) scores a policy π^(t) each step (`Query.log_pi`). A
contextual dueling agent deploys, at every prompt, the answer its estimate recommends now:
argmax_a θ̂ᵀφ(x, a), uniform over ties (uniform over all answers before any data, θ̂ = 0) —
the arm the papers' regret is measured against (the best arm under θ̂), not the explored pair,
as the K-armed agents deploy their recommended answer. A point mass: with β > 0 it pays
−β ln π*(a*(x) | x) per step even once a*(x) is found (`rbx.rlhf.learners.dueling`).

Each agent requires a contextual environment (features φ) with a Condorcet winner at every
prompt (a unique maximiser of r*(x, ·)), checked before anything compiles (`requires`).
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.core import registry as reg
from rbx.core.protocol import Agent
from rbx.rlhf import contextual, dueling, objectives
from rbx.rlhf.env import Query
from rbx.rlhf.learners.dueling import _pick_max
from rbx.rlhf.linear import LinearData

NEWTON_STEPS = 4        # damped Newton steps of the MLE per comparison, from the last θ̂
_DAMPING = (1.0, 0.5, 0.25, 0.125, 0.0)     # the step fractions a Newton step tries


class LinearDuelingState(NamedTuple):
  """State of a contextual linear dueling agent. Shapes: d features, T steps.

  Attributes:
    data: the signed differences z = φ(x, winner) − φ(x, loser) (`LinearData`, capacity T).
    gram: V = λ I + Σ z zᵀ, (d, d).
    theta: θ̂, the regularised MLE, (d,).
    steps: the comparisons made so far (self-comparisons included), int32 scalar.
    width: the confidence width's multiplier (CoLSTIM's c_1, MaxInP's γ, MaxMinLCB's β),
      float32 scalar.
    threshold: CoLSTIM's trimming threshold C of the perturbations (0 for the others),
      float32 scalar.
  """
  data: LinearData
  gram: chex.Array
  theta: chex.Array
  steps: chex.Array
  width: chex.Array
  threshold: chex.Array


# ---- shared pieces --------------------------------------------------------------------------

def objective(theta: chex.Array, data: LinearData, regularization) -> chex.Array:
  """Σ_s ln(1 + e^{−θᵀz_s}) + (λ/2)‖θ‖² over the filled rows of `data`."""
  return (jnp.sum(data.mask() * jax.nn.softplus(-(data.z @ theta)))
          + 0.5 * regularization * jnp.dot(theta, theta))


def fit(theta: chex.Array, data: LinearData, regularization,
        steps: int = NEWTON_STEPS) -> chex.Array:
  """θ̂ by `steps` damped Newton steps on `objective` from `theta`: each step takes the
  fraction of the Newton direction among `_DAMPING` (1, 1/2, 1/4, 1/8, 0) of least objective,
  so no step increases it."""
  mask = data.mask()
  eye = jnp.eye(theta.shape[0], dtype=theta.dtype)

  def newton(_, th):
    s = data.z @ th
    p = jax.nn.sigmoid(-s) * mask                               # 1 − σ(θᵀz) on the filled rows
    grad = -(data.z.T @ p) + regularization * th
    weight = p * (1.0 - jax.nn.sigmoid(-s))                     # σ(s)(1 − σ(s))
    hess = (data.z.T * weight) @ data.z + regularization * eye
    direction = solve_spd(hess, grad)
    trials = th[None] - jnp.asarray(_DAMPING, th.dtype)[:, None] * direction[None]
    values = jax.vmap(objective, (0, None, None))(trials, data, regularization)
    return trials[jnp.argmin(values)]

  return jax.lax.fori_loop(0, steps, newton, theta)


def solve_spd(m: chex.Array, b: chex.Array) -> chex.Array:
  """x with m x = b for a symmetric positive definite m (n, n), b (n,) or (n, r): Gaussian
  elimination without pivoting in two `fori_loop`s of pure array ops, as
  `rbx.rlhf.linear`'s solver does — no CPU LAPACK call, which would make a sweep fall back to
  one CPU device (`rbx.core.sweep`)."""
  n = m.shape[0]
  index = jnp.arange(n)

  def eliminate(j, carry):
    m, b = carry
    f = jnp.where(index > j, m[:, j] / m[j, j], 0.0)
    return m - f[:, None] * m[j][None, :], b - jnp.outer(f, b[j]).reshape(b.shape)

  m, b = jax.lax.fori_loop(0, n, eliminate, (m, b))

  def substitute(i, x):
    k = n - 1 - i
    return x.at[k].set((b[k] - m[k] @ x) / m[k, k])

  return jax.lax.fori_loop(0, n, substitute, jnp.zeros_like(b))


def gram_products(phi: chex.Array, gram: chex.Array) -> chex.Array:
  """G = Φ V⁻¹ Φᵀ, G_ij = φ_iᵀ V⁻¹ φ_j, of the rows of φ (A, d); (A, A)."""
  return phi @ solve_spd(gram, phi.T)


def widths(phi: chex.Array, gram: chex.Array) -> chex.Array:
  """‖φ_i − φ_j‖_{V⁻¹} of every pair of the rows of φ (A, d), (A, A)."""
  G = gram_products(phi, gram)
  diag = jnp.diag(G)
  return jnp.sqrt(jnp.maximum(diag[:, None] + diag[None, :] - 2.0 * G, 0.0))


def _pairs(state, phi: chex.Array) -> tuple[chex.Array, chex.Array]:
  """(D, W) at the round's features φ (A, d): D_ij = θ̂ᵀ(φ_i − φ_j) and W_ij = ‖φ_i − φ_j‖_{V⁻¹},
  each (A, A) — MaxInP's and MaxMinLCB's scores of a pair."""
  u = phi @ state.theta
  return u[:, None] - u[None, :], widths(phi, state.gram)


def _random_pair(key: chex.PRNGKey, A: int):
  """A uniformly random pair of distinct answers (the exploration phase)."""
  k1, k2 = jax.random.split(key)
  a1 = jax.random.randint(k1, (), 0, A)
  a2 = (a1 + jax.random.randint(k2, (), 1, A)) % A
  return a1, a2


def _deployed(theta: chex.Array, features: chex.Array) -> chex.Array:
  """log π^(t) (X, A): uniform over argmax_a θ̂ᵀφ(x, a) at every prompt."""
  return jax.vmap(objectives.greedy_log_policy)(features @ theta)


def _positive(value, field: str, agent: str, paper: str):
  """A scalar > 0 where concrete, or None (the default)."""
  if value is None:
    return None
  if callable(value) or (_checks.is_concrete(value) and not np.all(np.asarray(value) > 0.0)):
    raise ValueError(f"{field} of {agent} must be a number > 0 ({paper}), got {value!r}")
  return value


def _length(value, agent: str):
  """τ, an integer >= 0, or None (the default)."""
  if value is None:
    return None
  return _checks.positive_int(f"exploration_length of {agent}", value, low=0)


def require_contextual(agent: str):
  """`rbx.core.Agent.requires` of a contextual dueling agent named `agent`: a contextual
  preference environment (`ContextualPreferenceEnv`; ValueError naming the type otherwise)
  whose r* has a Condorcet winner at every prompt (`rbx.rlhf.dueling.condorcet_winner`),
  checked where its r* is concrete."""
  def requires(env) -> None:
    if not isinstance(env, contextual.ContextualPreferenceEnv):
      raise ValueError(f"agent {agent!r} needs a contextual preference environment, with "
                       "features φ(x, a) (ContextualPreferenceEnv: contextual, "
                       "rbx.rlhf.random_contextual, make_contextual), got "
                       f"{type(env).__name__}; on the tabular environments use the K-armed "
                       "dueling agents (rucb, rmed1, double_ts, rcs)")
    if _checks.is_concrete(dueling.r_star(env)):
      dueling.condorcet_winner(env)
  return requires


def _make(name: str, choose, exploration_length, regularization, width, threshold,
          default_length) -> Agent:
  """The agent `name` whose pair at x_t after the exploration phase is
  `choose(key, state, phi) -> (a1, a2)`; `width`, `threshold` None: √(d ln T)."""

  def init(key, spec, horizon):
    del key
    if not hasattr(spec, "features"):
      raise ValueError(f"{name} needs an environment with features φ(x, a) (a contextual "
                       f"environment, rbx.rlhf.random_contextual), got {type(spec).__name__}")
    d = spec.features.shape[-1]
    default = float(np.sqrt(d * np.log(max(horizon, 2))))
    as_scalar = lambda v: jnp.asarray(default if v is None else v, jnp.float32)
    return LinearDuelingState(
        data=LinearData(jnp.zeros((horizon, d), jnp.float32), jnp.zeros((), jnp.int32)),
        gram=regularization * jnp.eye(d, dtype=jnp.float32),
        theta=jnp.zeros((d,), jnp.float32), steps=jnp.zeros((), jnp.int32),
        width=as_scalar(width), threshold=as_scalar(0.0 if threshold is False else threshold))

  def act(key, state, obs, spec):
    phi = spec.features[obs.x]
    A, d = phi.shape
    tau = default_length(d) if exploration_length is None else exploration_length
    k_explore, k_choose = jax.random.split(key)
    e1, e2 = _random_pair(k_explore, A)
    c1, c2 = choose(k_choose, state, phi)
    exploring = state.steps < tau
    a1, a2 = jnp.where(exploring, e1, c1), jnp.where(exploring, e2, c2)
    return state, Query(a1, a2, _deployed(state.theta, spec.features))

  def update(key, state, obs, query, a1_wins, spec):
    del key
    phi = spec.features[obs.x]
    informative = query.a1 != query.a2
    z = jnp.where(a1_wins, 1.0, -1.0) * (phi[query.a1] - phi[query.a2])
    data = state.data.add(z)
    data = jax.tree.map(lambda new, old: jnp.where(informative, new, old), data, state.data)
    gram = state.gram + jnp.outer(z, z)                 # z = 0 for a self-comparison
    theta = fit(state.theta, data, regularization)
    return state._replace(data=data, gram=gram, theta=theta, steps=state.steps + 1)

  return Agent(name, init, act, update, require_contextual(name))


def _check_regularization(value, agent: str):
  if callable(value) or (_checks.is_concrete(value) and not np.all(np.asarray(value) > 0.0)):
    raise ValueError(f"regularization of {agent} must be a number > 0 (λ of V = λI + Σ zzᵀ "
                     f"and of the MLE's ridge), got {value!r}")
  return value


# ---- CoLSTIM --------------------------------------------------------------------------------

def colstim(threshold_parameter=None, confidence_width=None, exploration_length=None,
            regularization=1.0) -> Agent:
  """CoLSTIM, Algorithm 1 ("CoLSTIM") of Bengs, Saha and Hüllermeier, "Stochastic Contextual
  Dueling Bandits under Linear Stochastic Transitivity Models", ICML 2022.

  At prompt x_t with utilities û_a = θ̂ᵀφ(x_t, a), after the exploration phase:

  * first arm (the perturbed utility, imitating the feedback process): ε_a i.i.d. standard
    Gumbel — under the logistic link a difference of two is logistic, so û_a + ε_a imitates the
    BTL model's random utilities — trimmed to ε̃_a = min(C, max(−C, ε_a)) with C =
    `threshold_parameter`, and i_t = argmax_a û_a + ε̃_a ‖φ(x_t, a)‖_{V⁻¹};
  * second arm (optimistic against i_t): j_t = argmax_a û_a + c_1 ‖φ(x_t, a) − φ(x_t, i_t)‖_{V⁻¹}
    with c_1 = `confidence_width` (j_t = i_t is possible: then no information).

  Defaults C = c_1 = √(d ln T) (the values the paper's experiments and the public
  implementations use), τ = d. One public implementation (variance-aware dueling bandits,
  Di et al. 2023) additionally gives all arms one shared ε with probability
  min(1, d ln(dT)/√t); I could not verify that in the paper's text, and it is not done here.
  The equation numbers of the paper could not be checked: the steps above are what is
  implemented. Names are the peer implementation's (`threshold_parameter`,
  `confidence_width`, `exploration_length`).
  """
  threshold = _positive(threshold_parameter, "threshold_parameter", "colstim",
                        "C, the perturbations' trimming threshold")
  width = _positive(confidence_width, "confidence_width", "colstim",
                    "c_1, the second arm's confidence width")
  length = _length(exploration_length, "colstim")
  lam = _check_regularization(regularization, "colstim")

  def choose(key, state, phi):
    k_eps, k1, k2 = jax.random.split(key, 3)
    u = phi @ state.theta
    G = gram_products(phi, state.gram)
    diag = jnp.diag(G)
    own = jnp.sqrt(jnp.maximum(diag, 0.0))                          # ‖φ_a‖_{V⁻¹}
    W = jnp.sqrt(jnp.maximum(diag[:, None] + diag[None, :] - 2.0 * G, 0.0))
    eps = jnp.clip(jax.random.gumbel(k_eps, u.shape), -state.threshold, state.threshold)
    i = _pick_max(k1, u + eps * own)
    j = _pick_max(k2, u + state.width * W[:, i])
    return i, j

  return _make("colstim", choose, length, lam, width, threshold, lambda d: d)


# ---- MaxInP ---------------------------------------------------------------------------------

def maxinp(confidence_width=None, exploration_length=None, regularization=1.0) -> Agent:
  """MaxInP (Maximum Informative Pair), Algorithm 1 of Saha, "Optimal Algorithms for Stochastic
  Contextual Preference Bandits", NeurIPS 2021.

  At prompt x_t, after the exploration phase, with D_ij = θ̂ᵀ(φ_i − φ_j) and W_ij =
  ‖φ_i − φ_j‖_{V⁻¹} (φ_a = φ(x_t, a)):

  * the candidates C_t = {i : D_ij + γ W_ij ≥ 0 for every j}, the answers not confidently
    beaten by any other, with γ = `confidence_width`;
  * the pair (i_t, j_t) = argmax_{i, j ∈ C_t} W_ij, the most uncertain pair of candidates
    (ties uniform; |C_t| = 1: the candidate duels itself).

  Default γ = √(d ln T) (the value CoLSTIM's experiments use for MaxInP; the paper's
  theoretical γ_t has constants of the link, κ and δ), τ = d. The equation numbers could
  not be checked: the steps above are what is implemented.
  """
  width = _positive(confidence_width, "confidence_width", "maxinp",
                    "γ, the candidate set's confidence width")
  length = _length(exploration_length, "maxinp")
  lam = _check_regularization(regularization, "maxinp")

  def choose(key, state, phi):
    A = phi.shape[0]
    D, W = _pairs(state, phi)
    cand = jnp.all(D + state.width * W >= 0.0, axis=1)
    pair = cand[:, None] & cand[None, :]
    flat = _pick_max(key, W.reshape(-1), pair.reshape(-1))
    return flat // A, flat % A

  return _make("maxinp", choose, length, lam, width, False, lambda d: d)


# ---- MaxMinLCB --------------------------------------------------------------------------------

def maxminlcb(confidence_width=None, exploration_length=0, regularization=1.0) -> Agent:
  """MaxMinLCB, the acquisition of Pásztor, Kassraie and Krause, "Bandits with Preference
  Feedback: A Stackelberg Game Perspective", NeurIPS 2024, with a linear kernel.

  At prompt x_t, with D_ij and W_ij as MaxInP's and β = `confidence_width`:

  * the candidates C_t = {i : D_ij + β W_ij > 0 for every j ≠ i} (no other answer confidently
    preferred to i);
  * the leader i_t = argmax_{i ∈ C_t} min_{j ∈ C_t, j ≠ i} LCB_ij and the follower j_t =
    argmin_{j ∈ C_t, j ≠ i_t} LCB_{i_t j}, with LCB_ij = D_ij − β W_ij, ties uniform;
    |C_t| = 1: the candidate duels itself.

  The paper bounds the preference probability σ(h(x, x')) with its own confidence sequence;
  here the bound is the logit's, D_ij − β W_ij, whose σ is a lower confidence bound on
  P(i ≻ j) whenever θ* is in the ellipsoid, and the max-min of σ(LCB) is that of LCB (σ is
  increasing). This follows the authors' JAX acquisition function (`max_min_lcb`: candidate
  set, max-min over distinct candidates, a lone candidate duels itself) with the linear
  model's bound; default β = √(d ln T), no exploration phase (τ = 0).
  """
  width = _positive(confidence_width, "confidence_width", "maxminlcb",
                    "β, the confidence width of the bounds")
  length = _length(exploration_length, "maxminlcb")
  lam = _check_regularization(regularization, "maxminlcb")

  def choose(key, state, phi):
    A = phi.shape[0]
    k1, k2 = jax.random.split(key)
    D, W = _pairs(state, phi)
    eye = jnp.eye(A, dtype=bool)
    cand = jnp.all((D + state.width * W > 0.0) | eye, axis=1)
    lcb = D - state.width * W
    allowed = cand[:, None] & cand[None, :] & ~eye
    worst = jnp.min(jnp.where(allowed, lcb, jnp.inf), axis=1)       # min_j LCB_ij, (A,)
    i = _pick_max(k1, worst, cand)
    j = _pick_max(k2, -lcb[i], allowed[i])
    lone = jnp.sum(cand) == 1
    i = jnp.where(lone, jnp.argmax(cand), i)
    return i, jnp.where(lone, i, j)

  return _make("maxminlcb", choose, length, lam, width, False, lambda d: 0)


# ---- the registry's declarations ------------------------------------------------------------

_WIDTH = reg.real(0.0, doc="the confidence width's multiplier, > 0 (default √(d ln T))")
_LENGTH = reg.integer(0, doc="τ, the uniformly random pairs of distinct answers before the "
                      "algorithm's own choices (default d)", optional=True)
_LAMBDA = reg.real(0.0, doc="λ of V = λI + Σ zzᵀ and the MLE's ridge, > 0 (default 1)")
AGENTS = {
    "colstim": (colstim, {
        "threshold_parameter": reg.real(0.0, doc="C, the perturbations' trimming threshold, > 0 "
                                        "(default √(d ln T))"),
        "confidence_width": _WIDTH, "exploration_length": _LENGTH, "regularization": _LAMBDA},
                "CoLSTIM (Bengs, Saha & Hüllermeier 2022), one linear θ̂; contextual envs"),
    "maxinp": (maxinp, {"confidence_width": _WIDTH, "exploration_length": _LENGTH,
                        "regularization": _LAMBDA},
               "MaxInP (Saha 2021), one linear θ̂; contextual envs"),
    "maxminlcb": (maxminlcb, {"confidence_width": _WIDTH, "exploration_length": reg.integer(
        0, doc="τ, the uniformly random pairs of distinct answers first (default 0: none)"),
                              "regularization": _LAMBDA},
                  "MaxMinLCB (Pásztor, Kassraie & Krause 2024), linear kernel; contextual envs"),
}
"""name -> (constructor, declared parameters, one line): registered by `rbx.rlhf.registry`."""
