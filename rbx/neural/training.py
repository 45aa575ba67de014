"""Training the network of (2) on the history: what every neural agent shares.

The regularised surrogate log-likelihood ℓ_λ(F_t; θ) = ℓ(F_t; θ) − (mλ/2)‖θ − θ_0‖² of
(9)–(10) on a masked history buffer (`rbx.neural.buffer`), θ_0 of section 2.2 with an empty
buffer (`init`), the training settings (`Training`, `settings`), the optax optimiser
(`optimizer`), J optimiser steps on ℓ_λ plus an agent's own term (`fit`) and the bias
schedule α(t) = ν t^n (`schedule`).

Training. Each round runs `train_steps` (J) optimiser steps on the objective divided by the
history size n_t = max(t − 1, 1) (`scaling="mean"`, the default: same maximiser; plain
gradient ascent with step η on it is ascent with step η/n_t on (10)/(12), the 1/(t m) scaling
that Theorems 1–2 ask of η), or on (10)/(12) as written (`scaling="sum"`: step η on the sum,
Algorithm 1 line 6 read literally). Appendix F's "learning rate η = 0.001" with "J = 100 as
the maximum number of steps" does not say which: its baselines come from the public NeuralTS
code, whose per-sample SGD passes (one step per stored row) act like steps on the sum. The mean
keeps one η stable at every t and is the default; `benchmarks/step_size.py` runs both
(docs/algorithms.md has the figures). With
`batch_size=None` each step is full batch over the stored rows: the buffer's used tiles
only, so a round costs O(t), not O(capacity). With `batch_size=B` each step instead draws
⌈B/n_b⌉ rows from each of the n_b first-layer blocks (n_b = K under the disjoint encoding,
1 for synthetic bandits), with probability ∝ their mask weight within the block, and uses
Σ_b W_b · (mean of block b's draws) for ℓ(F_t; θ), W_b the block's total weight — an
unbiased, stratified estimate (`rbx.neural.buffer.sample`). Only block b's rows reach
W1[b], so every block's first-layer gradient sees ⌈B/n_b⌉ rows a step however rarely its arm
is played; a round's J minibatches are drawn together at its start. Training is
warm-started from the previous round's θ (per arm for GA); `restart=True` starts every round
from θ_0, as the analysis does (`start`).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from rbx import _checks, schedules
from rbx.neural import buffer as buffer_lib
from rbx.neural import likelihoods, network
from rbx.neural.network import Params


class Training(NamedTuple):
  """Static training settings: J steps per round, minibatch size B (None: full batch; else
  ⌈B/n_b⌉ rows per first-layer block, see the module docstring), restart from θ_0 each
  round, the optimiser ("sgd": gradient ascent, or "adam"), network width/depth, and the
  objective's scaling ("mean": divided by n_t; "sum": as (10)/(12) are written)."""
  train_steps: int
  batch_size: int | None
  restart: bool
  optimizer: str
  width: int
  depth: int
  scaling: str = "mean"


OPTIMIZERS = {"sgd": optax.sgd, "adam": optax.adam}
SCALINGS = ("mean", "sum")


def settings(width: int = 32, depth: int = 2, train_steps: int = 10,
             batch_size: int | None = None, restart: bool = False,
             optimizer: str = "sgd", scaling: str = "mean") -> Training:
  """The checked `Training` settings (the `**training` keywords of the neural agents).

  Raises:
    ValueError: naming the field, for an odd or non-positive width, depth < 2, J < 1,
      B < 1, a non-bool `restart`, an unknown optimiser or scaling.
  """
  network.check_architecture(width, depth)
  _checks.positive_int("train_steps", train_steps)
  if batch_size is not None:
    _checks.positive_int("batch_size", batch_size)
  if not isinstance(restart, bool):
    raise ValueError(f"restart must be a bool, got {restart!r}")
  _checks.choice("optimizer", optimizer, OPTIMIZERS)
  _checks.choice("scaling", scaling, SCALINGS)
  return Training(train_steps, batch_size, restart, optimizer, width, depth, scaling)


def optimizer(lam, eta, cfg: Training) -> optax.GradientTransformation:
  """The optimiser `cfg.optimizer` with step size η; checks λ > 0 and η > 0 (may be traced)."""
  _checks.positive("lam", lam)
  _checks.positive("eta", eta)
  return OPTIMIZERS[cfg.optimizer](eta)


def setup(nu, lam, eta, training: dict[str, Any]) -> tuple[Training, optax.GradientTransformation]:
  """The settings and optimiser of an agent whose exploration weight is a constant ν ≥ 0."""
  cfg = settings(**training)
  _checks.positive("nu", nu, strict=False)
  return cfg, optimizer(lam, eta, cfg)


def schedule(nu, n) -> schedules.Schedule:
  """The bias schedule α(t) = ν t^n (ν, n ≥ 0; may be traced)."""
  _checks.positive("n", n, strict=False)
  return schedules.power(nu, n)


def init(key: chex.PRNGKey, spec, capacity: int, cfg: Training) -> tuple[Params, buffer_lib.Buffer]:
  """θ_0 of section 2.2 for the environment's `spec` (dim, num_blocks) and an empty buffer of
  `capacity` rows."""
  theta0 = network.init(key, spec.dim, cfg.width, cfg.depth, spec.num_blocks)
  return theta0, buffer_lib.empty(capacity, spec.dim, spec.num_blocks)


def start(theta: Params, opt_state, theta0: Params, opt, cfg: Training):
  """Where a round's training starts: (θ, optimiser state) warm, or θ_0 and a fresh optimiser
  state with `restart`."""
  if cfg.restart:
    return theta0, opt.init(theta0)
  return theta, opt_state


def fit(theta: Params, opt_state, theta0: Params, buf: buffer_lib.Buffer, key: chex.PRNGKey,
        lik: likelihoods.Likelihood, lam, opt, cfg: Training, bias=None):
  """J optimiser steps on −(ℓ_λ(F_t; θ) + bias(θ)) / n_t (or not divided, `cfg.scaling`).

  Args:
    theta, opt_state: the starting point (see `start`).
    theta0: θ_0 of the penalty (mλ/2)‖θ − θ_0‖².
    buf: the history F_t.
    key: draws the round's J minibatches (unused for full-batch training).
    lik: the surrogate likelihood of (9).
    lam: λ of (10).
    opt, cfg: the optimiser and the settings.
    bias: an extra term of the objective, θ -> scalar (GA's α(t) f(x_{t,a}; θ) of (12)), or None.
  Returns:
    (θ, optimiser state) after J steps.
  """
  n = jnp.maximum(buf.count, 1).astype(jnp.float32) if cfg.scaling == "mean" else 1.0
  if cfg.batch_size is None:
    history_grad = lambda th, j: history(th, buf, lik, grad=True)[1]
  else:
    tables = buffer_lib.strata(buf)
    size = -(-cfg.batch_size // buf.open_tile.shape[0])        # rows per block
    flat = buffer_lib.sample(tables, key, (cfg.train_steps, size))   # (J, B, size)
    weight = jnp.broadcast_to(tables.total[:, None] / size, flat.shape[1:])

    def history_grad(th, j):
      x, r = buffer_lib.rows(buf, flat[j])
      return jax.grad(lambda th: likelihoods.log_likelihood(
          lik, r, network.predict_blocks(th, x), weight))(th)

  def rest(th):
    return (0.0 if bias is None else bias(th)) - penalty(th, theta0, lam)

  def body(j, carry):
    th, os = carry
    grads = jax.tree.map(lambda a, b: -(a + b) / n, history_grad(th, j), jax.grad(rest)(th))
    updates, os = opt.update(grads, os, th)
    return optax.apply_updates(th, updates), os

  return jax.lax.fori_loop(0, cfg.train_steps, body, (theta, opt_state))


def history(theta: Params, buf: buffer_lib.Buffer, lik: likelihoods.Likelihood, grad: bool):
  """ℓ(F_t; θ) of (9) and, with `grad`, its gradient: the used tiles' rows through their
  blocks, masked, a chunk of tiles at a time (O(t) work at round t, not O(capacity)); each
  chunk's first-layer gradient is added into the blocks it read only.

  Returns:
    ℓ (a scalar), or (ℓ, ∇_θ ℓ as `Params`) with `grad`.
  """
  def ell(tiles_theta, x, r, mask):
    return likelihoods.log_likelihood(lik, r, network.predict_blocks(tiles_theta, x), mask)

  def body(i, acc):
    x, r, mask, block = buffer_lib.chunk(buf, i)
    tiles_theta = theta._replace(W1=theta.W1[block])                        # (C, d, m)
    if not grad:
      return acc + ell(tiles_theta, x, r, mask)
    value, g = jax.value_and_grad(ell)(tiles_theta, x, r, mask)
    total, sums = acc
    return total + value, Params(sums.W1.at[block].add(g.W1),
                                 jax.tree.map(jnp.add, sums.hidden, g.hidden), sums.w + g.w)

  # chunk 0 starts the sums (it is all zero-weight rows in an empty buffer), so that they
  # vary over a `shard_map`'s axes exactly as θ and the buffer do
  zero = jnp.zeros(())
  first = body(0, (zero, jax.tree.map(jnp.zeros_like, theta)) if grad else zero)
  return jax.lax.fori_loop(1, buffer_lib.num_chunks(buf), body, first)


def penalty(theta: Params, theta0: Params, lam) -> chex.Array:
  """The penalty (mλ/2)‖θ − θ_0‖² of (10), m the width."""
  m = theta.w.shape[-1]
  sq = sum(jnp.sum((a - b) ** 2) for a, b in zip(jax.tree.leaves(theta), jax.tree.leaves(theta0)))
  return 0.5 * m * lam * sq


def regularised_log_likelihood(theta: Params, theta0: Params, buf: buffer_lib.Buffer,
                               lik: likelihoods.Likelihood, lam) -> chex.Array:
  """ℓ_λ(F_t; θ) of (10) over the whole buffer (a sum, not normalised)."""
  return history(theta, buf, lik, grad=False) - penalty(theta, theta0, lam)
