"""The baselines of the NeuralRBMLE paper's experiments (section 6, Appendix F), as
`rbx.core.Agent`s.

=================  =========================================================================
agent              index of arm a at round t
=================  =========================================================================
`lin_rbmle`        θ̂_bᵀx_{t,a} + (α(t)/2)‖x_{t,a}‖²_{V_b⁻¹}, α(t) = ν t^n — RBMLE for linear
                   bandits (Hung et al. 2021), ridge θ̂_b = V_b⁻¹ Σ r_s x_s.
`lin_ucb`          θ̂_bᵀx_{t,a} + ν ‖x_{t,a}‖_{V_b⁻¹} — LinUCB (Li et al. 2010, disjoint models).
`deep_fpl`         f(x_{t,a}; θ̃_t), θ̃_t fitted to the history with rewards r_s + ν ε_s,
                   ε_s ~ N(0, 1) drawn afresh every round — follow the perturbed leader for
                   neural bandits (Kveton et al. 2020).
`bootstrapped_nn`  f(x_{t,a}; θ^{(j)}) for one of q networks drawn uniformly each round; each
                   observation joins network i's data with probability p (Osband et al. 2016;
                   q = 10, p = 0.8 as in Appendix F).
=================  =========================================================================

Linear agents. V_b = λI + Σ_{s: b_s = b} x_s x_sᵀ, one d × d matrix per first-layer block b.
Under the disjoint encoding of Appendix F (block b = arm) the d'K × d'K matrix of the dense
contexts is block-diagonal with these K blocks, so the state is (K, d', d') and an arm's
context never becomes a d'K-vector; synthetic bandits (one block) share one V. V_b⁻¹ is kept
by the Sherman–Morrison update V⁻¹ ← V⁻¹ − (V⁻¹x)(V⁻¹x)ᵀ / (1 + ‖x‖²_{V⁻¹}): O(d²) a round,
never an inverse. Appendix F uses λ = 1 for LinRBMLE (the default here) and α(t) = ν√t.

Neural agents. DeepFPL and BootstrappedNN train the network of (2) exactly as the agents of
`rbx.neural.agents` do (`rbx.neural.training`: J optimiser steps per round on the Gaussian
ℓ_λ of (10), divided by n_t; warm start or `restart`; `width`, `depth`, `train_steps`,
`batch_size`, `optimizer`), and act greedily on the trained network(s): `act` picks the arm
from the networks of the previous round, `update` records the reward and trains. Each
bootstrap network has its own θ_0 (independent initialisations, as Osband et al.) and its
data are a view of the shared history buffer: a mask over its rows (full-batch training) and
the list of its rows (minibatches).

Every numeric hyperparameter (ν, n, λ, η, p) may be traced, so `rbx.neural.sweep` vmaps over it.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rbx import _checks
from rbx.core.protocol import Agent
from rbx.neural import buffer as buffer_lib
from rbx.neural import likelihoods, network
from rbx.neural import training as training_lib
from rbx.neural.agents import AgentState, record
from rbx.neural.network import Params


class LinearState(NamedTuple):
  """State of the linear agents. Shapes: B first-layer blocks, d features.

  Attributes:
    v_inv: V_{t−1,b}⁻¹ per block, (B, d, d).
    xr: Σ_{s<t, b_s = b} r_s x_s per block, (B, d).
    t: the round about to run, from 1; int32 scalar.
  """
  v_inv: chex.Array
  xr: chex.Array
  t: chex.Array


class BootstrapState(NamedTuple):
  """State of `bootstrapped_nn`: q networks over one shared history buffer.

  Attributes:
    theta: the q-stack of θ^{(i)}.
    opt_state: the optimiser's state, q-stacked.
    theta0: the q-stack of each network's θ_0^{(i)}.
    member: 1.0 where a buffer row belongs to network i's data, (q, G, S) like `buffer.mask`.
    slot: network i's rows as flat buffer rows, (q, N) like `buffer.slot`.
    count: the number of network i's rows, (q,).
    buffer: the history F_t.
    t: the round about to run, from 1; int32 scalar.
  """
  theta: Params
  opt_state: Any
  theta0: Params
  member: chex.Array
  slot: chex.Array
  count: chex.Array
  buffer: buffer_lib.Buffer
  t: chex.Array


def lin_rbmle(nu=0.1, n=0.5, lam=1.0) -> Agent:
  """LinRBMLE (Hung et al. 2021): index θ̂ᵀx + (α(t)/2)‖x‖²_{V⁻¹} with α(t) = ν t^n.

  Args:
    nu, n: α(t) = ν t^n (Appendix F: n = 1/2, ν tuned over {1, 0.1, 10⁻³, 10⁻⁵}); traced.
    lam: the ridge λ of V_0 = λI (Appendix F: 1); traced.
  """
  alpha = training_lib.schedule(nu, n)
  return _linear("lin_rbmle", lambda t, w2: 0.5 * alpha(t) * w2, lam)


def lin_ucb(nu=0.1, lam=1.0) -> Agent:
  """LinUCB (Li et al. 2010, disjoint linear models): index θ̂ᵀx + ν ‖x‖_{V⁻¹}.

  Args:
    nu: the confidence width's weight; traced.
    lam: the ridge λ of V_0 = λI; traced.
  """
  _checks.positive("nu", nu, strict=False)
  return _linear("lin_ucb", lambda t, w2: nu * jnp.sqrt(w2), lam)


def deep_fpl(nu=0.1, lam=1e-3, eta=0.01, **training) -> Agent:
  """DeepFPL (Kveton et al. 2020, neural variant): greedy on a network fitted to perturbed rewards.

  Each round the J training steps see the history with rewards r_s + ν ε_s, with fresh
  ε_s ~ N(0, 1) for every s, so the perturbation is that of follow-the-perturbed-leader.

  Args:
    nu: the perturbation's scale (Appendix F tunes it over {1, 0.1, 10⁻³, 10⁻⁵}); traced.
    lam, eta: λ of (10) and the step size η; traced.
    **training: as `rbx.neural.rbmle_ga`.
  """
  cfg, opt = training_lib.setup(nu, lam, eta, training)
  training_lib.every_round(cfg, "deep_fpl")
  lik = likelihoods.gaussian

  def init(key, spec, horizon):
    theta0, buf = training_lib.init(key, spec, horizon, cfg)
    return AgentState(theta0, opt.init(theta0), theta0, (), (), buf, jnp.ones((), jnp.int32))

  def act(key, state, obs, spec):
    del key, spec
    return state, jnp.argmax(network.predict_each(state.theta, obs.x, obs.block, cfg.compute))

  def update(key, state, obs, arm, reward, spec):
    del spec
    k_noise, k_fit = jax.random.split(key)
    state = record(state, obs, arm, reward)
    buf = state.buffer
    perturbed = buf._replace(r=buf.r + nu * buf.mask * jax.random.normal(k_noise, buf.r.shape))
    theta, opt_state = training_lib.start(state.theta, state.opt_state, state.theta0, opt, cfg)
    theta, opt_state = training_lib.fit(theta, opt_state, state.theta0, perturbed, k_fit, lik,
                                        lam, opt, cfg)
    return state._replace(theta=theta, opt_state=opt_state)

  return Agent("deep_fpl", init, act, update)


def bootstrapped_nn(p=0.8, lam=1e-3, eta=0.01, num_networks: int = 10, **training) -> Agent:
  """BootstrappedNN (Osband et al. 2016) as configured in Appendix F: q networks, each new
  observation joins each network's data independently with probability p; each round one
  network, drawn uniformly, acts greedily. All q networks train every round.

  Args:
    p: the probability that an observation joins a network's data (Appendix F: 0.8); traced.
    lam, eta: λ of (10) and the step size η; traced.
    num_networks: q (Appendix F: 10); static.
    **training: as `rbx.neural.rbmle_ga`.
  """
  cfg = training_lib.settings(**training)
  training_lib.every_round(cfg, "bootstrapped_nn")
  q = _checks.positive_int("num_networks", num_networks)
  _checks.in_range("p", p, 0.0, 1.0)
  opt = training_lib.optimizer(lam, eta, cfg)
  lik = likelihoods.gaussian

  def init(key, spec, horizon):
    init_one = lambda k: network.init(k, spec.dim, cfg.width, cfg.depth, spec.num_blocks,
                                      cfg.network)
    theta0 = jax.vmap(init_one)(jax.random.split(key, q))
    buf = buffer_lib.empty(horizon, spec.dim, spec.num_blocks)
    member = jnp.zeros((q,) + buf.mask.shape)
    slot = jnp.zeros((q,) + buf.slot.shape, jnp.int32)
    return BootstrapState(theta0, jax.vmap(opt.init)(theta0), theta0, member, slot,
                          jnp.zeros(q, jnp.int32), buf, jnp.ones((), jnp.int32))

  def act(key, state, obs, spec):
    del spec
    k_pick, _, _ = jax.random.split(key, 3)
    j = jax.random.randint(k_pick, (), 0, q)
    theta_j = jax.tree.map(lambda v: v[j], state.theta)
    return state, jnp.argmax(network.predict_each(theta_j, obs.x, obs.block, cfg.compute))

  def update(key, state, obs, arm, reward, spec):
    del spec
    _, k_join, k_fit = jax.random.split(key, 3)
    count = state.buffer.count
    state = record(state, obs, arm, reward)
    buf = state.buffer
    flat = buf.slot[buf.count - 1]                 # the row the new observation went to
    joined = jax.random.bernoulli(k_join, p, (q,)) & (buf.count > count)
    member = state.member.reshape(q, -1).at[:, flat].max(joined.astype(jnp.float32))
    member = member.reshape(state.member.shape)
    nets, rows = jnp.arange(q), jnp.minimum(state.count, buf.slot.shape[0] - 1)
    slot = state.slot.at[nets, rows].set(jnp.where(joined, flat, state.slot[nets, rows]))
    counts = state.count + joined
    theta, opt_state = state.theta, state.opt_state
    if cfg.restart:
      theta, opt_state = state.theta0, jax.vmap(opt.init)(state.theta0)

    def fit(th, os, th0, mask, rows, n, k):
      own = buf._replace(mask=buf.mask * mask, slot=rows, count=n)      # network i's data
      return training_lib.fit(th, os, th0, own, k, lik, lam, opt, cfg)

    theta, opt_state = jax.vmap(fit)(theta, opt_state, state.theta0, member, slot, counts,
                                     jax.random.split(k_fit, q))
    return state._replace(theta=theta, opt_state=opt_state, member=member, slot=slot,
                          count=counts)

  return Agent("bootstrapped_nn", init, act, update)


def _linear(name, bonus, lam) -> Agent:
  """A ridge-regression agent with index θ̂_bᵀx + bonus(t, ‖x‖²_{V_b⁻¹}) per arm."""
  _checks.positive("lam", lam)

  def init(key, spec, horizon):
    del key, horizon
    B, d = spec.num_blocks, spec.dim
    v_inv = jnp.broadcast_to(jnp.eye(d) / jnp.asarray(lam, jnp.float32), (B, d, d))
    return LinearState(v_inv, jnp.zeros((B, d)), jnp.ones((), jnp.int32))

  def scores(state, obs):
    """V_b⁻¹ x_a (K, d), ‖x_a‖²_{V_b⁻¹} (K,) and the index (K,)."""
    v_inv = state.v_inv[obs.block]                                   # (K, d, d)
    v_inv_x = jnp.einsum("kij,kj->ki", v_inv, obs.x)                 # V_b⁻¹ x_a
    w2 = jnp.sum(obs.x * v_inv_x, axis=1)                            # ‖x_a‖²_{V_b⁻¹}
    mean = jnp.sum(v_inv_x * state.xr[obs.block], axis=1)            # θ̂_bᵀx_a (V⁻¹ symmetric)
    return v_inv_x, w2, mean + bonus(state.t, w2)

  def act(key, state, obs, spec):
    del key, spec
    return state, jnp.argmax(scores(state, obs)[2])

  def update(key, state, obs, arm, reward, spec):
    del key, spec
    v_inv_x, w2, _ = scores(state, obs)
    b, u = obs.block[arm], v_inv_x[arm]
    v_inv = state.v_inv.at[b].add(-jnp.outer(u, u) / (1.0 + w2[arm]))   # Sherman–Morrison
    xr = state.xr.at[b].add(reward * obs.x[arm])
    return LinearState(v_inv, xr, state.t + 1)

  return Agent(name, init, act, update)
