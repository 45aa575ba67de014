"""The objectives of online RLHF under the Bradley–Terry model, section 2 of the RLHF paper.

Every function works on one prompt's arrays, shape `(A,)` (and `(A, A)` for win counts);
prompts are handled by `jax.vmap` and ρ-weighting. All are computed in log space, so they
stay finite and accurate for r_max/β up to 500 and β down to 1e-3 (where π_ref·e^(r/β)
overflows float32 by hundreds of orders of magnitude).

β = 0 (reward maximisation only, the discussion after Theorem 1) is the limit β → 0: π_r is
greedy (uniform over argmax r; the limit of (2.4) would split exact ties ∝ π_ref, and any
split maximises J), J has no KL term, J*(r) = max r − E_{π_cal}[r] and the regret term is
max r* − E_π[r*]. β may be traced (sweeps vmap over it), so the two cases are chosen
by `jnp.where` on safe values (β replaced by 1 where it is 0): no 0/0 reaches a value or a
gradient, and the selects sit where XLA compiles the β > 0 values bit for bit as before.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp, rel_entr, xlogy

from rbx import _checks


def log_likelihood(r: chex.Array, wins: chex.Array) -> chex.Array:
  """ℓ(r, D) of (2.2) from win counts: Σ_{a,b} wins[a, b] · log σ(r_a − r_b).

  Dense over the (A, A) differences d[a, b] = r_a − r_b: O(A²) elementwise work and no
  gathers, which vectorises over seeds, prompts and the solver's starts (this is the solver's
  innermost function).

  Args:
    r: rewards, shape (A,).
    wins: `wins[a, b]` = number of comparisons in which a was preferred over b, shape (A, A).
  Returns:
    scalar log-likelihood (≤ 0).
  """
  chex.assert_rank([r, wins], [1, 2])
  d = r[:, None] - r[None, :]
  # log σ(d) = −max(−d, 0) − log1p(e^(−|d|)): both terms ≤ 0, so no cancellation in float32.
  # jnp.maximum splits its derivative at a tie, which keeps ∇ℓ exact at d = 0 (where the
  # start at the centre of the box has every d = 0); jnp.abs would not, its ∂|d| at 0 is 1.
  log_sigmoid = -jnp.maximum(-d, 0.0) - jnp.log1p(jnp.exp(-jnp.maximum(d, -d)))
  return jnp.sum(wins * log_sigmoid)


# log π off the greedy policy's support at β = 0: a finite stand-in for log 0 (exp of it is
# exactly 0), so that π·log π, differences of log-policies and sampling all stay NaN-free, as
# the β > 0 log-policies (finite even where π underflows) are.
_LOG_ZERO = -1e30


def safe_beta(beta):
  """β where β > 0, else 1: the β > 0 branch of a `jnp.where` never divides by 0."""
  return jnp.where(beta > 0, beta, 1.0)


def greedy_log_policy(r: chex.Array) -> chex.Array:
  """log π_r at β = 0: uniform over argmax_a r_a, values within 1e-6·(1 + max|r|) of the max
  counting as ties (float32 rounding of a solver's r), `_LOG_ZERO` elsewhere; shape (A,)."""
  chex.assert_rank(r, 1)
  r = jnp.asarray(r)
  top = r >= jnp.max(r) - 1e-6 * (1.0 + jnp.max(jnp.abs(r)))
  ties = jax.lax.stop_gradient(jnp.sum(top))
  return jnp.where(top, -jnp.log(ties.astype(r.dtype)), _LOG_ZERO)


def when_beta(beta, soft: Callable[[Any], Any], hard: Callable[[], Any]):
  """soft(β) where β > 0, hard() (its β → 0 limit) where β = 0: only the branch a concrete β
  takes is traced (a scalar β the sweep closes over: its β > 0 program has no β = 0 path),
  both under a `jnp.where` otherwise (a swept β; soft then gets `safe_beta`)."""
  if _checks.is_concrete(beta) and jnp.ndim(beta) == 0:
    return soft(beta) if float(beta) > 0 else hard()
  return jnp.where(beta > 0, soft(safe_beta(beta)), hard())


def log_optimal_policy(r: chex.Array, pi_ref: chex.Array, beta) -> chex.Array:
  """log π_r of (2.4): log π_ref + r/β − log Z_r, shape (A,); at β = 0 the greedy policy
  (`greedy_log_policy`), the maximiser of J(·, r) with no KL term."""
  chex.assert_rank([r, pi_ref], 1)
  return when_beta(beta, lambda b: jax.nn.log_softmax(jnp.log(pi_ref) + r / b),
                   lambda: greedy_log_policy(r))


def _log_policy(r, pi_ref, beta):
  """log π_r of (2.4) for β > 0 only (no β = 0 branch), shape (A,)."""
  return jax.nn.log_softmax(jnp.log(pi_ref) + r / beta)


def optimal_policy(r: chex.Array, pi_ref: chex.Array, beta) -> chex.Array:
  """π_r(a) = π_ref(a) e^(r(a)/β) / Z_r of (2.4), the maximiser of J(·, r; π_cal); shape (A,)."""
  return jnp.exp(log_optimal_policy(r, pi_ref, beta))


def kl(pi: chex.Array, pi_ref: chex.Array) -> chex.Array:
  """KL(π ‖ π_ref) = Σ π log(π/π_ref), with 0 log 0 = 0; scalar."""
  chex.assert_rank([pi, pi_ref], 1)
  return jnp.sum(rel_entr(pi, pi_ref))


def J(pi: chex.Array, r: chex.Array, pi_ref: chex.Array, pi_cal: chex.Array, beta) -> chex.Array:
  """J(π, r; π_cal) of (2.3) for one prompt: E_π[r] − E_{π_cal}[r] − β KL(π ‖ π_ref).

  At β = 0 the KL term is dropped (not 0 · KL, which is NaN where KL = ∞).
  """
  chex.assert_rank([pi, r, pi_cal], 1)
  return jnp.dot(pi - pi_cal, r) - beta * jnp.where(beta > 0, kl(pi, pi_ref), 0.0)


def J_star(r: chex.Array, pi_ref: chex.Array, pi_cal: chex.Array, beta) -> chex.Array:
  """J*(r; π_cal) = max_π J(π, r; π_cal) of (2.7), in closed form β log Z_r − E_{π_cal}[r];
  at β = 0, max_a r_a − E_{π_cal}[r] (its β → 0 limit).

  Convex in r, and (like ℓ) invariant to r → r + c.
  """
  chex.assert_rank([r, pi_ref, pi_cal], 1)
  safe = safe_beta(beta)     # the select inside β·(…): XLA fuses β·(…) − E_{π_cal}[r] as before
  return (safe * jnp.where(beta > 0, logsumexp(jnp.log(pi_ref) + r / safe), jnp.max(r))
          - jnp.dot(pi_cal, r))


def regret(pi: chex.Array, r_star: chex.Array, pi_ref: chex.Array, beta) -> chex.Array:
  """One prompt's term of the regret (2.6): J(π*, r*; π_cal) − J(π, r*; π_cal).

  Computed as the identity J(π*, r*) − J(π, r*) = β KL(π ‖ π*) with π* = π_{r*}, which
  is exact, ≥ 0 and independent of π_cal (as the paper notes after (2.6)); at β = 0 it is
  max r* − E_π[r*] (π* greedy).
  """
  chex.assert_rank([pi, r_star], 1)
  safe = safe_beta(beta)
  log_pi_star = _log_policy(r_star, pi_ref, safe)   # finite even where π* underflows
  return jnp.maximum(safe * jnp.where(beta > 0, jnp.sum(xlogy(pi, pi) - pi * log_pi_star),
                                      jnp.max(r_star) - jnp.dot(pi, r_star)), 0.0)
