"""Neural contextual-bandit agents as `rbx.core.Agent`s: `init`, `act`, `update`.

All four share the network f(x; θ) of (2) with θ_0 of section 2.2, the regularised
surrogate log-likelihood ℓ_λ(F_t; θ) = ℓ(F_t; θ) − (mλ/2)‖θ − θ_0‖² of (9)–(10) on a masked
history buffer, and J steps of an optax optimiser per round (`rbx.neural.training`). They
differ in the index:

=============  ==========================================================================
agent          index of arm a at round t (α(t) = ν t^n, g_a = g(x_{t,a}; θ̂), Z = Z_{t−1})
=============  ==========================================================================
`rbmle_ga`     ℓ_λ(F_t; θ̃_a) + α(t) ζ(t) f(x_{t,a}; θ̃_a), θ̃_a from J ascent steps on (12)
               — Algorithm 1; the K arm problems run in one program (`arm_batch`).
`rbmle_pc`     f(x_{t,a}; θ̂ + (α(t)/m) Z⁻¹ g_a) — (15) and Algorithm 2.
`neural_ucb`   f(x_{t,a}; θ̂) + ν √(g_aᵀ Z⁻¹ g_a / m) (Zhou et al. 2020, γ_t = ν).
`neural_ts`    a draw of N(f(x_{t,a}; θ̂), ν² λ g_aᵀ Z⁻¹ g_a / m) (Zhang et al. 2021).
=============  ==========================================================================

UCB and TS take `form="reference"` for the public implementation's √(λ ν gᵀ U⁻¹ g) with
U = λI + Σ g gᵀ instead of the papers' forms above (`_confidence` says why both are offered).

A round is `act` then `update`, both with the round's agent key. GA trains its K arm
problems in `act` (the index needs θ̃_a) and keeps them in the state; `update` records the
played arm's reward. PC, UCB and TS split the key into (k_index, k_fit): `act` computes the
index from θ̂_{t−1} with k_index (UCB and TS keep the selection-time gradient at the chosen
arm in the state) and `update` records the reward, trains θ̂_t with k_fit and updates Z.
Training (full batch or stratified minibatches, warm start or `restart`) is described in
`rbx.neural.training`.

Z_t = λI + (1/m) Σ g gᵀ (Algorithm 2, line 10) in either representation of
`rbx.neural.precision`; PC adds the gradient at the newly trained θ̂ (line 10), UCB and TS the
selection-time gradient (as in their papers).

Defaults. `width=32`, `train_steps=10`, `eta=0.01`, `lam=1e-3`, `nu=0.1`, full batch, warm
start: small enough for CPU tests (T = 2000 in seconds), and with warm starts J = 10 still
adds up to 10·t ascent steps by round t. The paper's experiments (Appendix F) use m = 100,
J = 100, η = 0.001, λ = 0.001 and ν tuned over {1, 0.1, 10⁻³, 10⁻⁵}: pass `width=100,
train_steps=100, eta=1e-3`. Our η acts on the objective divided by n_t (see
`rbx.neural.training`), which keeps one η stable for every t; for unit-norm inputs
‖g‖² ≈ 1.5 m at θ_0, so full-batch ascent needs η ≲ 1/m (η = 0.01 at m = 32, 0.001 at
m = 100 as in the paper).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rbx import _checks, schedules
from rbx.core.protocol import Agent, batched_map
from rbx.neural import buffer as buffer_lib
from rbx.neural import likelihoods, network
from rbx.neural import training as training_lib
from rbx.neural import precision as precision_lib
from rbx.neural.env import Context
from rbx.neural.network import Params


class AgentState(NamedTuple):
  """State carried between rounds.

  Attributes:
    theta: θ̂_t (PC, UCB, TS, DeepFPL), or the K-stack of θ̃_{t,a} that GA trained at its last
      `act` (and warm-starts from).
    opt_state: the optimiser's state (K-stacked for GA).
    theta0: θ_0.
    z: Z_{t−1} (see `rbx.neural.precision`); () for GA and DeepFPL.
    g: the selection-time gradient g(x_{t,a_t}; θ̂_{t−1}) at the chosen arm, compact (`W1` is
      its block's (d, m)), from `act` for `update` (UCB, TS); () otherwise.
    buffer: the history F_t.
    t: the round about to run (the next `act`), from 1; int32 scalar.
  """
  theta: Params
  opt_state: Any
  theta0: Params
  z: Any
  g: Any
  buffer: buffer_lib.Buffer
  t: chex.Array


def rbmle_ga(nu=0.1, n=0.5, lam=1e-3, eta=0.01, zeta=1.0, zeta_n=0.0,
             likelihood: str = "gaussian", arm_batch: int | None = None, **training) -> Agent:
  """NeuralRBMLE-GA (Algorithm 1) with α(t) = ν t^n and the surrogate `likelihood` of (9).

  Args:
    nu, n: the bias schedule α(t) = ν t^n (section 6: n = 1/2); traced.
    lam, eta: λ of (10) and the step size η; traced.
    zeta, zeta_n: the index's weight on the bias term, ζ(t) = ζ t^zeta_n (Algorithm 1,
      line 8; the analysis needs U_b/(L_b ζ(t)) ≤ 1, (173)–(174)); default the constant 1;
      traced.
    likelihood: "gaussian", "bernoulli" or "mixture" (section 6).
    arm_batch: the K arm problems (training and the index's ℓ_λ) run in vmapped batches of
      this many, the batches in sequence (`lax.map`'s batch size); 1 runs the arms one after
      another. None (default): 1 for full-batch training on a CPU — faster there, as XLA:CPU
      runs the vmapped gathers of each chunk's blocks slowly (see benchmarks/README.md) —
      else all K at once.
    **training: `width`, `depth`, `train_steps`, `batch_size`, `restart`,
      `optimizer` (`rbx.neural.training.settings`).
  """
  lik = likelihoods.get(likelihood)
  cfg = training_lib.settings(**training)
  training_lib.every_round(cfg, "rbmle_ga")
  if arm_batch is not None:
    _checks.positive_int("arm_batch", arm_batch)
  sequential = cfg.batch_size is None and jax.default_backend() == "cpu"
  alpha, opt = training_lib.schedule(nu, n), training_lib.optimizer(lam, eta, cfg)
  _checks.positive("zeta", zeta, strict=False)
  _checks.positive("zeta_n", zeta_n, strict=False)
  weight = schedules.power(zeta, zeta_n)                             # ζ(t)

  def init(key, spec, horizon):
    theta0, buf = training_lib.init(key, spec, horizon, cfg)
    K = spec.num_arms
    stack = jax.tree.map(lambda p: jnp.broadcast_to(p, (K,) + p.shape), theta0)
    return AgentState(stack, jax.vmap(opt.init)(stack), theta0, (), (), buf,
                      jnp.ones((), jnp.int32))

  def act(key, state, obs, spec):
    del spec
    a_t = alpha(state.t)
    thetas, opt_state = state.theta, state.opt_state
    if cfg.restart:
      thetas = jax.tree.map(lambda p, q: jnp.broadcast_to(q, p.shape), thetas, state.theta0)
      opt_state = jax.vmap(opt.init)(thetas)

    def fit_arm(args):
      theta, os, x, b = args
      bias = lambda th: a_t * network.apply(th, x, b, cfg.compute)
      return training_lib.fit(theta, os, state.theta0, state.buffer, key, lik, lam, opt, cfg,
                              bias)

    K = obs.x.shape[0]
    batch = (1 if sequential else K) if arm_batch is None else min(arm_batch, K)
    over_arms = lambda f, xs: batched_map(f, xs, batch)
    thetas, opt_state = over_arms(fit_arm, (thetas, opt_state, obs.x, obs.block))
    ell = over_arms(lambda th: training_lib.regularised_log_likelihood(
        th, state.theta0, state.buffer, lik, lam, cfg.compute), thetas)
    f = jax.vmap(lambda th, x, b: network.apply(th, x, b, cfg.compute))(thetas, obs.x, obs.block)
    index = ell + a_t * weight(state.t) * f
    return state._replace(theta=thetas, opt_state=opt_state), jnp.argmax(index)

  def update(key, state, obs, arm, reward, spec):
    del key, spec
    return record(state, obs, arm, reward)

  return Agent("rbmle_ga", init, act, update)


def rbmle_pc(nu=0.1, n=0.5, lam=1e-3, eta=0.01, precision: str = "diag",
             **training) -> Agent:
  """NeuralRBMLE-PC (Algorithm 2): index f(x_{t,a}; θ̄_{t,a}) with θ̄ of (15), Gaussian ℓ.

  Args: as `rbmle_ga`; `precision` is "diag" (Appendix F) or "exact" (Sherman–Morrison).
  """
  cfg = training_lib.settings(**training)
  alpha, opt = training_lib.schedule(nu, n), training_lib.optimizer(lam, eta, cfg)

  def index(key, state, obs, f, g, z_inv_g):
    del key, f, g
    theta_bar = jax.tree.map(lambda p, v: p + alpha(state.t) / cfg.width * v,
                             jax.vmap(lambda b: network.block_of(state.theta, b))(obs.block),
                             z_inv_g)
    return jax.vmap(lambda th, x: network.apply_block(th, x, cfg.compute))(theta_bar, obs.x)

  return _z_agent("rbmle_pc", index, lam, opt, cfg, precision, z_after_training=True)


FORMS = ("paper", "reference")


def neural_ucb(nu=0.1, lam=1e-3, eta=0.01, precision: str = "diag", form: str = "paper",
               **training) -> Agent:
  """NeuralUCB (Zhou et al. 2020): f(x; θ̂) + ν √(gᵀ Z⁻¹ g / m), with its γ_t set to ν.

  `form="reference"` is the public NeuralTS/NeuralUCB code's width √(λ ν gᵀ U⁻¹ g) with
  U = λI + Σ g gᵀ (ν inside the root, no 1/m; see `_confidence`).
  """
  cfg, opt = training_lib.setup(nu, lam, eta, training)
  width, m_z = _confidence("neural_ucb", nu, lam, form, cfg.width)

  def index(key, state, obs, f, g, z_inv_g):
    del key, state, obs
    return f + width(precision_lib.quadratic(g, z_inv_g))

  return _z_agent("neural_ucb", index, lam, opt, cfg, precision, z_after_training=False, m_z=m_z)


def neural_ts(nu=0.1, lam=1e-3, eta=0.01, precision: str = "diag", form: str = "paper",
              **training) -> Agent:
  """NeuralTS (Zhang et al. 2021): r̃_a ~ N(f(x_a; θ̂), ν² σ_a²), σ_a² = λ g_aᵀ Z⁻¹ g_a / m.

  `form="reference"`: r̃_a ~ N(f(x_a; θ̂), λ ν g_aᵀ U⁻¹ g_a), U = λI + Σ g gᵀ, as the public
  implementation (see `_confidence`).
  """
  cfg, opt = training_lib.setup(nu, lam, eta, training)
  width, m_z = _confidence("neural_ts", nu, lam, form, cfg.width)

  def index(key, state, obs, f, g, z_inv_g):
    del state, obs
    return f + width(precision_lib.quadratic(g, z_inv_g)) * jax.random.normal(key, f.shape)

  return _z_agent("neural_ts", index, lam, opt, cfg, precision, z_after_training=False, m_z=m_z)


def _confidence(agent: str, nu, lam, form: str, m: int):
  """NeuralUCB's width / NeuralTS's std as a function of q = gᵀ Z⁻¹ g, and the m_z of Z's
  update Z_t = λI + (1/m_z) Σ g gᵀ, in either form:

  * "paper" (the NeuralUCB and NeuralTS papers; the default): m_z = m; UCB adds ν √(q/m),
    TS draws with std ν √(λ q / m).
  * "reference" (the public NeuralTS code, whose diagonal Z and data procedure the NeuralRBMLE
    paper follows, Appendix F, so most likely the code behind its baselines): U = λI + Σ g gᵀ
    (m_z = 1), and both use √(λ ν q), ν inside the root — so the paper's grid
    ν ∈ {1, 0.1, 10⁻³, 10⁻⁵} means other widths in each form. The network stays f of (2).
  """
  _checks.choice("form", form, FORMS)
  if form == "reference":
    return (lambda q: jnp.sqrt(lam * nu * q)), 1
  if agent == "neural_ucb":
    return (lambda q: nu * jnp.sqrt(q / m)), m
  return (lambda q: nu * jnp.sqrt(lam * q / m)), m


def record(state, obs: Context, arm, reward):
  """Plays `arm`: records (x, block, r) in the state's buffer and advances t."""
  buf = buffer_lib.add(state.buffer, obs.x[arm], obs.block[arm], reward)
  return state._replace(buffer=buf, t=state.t + 1)


def _z_agent(name, index, lam, opt, cfg, precision_name, z_after_training, m_z=None) -> Agent:
  """The agents with one estimator θ̂ and a Z⁻¹: PC, UCB, TS (Gaussian ℓ, as (14)); Z_t adds
  g gᵀ / m_z (default m, the width)."""
  prec = precision_lib.get(precision_name)
  lik = likelihoods.gaussian

  def init(key, spec, horizon):
    theta0, buf = training_lib.init(key, spec, horizon, cfg)
    g = () if z_after_training else jax.tree.map(jnp.zeros_like, network.block_of(theta0, 0))
    return AgentState(theta0, opt.init(theta0), theta0, prec.init(theta0, lam), g, buf,
                      jnp.ones((), jnp.int32))

  def act(key, state, obs, spec):
    del spec
    k_index, _ = jax.random.split(key)
    f, g = network.arm_grads(state.theta, obs.x, obs.block, cfg.compute)
    z_inv_g = prec.solve(state.z, state.theta0, g, obs.block)
    arm = jnp.argmax(index(k_index, state, obs, f, g, z_inv_g))
    if not z_after_training:
      state = state._replace(g=jax.tree.map(lambda v: v[arm], g))
    return state, arm

  def learn(k_fit, state, obs, arm, reward):
    state = record(state, obs, arm, reward)
    theta, opt_state = training_lib.start(state.theta, state.opt_state, state.theta0, opt, cfg)
    theta, opt_state = training_lib.fit(theta, opt_state, state.theta0, state.buffer, k_fit,
                                        lik, lam, opt, cfg)
    return state._replace(theta=theta, opt_state=opt_state)

  def skip(k_fit, state, obs, arm, reward):
    del k_fit, obs, arm, reward
    return state._replace(t=state.t + 1)

  def update(key, state, obs, arm, reward, spec):
    del spec
    _, k_fit = jax.random.split(key)
    args = (k_fit, state, obs, arm, reward)
    if cfg.thin_after is None:
      state = learn(*args)
    else:                               # NeuralUCB's train.py: some rounds neither store nor train
      state = jax.lax.cond(training_lib.trains(cfg, state.t), learn, skip, *args)
    if z_after_training:
      g_t = jax.grad(network.apply_block)(network.block_of(state.theta, obs.block[arm]),
                                          obs.x[arm], cfg.compute)
    else:
      g_t = state.g
    return state._replace(z=prec.update(state.z, state.theta0, g_t, obs.block[arm],
                                        m_z or cfg.width))

  return Agent(name, init, act, update)
