"""K-armed contextual bandit environments (section 2.1 and Appendix F).

A round presents, for each arm a, a context (features (d,), first-layer block): the
classification bandit uses the disjoint encoding of Appendix F — arm i's context is the
d'K-vector with x in block i, represented by (x, block i) and never built — and the synthetic
bandits give each arm its own context on the unit sphere with one shared block.

An environment is a pytree (its arrays can be traced) with `reset(key) -> stream` (the
per-seed data order) and `round(stream, key, t) -> Round` for t = 1, 2, …
"""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks


class Round(NamedTuple):
  """One round's contexts and rewards. Shapes: K arms, d features.

  Attributes:
    x: the arms' features, (K, d).
    block: the arms' first-layer blocks, (K,) int.
    mean: expected rewards E[r_{t,a}], (K,): the regret is max(mean) − mean[a_t].
    reward: a draw of every arm's reward r_{t,a}, (K,); an agent reads only reward[a_t].
  """
  x: chex.Array
  block: chex.Array
  mean: chex.Array
  reward: chex.Array


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

  def reset(self, key: chex.PRNGKey) -> chex.Array:
    """The seed's shuffled order of the data, (n,); round t uses row order[(t − 1) mod n]."""
    return jax.random.permutation(key, self.features.shape[0])

  def round(self, stream: chex.Array, key: chex.PRNGKey, t) -> Round:
    """Round t: row order[(t − 1) mod n] for every arm (arm a in block a); reward 1 at the label."""
    del key
    i = stream[(t - 1) % stream.shape[0]]
    K = self.num_arms
    mean = jax.nn.one_hot(self.labels[i], K)
    return Round(jnp.broadcast_to(self.features[i], (K, self.dim)), jnp.arange(K), mean, mean)


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

  def reset(self, key: chex.PRNGKey) -> chex.Array:
    """No per-seed data order (contexts are drawn afresh each round): a placeholder."""
    del key
    return jnp.zeros((), jnp.int32)

  def h(self, x: chex.Array) -> chex.Array:
    """The reward function h, x (..., d) -> (...)."""
    s = x @ self.a
    return {"linear": s, "quadratic": 10.0 * s ** 2, "cosine": jnp.cos(3.0 * s)}[self.reward]

  def round(self, stream, key: chex.PRNGKey, t) -> Round:
    """Round t: K fresh contexts on the unit sphere, rewards h(x) + noise·N(0, 1)."""
    del stream, t
    kx, kr = jax.random.split(key)
    x = jax.random.normal(kx, (self.num_arms, self.dim))
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True)
    mean = self.h(x)
    reward = mean + self.noise * jax.random.normal(kr, (self.num_arms,))
    return Round(x, jnp.zeros(self.num_arms, jnp.int32), mean, reward)


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
