"""The tabular exact policy class: the exploration schemes as `rbx.core.Agent`s
(`init`/`act`/`update`) that solve the optimistic step exactly per prompt.

Every scheme shares one loop (section 3 of the RLHF paper): at the prompt x ~ ρ the
environment draws, `act` samples two answers; the environment's Bradley–Terry oracle compares
them; `update` adds the comparison to the win counts, re-fits the
optimistic reward r^(t+1) = argmax_r ℓ(r, D^(t)) + α_t J*(r; π_cal) over [0, r_max]^A with
`solve_optimistic`, and set π^(t+1) = π_{r^(t+1)} by (2.4). They differ only in where the
two answers come from and which calibration policy π_cal the bonus uses: the table of
`rbx.rlhf.schemes` (`make`; the paper's rows by name: `algorithm1`, `vpo`, `modified`,
`xpo`/`selm`, `greedy`).

*One program for several schemes.* An agent carries its row of the table as data
(`AgentState.scheme`), and with one prompt every scheme re-solves the same problem (the
sampled prompt is every prompt), so agents of the same settings (α, solver) on a one-prompt
environment lower to the same program, which the sweep compiles once
(`rbx.core.driver`): the README's Algorithm 1 and XPO, or the demo's three agents.

The agents see only the `Task` (π_ref, ρ, β, r_max, π_cal), the prompt and the comparison;
the environment scores the regret of the policy π^(t) that `act` reports in its `Query`.
The win counts `wins[x, a, b]` are sufficient statistics for ℓ, so a step costs
O(|X| · A² · solver iterations) whatever t is. (3.1a)/(3.2a) separate over prompts (ℓ is a sum
over prompts, J* an expectation over x ~ ρ), and a step adds data at the sampled prompt only:
where α is a constant and π_cal does not move (`vpo`, `modified`, `xpo`, `selm`, `greedy`),
only that prompt's problem changes, so only it is re-solved (every prompt's data-free problem
is solved once, in `init`), and a step costs O(A² · solver iterations). Algorithm 1's π_cal =
π^(t) and schedule α_t change every prompt's problem, so it re-solves them all.

*Lazy re-solve* (Algorithm 1, opt-in: `unsampled_solver`). At a prompt the step did not sample
the data did not change, only π_cal and α_t did, so a cheaper `SolverConfig` may serve there,
with the full `solver` at the sampled prompt and at `full_solves` others in rotation. The
previous maximiser r^(t) is not a near-solution, though: the bonus J*(r; π_{r^(t)}) is convex
with its minimum at r^(t) (its gradient π_r − π_cal vanishes there), so the new maximum lies
away from it and can hop between basins from step to step. Fewer starts or iterations there
change Algorithm 1's trajectories, most at small β; `python -m benchmarks.accuracy.solver_accuracy
--prompts 20` measures the misses and the regret beside the full re-solve.

Policies are kept as log-probabilities so that probabilities like e^(−r_max/β) survive. The
objective's α J* term is an expectation over x ~ ρ, so prompt x's problem uses the bonus
weight α_t ρ(x).
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from rbx import _checks, schedules
from rbx.core import registry as reg
from rbx.core.protocol import Agent
from rbx.rlhf import objectives, schemes
from rbx.rlhf.env import Prompt, Query, Task
from rbx.rlhf.learners.base import SOLVER, PolicyClass, agent_name
from rbx.rlhf.solver import SolverConfig, solve_optimistic


class AgentState(NamedTuple):
  """State carried between steps. Shapes: X prompts, A actions.

  Attributes:
    wins: win counts, `wins[x, a, b]` = times a was preferred over b at prompt x, (X, A, A).
    r: the current reward estimate r^(t) (the solver's warm start), (X, A).
    log_pi: log π^(t), (X, A).
    log_pi_prev: log π^(t-1), (X, A) (Algorithm 1 samples a1 from it).
    t: the iteration t about to run, starting at 1; int32 scalar.
    scheme: the agent's row of the scheme table as data, (3,) int32: a1's and a2's policies
      (indices into `schemes.ANSWER_SOURCES`) and π_cal's (into `schemes.CALIBRATIONS`), so
      that agents of the same settings compile to one program (module docstring).
  """
  wins: chex.Array
  r: chex.Array
  log_pi: chex.Array
  log_pi_prev: chex.Array
  t: chex.Array
  scheme: chex.Array


def algorithm1(alpha: schedules.Schedule | float = 1.0, pi_init=None, pi_prev_init=None,
               solver: SolverConfig = SolverConfig(),
               unsampled_solver: SolverConfig | None = None, full_solves: int = 2) -> Agent:
  """Algorithm 1 of the RLHF paper (uncertainty-based exploration):
  a1 ~ π^(t-1), a2 ~ π^(t); reward update (3.2a) with π_cal = π^(t) and α_t; policy (3.2b).
  Arguments as `make`."""
  return make("algorithm1", alpha, pi_init, pi_prev_init, None, solver, unsampled_solver,
              full_solves)


def vpo(alpha: schedules.Schedule | float = 1.0, pi_cal=None, pi_init=None,
        solver: SolverConfig = SolverConfig()) -> Agent:
  """VPO (3.1a)/(3.1b): a1, a2 ~ π^(t), a fixed calibration policy π_cal, constant α (a
  schedule may be passed; the paper's VPO uses a constant). Arguments as `make`."""
  return make("vpo", alpha, pi_init, None, pi_cal, solver)


def modified(alpha: schedules.Schedule | float = 1.0, pi_cal=None, pi_init=None,
             solver: SolverConfig = SolverConfig()) -> Agent:
  """Section 3.2's modified scheme with a general fixed calibration policy: a1 ~ π^(t),
  a2 ~ π_cal, reward update (3.1a) with that π_cal, policy (3.1b); XPO is π_cal = π_ref.
  Proposition 2 shows it fails on Example 2 when π_cal = π_ref is far from π_HF."""
  return make("modified", alpha, pi_init, None, pi_cal, solver)


def xpo(alpha: schedules.Schedule | float = 1.0, pi_init=None,
        solver: SolverConfig = SolverConfig()) -> Agent:
  """XPO (Xie et al. 2025) in this model: a1 ~ π^(t), a2 ~ π_ref, π_cal = π_ref (section 3.2)."""
  return make("xpo", alpha, pi_init, solver=solver)


def selm(alpha: schedules.Schedule | float = 1.0, pi_init=None,
         solver: SolverConfig = SolverConfig()) -> Agent:
  """SELM (Zhang et al. 2025): the same scheme as `xpo` in this model, as the paper notes."""
  return make("selm", alpha, pi_init, solver=solver)


def greedy(pi_init=None, solver: SolverConfig = SolverConfig()) -> Agent:
  """Online MLE with no exploration bonus (α = 0): a1, a2 ~ π^(t); the control."""
  return make("greedy", 0.0, pi_init, solver=solver)


def make(scheme: str, alpha: schedules.Schedule | float = 1.0, pi_init=None, pi_prev_init=None,
         pi_cal=None, solver: SolverConfig = SolverConfig(),
         unsampled_solver: SolverConfig | None = None, full_solves: int = 2) -> Agent:
  """The tabular exact agent of the scheme table's row `scheme` ("tabular/<scheme>").

  Args:
    scheme: a name in `rbx.rlhf.schemes.SCHEMES`.
    alpha: the schedule t -> α_t (see `rbx.schedules`) or a constant (ignored without a bonus).
    pi_init, pi_prev_init: π^(1) and π^(0), shape (A,) or (X, A); default π_ref and π^(1).
    pi_cal: the fixed calibration policy (schemes with one), (A,) or (X, A); default the
      task's `pi_cal` (Example 1's (1 − 2p, p, p), else π_ref).
    solver: settings of `solve_optimistic`.
    unsampled_solver: optional cheaper settings for the prompts the step did not sample, whose
      data did not change (module docstring: the lazy re-solve); None (default): `solver` at
      every prompt, as the paper's Algorithm 1.
    full_solves: with `unsampled_solver`, how many unsampled prompts get `solver` each step,
      in rotation, so that each prompt gets the full search at least every ⌈|X|/full_solves⌉
      steps; ≥ |X| − 1: every prompt.
  """
  name = agent_name(CLASS_NAME, scheme)
  scheme = schemes.get(scheme)
  _checks.positive_int("full_solves", full_solves, low=0)
  schedule = schemes.alpha_schedule(scheme, alpha)
  # With a constant α and a calibration policy that does not move, a step changes only the
  # sampled prompt's problem (3.1a): the others keep their solutions (module docstring).
  fixed_problems = not callable(alpha) and scheme.calibration != "current"
  for field, value, optional in (("solver", solver, False),
                                 ("unsampled_solver", unsampled_solver, True)):
    if not (isinstance(value, SolverConfig) or (optional and value is None)):
      raise ValueError(f"{field} must be a rbx.rlhf.SolverConfig, got {type(value).__name__}")
  for field, value in (("pi_init", pi_init), ("pi_prev_init", pi_prev_init), ("pi_cal", pi_cal)):
    if value is not None:
      _checks.probability(field, value)

  def policy_arg(field, value, task):
    if value is None:
      return None
    p = jnp.broadcast_to(jnp.asarray(value, jnp.float32), task.pi_ref.shape)
    _checks.probability(field, p)
    return p

  def init(key, task: Task, horizon: int) -> AgentState:
    del key, horizon
    log_ref = jnp.log(task.pi_ref)
    p1, p0 = policy_arg("pi_init", pi_init, task), policy_arg("pi_prev_init", pi_prev_init, task)
    log_pi = log_ref if p1 is None else jnp.log(p1)
    log_prev = log_pi if p0 is None else jnp.log(p0)
    X, A = task.pi_ref.shape
    wins, r = jnp.zeros((X, A, A)), jnp.full((X, A), 0.5) * task.r_max
    row = scheme.indices()
    if fixed_problems:     # every prompt's r solves its data-free problem, as step 1 would
      r = solve_all(task, wins, calibration_policy(log_pi, task, row[2]),
                    schedule(jnp.ones((), jnp.int32)) * task.rho, r)
    return AgentState(wins=wins, r=r, log_pi=log_pi, log_pi_prev=log_prev,
                      t=jnp.ones((), jnp.int32), scheme=jnp.array(row, jnp.int32))

  def calibration_policy(log_pi, task: Task, index):
    """π_cal, (X, A): the `index`-th of `schemes.CALIBRATIONS` (traced from the state)."""
    return schemes.calibration_of_row(index, {"current": jnp.exp(log_pi), "fixed": fixed_cal(task),
                                              "reference": task.pi_ref})

  def solve_all(task: Task, wins, cal, alpha_x, r0, config=solver):
    solve = lambda w, pr, pc, a, r: solve_optimistic(w, pr, pc, task.beta, a, task.r_max, r,
                                                     config)
    return jax.vmap(solve)(wins, task.pi_ref, cal, alpha_x, r0)

  def resolve_all(task: Task, wins, cal, alpha_x, r0, x, t):
    """Every prompt's problem re-solved: `solver` at x and at `full_solves` prompts in
    rotation, `unsampled_solver` at the others (and, overwritten, at those few); (X, A)."""
    X = wins.shape[0]
    if unsampled_solver is None or X <= full_solves + 1:
      return solve_all(task, wins, cal, alpha_x, r0)
    idx = jnp.concatenate([x[None], (t * full_solves + jnp.arange(full_solves)) % X])
    full = solve_all(task._replace(pi_ref=task.pi_ref[idx]), wins[idx], cal[idx], alpha_x[idx],
                     r0[idx])
    return solve_all(task, wins, cal, alpha_x, r0, unsampled_solver).at[idx].set(full)

  def fixed_cal(task: Task):
    return schemes.fixed_policy(pi_cal, task)

  def act(key, state: AgentState, obs: Prompt, task: Task):
    policies = {"previous": state.log_pi_prev[obs.x], "current": state.log_pi[obs.x],
                "reference": jnp.log(task.pi_ref)[obs.x],
                "calibration": jnp.log(fixed_cal(task))[obs.x]}
    a1, a2 = schemes.answers_of_row(jax.random.split(key), state.scheme, policies)
    return state, Query(a1, a2, state.log_pi)

  def update(key, state: AgentState, obs: Prompt, query: Query, a1_wins, task: Task):
    del key
    x = obs.x
    winner = jnp.where(a1_wins, query.a1, query.a2)
    loser = jnp.where(a1_wins, query.a2, query.a1)
    wins = state.wins.at[x, winner, loser].add(1.0)
    cal = calibration_policy(state.log_pi, task, state.scheme[2])
    alpha_x = schedule(state.t) * task.rho
    if fixed_problems and wins.shape[0] > 1:  # only prompt x's problem changed: re-solve it
      # alone (with one prompt that is every prompt: the same program as Algorithm 1's)
      r_x = solve_optimistic(wins[x], task.pi_ref[x], cal[x], task.beta, alpha_x[x], task.r_max,
                             state.r[x], solver)
      r_new = state.r.at[x].set(r_x)
    else:
      r_new = resolve_all(task, wins, cal, alpha_x, state.r, x, state.t)
    log_pi_new = jax.vmap(objectives.log_optimal_policy, (0, 0, None))(r_new, task.pi_ref,
                                                                        task.beta)
    return state._replace(wins=wins, r=r_new, log_pi=log_pi_new, log_pi_prev=state.log_pi,
                          t=state.t + 1)

  return Agent(name, init, act, update)


CLASS_NAME = "tabular"
UNSAMPLED = {
    "unsampled_solver": reg.table(doc="the opt-in lazy re-solve: rbx.rlhf.SolverConfig "
                                  "fields at the prompts a step did not sample (default: none, "
                                  "`solver` at every prompt)"),
    "full_solves": reg.integer(0, doc="unsampled prompts given `solver` each step, in rotation "
                               "(>= |X| - 1: every prompt)")}


def params(scheme: schemes.Scheme) -> dict[str, reg.Param]:
  """The options a config sets for the row: α's with a bonus, π_cal with a fixed one, π^(0)
  where a1 ~ π^(t−1), the lazy re-solve where π_cal moves every step."""
  return {**schemes.params(scheme), "pi_init": schemes.POLICY,
          **({"pi_prev_init": schemes.POLICY} if scheme.first == "previous" else {}),
          **SOLVER, **(UNSAMPLED if scheme.calibration == "current" else {})}


CLASS = PolicyClass(CLASS_NAME, make, params,
                    doc="π_r per prompt, the optimistic step solved exactly per prompt "
                        "(solve_optimistic); every environment")
