"""Contextual preference environments: many prompts with features φ(x, a) and a linear reward.

The RLHF paper's analysis is for the bandit case (no prompt); its discussion names the prompt
space as the open direction. Here X is large (up to 10^4 prompts), each (prompt, answer) has
features φ(x, a) ∈ R^d, the true reward is linear, r*(x, a) = θ*ᵀφ(x, a) — by default
affinely scaled into [0, r_max] (`reward_scale = "range"`: the offset is invisible to the
Bradley–Terry oracle (2.1), so the scaled reward is still θᵀφ up to a constant), or as given
(`"none"`) — and π_ref is log-linear, π_ref ∝ exp((1 − d) r*) at a chosen
deviation d from human preference π_HF ∝ e^{r*} (d = 0: π_ref = π_HF; 1: uniform; 2:
reversed), as in `rbx.rlhf.random_instance`. The optimal policy π* ∝ π_ref e^{r*/β} is then
log-linear in φ, so the log-linear policy of `rbx.rlhf.learners.policies` can represent it.

**Hard instances**, the contextual analogues of the paper's failure cases:

* `deviation = 2`, π_ref ∝ e^{−r*}: the reference prefers the worst answers, so π_ref is far
  from π* and its samples are the least informative about the top of r*.
* `kappa = κ` (`trap_reference`), Example 2 at every prompt: the worst answer has π_ref mass
  1 − (A − 1)/κ and every other answer 1/κ, the best included. A scheme drawing a2 from π_ref
  (XPO/SELM) compares against the worst answer in all but (A − 1)/κ of its rounds, which says
  how each answer beats the worst but little about which of the good ones is best; a scheme
  drawing both answers from its own policy, started at π_ref and with no bonus (online
  MLE/DPO), draws the worst answer twice — a tie, no information — in a share
  (1 − (A − 1)/κ)² of its first rounds. Optimism (Algorithm 1, VPO) raises the rewards the
  data leave free, moving π^(t) onto the rarely seen answers. With a shared θ every comparison
  informs every prompt, so whether this slows learning here as much as in Example 2 is an
  empirical question (REPRODUCTION.md).

As an environment it is `rbx.rlhf.PreferenceEnv`'s: prompts x ~ ρ, the oracle (2.1), the
regret (2.6); the learner is told a `ContextualTask` — the `Task` fields plus φ — so the
exact-solver agents of `rbx.rlhf.learners.tabular` (which read only the `Task` fields, solving |X|
problems of A actions per step) and the practical agents of `rbx.rlhf.learners.practical` both run
on it.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.rlhf import drift as drift_lib, env as env_lib


class ContextualTask(NamedTuple):
  """What the learner is told: `rbx.rlhf.Task`'s fields and the features.

  Attributes:
    pi_ref: π_ref, (X, A). rho: ρ, (X,). beta: β. r_max: the learner's reward bound.
    pi_cal: the fixed calibration policy (π_ref), (X, A).
    features: φ(x, a), (X, A, d).
  """
  pi_ref: chex.Array
  rho: chex.Array
  beta: chex.Array
  r_max: chex.Array
  pi_cal: chex.Array
  features: chex.Array


class ContextualPreferenceEnv(NamedTuple):
  """A `PreferenceEnv` whose rewards are linear in features (all fields arrays: traceable).

  Attributes:
    base: the preference environment (r*, π_ref, ρ, β, r_max, π_cal), shapes (X, A).
    features: φ(x, a), (X, A, d).
    theta_star: θ* with r*(x, a) = θ*ᵀφ(x, a) + c_x, (d,) (c_x: an offset, invisible to the
      oracle and the regret: the scaling's, the same at every prompt, with `reward_scale =
      "range"`; each prompt's least θ*ᵀφ, negated, with `"none"`).
  """
  base: env_lib.PreferenceEnv
  features: chex.Array
  theta_star: chex.Array

  @property
  def num_prompts(self) -> int:
    """|X|."""
    return self.base.num_prompts

  @property
  def num_actions(self) -> int:
    """A."""
    return self.base.num_actions

  @property
  def dim(self) -> int:
    """d, the feature dimension."""
    return self.features.shape[-1]

  @property
  def beta(self) -> chex.Array:
    """β."""
    return self.base.beta

  @property
  def r_max(self) -> chex.Array:
    """r_max, the truth's bound."""
    return self.base.r_max

  @property
  def learner_r_max(self) -> chex.Array:
    """The learner's bound (≥ r_max)."""
    return self.base.learner_r_max

  @property
  def spec(self) -> ContextualTask:
    """What the learner is told: π_ref, ρ, β, its bound, π_cal and φ (not r* or θ*)."""
    return ContextualTask(*self.base.spec, self.features)

  def reset(self, key: chex.PRNGKey) -> tuple:
    """No per-seed environment state: ()."""
    return self.base.reset(key)

  def observe(self, key: chex.PRNGKey, state: tuple):
    """The step's prompt x ~ ρ (`PreferenceEnv.observe`)."""
    return self.base.observe(key, state)

  def feedback(self, key: chex.PRNGKey, state: tuple, obs, query):
    """(the oracle's comparison, the ρ-weighted regret term) (`PreferenceEnv.feedback`)."""
    return self.base.feedback(key, state, obs, query)

  def regret(self, log_pi: chex.Array) -> chex.Array:
    """The regret term (2.6) of log π (X, A) (`PreferenceEnv.regret`)."""
    return self.base.regret(log_pi)

  def at(self, theta: chex.Array, reward_scale: str) -> ContextualPreferenceEnv:
    """The environment with the truth θ (d,) in place of θ*: r* = θᵀφ held as `reward_scale`
    says (`scaled`, within this r_max), π_ref, ρ, π_cal and the bounds unchanged (a drifting
    truth's round, `rbx.rlhf.drift`)."""
    r_star, scale = scaled(self.features @ theta, self.r_max, reward_scale)
    return self._replace(base=self.base._replace(r_star=r_star), theta_star=theta * scale)


def trap_reference(r_star: chex.Array, kappa) -> chex.Array:
  """Example 2's π_ref at every prompt: 1 − (A − 1)/κ on the prompt's worst answer, 1/κ on
  each other one; r* (X, A) -> π_ref (X, A). κ ≥ A (κ = A: uniform)."""
  A = r_star.shape[-1]
  worst = jax.nn.one_hot(jnp.argmin(r_star, axis=-1), A)
  return worst * (1.0 - A / kappa) + 1.0 / kappa


def reference_policy(r_star: chex.Array, deviation, kappa=None) -> chex.Array:
  """π_ref from the rewards r* (..., A): ∝ exp((1 − deviation) r*) per prompt, or with `kappa`
  Example 2's trap (`trap_reference`); either is invariant to a per-prompt shift of r*."""
  return (jax.nn.softmax((1.0 - deviation) * r_star, axis=-1) if kappa is None
          else trap_reference(r_star, kappa))


REWARD_SCALES = ("range", "none")


def make_contextual(features, theta_star, beta, r_max=None, deviation=1.0, rho=None,
                    learner_r_max=None, kappa=None,
                    reward_scale: str = "range"
                    ) -> ContextualPreferenceEnv | drift_lib.DriftingEnv:
  """Builds and validates a contextual environment from features and θ* (or a θ*_t schedule).

  `reward_scale = "range"`: r*(x, a) = r_max (θ*ᵀφ(x, a) − m)/(M − m) with m, M the least and
  largest θ*ᵀφ over all (x, a) (r* = r_max/2 everywhere if they are equal) — the best answer
  of the instance beats its worst with probability σ(r_max), whatever the scale of θ* and φ.
  `"none"`: r*(x, a) = θ*ᵀφ(x, a) as given — the Bradley–Terry noise is the user's, set by
  ‖θ*‖ and φ; the environment holds each prompt's rewards less their least (an offset the
  oracle (2.1) and the regret (2.6) do not see), r_max is the truth's bound
  max_x (max_a − min_a) θ*ᵀφ(x, a) (or a given r_max at least that), and the learner's box is
  [0, learner_r_max] on the same shifted rewards. π_ref ∝ exp((1 − deviation) r*), or with
  `kappa` Example 2's trap (`trap_reference`).

  Args:
    features: φ, shape (X, A, d) with X ≥ 1, A ≥ 2, d ≥ 1, finite.
    theta_star: θ*, shape (d,), finite; or a θ*_t schedule (`rbx.rlhf.drift.Drift`, θ*_t of
      shape (d,)): a `rbx.rlhf.drift.DriftingEnv` built at θ*₀, with ("none") r_max by default
      the widest range over the schedule (`Drift.bound`).
    beta: β ≥ 0 (0: the unregularised problem, for the tabular exact agents).
    r_max: > 0; with `"none"` None (the default) for the rewards' own bound; needed with
      `"range"`.
    deviation: π_ref's distance from π_HF, in [0, 2].
    rho: the prompt distribution, (X,); default uniform.
    learner_r_max: the learner's bound ≥ r_max (default r_max; `rbx.rlhf.make_env`).
    kappa: None, or κ ≥ A: π_ref = `trap_reference(r*, κ)` (then `deviation` must be 1).
    reward_scale: "range" or "none" (`REWARD_SCALES`), above.
  Raises:
    ValueError naming the field, for any bad input (before anything compiles).
  """
  check_options(beta, r_max, deviation, learner_r_max, reward_scale)
  if isinstance(theta_star, drift_lib.Drift):       # θ*_t: the environment at θ*₀, drifting
    phi = jnp.asarray(features, jnp.float32)
    if phi.ndim == 3 and phi.shape[-1] != theta_star.dim:
      raise ValueError(f"theta_star: the schedule's θ*_t has dimension {theta_star.dim}, the "
                       f"features d = {phi.shape[-1]} (features (X, A, d))")
    if reward_scale == "none" and r_max is None and phi.ndim == 3:
      r_max = theta_star.bound(phi)
    env = make_contextual(phi, theta_star.theta0, beta, r_max, deviation, rho, learner_r_max,
                          kappa, reward_scale)
    return drift_lib.DriftingEnv(env, theta_star, reward_scale)
  phi, theta = jnp.asarray(features, jnp.float32), jnp.asarray(theta_star, jnp.float32)
  if phi.ndim != 3:
    raise ValueError(f"features must have shape (X, A, d), got {phi.shape}")
  X, A, d = phi.shape
  if X < 1:
    raise ValueError(f"features must have at least one prompt (|X| >= 1), got X={X}")
  if A < 2 or d < 1:
    raise ValueError(f"features must have A >= 2 answers and d >= 1, got shape {phi.shape}")
  _checks.shape("theta_star", theta, (d,))
  if kappa is not None:
    if deviation != 1.0:
      raise ValueError(f"give deviation or kappa, not both: π_ref is the trap at kappa, got "
                       f"deviation={deviation}")
    _checks.in_range("kappa", kappa, float(A), float("inf"))
  if _checks.is_concrete(phi, theta):
    if not np.isfinite(np.asarray(phi)).all():
      raise ValueError("features must be finite")
    if not np.isfinite(np.asarray(theta)).all():
      raise ValueError(f"theta_star must be finite, got {np.asarray(theta)}")
  score = phi @ theta                                               # θ*ᵀφ(x, a), (X, A)
  if reward_scale == "none":
    r_max = _own_bound(score, r_max)
  r_star, scale = scaled(score, r_max, reward_scale)
  pi_ref = reference_policy(r_star, deviation, kappa)
  base = env_lib.make_env(r_star, pi_ref, beta, r_max, rho=rho, learner_r_max=learner_r_max)
  return ContextualPreferenceEnv(base, phi, theta * scale)


def check_options(beta, r_max, deviation, learner_r_max, reward_scale: str) -> None:
  """ValueError naming the field for a bad β, r_max, deviation, learner_r_max or reward_scale
  of `make_contextual` (before anything is built)."""
  _checks.positive("beta", beta, strict=False)             # β = 0: the unregularised problem
  _checks.choice("reward_scale", reward_scale, REWARD_SCALES)
  if r_max is None and reward_scale == "range":
    raise ValueError("r_max=? is needed with reward_scale='range' (the bound r* is scaled to); "
                     "give it, or reward_scale='none' for the rewards as given")
  if r_max is not None:
    _checks.positive("r_max", r_max)
    env_lib.learner_bound(learner_r_max, r_max)
  _checks.in_range("deviation", deviation, 0.0, 2.0)


def scaled(score: chex.Array, r_max, reward_scale: str) -> tuple[chex.Array, chex.Array]:
  """(r*, c): the rewards of the scores θᵀφ (X, A) as `reward_scale` holds them, in [0, r_max]
  (`make_contextual`), and the factor c with r* = c θᵀφ + a per-prompt offset."""
  if reward_scale == "none":
    r_star, scale = _as_given(score), 1.0
  else:
    lo, hi = jnp.min(score), jnp.max(score)
    scale = jnp.where(hi > lo, r_max / jnp.where(hi > lo, hi - lo, 1.0), 0.0)
    r_star = jnp.where(hi > lo, (score - lo) * scale, 0.5 * r_max)
  return jnp.clip(r_star, 0.0, r_max), scale                        # float32 rounding at the ends


def _as_given(score: chex.Array) -> chex.Array:
  """θ*ᵀφ (X, A) less each prompt's least: r* as `reward_scale = "none"` holds it."""
  return score - jnp.min(score, axis=-1, keepdims=True)


def _own_bound(score: chex.Array, r_max):
  """The truth's bound of rewards as given: max_x (max_a − min_a) θ*ᵀφ, or `r_max` where the
  user gave one (ValueError naming r_max if it is below that)."""
  widest = jnp.max(jnp.max(score, axis=-1) - jnp.min(score, axis=-1))
  if not _checks.is_concrete(widest):
    return widest if r_max is None else jnp.asarray(r_max, jnp.float32)
  if r_max is None:
    if float(widest) <= 0.0:
      raise ValueError("reward_scale='none' needs rewards θ*ᵀφ that differ at some prompt (every "
                       "prompt's answers tie: there is no preference to learn)")
    return widest
  if float(r_max) < float(widest) * (1.0 - 1e-6):
    raise ValueError(f"r_max must be >= {float(widest):g}, the widest prompt's range of θ*ᵀφ "
                     f"(reward_scale='none' keeps the rewards as given), got {r_max}")
  return jnp.asarray(r_max, jnp.float32)


def random_contextual(key: chex.PRNGKey, num_prompts: int, num_actions: int, dim: int, beta,
                      r_max=None, deviation=1.0, learner_r_max=None, kappa=None,
                      reward_scale: str = "range", drift: str | None = None, drift_start=None,
                      drift_end=None) -> ContextualPreferenceEnv | drift_lib.DriftingEnv:
  """A random contextual environment: φ(x, a) ~ N(0, I_d/d), θ* ~ N(0, I_d), uniform ρ.

  Args:
    key: the instance's key.
    num_prompts, num_actions, dim: |X| ≥ 1, A ≥ 2, d ≥ 1.
    beta, r_max, deviation, learner_r_max, kappa, reward_scale: as `make_contextual`.
    drift: None, or a θ*_t schedule's kind (`rbx.rlhf.drift.SCHEDULES`) from θ*₀ = θ* to
      θ*₁ ~ N(0, I_d) (drawn from `fold_in(key, 2)`: `split(key)`'s keys are `fold_in(key, 0)`
      and `fold_in(key, 1)`), over rounds `drift_start`, `drift_end`
      (`rbx.rlhf.drift.drift`).
  """
  _checks.positive_int("num_prompts", num_prompts)
  _checks.positive_int("num_actions", num_actions)
  _checks.positive_int("dim", dim)
  k1, k2 = jax.random.split(key)
  phi = jax.random.normal(k1, (num_prompts, num_actions, dim)) / np.sqrt(dim)
  theta = jax.random.normal(k2, (dim,))
  if drift is not None:
    theta = drift_lib.drift(drift, theta, jax.random.normal(jax.random.fold_in(key, 2), (dim,)),
                            drift_start, drift_end)
  return make_contextual(phi, theta, beta, r_max, deviation, learner_r_max=learner_r_max,
                         kappa=kappa, reward_scale=reward_scale)
