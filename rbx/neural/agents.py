"""Neural contextual-bandit agents as `init`/`step` pairs of pure functions.

All four share the network f(x; θ) of (2) with θ_0 of section 2.2, the regularised
surrogate log-likelihood ℓ_λ(F_t; θ) = ℓ(F_t; θ) − (mλ/2)‖θ − θ_0‖² of (9)–(10) on a masked
history buffer, and J steps of an optax optimiser per round. They differ in the index:

=============  ==========================================================================
agent          index of arm a at round t (α(t) = ν t^n, g_a = g(x_{t,a}; θ̂), Z = Z_{t−1})
=============  ==========================================================================
`rbmle_ga`     ℓ_λ(F_t; θ̃_a) + α(t) ζ f(x_{t,a}; θ̃_a), θ̃_a from J ascent steps on (12)
               — Algorithm 1; the K arm problems run in one program (`arm_batch`).
`rbmle_pc`     f(x_{t,a}; θ̂ + (α(t)/m) Z⁻¹ g_a) — (15) and Algorithm 2.
`neural_ucb`   f(x_{t,a}; θ̂) + ν √(g_aᵀ Z⁻¹ g_a / m) (Zhou et al. 2020, γ_t = ν).
`neural_ts`    a draw of N(f(x_{t,a}; θ̂), ν² λ g_aᵀ Z⁻¹ g_a / m) (Zhang et al. 2021).
=============  ==========================================================================

Training. Each round runs `train_steps` (J) optimiser steps on the objective divided by the
history size n_t = max(t − 1, 1) (same maximiser; plain gradient ascent with step η on it is
ascent with step η/n_t on (10)/(12), the 1/(t m) scaling that Theorems 1–2 ask of η). With
`batch_size=None` each step is full batch over the stored rows: the buffer's used tiles
only, so a round costs O(t), not O(capacity). With `batch_size=B` each step instead draws
⌈B/n_b⌉ rows from each of the n_b first-layer blocks (n_b = K under the disjoint encoding,
1 for synthetic bandits), with probability ∝ their mask weight within the block, and uses
Σ_b W_b · (mean of block b's draws) for ℓ(F_t; θ), W_b the block's total weight — an
unbiased, stratified estimate (`rbx.neural.buffer.sample`). Only block b's rows reach
W1[b], so every block's first-layer gradient sees ⌈B/n_b⌉ rows a step however rarely its arm
is played; a round's J minibatches are drawn together at its start. Training is
warm-started from the previous round's θ (per arm for GA); `restart=True` starts every round
from θ_0, as the analysis does.

Z_t = λI + (1/m) Σ g gᵀ (Algorithm 2, line 10) in either representation of
`rbx.neural.precision`; PC adds the gradient at the newly trained θ̂ (line 10), UCB and TS the
selection-time gradient (as in their papers).

Defaults. `width=32`, `train_steps=10`, `eta=0.01`, `lam=1e-3`, `nu=0.1`, full batch, warm
start: small enough for CPU tests (T = 2000 in seconds), and with warm starts J = 10 still
adds up to 10·t ascent steps by round t. The paper's experiments (Appendix F) use m = 100,
J = 100, η = 0.001, λ = 0.001 and ν tuned over {1, 0.1, 10⁻³, 10⁻⁵}: pass `width=100,
train_steps=100, eta=1e-3`. Our η acts on the objective divided by n_t (see Training), which
keeps one η stable for every t; for unit-norm inputs ‖g‖² ≈ 1.5 m at θ_0, so full-batch
ascent needs η ≲ 1/m (η = 0.01 at m = 32, 0.001 at m = 100 as in the paper).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from rbx import _checks, schedules
from rbx.core import loop
from rbx.neural import buffer as buffer_lib
from rbx.neural import likelihoods, network
from rbx.neural import precision as precision_lib
from rbx.neural.env import Env, Round
from rbx.neural.network import Params


class AgentState(NamedTuple):
  """State carried between rounds.

  Attributes:
    theta: θ̂_t (PC, UCB, TS), or the K-stack of θ̃_{t−1,a} that GA warm-starts from.
    opt_state: the optimiser's state (K-stacked for GA).
    theta0: θ_0.
    z: Z_{t−1} (see `rbx.neural.precision`); () for GA.
    buffer: the history F_t.
    t: the round about to run, from 1; int32 scalar.
  """
  theta: Params
  opt_state: Any
  theta0: Params
  z: Any
  buffer: buffer_lib.Buffer
  t: chex.Array


class StepInfo(NamedTuple):
  """One round: `regret` = max_a E[r_{t,a}] − E[r_{t,a_t}] (a term of (1)), the arm and reward."""
  regret: chex.Array
  arm: chex.Array
  reward: chex.Array


class Agent(NamedTuple):
  """`init(key, env, capacity) -> state`, `step(key, state, round) -> (state, StepInfo)`; pure.

  `capacity` is the history buffer's size (the number of rounds to run, for `simulate`).
  """
  name: str
  init: Callable[[chex.PRNGKey, Env, int], AgentState]
  step: Callable[[chex.PRNGKey, AgentState, Round], tuple[AgentState, StepInfo]]


class Training(NamedTuple):
  """Static training settings: J steps per round, minibatch size B (None: full batch; else
  ⌈B/n_b⌉ rows per first-layer block, see the module docstring), restart from θ_0 each
  round, the optimiser ("sgd": gradient ascent, or "adam"), network width/depth."""
  train_steps: int
  batch_size: int | None
  restart: bool
  optimizer: str
  width: int
  depth: int


OPTIMIZERS = {"sgd": optax.sgd, "adam": optax.adam}


def rbmle_ga(nu=0.1, n=0.5, lam=1e-3, eta=0.01, zeta=1.0, likelihood: str = "gaussian",
             arm_batch: int | None = None, **training) -> Agent:
  """NeuralRBMLE-GA (Algorithm 1) with α(t) = ν t^n and the surrogate `likelihood` of (9).

  Args:
    nu, n: the bias schedule α(t) = ν t^n (section 6: n = 1/2); traced.
    lam, eta: λ of (10) and the step size η; traced.
    zeta: the index's weight ζ on the bias term (Algorithm 1, line 8); traced.
    likelihood: "gaussian", "bernoulli" or "mixture" (section 6).
    arm_batch: the K arm problems (training and the index's ℓ_λ) run in vmapped batches of
      this many, the batches in sequence (`lax.map`'s batch size); 1 runs the arms one after
      another. None (default): 1 for full-batch training on a CPU — measured 1.4× faster
      there (one seed, t = 100 and 2,000, m = 100, J = 100), as XLA:CPU runs the vmapped
      gathers of each chunk's blocks slowly — else all K at once.
    **training: `width`, `depth`, `train_steps`, `batch_size`, `restart`, `optimizer`.
  """
  lik = likelihoods.get(likelihood)
  cfg = _training(**training)
  _checks.positive("zeta", zeta, strict=False)
  if arm_batch is not None:
    _checks.positive_int("arm_batch", arm_batch)
  sequential = cfg.batch_size is None and jax.default_backend() == "cpu"
  alpha, opt = _schedule(nu, n), _optimizer(lam, eta, cfg)

  def init(key, env, capacity):
    theta0, buf = _init_common(key, env, capacity, cfg)
    K = env.num_arms
    stack = jax.tree.map(lambda p: jnp.broadcast_to(p, (K,) + p.shape), theta0)
    return AgentState(stack, jax.vmap(opt.init)(stack), theta0, (), buf, jnp.ones((), jnp.int32))

  def step(key, state, rnd):
    a_t = alpha(state.t)
    thetas, opt_state = state.theta, state.opt_state
    if cfg.restart:
      thetas = jax.tree.map(lambda p, q: jnp.broadcast_to(q, p.shape), thetas, state.theta0)
      opt_state = jax.vmap(opt.init)(thetas)

    def fit_arm(args):
      theta, os, x, b = args
      bias = lambda th: a_t * network.apply(th, x, b)
      return _fit(theta, os, state.theta0, state.buffer, key, lik, lam, opt, cfg, bias)

    K = rnd.x.shape[0]
    batch = (1 if sequential else K) if arm_batch is None else min(arm_batch, K)
    over_arms = lambda f, xs: loop.batched_map(f, xs, batch)
    thetas, opt_state = over_arms(fit_arm, (thetas, opt_state, rnd.x, rnd.block))
    ell = over_arms(lambda th: regularised_log_likelihood(th, state.theta0, state.buffer, lik, lam),
                    thetas)
    f = jax.vmap(network.apply)(thetas, rnd.x, rnd.block)
    index = ell + a_t * zeta * f
    return _finish(state._replace(theta=thetas, opt_state=opt_state), rnd, jnp.argmax(index))

  return Agent("rbmle_ga", init, step)


def rbmle_pc(nu=0.1, n=0.5, lam=1e-3, eta=0.01, precision: str = "diag", **training) -> Agent:
  """NeuralRBMLE-PC (Algorithm 2): index f(x_{t,a}; θ̄_{t,a}) with θ̄ of (15), Gaussian ℓ.

  Args: as `rbmle_ga`; `precision` is "diag" (Appendix F) or "exact" (Sherman–Morrison).
  """
  cfg = _training(**training)
  alpha, opt = _schedule(nu, n), _optimizer(lam, eta, cfg)

  def index(key, state, rnd, f, g, z_inv_g):
    del key, f, g
    theta_bar = jax.tree.map(lambda p, v: p + alpha(state.t) / cfg.width * v,
                             jax.vmap(lambda b: network.block_of(state.theta, b))(rnd.block),
                             z_inv_g)
    return jax.vmap(network.apply_block)(theta_bar, rnd.x)

  return _z_agent("rbmle_pc", index, lam, opt, cfg, precision, z_after_training=True)


def neural_ucb(nu=0.1, lam=1e-3, eta=0.01, precision: str = "diag", **training) -> Agent:
  """NeuralUCB (Zhou et al. 2020): f(x; θ̂) + ν √(gᵀ Z⁻¹ g / m), with its γ_t set to ν."""
  cfg, opt = _setup(nu, lam, eta, training)

  def index(key, state, rnd, f, g, z_inv_g):
    del key, state, rnd
    return f + nu * jnp.sqrt(precision_lib.quadratic(g, z_inv_g) / cfg.width)

  return _z_agent("neural_ucb", index, lam, opt, cfg, precision, z_after_training=False)


def neural_ts(nu=0.1, lam=1e-3, eta=0.01, precision: str = "diag", **training) -> Agent:
  """NeuralTS (Zhang et al. 2021): r̃_a ~ N(f(x_a; θ̂), ν² σ_a²), σ_a² = λ g_aᵀ Z⁻¹ g_a / m."""
  cfg, opt = _setup(nu, lam, eta, training)

  def index(key, state, rnd, f, g, z_inv_g):
    del state, rnd
    sigma = jnp.sqrt(lam * precision_lib.quadratic(g, z_inv_g) / cfg.width)
    return f + nu * sigma * jax.random.normal(key, f.shape)

  return _z_agent("neural_ts", index, lam, opt, cfg, precision, z_after_training=False)


AGENTS: dict[str, Callable[..., Agent]] = {
    "rbmle_ga": rbmle_ga, "rbmle_pc": rbmle_pc, "neural_ucb": neural_ucb, "neural_ts": neural_ts,
}


def get(name: str, **kwargs) -> Agent:
  """An agent by name: one of `AGENTS`."""
  return AGENTS[_checks.choice("agent", name, AGENTS)](**kwargs)


def regularised_log_likelihood(theta: Params, theta0: Params, buf: buffer_lib.Buffer,
                               lik: likelihoods.Likelihood, lam) -> chex.Array:
  """ℓ_λ(F_t; θ) of (10) over the whole buffer (a sum, not normalised)."""
  return _history(theta, buf, lik, grad=False) - _penalty(theta, theta0, lam)


def _z_agent(name, index, lam, opt, cfg, precision_name, z_after_training) -> Agent:
  """The agents with one estimator θ̂ and a Z⁻¹: PC, UCB, TS (Gaussian ℓ, as (14))."""
  prec = precision_lib.get(precision_name)
  lik = likelihoods.gaussian

  def init(key, env, capacity):
    theta0, buf = _init_common(key, env, capacity, cfg)
    return AgentState(theta0, opt.init(theta0), theta0, prec.init(theta0, lam), buf,
                      jnp.ones((), jnp.int32))

  def step(key, state, rnd):
    k_index, k_fit = jax.random.split(key)
    f, g = network.arm_grads(state.theta, rnd.x, rnd.block)
    z_inv_g = prec.solve(state.z, state.theta0, g, rnd.block)
    arm = jnp.argmax(index(k_index, state, rnd, f, g, z_inv_g))
    state, info = _finish(state, rnd, arm)
    theta, opt_state = state.theta, state.opt_state
    if cfg.restart:
      theta, opt_state = state.theta0, opt.init(state.theta0)
    theta, opt_state = _fit(theta, opt_state, state.theta0, state.buffer, k_fit, lik, lam, opt,
                            cfg, None)
    if z_after_training:
      g_t = jax.grad(network.apply_block)(network.block_of(theta, rnd.block[arm]), rnd.x[arm])
    else:
      g_t = jax.tree.map(lambda v: v[arm], g)
    z = prec.update(state.z, state.theta0, g_t, rnd.block[arm], cfg.width)
    return state._replace(theta=theta, opt_state=opt_state, z=z), info

  return Agent(name, init, step)


def _finish(state, rnd, arm):
  """Plays `arm`: records (x, block, r) in the buffer, advances t, reports the regret."""
  r = rnd.reward[arm]
  buf = buffer_lib.add(state.buffer, rnd.x[arm], rnd.block[arm], r)
  regret = jnp.max(rnd.mean) - rnd.mean[arm]
  return state._replace(buffer=buf, t=state.t + 1), StepInfo(regret, arm, r)


def _fit(theta, opt_state, theta0, buf, key, lik, lam, opt, cfg, bias):
  """J optimiser steps on −(ℓ_λ(F_t; θ) + bias(θ)) / n_t (full batch or minibatch)."""
  n = jnp.maximum(buf.count, 1).astype(jnp.float32)
  if cfg.batch_size is None:
    history_grad = lambda th, j: _history(th, buf, lik, grad=True)[1]
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
    return (0.0 if bias is None else bias(th)) - _penalty(th, theta0, lam)

  def body(j, carry):
    th, os = carry
    grads = jax.tree.map(lambda a, b: -(a + b) / n, history_grad(th, j), jax.grad(rest)(th))
    updates, os = opt.update(grads, os, th)
    return optax.apply_updates(th, updates), os

  return jax.lax.fori_loop(0, cfg.train_steps, body, (theta, opt_state))


def _history(theta, buf, lik, grad):
  """ℓ(F_t; θ) of (9) and, with `grad`, its gradient: the used tiles' rows through their
  blocks, masked, a chunk of tiles at a time (O(t) work at round t, not O(capacity)); each
  chunk's first-layer gradient is added into the blocks it read only."""
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


def _penalty(theta, theta0, lam):
  m = theta.w.shape[-1]
  sq = sum(jnp.sum((a - b) ** 2) for a, b in zip(jax.tree.leaves(theta), jax.tree.leaves(theta0)))
  return 0.5 * m * lam * sq


def _init_common(key, env, capacity, cfg):
  theta0 = network.init(key, env.dim, cfg.width, cfg.depth, env.num_blocks)
  return theta0, buffer_lib.empty(capacity, env.dim, env.num_blocks)


def _training(width: int = 32, depth: int = 2, train_steps: int = 10, batch_size: int | None = None,
              restart: bool = False, optimizer: str = "sgd") -> Training:
  network.check_architecture(width, depth)
  _checks.positive_int("train_steps", train_steps)
  if batch_size is not None:
    _checks.positive_int("batch_size", batch_size)
  if not isinstance(restart, bool):
    raise ValueError(f"restart must be a bool, got {restart!r}")
  _checks.choice("optimizer", optimizer, OPTIMIZERS)
  return Training(train_steps, batch_size, restart, optimizer, width, depth)


def _setup(nu, lam, eta, training):
  """The training config and optimiser of an agent whose bonus weight is a constant ν."""
  cfg = _training(**training)
  _checks.positive("nu", nu, strict=False)
  return cfg, _optimizer(lam, eta, cfg)


def _optimizer(lam, eta, cfg):
  _checks.positive("lam", lam)
  _checks.positive("eta", eta)
  return OPTIMIZERS[cfg.optimizer](eta)


def _schedule(nu, n):
  _checks.positive("n", n, strict=False)
  return schedules.power(nu, n)
