"""The RLHF family's declaration: its environments and agents, each parameter's kind.

Everything that runs RLHF agents by name — `rbx.rlhf.get`, TOML configs and `rbx run`, the
static fields of `rbx.sweep` — reads this one declaration. An agent's α is either the
constant `alpha` or a schedule of `rbx.schedules` chosen by `schedule` with its own
parameters; a schedule's num_actions, horizon, beta and r_max (the learner's bound,
`Task.r_max`) come from the environment and the number of steps (`prepare`), and κ and μ, when not given, are the instance's Assumption 1
(at τ = 1) and Assumption 2 constants (`rbx.rlhf.assumptions`); parameters of other schedules
are ignored. The solver's settings are the table `solver` (`rbx.rlhf.SolverConfig` fields),
and Algorithm 1's at the prompts a step did not sample the table `unsampled_solver`.
"""
from __future__ import annotations

import inspect
from typing import Any

import jax

from rbx import _checks, schedules
from rbx.core import registry as reg
from rbx.rlhf import (agents, analysis, assumptions, contextual, env as env_lib,
                      linear_agents, policies, practical, sequences)
from rbx.rlhf.solver import SolverConfig

SCHEDULE_PARAMS = {
    "alpha": reg.real(low=0.0, doc="the constant α (schedule = \"constant\")"),
    "schedule": reg.string(schedules.SCHEDULES, doc="the α_t schedule (rbx.schedules)"),
    "nu": reg.real(low=0.0, doc="power: α_t = ν t^n"),
    "n": reg.real(low=0.0, doc="power: the exponent n"),
    "kappa": reg.real(doc="proposition3: Assumption 1's κ (default: the instance's at τ = 1, "
                      "rbx.rlhf.assumptions.kappa)"),
    "mu": reg.real(doc="appendix_e: Assumption 2's μ (default: the instance's, "
                   "rbx.rlhf.assumptions.mu)"),
    "scale": reg.real(low=0.0, doc="a schedule's multiplier"),
}
SOLVER = {"solver": reg.table(doc="rbx.rlhf.SolverConfig fields")}
UNSAMPLED = {
    "unsampled_solver": reg.table(doc="algorithm1's opt-in lazy re-solve: rbx.rlhf.SolverConfig "
                                  "fields at the prompts a step did not sample (default: none, "
                                  "`solver` at every prompt)"),
    "full_solves": reg.integer(0, doc="unsampled prompts given `solver` each step, in rotation "
                               "(>= |X| - 1: every prompt)")}
POLICY = reg.vector(doc="a policy, shape (A,) or (X, A)")


def prepare(params: dict[str, Any], env: env_lib.PreferenceEnv, steps: int) -> dict[str, Any]:
  """Declared agent parameters -> constructor arguments: `schedule` and its parameters become
  the schedule α_t; the `solver` table becomes a `SolverConfig`."""
  sched = params.pop("schedule", "constant")
  given = {k: params.pop(k) for k in SCHEDULE_PARAMS if k in params}
  if sched != "constant" or "alpha" in given:
    make = schedules.SCHEDULES[_checks.choice("schedule", sched, schedules.SCHEDULES)]
    args = inspect.signature(make).parameters
    auto = dict(num_actions=env.num_actions, horizon=steps, beta=env.beta, r_max=env.spec.r_max)
    derived = {"kappa": assumptions.kappa, "mu": assumptions.mu}      # the instance's, if not given
    auto.update({k: f(env) for k, f in derived.items() if k in args and k not in given})
    kwargs = {k: v for k, v in {**auto, **given}.items() if k in args}   # others: other schedules'
    missing = [k for k in args if k not in kwargs and args[k].default is inspect.Parameter.empty]
    if missing:
      raise ValueError(f"{missing[0]}=? is needed by schedule {sched!r}: set it in [agent] or [grid]")
    params["alpha"] = make(**kwargs)
  for field in ("solver", "unsampled_solver"):
    if isinstance(params.get(field), dict):
      for key in params[field]:
        _checks.choice(f"agent.{field} key", key, SolverConfig._fields)
      params[field] = SolverConfig(**params[field])
  return params


def _random_instance(num_prompts=4, num_actions=3, beta=0.5, r_max=2.0, deviation=1.0, seed=0,
                     learner_r_max=None):
  """`random_instance` from an integer seed (its key)."""
  return env_lib.random_instance(jax.random.key(seed), num_prompts, num_actions, beta, r_max,
                                 deviation, learner_r_max)


def cpu_seed_batch(env) -> int:
  """Seeds vmapped at once per CPU device for `env`: the largest power of two ≤ 16 with
  seeds × |X| × A² ≤ 2^16, at least 1 — 16 at A ≤ 64 on one prompt, 1 at A = 200, 4 at
  |X| = 100 and A = 10. The solver's batch then holds ≤ 2^16 × 16 starts entries per (A, A)
  array, near the CPU's caches. The batch is also the program's width (every batch full, the
  last padded: `rbx.core.batching`), so a larger one costs small runs their padding: 16 is
  within 7% of the best at A = 10 and 50, where 64 seeds ran at 0.95× and 0.8× the best (A = 3,
  tiny, runs 0.63× as fast as at 64; `python -m benchmarks.profiles.solver_profile
  --seed-batch`, benchmarks/README.md)."""
  per_seed = env.num_prompts * env.num_actions ** 2
  return 1 << max(0, min(4, (2 ** 16 // per_seed).bit_length() - 1))


_TRIALS = 8       # points a solver step holds per start: the current one and 5–7 trial points


def step_bytes(env, state: int) -> int:
  """Bytes a step holds per seed beyond its state, at most: the exact agents' solver holds
  float32 (A, A) arrays for each of `SolverConfig().starts` starts × `_TRIALS` points at
  every prompt, |X| × starts × 8 × A² floats. The linear agents' starts hold (X, A) arrays
  (the features φ are the task's, shared by the seeds), the practical agents' policies less."""
  return 4 * SolverConfig().starts * _TRIALS * env.num_prompts * env.num_actions ** 2


FAMILY = reg.family("rlhf", env_types=(env_lib.PreferenceEnv, contextual.ContextualPreferenceEnv,
                                       sequences.SequenceEnv),
                    cpu_seed_batch=cpu_seed_batch, cpu_rule="seeds × |X| × A² ≤ 2^16",
                    step_bytes=step_bytes,
                    prepare=prepare, reference_exponent=analysis.paper_exponent)

ENV_BETA = reg.real(doc="the KL weight β ≥ 0 (0: the greedy policy; exact agents only)")
ENV_RMAX = reg.real(doc="the reward bound r_max > 0")
ENV_LEARNER = reg.real(doc="the learner's reward bound, >= r_max (default r_max)")
FAMILY.env("example1", env_lib.example1, {
    "p": reg.real(doc="π_cal = (1 − 2p, p, p), 0 ≤ p < 1/4"),
    "beta": ENV_BETA, "r_max": ENV_RMAX, "learner_r_max": ENV_LEARNER})
FAMILY.env("example2", env_lib.example2, {
    "kappa": reg.real(doc="π_ref = (1 − 2/κ, 1/κ, 1/κ), κ ≥ 4"),
    "beta": ENV_BETA, "r_max": ENV_RMAX, "learner_r_max": ENV_LEARNER})
FAMILY.env("random_instance", _random_instance, {
    "num_prompts": reg.integer(1), "num_actions": reg.integer(2), "beta": ENV_BETA,
    "r_max": ENV_RMAX, "deviation": reg.real(doc="π_ref's distance from π_HF"),
    "seed": reg.integer(0, doc="the instance's random seed"), "learner_r_max": ENV_LEARNER})
FAMILY.env("custom", env_lib.make_env, {
    "r_star": reg.vector(), "pi_ref": POLICY, "beta": ENV_BETA, "r_max": ENV_RMAX,
    "rho": reg.vector(), "pi_cal": POLICY, "learner_r_max": ENV_LEARNER})


def _contextual(num_prompts=100, num_actions=10, dim=16, beta=0.5, r_max=4.0, deviation=1.0,
                seed=0, learner_r_max=None, kappa=None):
  """`random_contextual` from an integer seed (its key)."""
  return contextual.random_contextual(jax.random.key(seed), num_prompts, num_actions, dim, beta,
                                      r_max, deviation, learner_r_max, kappa)


FAMILY.env("contextual", _contextual, {
    "num_prompts": reg.integer(1), "num_actions": reg.integer(2),
    "dim": reg.integer(1, doc="the feature dimension d"), "beta": ENV_BETA, "r_max": ENV_RMAX,
    "deviation": reg.real(doc="π_ref's distance from π_HF"),
    "seed": reg.integer(0, doc="the instance's random seed"), "learner_r_max": ENV_LEARNER,
    "kappa": reg.real(doc="Example 2's trap at every prompt: π_ref 1/κ on every "
                      "answer but the worst, κ ≥ A (rbx.rlhf.contextual.trap_reference)")})



def _sequences(num_prompts=16, vocab=4, length=3, dim=8, beta=0.5, r_max=4.0, deviation=1.0,
               seed=0, learner_r_max=None):
  """`random_sequences` from an integer seed (its key)."""
  return sequences.random_sequences(jax.random.key(seed), num_prompts, vocab, length, dim, beta,
                                    r_max, deviation, learner_r_max)


def _hard_sequences(num_prompts=16, vocab=4, length=3, dim=8, beta=0.25, r_max=6.0,
                    epsilon=0.02, seed=0, learner_r_max=None):
  """`hard_sequences` from an integer seed (its key)."""
  return sequences.hard_sequences(jax.random.key(seed), num_prompts, vocab, length, dim, beta,
                                  r_max, epsilon, learner_r_max)


SEQUENCE_ENV = {
    "num_prompts": reg.integer(1), "vocab": reg.integer(2, doc="V, the tokens"),
    "length": reg.integer(1, doc="L, the tokens per answer (V^L <= 65,536 answers)"),
    "dim": reg.integer(1, doc="the feature dimension d"),
    "beta": reg.real(doc="the KL weight β > 0"), "r_max": ENV_RMAX,
    "seed": reg.integer(0, doc="the instance's random seed"), "learner_r_max": ENV_LEARNER}
FAMILY.env("sequences", _sequences,
           {**SEQUENCE_ENV, "deviation": reg.real(doc="π_ref's per-token distance from r*")})
FAMILY.env("hard_sequences", _hard_sequences,
           {**SEQUENCE_ENV, "epsilon": reg.real(doc="π_ref's mass on each token of y*(x): "
                                                "π_ref(y*|x) = ε^L")})

FAMILY.agent("algorithm1", agents.algorithm1,
             {**SCHEDULE_PARAMS, "pi_init": POLICY, "pi_prev_init": POLICY, **SOLVER, **UNSAMPLED})
FAMILY.agent("vpo", agents.vpo, {**SCHEDULE_PARAMS, "pi_cal": POLICY, "pi_init": POLICY, **SOLVER})
FAMILY.agent("modified", agents.modified,
             {**SCHEDULE_PARAMS, "pi_cal": POLICY, "pi_init": POLICY, **SOLVER})
FAMILY.agent("xpo", agents.xpo, {**SCHEDULE_PARAMS, "pi_init": POLICY, **SOLVER})
FAMILY.agent("selm", agents.selm, {**SCHEDULE_PARAMS, "pi_init": POLICY, **SOLVER})
FAMILY.agent("greedy", agents.greedy, {"pi_init": POLICY, **SOLVER})

FAMILY.agent("linear_algorithm1", linear_agents.algorithm1, {**SCHEDULE_PARAMS, **SOLVER})
FAMILY.agent("linear_vpo", linear_agents.vpo, {**SCHEDULE_PARAMS, "pi_cal": POLICY, **SOLVER})
FAMILY.agent("linear_xpo", linear_agents.xpo, {**SCHEDULE_PARAMS, **SOLVER})
FAMILY.agent("linear_greedy", linear_agents.greedy, SOLVER)

PRACTICAL = {
    "policy": reg.string(policies.POLICIES, doc="the parametric policy (rbx.rlhf.policies)"),
    "optimizer": reg.string(practical.OPTIMIZERS, doc="the optax optimiser over θ"),
    "learning_rate": reg.real(low=0.0, doc="the optimiser's learning rate"),
    "train_steps": reg.integer(1, doc="optimiser steps per round"),
    "clip": reg.boolean(doc="bound the implicit reward to the box [0, r_max], smoothly"),
    "l2": reg.real(low=0.0, doc="λ of the penalty (λ/2)‖θ − θ_ref‖²"),
    "pi_init": POLICY,
    "data": reg.string(practical.DATA, doc="the DPO term: win counts (|X| A² a step) or a buffer "
                       "of the comparisons (the horizon's, at their prompts only)")}
CAL_SAMPLES = {"cal_samples": reg.integer(0, optional=True,
                                          doc="draws estimating E_{π_cal} (0: the round's)"),
               "cal_prompts": reg.integer(1, optional=True,
                                          doc="the bonus at k prompts drawn from ρ, exact over "
                                          "the answers (with cal_samples unset; default: all)")}
FAMILY.agent("practical_algorithm1", practical.algorithm1,
             {**SCHEDULE_PARAMS, **PRACTICAL, **CAL_SAMPLES, "pi_prev_init": POLICY})
FAMILY.agent("practical_vpo", practical.vpo,
             {**SCHEDULE_PARAMS, **PRACTICAL, **CAL_SAMPLES, "pi_cal": POLICY})
FAMILY.agent("practical_xpo", practical.xpo, {**SCHEDULE_PARAMS, **PRACTICAL, **CAL_SAMPLES})
FAMILY.agent("practical_selm", practical.selm, {**SCHEDULE_PARAMS, **PRACTICAL, **CAL_SAMPLES})
FAMILY.agent("online_dpo", practical.online_dpo, PRACTICAL)

SEQUENCE = {
    **{k: PRACTICAL[k] for k in ("optimizer", "learning_rate", "train_steps", "l2", "data")},
    "policy": reg.string(sequences.POLICIES, doc="the autoregressive policy (rbx.rlhf.sequences)"),
    "hidden": reg.integer(1, optional=True, doc="the neural policy's width")}
FAMILY.agent("sequence_algorithm1", sequences.algorithm1,
             {**SCHEDULE_PARAMS, **SEQUENCE, **CAL_SAMPLES})
FAMILY.agent("sequence_vpo", sequences.vpo,
             {**SCHEDULE_PARAMS, **SEQUENCE, **CAL_SAMPLES, "pi_cal": POLICY})
FAMILY.agent("sequence_xpo", sequences.xpo, {**SCHEDULE_PARAMS, **SEQUENCE, **CAL_SAMPLES})
FAMILY.agent("sequence_selm", sequences.selm, {**SCHEDULE_PARAMS, **SEQUENCE, **CAL_SAMPLES})
FAMILY.agent("sequence_dpo", sequences.online_dpo, SEQUENCE)

get = FAMILY.get_agent
