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
keeps one η stable at every t and is the default; `benchmarks/accuracy/step_size.py` runs both
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

Procedures. All of the above is `procedure="steps"` (the default). Two more train as the public
code does, named after it:

* `procedure="neuralucb"`: uclaml/NeuralUCB `learner_diag.py`, `NeuralUCBDiag.train` (the
  diagonal-Z learner), by per-row SGD (`neuralucb_fit`). (ZeroWeight/NeuralTS's
  `learner_neural.py` has the same loop, but its `select` takes the mean and g from an untrained
  copy of the network, `func1`, so it is not the learner this option follows.) Each round the
  stored rows are shuffled once (`row_order`) and passes are made over that order, one update
  per row on that row's loss L_s(θ) = −2 w_s log p(r_s | f(x_s; θ)) (w_s its mask weight, 1 for a
  stored row): for the Gaussian likelihood exactly the public code's (f(x_s; θ) − r_s)², which is
  why the factor is 2 (so `eta` and `tolerance` mean what its lr and 10⁻³ mean). Every update
  adds torch's `weight_decay=λ`, λθ, to the gradient: a penalty (λ/2)‖θ‖² toward 0, not (10)'s
  (mλ/2)‖θ − θ_0‖² (λ is the agent's `lam`, the λ of `form="reference"`'s U = λI + Σ g gᵀ, as in
  the public code). A round stops once `max_updates` updates have been made (default 1000;
  mid-pass if so), or after a full pass whose mean loss (the mean of L_s over the pass, each
  taken just before its update, as the public code sums `loss.item()`) is ≤ `tolerance`
  (default 10⁻³): at least one pass (or `max_updates` updates) whenever there is a row, none on
  an empty history. `train_steps` and `scaling` are not used (per-row steps act like steps on
  the sum), and minibatches are refused (`batch_size` must be None). GA's bias term of (12),
  α(t) f(x_{t,a}; θ), enters every update as −(2/n_t) α(t) f(x_{t,a}; θ), so a pass over the n_t
  rows adds it once, with the rows' factor 2; it is left out of the stopping rule's loss, which
  measures the fit to the data as the public code's does. With no stored row (GA's first
  round) no update is made.
* `procedure="neuralts"`: ZeroWeight/NeuralTS at d1c1afb, `learner_diag.py`,
  `NeuralTSDiag.train` (the file its README names for the NeuralTS paper's runs): `train_steps`
  full-batch steps (the public code: 100) of size η (its lr: 10⁻²) on the mean squared error
  −(2/n_t) ℓ(F_t; θ) plus torch's weight decay λ/n_t toward 0, i.e. on
  −(2/n_t)(ℓ(F_t; θ) + bias(θ)) + (λ/(2 n_t))‖θ‖², no early stop. `scaling` is not used.

Both start the optimiser's state fresh every round, as the public code builds a new torch SGD
each round (plain SGD has none; this matters only for "adam"), and take the agent's η (the
public code hard-codes lr = 10⁻²). Mind the network (`training.settings(network=...)`): the
public code's is torch's two-layer net with biases (`network="torch"`), ours by default the
√m-scaled f of (2), whose ‖g‖² is about 1.5–2 m for unit inputs at θ_0 (torch's: about 1.5 at
m = 100 on Mushroom). One per-row step multiplies that row's f − r by about 1 − 2η‖g‖², which
at lr 10⁻² and m = 100 on the paper's network (‖g‖² ≈ 170–220) overshoots every row; whether
the overshoots compound depends on how much the rows' gradients overlap, i.e. on the data.
`benchmarks/accuracy/per_row_sgd_divergence.py` (one round, 20 rows, m = 100, η = 10⁻²): NaN on random unit-norm
rows in d = 5, finite (max |θ| < 1) in d = 20 and on Mushroom rows (one-hot or ordinal,
K = 2); the torch network (‖g‖² ≈ 1.4–8) stayed finite on all four. So lr 10⁻² with the
paper's network is safe only on data like Mushroom's; η < 1/(2m) is safe everywhere.

Thinning (`thin_after`, `thin_every`): NeuralUCB's `train.py` calls `train` (which also stores
the row) every round for t < 2000 and then only every 100th round; `trains` says which rounds.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from rbx import _checks, schedules
from rbx.neural import buffer as buffer_lib
from rbx.neural import likelihoods
from rbx.neural import network as network_lib
from rbx.neural.network import Params


class Training(NamedTuple):
  """Static training settings: J steps per round, minibatch size B (None: full batch; else
  ⌈B/n_b⌉ rows per first-layer block, see the module docstring), restart from θ_0 each
  round, the optimiser ("sgd": gradient ascent, or "adam"), network width/depth, the
  objective's scaling ("mean": divided by n_t; "sum": as (10)/(12) are written), and the
  procedure ("steps": J steps as above; "neuralucb": the public NeuralUCB code's per-row SGD,
  at most `max_updates` updates a round, stopping after a pass whose mean loss is ≤
  `tolerance`; "neuralts": the public NeuralTS code's J full-batch steps on the MSE), the
  network ("paper" or "torch"), the thinning of training rounds (see the module
  docstring) and how the network's products run (`rbx.neural.network.Compute`)."""
  train_steps: int
  batch_size: int | None
  restart: bool
  optimizer: str
  width: int
  depth: int
  scaling: str = "mean"
  procedure: str = "steps"
  max_updates: int = 1000
  tolerance: float = 1e-3
  network: str = "paper"
  thin_after: int | None = None
  thin_every: int = 100
  compute: network_lib.Compute = network_lib.Compute()


OPTIMIZERS = {"sgd": optax.sgd, "adam": optax.adam}
SCALINGS = ("mean", "sum")
PROCEDURES = ("steps", "neuralucb", "neuralts")


def settings(width: int = 32, depth: int = 2, train_steps: int = 10,
             batch_size: int | None = None, restart: bool = False,
             optimizer: str = "sgd", scaling: str = "mean", procedure: str = "steps",
             max_updates: int = 1000, tolerance=1e-3, network: str = "paper",
             thin_after: int | None = None, thin_every: int = 100,
             first_layer: str | None = None, matmul_precision: str | None = None) -> Training:
  """The checked `Training` settings (the `**training` keywords of the neural agents).

  `procedure="neuralucb"` trains by the public NeuralUCB code's per-row SGD (module
  docstring): at most `max_updates` updates a round (the public code: 1000), stopping after a
  pass whose mean loss is ≤ `tolerance` (the public code: 10⁻³; may be traced), with step η
  (the public code: lr = 10⁻²); `train_steps` and `scaling` are then unused.
  `procedure="neuralts"` trains as the public NeuralTS code's `learner_diag.py`: `train_steps`
  (the public code: 100) gradient steps of size η (lr 10⁻²) a round on the mean squared error
  plus torch's weight decay λ/n_t, from a fresh optimiser state; `scaling` is unused.
  `network` is "paper" (f of (2), the default) or "torch" (the public code's network;
  `rbx.neural.network`). `thin_after`: from round t = thin_after + 1 on, a round records its
  row and trains only when (t − 1) % thin_every == 0, as NeuralUCB's `train.py` (thin_after
  = 2000, thin_every = 100; rounds count from 1 here, from 0 there); None (default): every
  round. Z is still updated every round. `first_layer` ("blocks" or "dense") and
  `matmul_precision` ("float32", "tf32" or "bf16") say how the network's products run
  (`rbx.neural.network.Compute`); None (default): the device kind's
  (`rbx.neural.network.default_compute`).

  Raises:
    ValueError: naming the field, for a non-positive width (odd for network="paper"),
      depth < 2, J < 1, B < 1, a non-bool `restart`, an unknown optimiser, scaling,
      procedure or network, max_updates < 1, a negative or non-finite tolerance, a
      `batch_size` with procedure="neuralucb", thin_after < 0 or thin_every < 1, an
      unknown first_layer or matmul_precision.
  """
  network_lib.check_architecture(width, depth, network)
  _checks.positive_int("train_steps", train_steps)
  if batch_size is not None:
    _checks.positive_int("batch_size", batch_size)
  if not isinstance(restart, bool):
    raise ValueError(f"restart must be a bool, got {restart!r}")
  _checks.choice("optimizer", optimizer, OPTIMIZERS)
  _checks.choice("scaling", scaling, SCALINGS)
  _checks.choice("procedure", procedure, PROCEDURES)
  _checks.positive_int("max_updates", max_updates)
  if _checks.is_concrete(tolerance) and (isinstance(tolerance, bool) or np.ndim(tolerance)):
    raise ValueError(f"tolerance must be a real scalar, got {tolerance!r}")
  _checks.positive("tolerance", tolerance, strict=False)
  if procedure == "neuralucb" and batch_size is not None:
    raise ValueError(f"batch_size must be None with procedure='neuralucb' (one row per "
                     f"update), got {batch_size!r}")
  if thin_after is not None and (isinstance(thin_after, bool) or not isinstance(thin_after, int)
                                 or thin_after < 0):
    raise ValueError(f"thin_after must be None or an int >= 0, got {thin_after!r}")
  _checks.positive_int("thin_every", thin_every)
  default = network_lib.default_compute(jax.default_backend())
  compute = network_lib.compute(default.first_layer if first_layer is None else first_layer,
                                default.matmul_precision if matmul_precision is None
                                else matmul_precision)
  return Training(train_steps, batch_size, restart, optimizer, width, depth, scaling,
                  procedure, int(max_updates), tolerance, network, thin_after, thin_every,
                  compute)


def trains(cfg: Training, t) -> chex.Array:
  """Whether round t (from 1) records its row and trains: always, or with `cfg.thin_after`
  only for t ≤ thin_after and when (t − 1) % thin_every == 0 (NeuralUCB's `train.py`)."""
  if cfg.thin_after is None:
    return jnp.ones((), bool)
  return (t <= cfg.thin_after) | ((t - 1) % cfg.thin_every == 0)


def every_round(cfg: Training, agent: str) -> None:
  """Raises `ValueError` if `cfg.thin_after` is set for an agent that trains every round."""
  if cfg.thin_after is not None:
    raise ValueError(f"thin_after must be None for {agent} (only neural_ucb, neural_ts and "
                     f"rbmle_pc thin their training), got {cfg.thin_after!r}")


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
  """θ_0 of the network `cfg.network` for the environment's `spec` (dim, num_blocks) and an
  empty buffer of `capacity` rows."""
  theta0 = network_lib.init(key, spec.dim, cfg.width, cfg.depth, spec.num_blocks, cfg.network)
  return theta0, buffer_lib.empty(capacity, spec.dim, spec.num_blocks)


def start(theta: Params, opt_state, theta0: Params, opt, cfg: Training):
  """Where a round's training starts: (θ, optimiser state) warm, or θ_0 and a fresh optimiser
  state with `restart`."""
  if cfg.restart:
    return theta0, opt.init(theta0)
  return theta, opt_state


def fit(theta: Params, opt_state, theta0: Params, buf: buffer_lib.Buffer, key: chex.PRNGKey,
        lik: likelihoods.Likelihood, lam, opt, cfg: Training, bias=None):
  """J optimiser steps on −(ℓ_λ(F_t; θ) + bias(θ)) / n_t (or not divided, `cfg.scaling`);
  with `cfg.procedure == "neuralts"`, J steps from a fresh optimiser state on the public
  NeuralTS code's objective −(2/n_t)(ℓ(F_t; θ) + bias(θ)) + (λ/2n_t)‖θ‖² (for the Gaussian ℓ,
  the mean squared error plus torch's weight decay λ/n_t); with "neuralucb", the public
  NeuralUCB code's per-row SGD (`neuralucb_fit`).

  Args:
    theta, opt_state: the starting point (see `start`).
    theta0: θ_0 of the penalty (mλ/2)‖θ − θ_0‖² (unused by the public codes' procedures,
      whose weight decay pulls toward 0).
    buf: the history F_t.
    key: draws the round's J minibatches (unused for full-batch training), or the
      "neuralucb" procedure's order of the rows.
    lik: the surrogate likelihood of (9).
    lam: λ of (10), or of the public codes' weight decay.
    opt, cfg: the optimiser and the settings.
    bias: an extra term of the objective, θ -> scalar (GA's α(t) f(x_{t,a}; θ) of (12)), or None.
  Returns:
    (θ, optimiser state) after J steps (or after the "neuralucb" procedure).
  """
  if cfg.procedure == "neuralucb":
    return neuralucb_fit(theta, buf, key, lik, lam, opt, cfg, bias)[:2]
  count = jnp.maximum(buf.count, 1).astype(jnp.float32)
  if cfg.procedure == "neuralts":
    # 2 × (ℓ + bias − (λ/4)‖θ‖²) / n_t: the gradient of the MSE plus (λ/n_t)θ, torch's decay
    opt_state, factor, n = opt.init(theta), 2.0, count
    reg = lambda th: 0.25 * lam * sum(jnp.sum(p ** 2) for p in jax.tree.leaves(th))
  else:
    factor, n = 1.0, count if cfg.scaling == "mean" else 1.0
    reg = lambda th: penalty(th, theta0, lam)
  if cfg.batch_size is None:
    history_grad = lambda th, j: history(th, buf, lik, grad=True, compute=cfg.compute)[1]
  else:
    tables = buffer_lib.strata(buf)
    size = -(-cfg.batch_size // buf.open_tile.shape[0])        # rows per block
    flat = buffer_lib.sample(tables, key, (cfg.train_steps, size))   # (J, B, size)
    weight = jnp.broadcast_to(tables.total[:, None] / size, flat.shape[1:])

    def history_grad(th, j):
      x, r = buffer_lib.rows(buf, flat[j])
      blocks = jnp.arange(x.shape[0])                      # stratum b holds block b's rows
      return jax.grad(lambda th: likelihoods.log_likelihood(
          lik, r, network_lib.predict_tiles(th, x, blocks, cfg.compute), weight))(th)

  def rest(th):
    return (0.0 if bias is None else bias(th)) - reg(th)

  def body(j, carry):
    th, os = carry
    grads = jax.tree.map(lambda a, b: -factor * (a + b) / n, history_grad(th, j),
                         jax.grad(rest)(th))
    updates, os = opt.update(grads, os, th)
    return optax.apply_updates(th, updates), os

  return jax.lax.fori_loop(0, cfg.train_steps, body, (theta, opt_state))


class NeuralUCBFit(NamedTuple):
  """What `neuralucb_fit` returns: θ and the optimiser state after the round's updates, the
  number of updates made and of full passes completed."""
  theta: Params
  opt_state: Any
  updates: chex.Array
  passes: chex.Array


def row_order(buf: buffer_lib.Buffer, key: chex.PRNGKey) -> chex.Array:
  """The stored rows in a uniformly random order, as flat rows g·S + s: (N,) int, whose first
  `buf.count` entries are a permutation of `buf.slot[:buf.count]` (the rest: padding).

  A permutation of all N slots of `buf.slot`, then the stored ones moved to the front in
  their permuted order (a stable sort on "not stored"), so their order is uniform."""
  N = buf.slot.shape[0]
  perm = jax.random.permutation(key, N)
  perm = perm[jnp.argsort((perm >= buf.count).astype(jnp.int32), stable=True)]
  return buf.slot[perm]


def neuralucb_fit(theta: Params, buf: buffer_lib.Buffer, key: chex.PRNGKey,
                  lik: likelihoods.Likelihood, lam, opt, cfg: Training,
                  bias=None) -> NeuralUCBFit:
  """The public NeuralUCB code's training of one round (module docstring): per-row
  SGD over one random order of the stored rows (`row_order(buf, key)`), repeated passes,
  each update a step of `opt` (fresh state) on L_s(θ) + (λ/2)‖θ‖² − (2/n_t) bias(θ) with
  L_s = −2 w_s log p(r_s | f(x_s; θ)); at most `cfg.max_updates` updates, and a stop after
  the first pass whose mean L_s (each taken before its update) is ≤ `cfg.tolerance`.

  A `lax.while_loop` of one update an iteration (under `vmap`, until every member stops).
  """
  S = buf.r.shape[1]
  order = row_order(buf, key)
  n = buf.count
  n_f = jnp.maximum(n, 1).astype(jnp.float32)

  def objective(th, flat):
    g, s = flat // S, flat % S
    z = network_lib.apply(th, buf.x[g, s], buf.block[g], cfg.compute)
    loss = -2.0 * buf.mask[g, s] * lik.log_prob(buf.r[g, s], z)
    decay = 0.5 * lam * sum(jnp.sum(p ** 2) for p in jax.tree.leaves(th))
    extra = 0.0 if bias is None else -2.0 * bias(th) / n_f
    return loss + decay + extra, loss

  def cond(carry):
    _, _, updates, _, _, _, done = carry
    return (~done) & (updates < cfg.max_updates) & (n > 0)

  def body(carry):
    th, os, updates, passes, i, total, _ = carry
    grads, loss = jax.grad(objective, has_aux=True)(th, order[i])
    step, os = opt.update(grads, os, th)
    th = optax.apply_updates(th, step)
    i, total = i + 1, total + loss
    end = i == n
    done = end & (total / n_f <= cfg.tolerance)
    return (th, os, updates + 1, passes + end, jnp.where(end, 0, i),
            jnp.where(end, 0.0, total), done)

  zero = jnp.zeros((), jnp.int32)
  carry = (theta, opt.init(theta), zero, zero, zero, jnp.zeros(()), jnp.zeros((), bool))
  th, os, updates, passes, *_ = jax.lax.while_loop(cond, body, carry)
  return NeuralUCBFit(th, os, updates, passes)


def history(theta: Params, buf: buffer_lib.Buffer, lik: likelihoods.Likelihood, grad: bool,
            compute: network_lib.Compute = network_lib.Compute()):
  """ℓ(F_t; θ) of (9) and, with `grad`, its gradient: the used tiles' rows through their
  blocks, masked, a chunk of tiles at a time (O(t) work at round t, not O(capacity)). With
  `compute.first_layer == "blocks"` each chunk's first-layer gradient is taken with respect to
  the blocks it read, (C, d, m), and added into them; with "dense" with respect to all of W1.

  Returns:
    ℓ (a scalar), or (ℓ, ∇_θ ℓ as `Params`) with `grad`.
  """
  dense = compute.first_layer == "dense"

  def ell(th, x, r, mask, block):
    f = (network_lib.predict_tiles(th, x, block, compute) if dense
         else network_lib.predict_blocks(th, x, compute.matmul_precision))
    return likelihoods.log_likelihood(lik, r, f, mask)

  def body(i, acc):
    x, r, mask, block = buffer_lib.chunk(buf, i)
    th = theta if dense else network_lib.block_of(theta, block)        # W1 (B or C, d, m)
    if not grad:
      return acc + ell(th, x, r, mask, block)
    value, g = jax.value_and_grad(ell)(th, x, r, mask, block)
    total, sums = acc
    sums = (jax.tree.map(jnp.add, sums, g) if dense
            else network_lib.add_to_block(sums, block, g))
    return total + value, sums

  zero = jnp.zeros(())
  return jax.lax.fori_loop(0, buffer_lib.num_chunks(buf), body,
                           (zero, jax.tree.map(jnp.zeros_like, theta)) if grad else zero)


def penalty(theta: Params, theta0: Params, lam) -> chex.Array:
  """The penalty (mλ/2)‖θ − θ_0‖² of (10), m the width."""
  m = theta.w.shape[-1]
  sq = sum(jnp.sum((a - b) ** 2) for a, b in zip(jax.tree.leaves(theta), jax.tree.leaves(theta0)))
  return 0.5 * m * lam * sq


def regularised_log_likelihood(theta: Params, theta0: Params, buf: buffer_lib.Buffer,
                               lik: likelihoods.Likelihood, lam,
                               compute: network_lib.Compute = network_lib.Compute()) -> chex.Array:
  """ℓ_λ(F_t; θ) of (10) over the whole buffer (a sum, not normalised)."""
  return history(theta, buf, lik, grad=False, compute=compute) - penalty(theta, theta0, lam)
