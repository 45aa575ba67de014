"""K-armed contextual bandit environments (section 2.1 and Appendix F).

A round presents, for each arm a, a context (features (d,), first-layer block): the
classification bandit uses the disjoint encoding of Appendix F — arm i's context is the
d'K-vector with x in block i, represented by (x, block i) and never built — and the synthetic
bandits give each arm its own context on the unit sphere with one shared block.

An environment is a pytree (its arrays can be traced) implementing `rbx.core.Environment`:
`spec` (a `Spec`: what the learner is told), `reset(key)` (the per-seed state),
`observe(key, state) -> (state, Context)` for the next round and
`feedback(key, state, obs, arm) -> (reward, regret)` with the same key as `observe`, where
the regret is max_a E[r_{t,a}] − E[r_{t,arm}], a term of (1). The learner sees only the
`Context` and its arm's reward; `means` (the expected rewards of every arm) is the
environment's own.
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks


class Spec(NamedTuple):
  """What the learner is told about a bandit (Python ints).

  Attributes:
    dim: d, the features of an arm's context.
    num_arms: K.
    num_blocks: the first layer's blocks: K under the disjoint encoding, 1 for shared contexts.
  """
  dim: int
  num_arms: int
  num_blocks: int


class Context(NamedTuple):
  """One round's observation: the arms' contexts. Shapes: K arms, d features.

  Attributes:
    x: the arms' features, (K, d).
    block: the arms' first-layer blocks, (K,) int.
  """
  x: chex.Array
  block: chex.Array


class ClassificationState(NamedTuple):
  """A classification bandit's per-seed state.

  Attributes:
    order: the seed's shuffled order of the data, (n,) int.
    t: the rounds observed so far, int32 scalar; round t uses row order[(t − 1) mod n].
  """
  order: chex.Array
  t: chex.Array


def _pytree(*meta):
  def wrap(cls):
    cls = dataclasses.dataclass(frozen=True)(cls)
    data = [f.name for f in dataclasses.fields(cls) if f.name not in meta]
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=list(meta))
  return wrap


@_pytree("num_arms")
class ClassificationEnv:
  """A classification data set as a bandit: reward 1 for the true class, else 0 (Appendix F).

  Attributes:
    features: (n, d') rows scaled to unit norm (‖x_{t,a}‖ ≤ 1 of section 2.1).
    labels: (n,) int in [0, K).
    num_arms: K, the number of classes (static).
  """
  features: chex.Array
  labels: chex.Array
  num_arms: int

  @property
  def dim(self) -> int:
    """d', the number of features."""
    return self.features.shape[1]

  @property
  def num_blocks(self) -> int:
    """The first layer's blocks: K, one per arm (the disjoint encoding)."""
    return self.num_arms

  @property
  def spec(self) -> Spec:
    """(d', K, K): the disjoint encoding has one first-layer block per arm."""
    return Spec(self.dim, self.num_arms, self.num_blocks)

  def reset(self, key: chex.PRNGKey) -> ClassificationState:
    """The seed's shuffled order of the data, (n,), before round 1."""
    return ClassificationState(jax.random.permutation(key, self.features.shape[0]),
                               jnp.zeros((), jnp.int32))

  def row(self, state: ClassificationState) -> chex.Array:
    """The data row of the round last observed: order[(t − 1) mod n]."""
    return state.order[(state.t - 1) % state.order.shape[0]]

  def observe(self, key: chex.PRNGKey, state: ClassificationState):
    """The next round t: row order[(t − 1) mod n] for every arm (arm a in block a)."""
    del key
    state = state._replace(t=state.t + 1)
    K = self.num_arms
    x = jnp.broadcast_to(self.features[self.row(state)], (K, self.dim))
    return state, Context(x, jnp.arange(K))

  def means(self, state: ClassificationState, obs: Context) -> chex.Array:
    """E[r_{t,a}] of every arm, (K,): 1 at the row's label, else 0."""
    del obs
    return jax.nn.one_hot(self.labels[self.row(state)], self.num_arms)

  def feedback(self, key: chex.PRNGKey, state: ClassificationState, obs: Context, arm):
    """(reward 1 if `arm` is the row's label else 0, regret max_a E[r_a] − E[r_arm])."""
    del key
    mean = self.means(state, obs)
    return mean[arm], jnp.max(mean) - mean[arm]


SYNTHETIC_REWARDS = ("linear", "quadratic", "cosine")


@_pytree("num_arms", "reward")
class SyntheticEnv:
  """Contexts x_{t,a} uniform on the unit sphere of R^d, independent over arms and rounds;
  r_{t,a} = h(x_{t,a}) + noise·N(0, 1) with h(x) = xᵀa, 10(xᵀa)² or cos(3xᵀa).

  Attributes:
    a: the unit vector of h, (d,).
    noise: the reward noise's standard deviation, scalar.
    num_arms: K (static).
    reward: "linear", "quadratic" or "cosine" (static).
  """
  a: chex.Array
  noise: chex.Array
  num_arms: int
  reward: str

  @property
  def dim(self) -> int:
    """d, the contexts' dimension."""
    return self.a.shape[0]

  @property
  def num_blocks(self) -> int:
    """One block: every arm's context goes through the same first layer."""
    return 1

  @property
  def spec(self) -> Spec:
    """(d, K, 1): every arm's context goes through the same first layer."""
    return Spec(self.dim, self.num_arms, self.num_blocks)

  def reset(self, key: chex.PRNGKey) -> chex.Array:
    """No per-seed data order (contexts are drawn afresh each round): a placeholder."""
    del key
    return jnp.zeros((), jnp.int32)

  def h(self, x: chex.Array) -> chex.Array:
    """The reward function h, x (..., d) -> (...)."""
    s = x @ self.a
    return {"linear": s, "quadratic": 10.0 * s ** 2, "cosine": jnp.cos(3.0 * s)}[self.reward]

  def observe(self, key: chex.PRNGKey, state):
    """K fresh contexts on the unit sphere, drawn from the first half of split(key)."""
    kx, _ = jax.random.split(key)
    x = jax.random.normal(kx, (self.num_arms, self.dim))
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True)
    return state, Context(x, jnp.zeros(self.num_arms, jnp.int32))

  def means(self, state, obs: Context) -> chex.Array:
    """E[r_{t,a}] = h(x_{t,a}) of every arm, (K,)."""
    del state
    return self.h(obs.x)

  def feedback(self, key: chex.PRNGKey, state, obs: Context, arm):
    """(r_{t,arm} = h(x_{t,arm}) + noise·N(0, 1), regret max_a h(x_{t,a}) − h(x_{t,arm})).

    The noise of all K arms is drawn from the second half of split(key) (`observe`'s key), and
    the arm's entry taken."""
    _, kr = jax.random.split(key)
    mean = self.means(state, obs)
    reward = mean + self.noise * jax.random.normal(kr, (self.num_arms,))
    return reward[arm], jnp.max(mean) - mean[arm]


Env = ClassificationEnv | SyntheticEnv


def classification(features, labels, num_arms: int | None = None) -> ClassificationEnv:
  """A bandit from a classification data set: features (n, d'), integer labels (n,).

  `num_arms` defaults to max(labels) + 1. Rows are scaled to unit norm (zero rows stay zero).
  Raises `ValueError` naming the field for non-finite features, labels outside [0, K), K < 2.
  """
  X = np.asarray(features, dtype=np.float32)
  if X.ndim != 2 or X.shape[0] == 0:
    raise ValueError(f"features must have shape (n, d') with n >= 1, got {X.shape}")
  if not np.isfinite(X).all():
    raise ValueError(f"features must be finite; {int((~np.isfinite(X)).sum())} entries are NaN or inf")
  y = np.asarray(labels)
  _checks.shape("labels", y, (X.shape[0],))
  if not np.issubdtype(y.dtype, np.integer):
    raise ValueError(f"labels must be integers, got dtype {y.dtype}")
  K = int(y.max()) + 1 if num_arms is None else num_arms
  if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 2:
    raise ValueError(f"num_arms must be an integer >= 2, got {K!r}")
  if y.min() < 0 or y.max() >= K:
    raise ValueError(f"labels must lie in [0, {K}) (num_arms={K}), got range [{y.min()}, {y.max()}]")
  norm = np.linalg.norm(X, axis=1, keepdims=True)
  X = X / np.where(norm > 0, norm, 1.0)
  return ClassificationEnv(jnp.asarray(X), jnp.asarray(y, jnp.int32), int(K))


def synthetic(reward: str = "linear", dim: int = 5, num_arms: int = 4, noise=0.1,
              a=None, seed: int = 0) -> SyntheticEnv:
  """A synthetic bandit; `a` defaults to a random unit vector drawn from `seed`.

  `noise` may be traced (swept); sizes and the reward kind are static.
  """
  _checks.choice("reward", reward, SYNTHETIC_REWARDS)
  _checks.positive_int("dim", dim)
  if isinstance(num_arms, bool) or not isinstance(num_arms, (int, np.integer)) or num_arms < 2:
    raise ValueError(f"num_arms must be an integer >= 2, got {num_arms!r}")
  _checks.positive("noise", noise, strict=False)
  if a is None:
    a = np.random.default_rng(seed).normal(size=dim)
  a = np.asarray(a, np.float32)
  _checks.shape("a", a, (dim,))
  if not np.isfinite(a).all() or np.linalg.norm(a) == 0:
    raise ValueError("a must be a finite non-zero vector")
  return SyntheticEnv(jnp.asarray(a / np.linalg.norm(a)), jnp.asarray(noise, jnp.float32),
                      int(num_arms), reward)
