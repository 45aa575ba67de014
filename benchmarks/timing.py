"""The benchmarks' clocks: a jitted function's calls, a sweep's run, a neural round in the sweep
driver's own program, and a round of the PyTorch reference loop. Each waits for its results (`jax.block_until_ready`, or the driver's
regrets on the host) and keeps compile time apart from run time."""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import Callable

import jax
import numpy as np

import rbx
from benchmarks import ROOT
from rbx import neural
from rbx.core import devices as devices_lib, driver, protocol
from rbx.core import sweep as core_sweep
from rbx.core.grid import Grid


def calls(f: Callable, *args, repeats: int = 1,
          chain: Callable | None = None) -> tuple[float, list[float]]:
  """(seconds of the first call — its compile and a run —, seconds of each of `repeats` later
  calls) of `f(*args)`; `chain(out)` gives the next call's arguments from a call's output (a
  donated input fed back, as in a run), else every call gets `args`."""
  seconds = []
  for _ in range(repeats + 1):
    start = time.perf_counter()
    out = jax.block_until_ready(f(*args))
    seconds.append(time.perf_counter() - start)
    if chain is not None:
      args = chain(out)
  return seconds[0], seconds[1:]


def matmul_rate(n: int = 1024, repeats: int = 5) -> float:
  """Flops/s of a float32 (n, n) @ (n, n) product on the default device, best of `repeats`."""
  a = jax.random.normal(jax.random.key(0), (n, n))
  return 2 * n ** 3 / min(calls(jax.jit(lambda a: a @ a), a, repeats=repeats)[1])


class Polls:
  """A sweep's `stop` as a clock: the time of each of the driver's polls (one after each of its
  two compiles, init and chunk, then one after every chunk, its regrets on the host); with
  `budget`, it stops the sweep after the chunk that passes `budget` seconds of running (from
  the second poll: at least one chunk runs)."""

  def __init__(self, budget: float = math.inf):
    self.budget, self.times = budget, []

  def __call__(self) -> bool:
    self.times.append(time.perf_counter())
    return len(self.times) > 2 and self.times[-1] - self.times[1] > self.budget


def sweep(build, grid, seeds, steps, budget: float = math.inf, **options) -> dict:
  """`rbx.sweep(...).timing` without a progress bar (run and compile seconds, seed-steps and
  their rate, the seed batch and its reason); `budget`: seconds of running, see `Polls`."""
  return rbx.sweep(build, grid, seeds, steps, progress=False, stop=Polls(budget),
                   **options).timing


def seed_step_seconds(env, agent, history, capacity, seeds, steps, repeats, devices=1,
                      seed_batch=1, grid=None) -> float:
  """Seconds per seed-step (per grid point) of `steps` neural rounds after a history of
  `history` rounds in a buffer of `capacity`, the median over `repeats` timed chunks of the
  compiled program, after one untimed warm-up chunk (which also waits for the run's initial
  state, e.g. the exact Z⁻¹'s p × p identity that `init` hands over unfinished): the sweep
  driver's own program (`rbx.core.driver`, as `neural.sweep` runs it), the seeds split over
  `devices` CPU devices (None: as `neural.sweep`, every device up to one per seed) and vmapped
  `seed_batch` at a time (1: each seed's step unbatched, in sequence; None: `neural.sweep`'s
  default for the device, `rbx.core.batching`). With `grid` ({field: values}, e.g.
  {"nu": [...]}), `agent(**point)` builds the agent of each grid point, the grid's numeric
  fields traced, as in `neural.sweep`."""
  def program(hp):
    run = protocol.pair(env, agent(**hp) if grid else agent, capacity)

    def prefilled(key):
      """The run's carry after `history` rounds of uniformly random play; an agent without a
      history buffer (LinRBMLE, LinUCB: fixed-size statistics) costs the same at any t."""
      env_state, state = run.init(key)
      if not hasattr(state, "buffer"):
        return env_state, state
      k_round, k_arm = jax.random.split(jax.random.fold_in(key, 2 ** 31))

      def add(i, carry):
        played, buf = carry
        k = jax.random.fold_in(k_round, i)
        played, obs = env.observe(k, played)
        a = jax.random.randint(jax.random.fold_in(k_arm, i), (), 0, env.num_arms)
        reward, _ = env.feedback(k, played, obs, a)
        return played, neural.buffer.add(buf, obs.x[a], obs.block[a], reward)

      # the empty buffer, made to vary over shard_map's seed axis as the rows added to it do
      # (a loop carry keeps its type): plus a zero drawn from the seed's key
      zero = jax.random.randint(k_arm, (), 0, 1)
      buf = jax.tree.map(lambda a: a + zero.astype(a.dtype), state.buffer)
      buf = jax.lax.fori_loop(0, history, add, (env_state, buf))[1]
      return env_state, state._replace(buffer=buf, t=state.t + history)

    return protocol.Run(prefilled, run.step)

  if seed_batch is None:
    seed_batch = core_sweep.default_seed_batch(
        lambda **hp: (env, agent(**hp) if grid else agent), grid or {}, capacity,
        static=(), envs=[env], devices=devices).seed_batch
  points = Grid(grid or {})
  polls = Polls()
  driver.run(driver.Sweep(program, points, np.arange(seeds), steps * (repeats + 1)),
             driver.Options(chunk=steps, record="summary", seed_batch=seed_batch),
             mesh=devices_lib.seed_mesh(devices), stop=polls)
  return float(np.median(np.diff(polls.times))) / (steps * seeds * points.num_points)


def torch_seconds(name, args, history, whole_run=None) -> float:
  """Seconds per round of the PyTorch reference loop (`benchmarks.reference.neural_torch_reference`,
  settings from `args`), measured in a fresh process (no JAX threads beside it) of this Python,
  or of the one $RBX_TORCH_PYTHON names (it needs only NumPy and PyTorch); `whole_run`: the
  mean over a whole run of that many rounds from an empty history."""
  steps = args.torch_steps if whole_run is None else whole_run - 1
  cmd = [os.environ.get("RBX_TORCH_PYTHON", sys.executable),
         "-m", "benchmarks.reference.neural_torch_reference",
         "--agent", name, "--history", str(history), "--steps", str(steps),
         "--width", str(args.width), "--train-steps", str(args.train_steps), "--dim", str(args.dim),
         "--arms", str(args.arms), "--data", str(args.data),
         "--device", getattr(args, "torch_device", "cpu")] + (["--whole-run"] if whole_run else [])
  out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT).stdout
  return float(out.split()[-1])
