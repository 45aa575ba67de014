"""Preferences that drift: a truth θ*_t that moves with the round t, and the dynamic regret.

A schedule (`Drift`) moves the linear truth from θ*₀ to θ*₁ over the rounds t = 1, 2, …:

* `switch`:   θ*_t = θ*₀ for t < t₀, θ*₁ from t₀ on (an abrupt change at t₀);
* `linear`:   θ*_t = (1 − λ_t) θ*₀ + λ_t θ*₁ with λ_t = clip((t − t₀)/(t₁ − t₀), 0, 1);
* `rotation`: θ*_t = n_t (cos(λ_t ω) u + sin(λ_t ω) v), the same λ_t, in the plane of θ*₀ and
  θ*₁: u = θ*₀/‖θ*₀‖, v the unit vector of θ*₁'s part orthogonal to θ*₀, ω = ∠(θ*₀, θ*₁) and
  n_t = (1 − λ_t)‖θ*₀‖ + λ_t‖θ*₁‖ (a rotation at constant norm when ‖θ*₀‖ = ‖θ*₁‖), from θ*₀
  to θ*₁.

Given as `theta_star` to `rbx.rlhf.make_contextual` or `rbx.rlhf.generated_contextual`, a
schedule makes the environment a `DriftingEnv`: the environment built at θ*₀, whose state
counts the rounds (`reset`: t = 0; `observe`: t + 1), and whose oracle (2.1) and regret term
(2.6) at round t read the truth θ*_t (`DriftingEnv.truth`), its rewards r*_t = θ*_tᵀφ held as
`reward_scale` says at every t — "range": θ*_t's own range scaled into [0, r_max], so the
Bradley–Terry noise level (the best answer beats the worst with probability σ(r_max)) is the
same at every t; "none": as given, with the truth's bound r_max (by default) the widest range
over the whole schedule (`Drift.bound`), so the learner's box holds every r*_t. A run's regret
is then the dynamic regret Σ_t [J(π*_t, r*_t) − J(π^(t), r*_t)] against the moving optimum
π*_t ∝ π_ref e^{r*_t/β}. π_ref, the evaluation pool and what the learner is told (`spec`) are
θ*₀'s and do not move: the reference model is fixed, and the learner is told nothing of the
drift. The dueling regrets the stationary environments record beside (2.6) are not recorded.

The peer's schedules (wsolow/online-ns-dpo, `synthetic/envs/reward.py`; its step i is round
t = i + 1 — with its `train_per_step` = k comparisons a step, rounds ik + 1 … (i + 1)k here,
every t below times k): `linear_rparams` is `linear` with t₀ = 1, t₁ = T + 1 (λ = i/T); `faury_rparams` is
`rotation` from θ*₀ = (1, 0, 1, 0, …)/√k to θ*₁ = (0, 1, 0, 1, …)/√k over
t₀ = ⌊T/3⌋ + 1, t₁ = ⌊2T/3⌋ + 1 (its `drift_coef` = 1), held at θ*₁ after it here (its code
sets the angle (t₂/(t₂ − t₁))·π/2 there, π at T divisible by 3, not the rotation's end).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks

SCHEDULES = ("switch", "linear", "rotation")
"""The θ*_t schedules (module docstring)."""


@dataclasses.dataclass(frozen=True)
class Drift:
  """A θ*_t schedule (module docstring); a pytree, its kind static.

  Attributes:
    theta0, theta1: θ*₀ and θ*₁, (d,) float32, as the user gives them (before `reward_scale`).
    start: t₀, the first round that moves (float32 scalar).
    end: t₁ > t₀, the round λ reaches 1 (`linear`, `rotation`); t₀ for `switch`.
    kind: one of `SCHEDULES`.
  """
  theta0: chex.Array
  theta1: chex.Array
  start: chex.Array
  end: chex.Array
  kind: str = dataclasses.field(metadata=dict(static=True))

  @property
  def dim(self) -> int:
    """d."""
    return self.theta0.shape[-1]

  def progress(self, t) -> chex.Array:
    """λ_t ∈ [0, 1]: 1[t ≥ t₀] (`switch`), else clip((t − t₀)/(t₁ − t₀), 0, 1); float32."""
    t = jnp.asarray(t, jnp.float32)
    if self.kind == "switch":
      return (t >= self.start).astype(jnp.float32)
    return jnp.clip((t - self.start) / (self.end - self.start), 0.0, 1.0)

  def at(self, t) -> chex.Array:
    """θ*_t at round t (1-based), (d,); θ*₀ itself before t₀ (`switch`, `linear`)."""
    lam = self.progress(t)
    if self.kind != "rotation":
      return (1.0 - lam) * self.theta0 + lam * self.theta1
    u, v, omega, n0, n1 = self._plane()
    return ((1.0 - lam) * n0 + lam * n1) * (jnp.cos(lam * omega) * u + jnp.sin(lam * omega) * v)

  def _plane(self):
    """(u, v, ω, ‖θ*₀‖, ‖θ*₁‖) of the rotation (module docstring); v = 0 where θ*₁ ∥ θ*₀."""
    n0, n1 = jnp.linalg.norm(self.theta0), jnp.linalg.norm(self.theta1)
    u = self.theta0 / n0
    along = jnp.dot(self.theta1, u)
    w = self.theta1 - along * u
    nw = jnp.linalg.norm(w)
    v = jnp.where(nw > 0, w / jnp.where(nw > 0, nw, 1.0), 0.0)
    return u, v, jnp.arctan2(nw, along), n0, n1

  def bound(self, features: chex.Array) -> chex.Array:
    """The widest reward range max_x (max_a − min_a) θ*_tᵀφ(x, a) over every t, from the
    features (X, A, d): exact for `switch` and `linear` (the range is convex in θ, so a
    segment's widest is at an end); for `rotation` the bound max(‖θ*₀‖, ‖θ*₁‖) ·
    max_{x,a,b} ‖P(φ(x, a) − φ(x, b))‖, P the projection onto the rotation's plane."""
    widest = lambda theta: jnp.max(jnp.ptp(features @ theta, axis=-1))
    if self.kind != "rotation":
      return jnp.maximum(widest(self.theta0), widest(self.theta1))
    u, v, _, n0, n1 = self._plane()
    p = features @ jnp.stack([u, v], axis=-1)                          # (X, A, 2)
    gaps = jnp.linalg.norm(p[:, :, None] - p[:, None], axis=-1)        # (X, A, A)
    return jnp.maximum(n0, n1) * jnp.max(gaps)


jax.tree_util.register_dataclass(Drift, data_fields=["theta0", "theta1", "start", "end"],
                                 meta_fields=["kind"])


def drift(kind: str, theta0, theta1, start, end=None) -> Drift:
  """A θ*_t schedule from θ*₀ to θ*₁ (module docstring), validated.

  Args:
    kind: "switch", "linear" or "rotation" (`SCHEDULES`).
    theta0, theta1: θ*₀ and θ*₁, (d,) each, finite; for `rotation` θ*₀ ≠ 0 and θ*₁ not
      opposite to it (the plane of the rotation is then not defined).
    start: t₀ ≥ 1, the round of the switch, or where λ leaves 0.
    end: t₁ > t₀, where λ reaches 1 (`linear`, `rotation`); None for `switch`.
  Raises:
    ValueError naming the field, before anything compiles.
  """
  _checks.choice("drift kind", kind, SCHEDULES)
  theta0, theta1 = jnp.asarray(theta0, jnp.float32), jnp.asarray(theta1, jnp.float32)
  if theta0.ndim != 1 or theta0.shape[0] < 1:
    raise ValueError(f"theta0 (θ*₀) must have shape (d,) with d >= 1, got {theta0.shape}")
  if theta1.shape != theta0.shape:
    raise ValueError(f"theta1 (θ*₁) must have θ*₀'s shape {theta0.shape}, got {theta1.shape}")
  for field, theta in (("theta0", theta0), ("theta1", theta1)):
    if _checks.is_concrete(theta) and not np.isfinite(np.asarray(theta)).all():
      raise ValueError(f"{field} must be finite, got {np.asarray(theta)}")
  _checks.in_range("start", start, 1.0, np.inf)
  if kind == "switch":
    if end is not None:
      raise ValueError(f"end is for the linear and rotation schedules (where λ reaches 1); a "
                       f"switch happens at start alone, got end={end}")
    end = start
  elif end is None:
    raise ValueError(f"end=? is needed by the {kind} schedule (the round where θ*_t reaches θ*₁)")
  elif _checks.is_concrete(start, end) and not float(end) > float(start):
    raise ValueError(f"end must be > start = {start} (the round where θ*_t reaches θ*₁), got {end}")
  schedule = Drift(theta0, theta1, jnp.asarray(start, jnp.float32),
                   jnp.asarray(end, jnp.float32), kind)
  if kind == "rotation" and _checks.is_concrete(theta0, theta1):
    t0, t1 = np.asarray(theta0, float), np.asarray(theta1, float)
    n0, n1 = np.linalg.norm(t0), np.linalg.norm(t1)
    if n0 == 0.0 or n1 == 0.0:
      raise ValueError("a rotation needs θ*₀ ≠ 0 and θ*₁ ≠ 0 (theta0, theta1): the plane and "
                       "the angle are not defined")
    if np.dot(t0, t1) / (n0 * n1) < -1.0 + 1e-6:
      raise ValueError("a rotation needs θ*₁ not opposite to θ*₀ (theta1 = −c·theta0): the plane "
                       "of the rotation is not defined; use two rotations or the linear schedule")
  return schedule


class DriftState(NamedTuple):
  """A drifting environment's state: the wrapped environment's, and the round t (int32, 0
  before round 1; `observe` counts it)."""
  env: Any
  t: chex.Array


@dataclasses.dataclass(frozen=True)
class DriftingEnv:
  """A contextual environment whose truth follows a θ*_t schedule (module docstring); a pytree.

  Attributes:
    env: the environment at θ*₀ (`rbx.rlhf.ContextualPreferenceEnv` or
      `rbx.rlhf.GeneratedContextualEnv`): π_ref, the pool, the bounds and the learner's spec.
    drift: the schedule (`Drift`).
    reward_scale: "range" or "none", how every θ*_t's rewards are held
      (`rbx.rlhf.make_contextual`).
  """
  env: Any
  drift: Drift
  reward_scale: str = dataclasses.field(metadata=dict(static=True))

  @property
  def spec(self):
    """What the learner is told: θ*₀'s environment's spec (nothing of the drift)."""
    return self.env.spec

  @property
  def num_prompts(self) -> int:
    """|X| (the evaluation pool's m on generated contexts)."""
    return self.env.num_prompts

  @property
  def num_actions(self) -> int:
    """A."""
    return self.env.num_actions

  @property
  def dim(self) -> int:
    """d."""
    return self.env.dim

  @property
  def beta(self) -> chex.Array:
    """β."""
    return self.env.beta

  @property
  def r_max(self) -> chex.Array:
    """The truth's bound, over every θ*_t."""
    return self.env.r_max

  @property
  def learner_r_max(self) -> chex.Array:
    """The learner's bound (≥ r_max)."""
    return self.env.learner_r_max

  @property
  def base(self):
    """θ*₀'s preference environment (the instance's constants, e.g. `rbx.rlhf.assumptions`)."""
    return self.env.base

  def truth(self, t):
    """The environment at round t: the wrapped one with θ*_t's rewards (the same π_ref, π_cal,
    ρ and pool)."""
    return self.env.at(self.drift.at(t), self.reward_scale)

  def reset(self, key: chex.PRNGKey) -> DriftState:
    """The wrapped environment's state and t = 0."""
    return DriftState(self.env.reset(key), jnp.zeros((), jnp.int32))

  def observe(self, key: chex.PRNGKey, state: DriftState):
    """The wrapped environment's observation (π_ref θ*₀'s), and t + 1."""
    inner, obs = self.env.observe(key, state.env)
    return DriftState(inner, state.t + 1), obs

  def feedback(self, key: chex.PRNGKey, state: DriftState, obs, query):
    """(the oracle (2.1) under r*_t, the regret term (2.6) against π*_t): the truth's at t."""
    return self.truth(state.t).feedback(key, state.env, obs, query)

  def regret(self, policy, t) -> chex.Array:
    """The regret term (2.6) of a deployed policy at round t, under θ*_t."""
    return self.truth(t).regret(policy)


jax.tree_util.register_dataclass(DriftingEnv, data_fields=["env", "drift"],
                                 meta_fields=["reward_scale"])
