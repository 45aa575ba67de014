"""Likelihoods that forget, for preferences that drift: the comparisons' log-likelihood (2.2)
weighted by their age, discounted (γ) or over a sliding window (w).

One comparison is made a round, the s-th at round s, so after round t the weighted
log-likelihood of a reward r is

    ℓ_{γ,w}(r; D^(t)) = Σ_{s=1}^{t} γ^{t−s} 1[t − s < w] log σ(r(x_s, a+_s) − r(x_s, a−_s)),

γ ∈ (0, 1], w ≥ 1 (None: w = ∞). γ = 1, w = ∞ is (2.2) itself, and the agents then run the
program they ran before the option existed (`forgetting` returns None). The option belongs to a
policy class's likelihood, so every scheme of the class takes it (`discount`, `window` of the
linear and DPO-form agents): γ < 1 is NS-DPO's discounted loss and w is SW-DPO's window, and
with a bonus they are Algorithm 1, VPO, XPO, … with a forgetting likelihood.

The weights are the peer's `num_items` form (wsolow/online-ns-dpo, `synthetic/algos/agent.py`,
`set_gammas` and `apply_window` with `num_items` = t): the i-th stored comparison (0-based,
i = s − 1) weighs γ^{(t − 1) − i} and is kept where t − i ≤ w, the newest weighing 1. Its online
loop (`synthetic/envs/linear_bandit.py`) differs in three ways a match must reproduce: a step
there adds `train_per_step` comparisons under one θ*_t, all stamped with the step, so ages count
steps, not comparisons (here: one comparison a round — the peer's step is that many rounds,
its schedule stretched by it); the ages run to the horizon's last step, not the current one (a
factor γ^{T−1−t} on every weight at step t, which rescales the whole likelihood); and its DPO
gradient (`DirectPreferenceOptimization.update_step`) multiplies by γ^{age} twice, an effective
γ².

Data kept as comparisons (`rbx.rlhf.linear.LinearData`, `rbx.rlhf.learners.practical.
Comparisons`) carry a `Forgetting` and give these weights per row (`weights`); win counts
forget by decay, wins ← γ·wins + the new comparison each round (`decay`), which is the
discounted likelihood exactly. Counts cannot forget a window's oldest comparison, so a window
needs the comparisons one by one.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.core import registry as reg


class Forgetting(NamedTuple):
  """The weights of a forgetting likelihood (module docstring).

  Attributes:
    discount: γ ∈ (0, 1], float32 scalar (may be traced), or None (γ = 1).
    window: w ≥ 1, int32 scalar, or None (w = ∞).
  """
  discount: chex.Array | None = None
  window: chex.Array | None = None

  def weights(self, count: chex.Array, capacity: int) -> chex.Array:
    """γ^{(t−1)−i} 1[t − i ≤ w] of the rows i < capacity after t = `count` comparisons, 0 for
    the unfilled rows; (capacity,) float32."""
    return self.weights_at(count, jnp.arange(capacity))

  def weights_at(self, count: chex.Array, rows: chex.Array) -> chex.Array:
    """`weights` of the given rows only, same shape as `rows` (a minibatch's: O(B), not O(T))."""
    age = count - 1 - rows                                     # t − s of row i (s = i + 1)
    kept = age >= 0
    if self.window is not None:
      kept = kept & (age < self.window)
    if self.discount is None:
      return kept.astype(jnp.float32)
    return jnp.where(kept, jnp.power(self.discount, jnp.maximum(age, 0)), 0.0)

  def decay(self, wins: chex.Array) -> chex.Array:
    """γ·wins: win counts a round older (before the round's comparison is added)."""
    return wins if self.discount is None else self.discount * wins


def forgetting(discount=1.0, window: int | None = None) -> Forgetting | None:
  """The `Forgetting` of the options, or None for γ = 1, w = ∞ (the likelihood (2.2)).

  Raises:
    ValueError naming the field: γ outside (0, 1] (where concrete), w not an integer ≥ 1.
  """
  if _checks.is_concrete(discount):
    g = np.asarray(discount, dtype=float)
    if g.shape != () or not np.isfinite(g) or not 0.0 < float(g) <= 1.0:
      raise ValueError(f"discount must be a number in (0, 1] (γ: a comparison t − s rounds old "
                       f"weighs γ^(t−s); 1: no discount), got {discount!r}")
  if window is not None and (isinstance(window, bool)
                             or not isinstance(window, (int, np.integer)) or window < 1):
    raise ValueError(f"window must be None (∞: every comparison) or an integer >= 1 (the last w "
                     f"comparisons), got {window!r}")
  unit = _checks.is_concrete(discount) and float(discount) == 1.0
  if unit and window is None:
    return None
  return Forgetting(None if unit else jnp.asarray(discount, jnp.float32),
                    None if window is None else jnp.asarray(window, jnp.int32))


FORGETTING = {
    "discount": reg.real(low=0.0, high=1.0, open_low=True,
                         doc="γ ∈ (0, 1]: the likelihood weighs a comparison t − s rounds old "
                             "by γ^(t−s) (1: no discount; rbx.rlhf.forgetting)"),
    "window": reg.integer(1, optional=True,
                          doc="w: the likelihood keeps the last w comparisons (default: all)")}
"""The options of a class whose likelihood forgets (the linear and DPO-form classes)."""
