"""The preference environment of the RLHF paper's section 2 and its Examples 1–2.

A finite prompt set X (distribution ρ), A answers per prompt, a true reward
r* : X × A → [0, r_max], a reference policy π_ref, the KL weight β, and the Bradley–Terry
preference oracle (2.1). Arrays are per prompt: shape (X, A).

As an `rbx.core` environment, a step draws the prompt x ~ ρ (`observe`); the learner answers
with a `Query` (two answers and the policy π^(t) it deploys); `feedback` is the oracle's
comparison and the regret term J(π*, r*) − J(π^(t), r*), ρ-weighted over prompts (2.6). The
learner is told `Task` (π_ref, ρ, β, its reward bound and the calibration policy), never r*.

The learner's box [0, learner_r_max]^A — what it searches its reward models over — may be wider
than the truth's [0, r_max] (a learner that does not know r_max exactly): `learner_r_max` ≥
r_max, default r_max. The agents see only the learner's bound (`Task.r_max`); the regret is
scored against r* as before.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from rbx import _checks
from rbx.rlhf import objectives


class Task(NamedTuple):
  """What the learner is told (the environment's `spec`). Shapes: X prompts, A actions.

  Attributes:
    pi_ref: π_ref, (X, A).
    rho: ρ, (X,).
    beta: β, scalar.
    r_max: the learner's reward bound (the environment's `learner_r_max`), scalar.
    pi_cal: the calibration policy a fixed-calibration scheme (VPO) uses by default, (X, A).
  """
  pi_ref: chex.Array
  rho: chex.Array
  beta: chex.Array
  r_max: chex.Array
  pi_cal: chex.Array


class Prompt(NamedTuple):
  """A step's observation: the prompt x ~ ρ, int scalar."""
  x: chex.Array


class Query(NamedTuple):
  """The learner's action: answers a1, a2 (int scalars) to compare at the observed prompt, and
  the policy it deploys at this step (what the regret (2.6) scores) in the form its environment
  scores: log π^(t) (X, A) here; the Markov conditionals over token sequences
  (`rbx.rlhf.tokens`); a `rbx.rlhf.generated.LogLinear` θ on contexts drawn from a generator."""
  a1: chex.Array
  a2: chex.Array
  log_pi: chex.Array


class PreferenceEnv(NamedTuple):
  """A Bradley–Terry preference environment (all fields are arrays, so they can be traced).

  Attributes:
    r_star: true rewards r*(x, a) in [0, r_max], shape (X, A).
    pi_ref: reference policy π_ref(a | x), shape (X, A), rows strictly positive, summing to 1.
    rho: prompt distribution ρ, shape (X,).
    beta: KL regularisation β ≥ 0, scalar (β = 0: reward maximisation only, the greedy π* of
      the discussion after Theorem 1; see `rbx.rlhf.objectives`).
    r_max: the truth's reward bound, scalar: r* ∈ [0, r_max].
    pi_cal: the calibration policy a fixed-calibration scheme (VPO) uses by default,
      shape (X, A); Example 1 sets it, elsewhere it is π_ref.
    learner_r_max: the learner's reward bound ≥ r_max, scalar; the reward models are searched
      over [0, learner_r_max] (`Task.r_max`).
  """
  r_star: chex.Array
  pi_ref: chex.Array
  rho: chex.Array
  beta: chex.Array
  r_max: chex.Array
  pi_cal: chex.Array
  learner_r_max: chex.Array

  @property
  def num_prompts(self) -> int:
    """|X|, the number of prompts."""
    return self.r_star.shape[0]

  @property
  def num_actions(self) -> int:
    """A, the number of answers per prompt."""
    return self.r_star.shape[1]

  @property
  def spec(self) -> Task:
    """What the learner is told: π_ref, ρ, β, its bound learner_r_max, π_cal (not r* or the
    truth's r_max)."""
    return Task(self.pi_ref, self.rho, self.beta, self.learner_r_max, self.pi_cal)

  def reset(self, key: chex.PRNGKey) -> tuple:
    """No per-seed environment state: ()."""
    del key
    return ()

  def observe(self, key: chex.PRNGKey, state: tuple) -> tuple[tuple, Prompt]:
    """The step's prompt x ~ ρ."""
    return state, Prompt(jax.random.categorical(jax.random.split(key)[0], jnp.log(self.rho)))

  def feedback(self, key: chex.PRNGKey, state: tuple, obs: Prompt, query: Query):
    """(a1 preferred to a2 by the oracle (2.1), the regret term of the deployed policy,
    Σ_x ρ(x) [J(π*, r*) − J(π^(t), r*)] at x)."""
    del state
    a1_wins = preference(jax.random.split(key)[1], self, obs.x, query.a1, query.a2)
    return a1_wins, self.regret(query.log_pi)

  def regret(self, log_pi: chex.Array) -> chex.Array:
    """The regret term (2.6) of the policy log π (X, A): Σ_x ρ(x) [J(π*, r*) − J(π, r*)] at x."""
    per_prompt = jax.vmap(objectives.regret, (0, 0, 0, None))(
        jnp.exp(log_pi), self.r_star, self.pi_ref, self.beta)
    return jnp.dot(self.rho, per_prompt)


def make_env(r_star, pi_ref, beta, r_max, rho=None, pi_cal=None,
             learner_r_max=None) -> PreferenceEnv:
  """Builds and validates a `PreferenceEnv`.

  `r_star` and `pi_ref` may be shape (A,) (one prompt) or (X, A); `rho` defaults to uniform
  and `pi_cal` to `pi_ref`. β ≥ 0 (β = 0 is the unregularised problem). r* ∈ [0, r_max]; the
  learner's box is [0, learner_r_max] with learner_r_max ≥ r_max (default r_max). Raises
  `ValueError` naming the field for bad input.
  """
  r_star = jnp.asarray(r_star, jnp.float32)
  if r_star.ndim == 1:
    r_star = r_star[None]
  if r_star.ndim != 2:
    raise ValueError(f"r_star must have shape (A,) or (X, A), got {r_star.shape}")
  X, A = r_star.shape
  if A < 2:
    raise ValueError(f"r_star must have at least 2 actions per prompt, got A={A}")
  pi_ref = _per_prompt("pi_ref", pi_ref, X, A)
  _checks.probability("pi_ref", pi_ref, strict=True)
  pi_cal = pi_ref if pi_cal is None else _per_prompt("pi_cal", pi_cal, X, A)
  _checks.probability("pi_cal", pi_cal)
  rho = jnp.full((X,), 1.0 / X) if rho is None else jnp.asarray(rho, jnp.float32)
  _checks.shape("rho", rho, (X,))
  _checks.probability("rho", rho)
  _checks.positive("beta", beta, strict=False)           # β = 0 allowed: greedy π*
  _checks.positive("r_max", r_max)
  _checks.in_range("r_star", r_star, 0.0, r_max)
  r_max = jnp.asarray(r_max, jnp.float32)
  return PreferenceEnv(r_star, pi_ref, rho, jnp.asarray(beta, jnp.float32), r_max, pi_cal,
                       learner_bound(learner_r_max, r_max))


def learner_bound(learner_r_max, r_max) -> chex.Array:
  """The learner's bound as an array: `r_max` when `learner_r_max` is None; ValueError
  naming learner_r_max when it is below the truth's bound r_max (its box must hold r*)."""
  if learner_r_max is None:
    return jnp.asarray(r_max, jnp.float32)
  _checks.positive("learner_r_max", learner_r_max)
  if _checks.is_concrete(learner_r_max, r_max) and float(learner_r_max) < float(r_max):
    raise ValueError(f"learner_r_max must be >= r_max = {float(r_max):g} (the truth's bound: "
                     f"the learner's box [0, learner_r_max] must hold r*), got {learner_r_max}")
  return jnp.asarray(learner_r_max, jnp.float32)


def _per_prompt(field, value, X, A):
  """`value` of shape (A,) (shared by all prompts) or (X, A), as an (X, A) array."""
  value = jnp.asarray(value, jnp.float32)
  if value.shape not in ((A,), (X, A)):
    raise ValueError(f"{field} must have shape ({A},) or ({X}, {A}), got {value.shape}")
  return jnp.broadcast_to(value, (X, A))


def example1(p=0.0, beta=0.5, r_max=3.0, learner_r_max=None) -> PreferenceEnv:
  """Example 1 (VPO's failure): A = {a0, a1, a2}, r* = (1, 0, 0), π_ref uniform,
  π_cal = (1 − 2p, p, p) with 0 ≤ p < 1/4. Proposition 1 needs r_max/β ≥ 3 (and r_max ≥ 1).
  `learner_r_max` ≥ r_max: the learner's box (`make_env`)."""
  if _checks.is_concrete(p) and not 0.0 <= float(p) < 0.25:
    raise ValueError(f"p must lie in [0, 1/4), got {p}")
  pi_cal = jnp.stack([1.0 - 2.0 * jnp.asarray(p, jnp.float32), p, p]).astype(jnp.float32)
  return make_env(jnp.array([1.0, 0.0, 0.0]), jnp.full(3, 1.0 / 3.0), beta, r_max, pi_cal=pi_cal,
                  learner_r_max=learner_r_max)


def example2(kappa=100.0, beta=1.0, r_max=6.0, learner_r_max=None) -> PreferenceEnv:
  """Example 2 (XPO's failure): r* = (0, r_max, r_max − 2), π_ref = (1 − 2/κ, 1/κ, 1/κ), κ ≥ 4.
  Proposition 2 needs β ≤ 1, κ ≤ e^(r_max/β) (and r_max ≥ 2 so that r* ≥ 0). `learner_r_max`
  ≥ r_max: the learner's box (`make_env`)."""
  if _checks.is_concrete(kappa) and not float(kappa) >= 4.0:
    raise ValueError(f"kappa must be >= 4, got {kappa}")
  r_max_ = jnp.asarray(r_max, jnp.float32)
  kappa = jnp.asarray(kappa, jnp.float32)
  r_star = jnp.stack([0.0 * r_max_, r_max_, r_max_ - 2.0])
  pi_ref = jnp.stack([1.0 - 2.0 / kappa, 1.0 / kappa, 1.0 / kappa])
  return make_env(r_star, pi_ref, beta, r_max, learner_r_max=learner_r_max)


def random_instance(key: chex.PRNGKey, num_prompts: int, num_actions: int, beta, r_max,
                    deviation=1.0, learner_r_max=None) -> PreferenceEnv:
  """Random r* ~ U[0, r_max]^(X×A), ρ ~ Dirichlet(1), and π_ref ∝ exp((1 − d)·r*) per prompt.

  `deviation` d sets how far π_ref is from human preference π_HF ∝ e^(r*): d = 0 gives
  π_ref = π_HF, d = 1 uniform π_ref, d = 2 the reversed preference. Assumption 2 of
  Appendix E then holds with log μ = d · max_x (max_a r* − min_a r*). `learner_r_max` ≥
  r_max: the learner's box (`make_env`).
  """
  _checks.positive_int("num_prompts", num_prompts)
  _checks.positive_int("num_actions", num_actions)
  _checks.positive("r_max", r_max)
  learner_bound(learner_r_max, r_max)
  _checks.in_range("deviation", deviation, 0.0, 2.0)
  k1, k2 = jax.random.split(key)
  r_star = jax.random.uniform(k1, (num_prompts, num_actions)) * r_max
  rho = jax.random.dirichlet(k2, jnp.ones(num_prompts))
  pi_ref = jax.nn.softmax((1.0 - deviation) * r_star, axis=-1)
  return make_env(r_star, pi_ref, beta, r_max, rho=rho, learner_r_max=learner_r_max)


def preference(key: chex.PRNGKey, env: PreferenceEnv, x, a1, a2) -> chex.Array:
  """The Bradley–Terry oracle (2.1): True with probability σ(r*(x, a1) − r*(x, a2))."""
  return oracle(key, env.r_star[x], a1, a2)


def oracle(key: chex.PRNGKey, r_star: chex.Array, a1, a2) -> chex.Array:
  """The Bradley–Terry oracle (2.1) on one prompt's rewards r* (A,): True with probability
  σ(r*(a1) − r*(a2))."""
  return jax.random.bernoulli(key, jax.nn.sigmoid(r_star[a1] - r_star[a2]))
