"""Exact values of Markov policies over token sequences, by recursion over the positions.

On `rbx.rlhf.sequences`' model the true reward is a sum of per-token terms,
r*(x, y) = Σ_l R(x, l, y_{l−1}, y_l) (`SequenceEnv.token_rewards`, y_0 = BOS = token id V),
and π_ref is first-order Markov, π_ref(y|x) = Π_l π_ref(y_l | x, l, y_{l−1}). Then every exact
quantity of the regret (2.6) is one pass over the L positions (`jax.lax.scan`) with the
previous token as its state — O(|X|·L·V²) work on (X, L, V+1, V) tables, never the V^L answers:

* `reward_range`: min_y and max_y of Σ_l table[x, l, y_{l−1}, y_l], a min-plus and a max-plus
  pass (r*'s scaling into [0, r_max]);
* `optimal_value`: J(π*, r*) = β log Σ_y π_ref(y|x) e^{r*(x,y)/β} ((2.4), (2.7)) by a backward
  soft-Bellman pass, with π*'s per-token conditionals (π* is Markov too);
* `value`: J(π, r*) = E_π[r*] − β KL(π ‖ π_ref) of a Markov π, given by its conditionals
  log π(y_l | x, l, y_{l−1}) (X, L, V+1, V), by a forward pass over the marginals of the
  previous token;
* `markov_regret`: the regret term (2.6), Σ_x ρ(x) [J(π*, r*) − J(π, r*)], as
  β KL(π ‖ π*) by the same forward pass (`SequenceEnv.feedback` uses it when the deployed
  policy is given as conditionals).

J here is (2.3) without its calibration term E_{π_cal}[r*], which is the same for every π and
cancels in the regret. All in float32, the soft values by log-sum-exp. The functions read
`env.token_rewards`, `env.ref_log_probs`, `env.beta` and `env.rho`: a `SequenceEnv`, or a
`TokenTruth` at sizes the enumeration cannot hold. β > 0.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from rbx import _checks

NORMALISED_ATOL = 1e-4
"""How far from 0 a row's logsumexp of `log_conditionals` may be (float32 log_softmax: ~1e-7)."""


class TokenTruth(NamedTuple):
  """The ground truth the recursions read, at any V^L (nothing over the answers).

  Attributes:
    token_rewards: R, (X, L, V+1, V): r*(x, y) = Σ_l R[x, l, y_{l−1}, y_l] (y_0 = BOS = V).
    ref_log_probs: log π_ref(y_l | x, l, y_{l−1}), (X, L, V+1, V), each row normalised.
    beta: β > 0.
    rho: ρ, (X,).
  """
  token_rewards: chex.Array
  ref_log_probs: chex.Array
  beta: chex.Array
  rho: chex.Array


def _by_position(table: chex.Array) -> chex.Array:
  """(X, L, ...) -> (L, X, ...): the scan's leading axis."""
  return jnp.moveaxis(table, 1, 0)


def _check_tables(field: str, table) -> tuple[int, int, int]:
  """(X, L, V) of a per-token table (X, L, V+1, V); ValueError naming the field or the size."""
  shape = tuple(np.shape(table))
  if len(shape) != 4 or shape[2] != shape[3] + 1:
    raise ValueError(f"{field} must have shape (X, L, V+1, V), got {shape}")
  X, L, _, V = shape
  if X < 1:
    raise ValueError(f"num_prompts must be >= 1 ({field}'s first axis), got {X}")
  if L < 1:
    raise ValueError(f"length must be >= 1 ({field}'s second axis, L), got {L}")
  if V < 2:
    raise ValueError(f"vocab must be >= 2 ({field}'s last axis, V), got {V}")
  return X, L, V


def _read(env) -> TokenTruth:
  """What the recursions read, float32, after checking shapes and β (before compiling)."""
  truth = TokenTruth(env.token_rewards, env.ref_log_probs, env.beta, env.rho)
  X, _, _ = _check_tables("ref_log_probs", truth.ref_log_probs)
  _checks.shape("token_rewards", truth.token_rewards, np.shape(truth.ref_log_probs))
  _checks.shape("rho", truth.rho, (X,))
  _checks.positive("beta", truth.beta)
  return TokenTruth(*(jnp.asarray(v, jnp.float32) for v in truth))


def _check_conditionals(env, log_conditionals) -> chex.Array:
  """log_conditionals as float32 after its checks: the env's table shape; when concrete, no
  NaN or +inf and every row (read or not) normalised to `NORMALISED_ATOL`."""
  _checks.shape("log_conditionals", log_conditionals, np.shape(env.ref_log_probs))
  if _checks.is_concrete(log_conditionals):
    table = np.asarray(log_conditionals)
    step = max(1, 2 ** 22 // max(1, table[0].size))         # prompts a chunk: ≤ 4M entries
    lse = np.concatenate([_logsumexp_rows(table[i:i + step])
                          for i in range(0, table.shape[0], step)])
    if np.isnan(lse).any():
      at = tuple(int(i) for i in np.argwhere(np.isnan(lse))[0])
      raise ValueError(f"log_conditionals must hold no NaN or +inf (log 0 = -inf is allowed): "
                       f"the first at [x, l, previous] = {list(at)}")
    bad = ~(np.abs(lse) <= NORMALISED_ATOL)
    if bad.any():
      at = tuple(int(i) for i in np.argwhere(bad)[0])
      raise ValueError(f"log_conditionals' rows must normalise (|logsumexp| <= {NORMALISED_ATOL:g} "
                       f"over the last axis): {int(bad.sum())} rows do not, the first at "
                       f"[x, l, previous] = {list(at)} with logsumexp {lse[at]:.3g}")
  return jnp.asarray(log_conditionals, jnp.float32)


def _logsumexp_rows(v: np.ndarray) -> np.ndarray:
  """logsumexp over the last axis in float64 numpy: NaN for a row holding NaN or +inf, −inf
  for a row of −inf."""
  v = v.astype(np.float64)
  bad = np.isnan(v).any(-1) | np.isposinf(v).any(-1)
  top = v.max(-1, keepdims=True)
  with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
    lse = top[..., 0] + np.log(np.exp(v - np.where(np.isfinite(top), top, 0.0)).sum(-1))
  return np.where(bad, np.nan, lse)


@jax.jit
def _max_plus(table: chex.Array) -> chex.Array:
  """max_y Σ_l table[x, l, y_{l−1}, y_l], (X,): g_{l+1}(t) = max_p g_l(p) + table[l, p, t]."""
  X, _, V1, V = table.shape
  start = jnp.where(jnp.arange(V1) == V, 0.0, -jnp.inf) * jnp.ones((X, 1), table.dtype)

  def step(g, t):                                           # g: best prefix total by last token
    best = jnp.max(g[:, :, None] + t, axis=1)               # (X, V)
    return jnp.concatenate([best, jnp.full((X, 1), -jnp.inf, table.dtype)], 1), None

  g, _ = jax.lax.scan(step, start, _by_position(table))
  return jnp.max(g, axis=-1)


@jax.jit
def best_answers(table: chex.Array) -> chex.Array:
  """argmax_y Σ_l table[x, l, y_{l−1}, y_l] per prompt as tokens, (X, L) int32 (Viterbi: the
  max-plus pass keeping each token's best previous one, then back along them; ties to the
  lowest token)."""
  X, _, V1, V = table.shape
  start = jnp.where(jnp.arange(V1) == V, 0.0, -jnp.inf) * jnp.ones((X, 1), table.dtype)

  def forward(g, t):
    totals = g[:, :, None] + t                                # (X, V+1 previous, V)
    return (jnp.concatenate([jnp.max(totals, axis=1), jnp.full((X, 1), -jnp.inf, t.dtype)], 1),
            jnp.argmax(totals, axis=1).astype(jnp.int32))     # best previous token, (X, V)

  g, previous = jax.lax.scan(forward, start, _by_position(table))
  last = jnp.argmax(g[:, :V], axis=-1).astype(jnp.int32)

  def back(token, best_previous):
    return best_previous[jnp.arange(X), token], token

  _, tokens = jax.lax.scan(back, last, previous, reverse=True)
  return jnp.moveaxis(tokens, 0, 1)


def reward_range(table: chex.Array) -> tuple[chex.Array, chex.Array]:
  """The least and largest total over the answers, per prompt, by a min-plus and a max-plus
  pass over the positions (O(|X|·L·V²), no enumeration).

  Args:
    table: per-token values, (X, L, V+1, V) (previous token V: BOS).
  Returns:
    (min_y, max_y) of Σ_l table[x, l, y_{l−1}, y_l], each (X,).
  """
  _check_tables("table", table)
  table = jnp.asarray(table, jnp.float32)
  return -_max_plus(-table), _max_plus(table)


@jax.jit
def scaled_rewards(psi: chex.Array, theta: chex.Array, r_max) -> chex.Array:
  """The true reward per token R = θ̃ᵀψ (X, L, V+1, V) from token features ψ (X, L, V+1, V, d)
  and θ̃ (d,), θ* already scaled by r_max/(M − m), plus the scaling's offset −min_{x,y} θ̃ᵀφ
  (a min-plus pass) on position 1 (every previous-token row; only BOS's is read): r* =
  Σ_l R ∈ [0, r_max]. r_max/2 there when r* is constant (θ̃ = 0)."""
  scores = psi @ theta
  low = jnp.min(-_max_plus(-scores))
  return scores.at[:, 0].add(jnp.where(jnp.any(theta != 0), -low, 0.5 * r_max))


@jax.jit
def _soft_bellman(rewards, log_ref, beta):
  """(β V_0(BOS) (X,), log π* (X, L, V+1, V)) by the backward pass, V_L = 0:
  Q_l(p, t) = log π_ref(t | l, p) + R(l, p, t)/β + V_{l+1}(t), V_l(p) = logsumexp_t Q_l(p, t),
  log π*(t | l, p) = Q_l(p, t) − V_l(p)."""
  X, _, V1, V = rewards.shape

  def step(v_next, tables):                                 # v_next: V_{l+1}, (X, V+1)
    r, lr = tables
    q = lr + r / beta + v_next[:, None, :V]                 # (X, V+1, V)
    v = logsumexp(q, axis=-1)                               # (X, V+1)
    return v, q - v[..., None]

  v0, log_star = jax.lax.scan(step, jnp.zeros((X, V1), rewards.dtype),
                              (_by_position(rewards), _by_position(log_ref)), reverse=True)
  return beta * v0[:, V], jnp.moveaxis(log_star, 0, 1)


def along(table: chex.Array, xs: chex.Array, tokens: chex.Array) -> chex.Array:
  """Σ_l table[x_i, l, y_{i,l−1}, y_{i,l}] of given answers (y_0 = BOS = V), one gather.

  Args:
    table: per-token values, (X, L, V+1, V): rewards, log-probabilities.
    xs: prompts, (n,). tokens: the answers, (n, L) int.
  Returns:
    (n,): r*(x, y) of token rewards, log π(y|x) of conditionals.
  """
  V = table.shape[-1]
  previous = jnp.concatenate([jnp.full_like(tokens[:, :1], V), tokens[:, :-1]], axis=1)
  return jnp.sum(table[xs[:, None], jnp.arange(tokens.shape[1]), previous, tokens], axis=1)


@jax.jit
def expectation(log_pi: chex.Array, table: chex.Array) -> chex.Array:
  """E_π[Σ_l table[x, l, y_{l−1}, y_l]] of the Markov π given by its conditionals log_pi
  (X, L, V+1, V), (X,), by the forward pass over the previous token's marginal m_l
  (m_0 = δ_BOS): the rows' expectations e_l(p) = Σ_t π(t | l, p) table[l, p, t] (0 where
  π = 0) at once, then position by position the term Σ_p m_l(p) e_l(p) and
  m_{l+1}(t) = Σ_p m_l(p) π(t | l, p) (a matrix-vector product). Differentiable in both."""
  X, L, V1, _ = log_pi.shape
  pi = jnp.exp(log_pi)
  rows = jnp.sum(pi * jnp.where(pi > 0, table, 0.0), axis=-1)          # e_l(p), (X, L, V+1)
  start = jnp.broadcast_to(jax.nn.one_hot(V1 - 1, V1, dtype=log_pi.dtype), (X, V1))

  def step(m, l):
    at = lambda a: jax.lax.dynamic_index_in_dim(a, l, axis=1, keepdims=False)
    following = jnp.einsum("xp,xpt->xt", m, at(pi))
    return jnp.concatenate([following, jnp.zeros((X, 1), m.dtype)], 1), jnp.sum(m * at(rows), 1)

  _, terms = jax.lax.scan(step, start, jnp.arange(L))
  return jnp.sum(terms, axis=0)


@jax.jit
def _value(log_pi, truth: TokenTruth):
  """`value` after its checks."""
  return expectation(log_pi, truth.token_rewards - truth.beta * (log_pi - truth.ref_log_probs))


@jax.jit
def _regret(log_pi, truth: TokenTruth):
  """`markov_regret` after its checks."""
  _, log_star = _soft_bellman(truth.token_rewards, truth.ref_log_probs, truth.beta)
  return regret_to(log_pi, log_star, truth.rho, truth.beta)


def regret_to(log_pi: chex.Array, log_star: chex.Array, rho: chex.Array, beta) -> chex.Array:
  """Σ_x ρ(x) β KL(π ‖ π*)(x) of Markov π and π* given by their conditionals, both
  (X, L, V+1, V): `markov_regret` with π*'s conditionals computed once (`optimal_value`)."""
  kl = expectation(log_pi, log_pi - log_star)
  return jnp.dot(rho, beta * jnp.maximum(kl, 0.0))


def optimal_value(env) -> tuple[chex.Array, chex.Array]:
  """J(π*, r*) per prompt and π*'s per-token conditionals, by a backward soft-Bellman pass.

  J(π*, r*) = β log Σ_y π_ref(y|x) e^{r*(x,y)/β} ((2.4), (2.7), without the calibration term)
  = β V_0(BOS), with V_L = 0 and V_l(p) = log Σ_t π_ref(t | x, l, p) e^{R(x, l, p, t)/β +
  V_{l+1}(t)}; π*(t | x, l, p) = π_ref(t | x, l, p) e^{R(x, l, p, t)/β + V_{l+1}(t) − V_l(p)},
  so π*(y|x) = Π_l π*(y_l | x, l, y_{l−1}) ∝ π_ref(y|x) e^{r*(x,y)/β}. O(|X|·L·V²).

  Args:
    env: a `SequenceEnv` or `TokenTruth` (token_rewards, ref_log_probs, beta, rho).
  Returns:
    (J(π*, r*), (X,); log π*(y_l | x, l, y_{l−1}), (X, L, V+1, V), every row normalised).
  Raises:
    ValueError naming the field (shapes, vocab ≥ 2, length ≥ 1, beta > 0), before compiling.
  """
  truth = _read(env)
  return _soft_bellman(truth.token_rewards, truth.ref_log_probs, truth.beta)


def value(env, log_conditionals) -> chex.Array:
  """J(π, r*) = E_π[r*] − β KL(π ‖ π_ref) per prompt ((2.3) without the calibration term) of
  a Markov policy π(y|x) = Π_l π(y_l | x, l, y_{l−1}), by a forward pass over the marginals
  of the previous token:

      J(π, r*) = Σ_l Σ_{p,t} m_l(p) π(t | x, l, p) [R(x, l, p, t) − β log π/π_ref (t | x, l, p)],

  m_0 = δ_BOS, m_{l+1}(t) = Σ_p m_l(p) π(t | x, l, p) (KL's chain rule). O(|X|·L·V²).

  Args:
    env: a `SequenceEnv` or `TokenTruth`.
    log_conditionals: log π(y_l | x, l, y_{l−1}), (X, L, V+1, V), every row normalised
      (−inf allowed: π(t) = 0).
  Returns:
    (X,).
  Raises:
    ValueError naming the field (log_conditionals' shape, NaN, rows that do not normalise;
    the env's as `optimal_value`), before compiling.
  """
  truth = _read(env)
  return _value(_check_conditionals(truth, log_conditionals), truth)


def markov_regret(env, log_conditionals) -> chex.Array:
  """The regret term (2.6) of a deployed Markov policy π: Σ_x ρ(x) [J(π*, r*) − J(π, r*)] at
  x, computed as the identity J(π*, r*) − J(π, r*) = β KL(π ‖ π*) (as `rbx.rlhf.regret`):
  β Σ_l Σ_{p,t} m_l(p) π(t | x, l, p) log π(t | x, l, p)/π*(t | x, l, p) with π*'s conditionals
  (`optimal_value`) and π's marginals m_l (`value`), ≥ 0 per prompt. O(|X|·L·V²).

  Args:
    env: a `SequenceEnv` or `TokenTruth`.
    log_conditionals: log π(y_l | x, l, y_{l−1}), (X, L, V+1, V), as `value`.
  Returns:
    scalar.
  Raises:
    ValueError as `value`, before compiling.
  """
  truth = _read(env)
  return _regret(_check_conditionals(truth, log_conditionals), truth)
