"""Parametric policies π_θ(a | x) for the practical (loss-based) agents of `rbx.rlhf.learners.practical`.

A `Policy` is two pure functions, with its static sizes closed over by its constructor:

    params = policy.init(task)                 # θ before the first round
    log_pi = policy.log_probs(params, task)    # log π_θ(· | x) for every prompt, (X, A)
    rows = policy.log_probs_at(params, task, xs)   # log π_θ(· | x) at prompts xs (n,), (n, A)

Every prompt's row is normalised (a `log_softmax`), so the implicit reward
r_θ(x, a) = β log π_θ(a|x)/π_ref(a|x) has Σ_a π_ref(a|x) e^{r_θ(x,a)/β} = 1 exactly, the
identity the practical loss rests on (see `rbx.rlhf.learners.practical`).

* `tabular`: free softmax logits per (prompt, action), θ ∈ R^(X×A), π_θ(·|x) = softmax(θ_x).
  It can represent every policy (θ_ref = log π_ref), so (up to the optimiser, with no ℓ2
  term) it is the exact-solver agents' problem with the box [0, r_max] removed or smoothed.
* `loglinear`: π_θ(a|x) ∝ π_ref(a|x) exp(θᵀφ(x, a)/β) with the features φ the task gives
  (`rbx.rlhf.contextual`), θ ∈ R^d, θ = 0 at the start (π_θ = π_ref). Then r_θ(x, a) =
  θᵀφ(x, a) − β log Z_θ(x): a linear reward, so a linear r* is realisable (θ_ref = 0).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rbx import _checks


class Policy(NamedTuple):
  """A parametric policy: `init(task) -> θ` and `log_probs(θ, task) -> log π_θ`, (X, A).

  Attributes:
    name: "tabular" or "loglinear" (for messages).
    init: the parameters before round 1 from the learner's `Task` (shapes from its π_ref).
    log_probs: log π_θ(a | x) of every prompt and answer, shape (X, A), rows normalised.
    reference: θ_ref, parameters with π_θ = π_ref (the ℓ2 penalty's centre), same shape as θ.
    log_probs_at: `log_probs_at(θ, task, xs)` = `log_probs(θ, task)[xs]` for prompt indices
      xs (n,), shape (n, A), computed at those prompts only (O(n A d) for the log-linear one).
    sample: `sample(key, θ, task, x)` -> an answer a ~ π_θ(·|x), int32 scalar, for a policy
      that samples itself (the autoregressive policies of `rbx.rlhf.sequences`); None: the
      agents draw from the rows log π_θ(·|x) (`jax.random.categorical`).
    log_probs_of: `log_probs_of(θ, task, xs, ys)` = log π_θ(y_i|x_i) of given answers, (n,),
      computed for those answers only (the autoregressive policies: O(n L)); with it the
      agents' DPO term over a buffer reads the compared answers only. None: from the rows.
    next_token: a Markov policy over token sequences (the log-linear and neural ones of
      `rbx.rlhf.learners.sequence`): `next_token(θ, task, at)` = log π_θ(y_l | x, l, y_{l−1})
      at the index arrays `at` = (xs, ls, previous) (broadcast to a shape S), (*S, V), or
      with `at` None at every one, (X, L, V+1, V) (previous token V: BOS); what the sequence
      agents use on answers as tokens (`rbx.rlhf.tokens`). None for the others.
    row_cost: the cost of one next-token row read for a given answer relative to one row of
      the whole table `next_token(θ, task)`: the sequence agents read n answers' L rows each
      where n·L·row_cost is below the table's X·L·(V+1) rows, else the whole table. The
      log-linear policy's table is one matrix product that the seeds of a batch share while
      its rows gather their features per seed (4); 1 for the neural one (per seed either way).
  """
  name: str
  init: Callable[[Any], Any]
  log_probs: Callable[[Any, Any], chex.Array]
  reference: Callable[[Any], Any]
  log_probs_at: Callable[[Any, Any, chex.Array], chex.Array]
  sample: Callable[[chex.PRNGKey, Any, Any, chex.Array], chex.Array] | None = None
  log_probs_of: Callable[[Any, Any, chex.Array, chex.Array], chex.Array] | None = None
  next_token: Callable[..., chex.Array] | None = None
  row_cost: float = 1.0


def tabular(pi_init=None) -> Policy:
  """Softmax logits θ[x, a] per prompt and answer; π_θ(·|x) = softmax(θ_x).

  Args:
    pi_init: π^(1), shape (A,) or (X, A); default the task's π_ref (θ = log π^(1)).
  """
  if pi_init is not None:
    _checks.probability("pi_init", pi_init, strict=True)

  def init(task) -> chex.Array:
    if pi_init is None:
      return jnp.log(task.pi_ref)
    return jnp.log(jnp.broadcast_to(jnp.asarray(pi_init, jnp.float32), task.pi_ref.shape))

  def log_probs(theta, task) -> chex.Array:
    del task
    return jax.nn.log_softmax(theta, axis=-1)

  def log_probs_at(theta, task, xs) -> chex.Array:
    return log_probs(theta[xs], task)

  return Policy("tabular", init, log_probs, lambda task: jnp.log(task.pi_ref), log_probs_at)


def loglinear() -> Policy:
  """π_θ(a|x) ∝ π_ref(a|x) exp(θᵀφ(x, a)/β), θ ∈ R^d, θ = 0 at the start.

  The task must carry `features` φ of shape (X, A, d) (a `rbx.rlhf.contextual` task).
  """
  def features(task) -> chex.Array:
    if not hasattr(task, "features"):
      raise ValueError("policy='loglinear' needs features φ(x, a): use a contextual "
                       "environment (rbx.rlhf.contextual), or policy='tabular'")
    return task.features

  def init(task) -> chex.Array:
    return jnp.zeros(features(task).shape[-1], jnp.float32)

  def log_probs(theta, task) -> chex.Array:
    return jax.nn.log_softmax(jnp.log(task.pi_ref) + features(task) @ theta / task.beta, axis=-1)

  def log_probs_at(theta, task, xs) -> chex.Array:
    return log_probs(theta, task._replace(pi_ref=task.pi_ref[xs], features=features(task)[xs]))

  return Policy("loglinear", init, log_probs, init, log_probs_at)


POLICIES: dict[str, Callable[..., Policy]] = {"tabular": tabular, "loglinear": loglinear}
