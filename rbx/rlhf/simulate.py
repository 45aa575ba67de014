"""Running agents: one seed (`simulate`) or a seeds × hyperparameter grid (`sweep`).

Step t uses the key `fold_in(key, t)`, so a run of T steps is a prefix of a run of T' > T
steps, and seed s of a sweep (key `jax.random.key(s)`) reproduces `simulate(..., key(s))`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import chex
import jax

from rbx import _checks
from rbx.core import loop
from rbx.rlhf import env as env_lib
from rbx.rlhf.agents import Agent, StepInfo
from rbx.sweep import SweepResult, grid_sweep


def make_run(env: env_lib.PreferenceEnv, agent: Agent) -> loop.Run:
  """`agent` on `env` as a `Run`: the carry is the `AgentState`, step t uses `fold_in(key, t)`."""
  return loop.Run(init=lambda key: agent.init(env),
                  step=lambda state, key, t: agent.step(jax.random.fold_in(key, t), state, env))


def rollout(env: env_lib.PreferenceEnv, agent: Agent, key: chex.PRNGKey, steps: int) -> StepInfo:
  """The traceable loop: `lax.scan` of `agent.step` over t = 1..steps; fields shape (steps,)."""
  return loop.rollout(make_run(env, agent), key, steps)


def simulate(env: env_lib.PreferenceEnv, agent: Agent, key: chex.PRNGKey, steps: int) -> StepInfo:
  """Runs one seed for `steps` iterations; returns the per-step `StepInfo` (regret, x, a1, a2,
  a1_preferred), each of shape (steps,). Cumulative regret (2.6) is `info.regret.cumsum()`."""
  _validate(env, agent, steps)
  return _compiled(agent, steps)(env, key)


@functools.lru_cache(maxsize=64)
def _compiled(agent: Agent, steps: int):
  return jax.jit(lambda env, key: rollout(env, agent, key, steps))


def sweep(build: Callable[..., tuple[env_lib.PreferenceEnv, Agent]],
          grid: Mapping[str, Sequence[Any]], seeds: int | Sequence[int], steps: int,
          seed_batch: int = 64, devices: int | None = None) -> SweepResult:
  """Per-step regret of every grid point and seed, as one jitted program per static combination.

  Args:
    build: `build(**point) -> (env, agent)`; numeric grid fields arrive traced, so build the
      environment and agent from them with the library's constructors (e.g.
      `lambda beta, alpha: (example2(100, beta, 6.0), algorithm1(constant(alpha)))`).
    grid: field -> values (Cartesian product). Non-numeric fields (e.g. an agent name) are
      looped over in Python.
    seeds: number of seeds n (seeds 0..n-1) or a list of seeds.
    steps: iterations per run.
    seed_batch: seeds vmapped at once; more run in sequence inside the same program.
    devices: local devices to shard the seeds over (default all).
  Returns:
    `SweepResult` with `regret` of shape (*grid, seed, step), the axis names and timings.
  """
  _checks.positive_int("steps", steps)

  def validate(point):
    env, agent = build(**point)
    _validate(env, agent, steps)

  return grid_sweep(lambda hp: make_run(*build(**hp)), grid, seeds, steps, validate=validate,
                    seed_batch=seed_batch, devices=devices)


def _validate(env, agent, steps):
  if not isinstance(env, env_lib.PreferenceEnv):
    raise ValueError(f"env must be a PreferenceEnv (see rbx.rlhf.make_env), got {type(env).__name__}")
  if not isinstance(agent, Agent):
    raise ValueError(f"agent must be an rbx.rlhf Agent (one of algorithm1, vpo, xpo, selm, greedy),"
                     f" got {type(agent).__name__}")
  _checks.positive_int("steps", steps)
