"""The objectives of online RLHF under the Bradley–Terry model, section 2 of the RLHF paper.

Every function works on one prompt's arrays, shape `(A,)` (and `(A, A)` for win counts);
prompts are handled by `jax.vmap` and ρ-weighting. All are computed in log space, so they
stay finite and accurate for r_max/β up to 500 and β down to 1e-3 (where π_ref·e^(r/β)
overflows float32 by hundreds of orders of magnitude).
"""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp, rel_entr, xlogy


def log_likelihood(r: chex.Array, wins: chex.Array) -> chex.Array:
  """ℓ(r, D) of (2.2) from win counts: Σ_{a,b} wins[a, b] · log σ(r_a − r_b).

  Evaluated over the pairs a < b only, with log σ(−d) = log σ(d) − d, which halves the
  transcendental work of this, the solver's innermost function.

  Args:
    r: rewards, shape (A,).
    wins: `wins[a, b]` = number of comparisons in which a was preferred over b, shape (A, A).
  Returns:
    scalar log-likelihood (≤ 0).
  """
  chex.assert_rank([r, wins], [1, 2])
  a, b = np.triu_indices(r.shape[0], 1)
  d = r[a] - r[b]
  w_ab, w_ba = wins[a, b], wins[b, a]
  return (jnp.sum((w_ab + w_ba) * jax.nn.log_sigmoid(d) - w_ba * d)
          - jnp.log(2.0) * jnp.trace(wins))


def log_optimal_policy(r: chex.Array, pi_ref: chex.Array, beta) -> chex.Array:
  """log π_r of (2.4): log π_ref + r/β − log Z_r, shape (A,)."""
  chex.assert_rank([r, pi_ref], 1)
  return jax.nn.log_softmax(jnp.log(pi_ref) + r / beta)


def optimal_policy(r: chex.Array, pi_ref: chex.Array, beta) -> chex.Array:
  """π_r(a) = π_ref(a) e^(r(a)/β) / Z_r of (2.4), the maximiser of J(·, r; π_cal); shape (A,)."""
  return jnp.exp(log_optimal_policy(r, pi_ref, beta))


def kl(pi: chex.Array, pi_ref: chex.Array) -> chex.Array:
  """KL(π ‖ π_ref) = Σ π log(π/π_ref), with 0 log 0 = 0; scalar."""
  chex.assert_rank([pi, pi_ref], 1)
  return jnp.sum(rel_entr(pi, pi_ref))


def J(pi: chex.Array, r: chex.Array, pi_ref: chex.Array, pi_cal: chex.Array, beta) -> chex.Array:
  """J(π, r; π_cal) of (2.3) for one prompt: E_π[r] − E_{π_cal}[r] − β KL(π ‖ π_ref)."""
  chex.assert_rank([pi, r, pi_cal], 1)
  return jnp.dot(pi - pi_cal, r) - beta * kl(pi, pi_ref)


def J_star(r: chex.Array, pi_ref: chex.Array, pi_cal: chex.Array, beta) -> chex.Array:
  """J*(r; π_cal) = max_π J(π, r; π_cal) of (2.7), in closed form β log Z_r − E_{π_cal}[r].

  Convex in r, and (like ℓ) invariant to r → r + c.
  """
  chex.assert_rank([r, pi_ref, pi_cal], 1)
  return beta * logsumexp(jnp.log(pi_ref) + r / beta) - jnp.dot(pi_cal, r)


def regret(pi: chex.Array, r_star: chex.Array, pi_ref: chex.Array, beta) -> chex.Array:
  """One prompt's term of the regret (2.6): J(π*, r*; π_cal) − J(π, r*; π_cal).

  Computed as the identity J(π*, r*) − J(π, r*) = β KL(π ‖ π*) with π* = π_{r*}, which
  is exact, ≥ 0 and independent of π_cal (as the paper notes after (2.6)).
  """
  chex.assert_rank([pi, r_star], 1)
  log_pi_star = log_optimal_policy(r_star, pi_ref, beta)   # finite even where π* underflows
  return jnp.maximum(beta * jnp.sum(xlogy(pi, pi) - pi * log_pi_star), 0.0)
