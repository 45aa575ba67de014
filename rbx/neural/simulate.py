"""Running neural agents: one seed (`simulate`) or a seeds × hyperparameter grid (`sweep`).

The key `key` of a run gives the set-up key `fold_in(key, 0)` (θ_0 and the data order) and
round t's key `fold_in(key, t)`, so a run of T rounds is a prefix of a run of T' > T rounds
(with the same buffer capacity), and seed s of a sweep (key `jax.random.key(s)`) reproduces
`simulate(..., key(s))`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import chex
import jax

from rbx import _checks
from rbx.core import loop
from rbx.neural import env as env_lib
from rbx.neural.agents import AGENTS, Agent, StepInfo
from rbx.sweep import SweepResult, grid_sweep


def make_run(env: env_lib.Env, agent: Agent, capacity: int) -> loop.Run:
  """`agent` on `env` as a `Run` with a history buffer of `capacity` rounds; the carry is
  (the seed's data order, `AgentState`)."""
  def init(key):
    k_env, k_agent = jax.random.split(jax.random.fold_in(key, 0))
    return env.reset(k_env), agent.init(k_agent, env, capacity)

  def step(carry, key, t):
    stream, state = carry
    k_round, k_step = jax.random.split(jax.random.fold_in(key, t))
    state, info = agent.step(k_step, state, env.round(stream, k_round, t))
    return (stream, state), info

  return loop.Run(init, step)


def rollout(env: env_lib.Env, agent: Agent, key: chex.PRNGKey, steps: int,
            capacity: int | None = None) -> StepInfo:
  """The traceable loop: `lax.scan` of `agent.step` over t = 1..steps; fields shape (steps,).

  `capacity` is the history buffer's size, `steps` by default.
  """
  return loop.rollout(make_run(env, agent, steps if capacity is None else capacity), key, steps)


def simulate(env: env_lib.Env, agent: Agent, key: chex.PRNGKey, steps: int,
             capacity: int | None = None) -> StepInfo:
  """Runs one seed for `steps` rounds; returns the per-round `StepInfo` (regret, arm, reward),
  each of shape (steps,). Cumulative regret (1) is `info.regret.cumsum()`."""
  _validate(env, agent, steps, capacity)
  return _compiled(agent, steps, capacity)(env, key)


@functools.lru_cache(maxsize=64)
def _compiled(agent: Agent, steps: int, capacity: int | None):
  return jax.jit(lambda env, key: rollout(env, agent, key, steps, capacity))


def default_seed_batch() -> int:
  """Seeds vmapped at once by default: 1 on a CPU, 64 on an accelerator.

  A neural seed's round is many products of rows × (d, m) blocks, large enough to keep a CPU
  core busy alone; vmapping seeds batches them further and, for full-batch training, turns
  the loop over the history's chunks into a masked loop over the longest seed's. On the
  2-core CPU of `benchmarks/neural_step_time.py` (32 seeds, J = 100, m = 100) vmapping 16
  seeds per device measured 1.2–1.4× slower per seed-step than running each seed unbatched.
  """
  return 1 if jax.default_backend() == "cpu" else 64


def sweep(build: Callable[..., tuple[env_lib.Env, Agent]],
          grid: Mapping[str, Sequence[Any]], seeds: int | Sequence[int], steps: int,
          devices: int | None = None, seed_batch: int | None = None) -> SweepResult:
  """Per-round regret of every grid point and seed, as one jitted program per static combination.

  Args:
    build: `build(**point) -> (env, agent)`; numeric grid fields arrive traced, so build the
      agent from them with the library's constructors (e.g.
      `lambda agent, nu: (env, rbx.neural.get(agent, nu=nu))`).
    grid: field -> values (Cartesian product). Non-numeric fields (e.g. an agent name) are
      looped over in Python.
    seeds: number of seeds n (seeds 0..n-1) or a list of seeds.
    steps: rounds per run (also the history buffer's capacity).
    devices: local devices to shard the seeds over (default all).
    seed_batch: seeds vmapped at once per device (default `default_seed_batch()`).
  Returns:
    `SweepResult` with `regret` of shape (*grid, seed, step) and the axis names.
  """
  _checks.positive_int("steps", steps)

  def validate(point):
    env, agent = build(**point)
    _validate(env, agent, steps, None)

  return grid_sweep(lambda hp: make_run(*build(**hp), steps), grid, seeds, steps,
                    validate=validate, devices=devices,
                    seed_batch=default_seed_batch() if seed_batch is None else seed_batch)


def _validate(env, agent, steps, capacity):
  if not isinstance(env, (env_lib.ClassificationEnv, env_lib.SyntheticEnv)):
    raise ValueError("env must be a ClassificationEnv or SyntheticEnv (see rbx.neural.classification,"
                     f" rbx.neural.synthetic), got {type(env).__name__}")
  if not isinstance(agent, Agent):
    raise ValueError("agent must be an rbx.neural Agent (from rbx.neural.get with one of "
                     f"{sorted(AGENTS)}), got {type(agent).__name__}")
  _checks.positive_int("steps", steps)
  if capacity is not None:
    _checks.positive_int("capacity", capacity)
