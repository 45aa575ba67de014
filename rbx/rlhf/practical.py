"""Practical online RLHF: the exploration schemes as DPO-form losses on a parametric policy.

Practitioners run online RLHF as losses on a policy (TRL's OnlineDPO and XPO trainers, SELM,
oat): no reward model is solved to optimality, there is no box [0, r_max], and expectations
are estimated from samples. In the bandit model the Bradley–Terry oracle and J(π*, r*) are
exact, so these agents can be checked against the exact-solver agents of `rbx.rlhf.agents`.

**The loss form.** Let π_θ(a|x) be a parametric policy (`rbx.rlhf.policies`) and

    r_θ(x, a) = β log π_θ(a|x)/π_ref(a|x)

its implicit reward (DPO's; defined up to a per-prompt constant, which neither ℓ nor J*
sees). Since π_θ(·|x) sums to one, Z_{r_θ}(x) = Σ_a π_ref(a|x) e^{r_θ(x,a)/β} = Σ_a π_θ(a|x) = 1,
so by (2.4) π_{r_θ} = π_θ: the policy step (3.1b)/(3.2b) for the reward r_θ is π_θ itself.
The paper's objects become

* ℓ(r_θ, D) of (2.2) = Σ_{(x, a+, a−) ∈ D} log σ(r_θ(x, a+) − r_θ(x, a−)), minus the DPO loss
  (sigmoid form, summed over D);
* J*(r_θ; π_cal) of (2.7) = β E_ρ log Z_{r_θ} − E_ρ E_{π_cal}[r_θ]
                          = −β E_{x∼ρ} E_{a∼π_cal(·|x)}[log π_θ(a|x)/π_ref(a|x)]
  (`implicit_J_star`);

so the optimistic step (3.1a)/(3.2a), max_r ℓ(r, D) + α_t J*(r; π_cal), becomes one loss on θ,

    L(θ) = DPO(θ; D) + α_t β Ê_{x, a∼π_cal}[log π_θ(a|x)/π_ref(a|x)]          (`loss`),

and the agents minimise L(θ) + (λ/2)‖θ − θ_ref‖² (`l2` = λ, default 1; θ_ref: π_θ = π_ref)
by a fixed number of optax steps per round, warm-started from the previous round's θ (and
optimiser state). π_cal is held fixed (not differentiated). The expectation Ê is exact
(`cal_samples=None`: Σ_x ρ(x) Σ_a π_cal(a|x) ·, which with the tabular policy is the exact
agents' objective), or estimated at the round's prompt x_t from the round's own answer drawn
from π_cal (`cal_samples=0`, what TRL and SELM do) or from k fresh draws (`cal_samples=k`,
with a key of their own: `act` and `update` receive the same key and split it the same way,
`_keys`). In expectation over x_t ∼ ρ the sampled bonus is α_t J*: one unit of J* against
ℓ summed over all of D^(t), as in (3.2a).

**What the relaxation solves.** With λ = 0 and no box, L has no minimiser for α > 0: the
bonus −α J*(r_θ) = α β Σ π_cal log π_θ/π_ref decreases without bound as a reward gap that the
data do not pin down grows (raising an answer that never lost costs DPO nothing), so the
result is set by learning rate × steps (3,000 Adam steps at t = 1 drive the gap past 100;
`tests/rlhf/test_practical.py`). It is not "the exact step without the box": that problem
has no solution. The ℓ2 term makes L coercive (|J*(r_θ)| grows at most linearly in θ, the
penalty quadratically), so a minimiser exists: the step is the maximum a posteriori one
under a Gaussian prior θ ∼ N(θ_ref, I/λ),

    max_θ ℓ(r_θ, D) + α_t J*(r_θ; π_cal) − (λ/2)‖θ − θ_ref‖²,

the practical counterpart of the paper's box (the prior's weight is fixed while ℓ grows with
t, so its pull fades as the data grow). `clip=True` bounds the implicit reward to the box
instead (or as well): per prompt r̄_θ = h tanh((r_θ − mean_a r_θ)/h) with h = r_max/2, a
smooth increasing map onto rewards of range < r_max (the box [0, r_max]^A up to the shift
that nothing sees), deployed as π_{r̄_θ} ∝ π_ref e^{r̄_θ/β} (`clip_to_box`; the identities above
hold for it unchanged). It keeps every gradient, unlike a floor max(r, max r − r_max), which
zeroes the clipped entries' and stalls; but the box is open, so with λ = 0 an optimum on its
boundary (where the exact step's usually lies) is reached only as θ → ∞.

**Why λ > 0 by default.** With λ = 0 a single comparison is separable data: its DPO loss has
no minimiser, so a fixed number of optimiser steps moves θ by learning rate × steps in a
direction the data do not set; on-policy pairs then become ties (a1 = a2, no information) and
the data stay separable, so online DPO, VPO and Algorithm 1 can drift away from π* while XPO
(a2 ∼ π_ref keeps the pairs distinct) learns. λ = 1 is the prior of `random_contextual`'s
θ* ∼ N(0, I). The term also makes a stationary start a strict minimum: the bonus is stationary
at θ^(t) (∇_r J*(r; π^(t)) = π_r − π^(t) = 0 at r = r^(t)), and with λ above the bonus's
curvature there — α_t β λ_max(diag π^(t) − π^(t)π^(t)ᵀ) ≤ α_t β/2 for the tabular policy,
(α_t/β) λ_max(E_w Cov_{π^(t)} φ) for the log-linear one — π^(2) = π^(1) after a tie at t = 1
(larger α_t, e.g. Proposition 3's schedule, make it a saddle again). The measured effect of
λ, seed by seed: docs/practical_rlhf.md.

**The schemes** (`rbx.rlhf.schemes`, with what each is in practice):

================  ===========  ===========  ===================  ========================
agent             a1 ~         a2 ~         π_cal                = in practice
================  ===========  ===========  ===================  ========================
`online_dpo`      π^(t)        π^(t)        — (α = 0)            TRL OnlineDPO, oat
`xpo` / `selm`    π^(t)        π_ref        π_ref (sample a2)    TRL XPO, SELM
`vpo`             π^(t)        π^(t)        fixed (k draws)      VPO
`algorithm1`      π^(t−1)      π^(t)        π^(t) (sample a2)    Algorithm 1
================  ===========  ===========  ===================  ========================

With π_cal = π_ref and one comparison, L is TRL's XPO loss −log σ(β Δ) + α_XPO log π_θ(y_ref)
with α_XPO = α β, up to the constant −α β log π_ref(y_ref) (so the same gradient), and it is
SELM's `optimistic_dpo_loss` −log σ(β Δ) + α β log π_θ(y_ref)/π_ref(y_ref) exactly (SELM's
α is this α). The agents keep the win counts `wins[x, a, b]`, the sufficient statistics of
ℓ (DPO over the whole D^(t), as (3.2a)), so a round costs train_steps × O(|X| A²) plus the
policy's forward pass, whatever t is.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from rbx import _checks, schedules
from rbx.core.protocol import Agent
from rbx.rlhf import objectives, policies, schemes
from rbx.rlhf.env import Prompt, Query

OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd}
L2 = 1.0
"""The default λ of the ℓ2 penalty toward θ_ref (module docstring)."""


def _keys(key: chex.PRNGKey) -> chex.Array:
  """The round's three keys: a1's, a2's and the calibration draws'. `act` and `update` receive
  the same key (`rbx.core.protocol.pair`), so both split it here and each uses its own."""
  return jax.random.split(key, 3)


class PracticalState(NamedTuple):
  """State carried between rounds. Shapes: X prompts, A actions.

  Attributes:
    params: the policy's parameters θ (`rbx.rlhf.policies`).
    opt_state: the optax state of the optimiser over θ.
    wins: win counts, `wins[x, a, b]` = times a was preferred over b at prompt x, (X, A, A).
    log_pi: log π^(t), the deployed policy, (X, A).
    log_pi_prev: log π^(t-1), (X, A) (Algorithm 1 samples a1 from it).
    t: the round t about to run, starting at 1; int32 scalar.
  """
  params: Any
  opt_state: Any
  wins: chex.Array
  log_pi: chex.Array
  log_pi_prev: chex.Array
  t: chex.Array


def implicit_reward(log_pi: chex.Array, log_ref: chex.Array, beta) -> chex.Array:
  """r_θ = β (log π_θ − log π_ref), DPO's implicit reward; same shape as `log_pi`."""
  return beta * (log_pi - log_ref)


def implicit_J_star(log_pi: chex.Array, log_ref: chex.Array, pi_cal: chex.Array, beta):
  """J*(r_θ; π_cal) of (2.7) for normalised π_θ: −β Σ_a π_cal(a) log π_θ(a)/π_ref(a).

  Equal to `rbx.rlhf.J_star(implicit_reward(log_pi, log_ref, beta), π_ref, π_cal, β)`
  (module docstring), with no partition function. Shapes: (..., A) -> (...).
  """
  return -jnp.sum(pi_cal * implicit_reward(log_pi, log_ref, beta), axis=-1)


def clip_to_box(log_pi: chex.Array, log_ref: chex.Array, beta, r_max) -> chex.Array:
  """log π_{r̄} with r̄ = h tanh((r_θ − c)/h), h = r_max/2, c = mean_a r_θ per prompt; (X, A).

  A smooth increasing map of the implicit reward onto rewards of range < r_max — the paper's
  box [0, r_max]^A up to the per-prompt shift nothing sees (every such r̄ is reached) —
  renormalised by (2.4). Its derivative is positive everywhere, so no entry loses its
  gradient (a floor max(r, max r − r_max) zeroes the clipped entries' gradients and stalls
  descent at points that are not KKT points of the boxed problem).
  """
  r = implicit_reward(log_pi, log_ref, beta)
  h = 0.5 * r_max
  r = h * jnp.tanh((r - jnp.mean(r, axis=-1, keepdims=True)) / h)
  return jax.nn.log_softmax(log_ref + r / beta, axis=-1)


def dpo_loss(log_pi: chex.Array, log_ref: chex.Array, wins: chex.Array, beta) -> chex.Array:
  """DPO(θ; D) = −ℓ(r_θ, D) of (2.2), summed over the comparisons D given as win counts.

  Args:
    log_pi, log_ref: log π_θ and log π_ref, (X, A).
    wins: `wins[x, a, b]`, (X, A, A).
  Returns:
    scalar ≥ 0: Σ −log σ(β (log π_θ/π_ref (x, a+) − log π_θ/π_ref (x, a−))) over D.
  """
  r = implicit_reward(log_pi, log_ref, beta)
  return -jnp.sum(jax.vmap(objectives.log_likelihood)(r, wins))


def loss(log_pi: chex.Array, log_ref: chex.Array, wins: chex.Array, beta, alpha,
         pi_cal: chex.Array, weights: chex.Array) -> chex.Array:
  """L(θ) = DPO(θ; D) − α Σ_x w(x) J*(r_θ(x); π_cal(x))
          = DPO(θ; D) + α β Σ_x w(x) Σ_a π_cal(a|x) log π_θ(a|x)/π_ref(a|x),
  minus the objective (3.1a)/(3.2a) at r = r_θ (module docstring; the agents add the ℓ2 term).

  Args:
    log_pi, log_ref: log π_θ and log π_ref, (X, A).
    wins: win counts, (X, A, A).
    beta, alpha: β and the bonus weight α_t, scalars.
    pi_cal: π_cal per prompt, (X, A), exact or the empirical distribution of samples.
    weights: w(x), the estimate of E_{x∼ρ}: ρ itself, or one-hot at the round's prompt, (X,).
  Returns:
    the scalar loss.
  """
  bonus = jnp.dot(weights, implicit_J_star(log_pi, log_ref, pi_cal, beta))
  return dpo_loss(log_pi, log_ref, wins, beta) - alpha * bonus


def online_dpo(policy: str = "tabular", optimizer: str = "adam", learning_rate=0.1,
               train_steps: int = 20, clip: bool = False, pi_init=None, l2=L2) -> Agent:
  """Online DPO (α = 0): a1, a2 ~ π^(t), `train_steps` optax steps on DPO(θ; D^(t)) per
  round; the no-exploration control (the practical `rbx.rlhf.greedy`).

  Args:
    policy: "tabular" or "loglinear" (`rbx.rlhf.policies`).
    optimizer: "adam" or "sgd" (optax), with `learning_rate` (traced: it can be swept).
    train_steps: optimiser steps per round.
    clip: bound the implicit reward to the box, smoothly (`clip_to_box`).
    pi_init: π^(1) of the tabular policy, (A,) or (X, A); default π_ref.
    l2: λ ≥ 0 of the penalty (λ/2)‖θ − θ_ref‖² (module docstring: why it is on by default).
  """
  return _make("online_dpo", 0.0, None, policy, optimizer,
               learning_rate, train_steps, clip, pi_init, None, None, l2)


def xpo(alpha: schedules.Schedule | float = 1.0, policy: str = "tabular",
        optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
        cal_samples: int | None = 0, clip: bool = False, pi_init=None, l2=L2) -> Agent:
  """XPO's loss (Xie et al. 2025; TRL's XPOTrainer): a1 ~ π^(t), a2 ~ π_ref, π_cal = π_ref.

  TRL's `alpha` is α β here. `cal_samples`: 0 estimates E_{π_ref} by the round's a2 (TRL's
  y_ref), k ≥ 1 by k fresh draws at x_t, None exactly. Other arguments as `online_dpo`.
  """
  return _make("xpo", alpha, cal_samples, policy, optimizer,
               learning_rate, train_steps, clip, pi_init, None, None, l2)


def selm(alpha: schedules.Schedule | float = 1.0, policy: str = "tabular",
         optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
         cal_samples: int | None = 0, clip: bool = False, pi_init=None, l2=L2) -> Agent:
  """SELM's loss (Zhang et al. 2025, `optimistic_dpo_loss`): the same as `xpo` in this model
  (SELM's α is this α)."""
  return xpo(alpha, policy, optimizer, learning_rate, train_steps, cal_samples, clip,
             pi_init, l2)._replace(name="selm")


def vpo(alpha: schedules.Schedule | float = 1.0, pi_cal=None, policy: str = "tabular",
        optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
        cal_samples: int | None = 1, clip: bool = False, pi_init=None, l2=L2) -> Agent:
  """VPO's loss (Cen et al. 2025): a1, a2 ~ π^(t), a fixed calibration policy π_cal.

  `pi_cal` defaults to the task's (Example 1's (1 − 2p, p, p), else π_ref). Neither answer is
  drawn from π_cal, so `cal_samples` must be k ≥ 1 fresh draws or None (exact).
  """
  if cal_samples == 0:
    raise ValueError("cal_samples=0 estimates E_{π_cal} by the round's answer drawn from π_cal, "
                     "and VPO draws none from it: use cal_samples >= 1 or None (exact)")
  return _make("vpo", alpha, cal_samples, policy, optimizer,
               learning_rate, train_steps, clip, pi_init, None, pi_cal, l2)


def algorithm1(alpha: schedules.Schedule | float = 1.0, policy: str = "tabular",
               optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
               cal_samples: int | None = 0, clip: bool = False, pi_init=None,
               pi_prev_init=None, l2=L2) -> Agent:
  """Algorithm 1's loss: a1 ~ π^(t−1), a2 ~ π^(t), π_cal = π^(t) held fixed, α_t.

  `cal_samples`: 0 estimates E_{π^(t)} by the round's a2, k ≥ 1 by k fresh draws at x_t, None
  exactly. `pi_prev_init`: π^(0), default π^(1). Other arguments as `online_dpo`.
  """
  return _make("algorithm1", alpha, cal_samples, policy,
               optimizer, learning_rate, train_steps, clip, pi_init, pi_prev_init, None, l2)


def _make(name, alpha, cal_samples, policy, optimizer, learning_rate, train_steps, clip,
          pi_init, pi_prev_init, pi_cal, l2) -> Agent:
  scheme = schemes.SCHEMES["greedy" if name == "online_dpo" else name]
  schedule = schemes.alpha_schedule(scheme, alpha)
  make_policy = policies.POLICIES[_checks.choice("policy", policy, policies.POLICIES)]
  if policy == "loglinear" and pi_init is not None:
    raise ValueError("pi_init is for policy='tabular'; the log-linear policy starts at π_ref")
  pol = make_policy(pi_init) if policy == "tabular" else make_policy()
  opt = OPTIMIZERS[_checks.choice("optimizer", optimizer, OPTIMIZERS)](learning_rate)
  _checks.positive("learning_rate", learning_rate)
  _checks.positive_int("train_steps", train_steps)
  _checks.positive("l2", l2, strict=False)
  if cal_samples is not None and (isinstance(cal_samples, bool) or not isinstance(cal_samples, int)
                                  or cal_samples < 0):
    raise ValueError(f"cal_samples must be None or an integer >= 0, got {cal_samples!r}")
  for field, value in (("pi_prev_init", pi_prev_init), ("pi_cal", pi_cal)):
    if value is not None:
      _checks.probability(field, value)

  def deployed(params, task):
    log_pi = pol.log_probs(params, task)
    return clip_to_box(log_pi, jnp.log(task.pi_ref), task.beta, task.r_max) if clip else log_pi

  def init(key, task, horizon: int) -> PracticalState:
    del key, horizon
    _checks.positive("beta", task.beta)      # r_θ = β log π_θ/π_ref: no β = 0 (greedy) form
    params = pol.init(task)
    log_pi = deployed(params, task)
    log_prev = log_pi if pi_prev_init is None else jnp.log(
        jnp.broadcast_to(jnp.asarray(pi_prev_init, jnp.float32), task.pi_ref.shape))
    X, A = task.pi_ref.shape
    return PracticalState(params=params, opt_state=opt.init(params), wins=jnp.zeros((X, A, A)),
                          log_pi=log_pi, log_pi_prev=log_prev, t=jnp.ones((), jnp.int32))

  def act(key, state: PracticalState, obs: Prompt, task):
    a1, a2 = schemes.answers(_keys(key)[:2], scheme, {
        "previous": lambda: state.log_pi_prev[obs.x], "current": lambda: state.log_pi[obs.x],
        "reference": lambda: jnp.log(task.pi_ref)[obs.x]})
    return state, Query(a1, a2, state.log_pi)

  def calibration_estimate(key, state, obs, query, task):
    """(π̂_cal, w): the estimate of E_{x∼ρ} E_{a∼π_cal} as per-prompt weights (X, A), (X,)."""
    X, A = task.pi_ref.shape
    log_cal = schemes.calibration_policy(scheme, {
        "current": lambda: state.log_pi, "reference": lambda: jnp.log(task.pi_ref),
        "fixed": lambda: jnp.log(task.pi_cal if pi_cal is None else jnp.broadcast_to(
            jnp.asarray(pi_cal, jnp.float32), (X, A)))})
    if cal_samples is None:
      return jnp.exp(log_cal), task.rho
    if cal_samples == 0:
      draws = query.a2[None]                       # the round's answer drawn from π_cal
    else:
      draws = jax.random.categorical(_keys(key)[2], log_cal[obs.x], shape=(cal_samples,))
    row = jnp.mean(jax.nn.one_hot(draws, A), axis=0)
    onehot = jax.nn.one_hot(obs.x, X)
    return onehot[:, None] * row[None], onehot

  def update(key, state: PracticalState, obs: Prompt, query: Query, a1_wins, task):
    winner = jnp.where(a1_wins, query.a1, query.a2)
    loser = jnp.where(a1_wins, query.a2, query.a1)
    wins = state.wins.at[obs.x, winner, loser].add(1.0)
    log_ref = jnp.log(task.pi_ref)
    alpha_t = schedule(state.t)
    cal, weights = calibration_estimate(key, state, obs, query, task)

    theta_ref = pol.reference(task)

    def objective(params):
      prior = 0.5 * l2 * jnp.sum(jnp.square(params - theta_ref))
      return loss(deployed(params, task), log_ref, wins, task.beta, alpha_t, cal, weights) + prior

    def step(carry, _):
      params, opt_state = carry
      grads = jax.grad(objective)(params)
      updates, opt_state = opt.update(grads, opt_state, params)
      return (optax.apply_updates(params, updates), opt_state), None

    (params, opt_state), _ = jax.lax.scan(step, (state.params, state.opt_state), None,
                                          length=train_steps)
    return PracticalState(params=params, opt_state=opt_state, wins=wins,
                          log_pi=deployed(params, task), log_pi_prev=state.log_pi, t=state.t + 1)

  return Agent(name, init, act, update)
