"""The shared-linear exact policy class: the exploration schemes over one linear reward
r_θ = θᵀφ for all prompts.

On a contextual environment (`rbx.rlhf.contextual`, features φ(x, a) ∈ R^d) the tabular
agents solve |X| separate bandits and cannot generalise across prompts. These agents keep one
θ ∈ R^d for all prompts: the update adds the comparison's feature difference
z = φ(x, a+) − φ(x, a−) to the data (`rbx.rlhf.linear.LinearData`), re-fits

    θ^(t+1) = argmax_{θ ∈ K} ℓ(θ; D^(t)) + α_t J*(r_θ; π_cal)          ((3.1a)/(3.2a))

with `rbx.rlhf.linear.search_linear` (K: reward range ≤ r_max at every prompt; how close to
the global maximum: docs/linear_rlhf.md), and
deploys π^(t+1) = π_{r_θ}, (2.4): log π(a|x) = log π_ref(a|x) + θᵀφ(x, a)/β − log Z(x)
((3.1b)/(3.2b)). The answers and the calibration policy come from the table of
`rbx.rlhf.schemes` (`make`: "linear/<scheme>" for every row).

θ is shared, so every scheme re-solves one d-dimensional problem a step (not |X| of A
dimensions): O(starts × iterations × (|X|·A·d + T·d²)) whatever t is (`rbx.rlhf.linear`).
A step adds one comparison, so the optimum moves little: each step refines again the previous
step's distinct end points (`starts` − 1 of them, carried in the state) and one new candidate
(`rbx.rlhf.linear.search_linear`). π^(1) = π_ref (θ = 0). β ≥ 0: at β = 0 J* is the
unregularised max and π_{r_θ} greedy (ties uniform).

*Contexts from a generator* (`rbx.rlhf.generated`): the answers are drawn at the observed
context's rows φ(s_t, ·), π_ref(·|s_t) and its comparison's z comes from them
(`generated.local`); J* and the box K are over the task's prompts, the environment's
evaluation pool; the deployed policy is `generated.LogLinear(θ)` in place of the table log π.

*Preferences that drift* (`rbx.rlhf.drift`): `discount` γ and `window` w make ℓ the
forgetting likelihood Σ_s γ^{t−s} 1[t − s < w] log σ(θᵀz_s) (`rbx.rlhf.forgetting`), for every
scheme: the data carry the weights (`LinearData.weights`), which the search reads in place of
the mask.

*One program for every scheme.* Like the tabular agents, an agent carries its row of the
scheme table as data (`LinearState.scheme`, `LinearState.bonus`): the answers are drawn from
the row's entry of the four policies, π_cal is the row's entry of the three, and α_t is
`bonus` × the schedule. So agents of the same α, π_cal and solver settings lower to the same
step program, which a sweep compiles once (a grid of the four linear agents: one program).
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from rbx import _checks, schedules
from rbx.core import registry as reg
from rbx.core.protocol import Agent
from rbx.rlhf import generated, objectives, schemes
from rbx.rlhf.forgetting import FORGETTING, forgetting
from rbx.rlhf.env import Prompt, Query
from rbx.rlhf.learners.base import SOLVER, PolicyClass, agent_name
from rbx.rlhf.linear import (LINEAR_SOLVER, LinearData, LinearProblem, feature_mean, rewards,
                             search_linear)
from rbx.rlhf.solver import SolverConfig


class LinearState(NamedTuple):
  """State carried between steps. Shapes: X prompts, A actions, d features, T steps.

  Attributes:
    theta_prev: θ^(t−1), (d,) (Algorithm 1 samples a1 from π_{θ^(t−1)}).
    data: the comparisons so far (`LinearData`, capacity T: `init`'s horizon; `LinearData.add`).
    log_pi: log π^(t) = log π_{r_θ}, (X, A).
    t: the iteration t about to run, starting at 1; int32 scalar.
    basins: the previous step's distinct search end points, best first (θ^(t) = `theta`
      the first), (m, d) with m = max(1, starts − 1): the next step's warm starts
      (`rbx.rlhf.linear.search_linear`).
    scheme: the row as data, (3,) int32 (`rbx.rlhf.schemes.Scheme.indices`).
    bonus: 1.0 for a row with the bonus, 0.0 for greedy; float32 scalar (α_t's factor).
  """
  theta_prev: chex.Array
  data: LinearData
  log_pi: chex.Array
  t: chex.Array
  basins: chex.Array
  scheme: chex.Array
  bonus: chex.Array

  @property
  def theta(self) -> chex.Array:
    """θ^(t), (d,): the best end point of the last search."""
    return self.basins[0]


def log_policy(theta, task):
  """log π_{r_θ} of (2.4) at every prompt, (X, A) (or (A,) at one prompt's task); at β = 0
  the greedy policy of r_θ (`rbx.rlhf.objectives.log_optimal_policy`)."""
  policy = lambda r, pi_ref: objectives.log_optimal_policy(r, pi_ref, task.beta)
  r = rewards(theta, task.features)
  for _ in range(r.ndim - 1):
    policy = jax.vmap(policy)
  return policy(r, task.pi_ref)


def make(scheme: str, alpha: schedules.Schedule | float = 1.0, pi_cal=None,
         solver: SolverConfig = LINEAR_SOLVER, discount=1.0, window: int | None = None) -> Agent:
  """The shared-linear agent of the scheme table's row `scheme` ("linear/<scheme>").

  Args:
    scheme: a name in `rbx.rlhf.schemes.SCHEMES`.
    alpha: the schedule t -> α_t (`rbx.schedules`) or a constant (ignored without a bonus).
    pi_cal: the fixed calibration policy (schemes with one), (A,) or (X, A); default the task's.
    solver: settings of `rbx.rlhf.linear.search_linear`.
    discount, window: the likelihood's γ ∈ (0, 1] and window w ≥ 1 (None: ∞) for preferences
      that drift (`rbx.rlhf.forgetting`); γ = 1, w = None is (2.2).
  """
  name = agent_name(CLASS_NAME, scheme)
  forget = forgetting(discount, window)
  scheme = schemes.get(scheme)
  # α_t = bonus × schedule(t), the bonus carried as data (module docstring), so a row
  # without one (greedy) runs the program of a row with one
  schedule = schemes.alpha_schedule(scheme._replace(bonus=True), alpha)
  if not isinstance(solver, SolverConfig):
    raise ValueError(f"solver must be a rbx.rlhf.SolverConfig, got {type(solver).__name__}")
  if not solver.tolerance >= 0:
    raise ValueError(f"solver.tolerance must be >= 0 (0: `iterations` steps a round), "
                     f"got {solver.tolerance}")
  if pi_cal is not None:
    _checks.probability("pi_cal", pi_cal)

  def fixed_cal(task):
    return schemes.fixed_policy(pi_cal, task)

  def cal_policy(state: LinearState, task):
    """π_cal, (X, A): the row's entry of `schemes.CALIBRATIONS` (traced from the state)."""
    return schemes.calibration_of_row(state.scheme[2], {
        "current": jnp.exp(state.log_pi), "fixed": fixed_cal(task), "reference": task.pi_ref})

  def init(key, task, horizon: int) -> LinearState:
    del key
    if not hasattr(task, "features"):
      raise ValueError(f"{name} needs an environment with features φ(x, a) (a contextual "
                       f"environment, rbx.rlhf.random_contextual), got {type(task).__name__}")
    if isinstance(task, generated.GeneratedTask):
      generated.check_learner(name, pi_cal)
    d = task.features.shape[-1]
    theta = jnp.zeros(d, task.features.dtype)
    return LinearState(theta_prev=theta,
                       data=LinearData(jnp.zeros((horizon, d)), jnp.zeros((), jnp.int32),
                                       forget),
                       log_pi=log_policy(theta, task), t=jnp.ones((), jnp.int32),
                       basins=jnp.zeros((_carried(solver), d), task.features.dtype),
                       scheme=jnp.array(scheme.indices(), jnp.int32),
                       bonus=jnp.array(float(scheme.bonus), jnp.float32))

  def act(key, state: LinearState, obs: Prompt | generated.Context, task):
    at, x = generated.local(task, obs)       # a generated context: its one-prompt task, x = 0
    drawn = at is not task
    policies = {"previous": log_policy(state.theta_prev, _at(at, x)),
                "current": log_policy(state.theta, _at(at, x)) if drawn else state.log_pi[x],
                "reference": jnp.log(at.pi_ref[x]), "calibration": jnp.log(fixed_cal(at)[x])}
    a1, a2 = schemes.answers_of_row(jax.random.split(key), state.scheme, policies)
    return state, Query(a1, a2, generated.LogLinear(state.theta) if drawn else state.log_pi)

  def update(key, state: LinearState, obs: Prompt | generated.Context, query: Query, a1_wins,
             task):
    del key
    at, x = generated.local(task, obs)
    phi = at.features[x]
    z = jnp.where(a1_wins, 1.0, -1.0) * (phi[query.a1] - phi[query.a2])
    data = state.data.add(z)
    cal = cal_policy(state, task)
    cal_mean = feature_mean(task.rho[:, None] * cal, task.features)
    problem = LinearProblem(task.features, jnp.log(task.pi_ref), task.rho, task.beta,
                            state.bonus * schedule(state.t), task.r_max, data, cal_mean)
    ends = search_linear(problem, state.basins, solver)
    return state._replace(theta_prev=state.theta, data=data,
                          log_pi=log_policy(ends[0], task), t=state.t + 1,
                          basins=ends[:_carried(solver)])

  return Agent(name, init, act, update)


def _carried(solver: SolverConfig) -> int:
  """How many of a step's end points the next step refines again: all starts but one, which
  goes to the best new candidate by F (`rbx.rlhf.linear.search_linear`)."""
  return max(1, solver.starts - 1)


def _at(task, x):
  """The task's π_ref, φ and β at prompt x (for `log_policy` at one prompt)."""
  return task._replace(pi_ref=task.pi_ref[x], features=task.features[x])


CLASS_NAME = "linear"


def params(scheme: schemes.Scheme) -> dict[str, reg.Param]:
  """The options a config sets for the row: α's with a bonus, π_cal with a fixed one, the
  solver's, the likelihood's forgetting."""
  return {**schemes.params(scheme), **SOLVER, **FORGETTING}


CLASS = PolicyClass(CLASS_NAME, make, params,
                    doc="π_{θᵀφ}, one θ for all prompts, the optimistic step by search_linear; "
                        "environments with features (contextual, sequences)")
