"""Helpers shared by the test modules (tests/ is on sys.path, see conftest.py): bandit rounds
played by hand, a toy data set, a small TOML sweep, a subprocess's environment, the mark of
the tests that need the CPU backend, and slow independent float64 references (NumPy/SciPy)
that the RLHF tests compare rbx against."""
import itertools
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize
from scipy.special import log_expit, logsumexp

import xla_env
from rbx import rlhf

CPU_ONLY = pytest.mark.skipif(
    jax.default_backend() != "cpu",
    reason=f"counts CPU host devices (XLA_FLAGS, RBX_NUM_CPU_DEVICES) or calls CPU kernels; on this "
           f"{jax.default_backend()} backend JAX's devices are the accelerator's")
"""Marks a test that needs JAX's CPU backend: one that sets or counts CPU host devices (on an
accelerator `jax.local_device_count()` counts its chips, and sweeps run there)."""


def toy_data():
  """A small 3-class data set: 200 rows of 6 features, labels argmax of a random linear map."""
  rng = np.random.default_rng(0)
  X = rng.normal(size=(200, 6))
  return X, np.argmax(X @ rng.normal(size=(6, 3)), 1)


class Round(NamedTuple):
  """One bandit round seen from outside the agent: the environment key and state after
  `observe`, the agent's observation and the arms' expected rewards (for the test only)."""
  key: Any
  env_state: Any
  obs: Any
  mean: Any


class Played(NamedTuple):
  """What a round gave: the arm, its reward and the regret term."""
  arm: Any
  reward: Any
  regret: Any


def observe(env, key, env_state=None) -> Round:
  """The next round of `env` with key `key` (from `env.reset(key)` when no state is given)."""
  if env_state is None:
    env_state = env.reset(key)
  env_state, obs = env.observe(key, env_state)
  return Round(key, env_state, obs, env.means(env_state, obs))


def play(env, agent, key, state, rnd: Round):
  """One step of `agent` by hand, as `rbx.core.protocol.pair` runs it: act with the agent key,
  feedback with the round's key, update with the agent key. Returns (state, `Played`)."""
  state, arm = agent.act(key, state, rnd.obs, env.spec)
  reward, regret = env.feedback(rnd.key, rnd.env_state, rnd.obs, arm)
  state = agent.update(key, state, rnd.obs, arm, reward, env.spec)
  return state, Played(arm, reward, regret)


def jit_play(env, agent):
  """`play` jitted over (key, state, round)."""
  return jax.jit(lambda key, state, rnd: play(env, agent, key, state, rnd))


# ------------------------------------------------------------------ a small TOML sweep

TINY_SOLVER = """[agent.solver]
starts = 2
iterations = 2
line_search = 2
keep = 2
"""
"""A config's exact solver at its smallest: the TOML table the `rbx run` tests give Algorithm 1."""


def example1_sweep(seeds: int, steps: int, chunk: int) -> str:
  """Example 1, Algorithm 1, a tiny solver, a β grid: the sweep the `rbx run` tests run."""
  return f"""
family = "rlhf"
seeds = {seeds}
steps = {steps}
chunk = {chunk}
[env]
name = "example1"
[agent]
name = "algorithm1"
alpha = 3.0
{TINY_SOLVER}[grid]
beta = [0.5, 1.0]
"""


def subprocess_env(devices: int | None = None, drop: tuple[str, ...] = (), **extra) -> dict:
  """This process's environment for a child Python without any CPU device count (JAX's,
  rbx's, XLA's host platform flag), with `devices` host devices as an XLA flag if given, and
  `extra`. The suite's other XLA flags (conftest: cheap code generation, where the installed
  jaxlib knows the flags: xla_env.py) are kept, except those starting with a prefix in `drop`."""
  drop = ("--xla_force_host_platform_device_count", *drop)
  flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if not f.startswith(drop)]
  if devices is not None:
    flags.append(f"--xla_force_host_platform_device_count={devices}")
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_NUM_CPU_DEVICES", "RBX_NUM_CPU_DEVICES")}
  return {**env, "XLA_FLAGS": " ".join(flags), **extra}


def device_stable_env(devices: int | None = None) -> dict:
  """`subprocess_env` for a child that checks bits equal across device counts: LLVM's level 1
  in place of the suite's level 0 (`xla_env.level_1`)."""
  env = subprocess_env(devices)
  return {**env, "XLA_FLAGS": xla_env.level_1(env["XLA_FLAGS"])}


# ------------------------------------------------- float64 references of the RLHF objective

def objective(r, wins, pi_ref, pi_cal, beta, alpha):
  """ℓ(r) + α J*(r; π_cal) in float64; r may carry leading batch axes."""
  r = np.asarray(r, np.float64)
  d = r[..., :, None] - r[..., None, :]
  ll = np.sum(wins * log_expit(d), axis=(-1, -2))
  jstar = beta * logsumexp(np.log(pi_ref) + r / beta, axis=-1) - r @ pi_cal
  return ll + alpha * jstar


def brute_force_max(wins, pi_ref, pi_cal, beta, alpha, r_max, grid=None, refine=24):
  """Global max of the objective over [0, r_max]^A: dense grid, then L-BFGS-B from the best
  grid points and from every vertex. Returns (max value, argmax)."""
  A = len(pi_ref)
  n = grid or {2: 401, 3: 81, 4: 31}.get(A, 11)
  axis = np.linspace(0.0, r_max, n)
  pts = np.array(list(itertools.product(axis, repeat=A - 1)))
  pts = np.concatenate([np.zeros((len(pts), 1)), pts], axis=1)    # r_0 = 0 ... but shift
  # every r in the box is a shift of one with min 0; cover those by also letting r_0 vary
  pts = np.concatenate([pts, r_max - pts]) if A > 1 else pts
  vals = objective(pts, wins, pi_ref, pi_cal, beta, alpha)
  starts = list(pts[np.argsort(-vals)[:refine]])
  starts += [np.array(v, float) * r_max for v in itertools.product([0, 1], repeat=A)]
  best_v, best_r = -np.inf, None
  f = lambda r: -objective(r, wins, pi_ref, pi_cal, beta, alpha)
  for s in starts:
    res = optimize.minimize(f, s, method="L-BFGS-B", bounds=[(0.0, r_max)] * A,
                            options=dict(maxiter=2000, ftol=1e-15, gtol=1e-12))
    for cand in (res.x, s):
      v = -f(cand)
      if v > best_v:
        best_v, best_r = v, np.asarray(cand)
  return best_v, best_r


def random_problem(rng: np.random.Generator, A: int):
  """A random optimistic-MLE instance with β, α, r_max and counts varied over decades."""
  beta = 10 ** rng.uniform(-3, 1)
  r_max = min(10 ** rng.uniform(-1, 1.7), 500 * beta)
  alpha = 10 ** rng.uniform(-2, 3)
  scale = 10 ** rng.uniform(0, 4)
  mask = rng.random((A, A)) < rng.uniform(0.2, 1.0)
  wins = np.where(mask, np.floor(rng.random((A, A)) * scale), 0.0)
  np.fill_diagonal(wins, 0.0)
  pi_ref = rng.dirichlet(np.full(A, rng.choice([0.3, 1.0, 5.0])))
  pi_ref = np.maximum(pi_ref, 1e-6); pi_ref /= pi_ref.sum()
  if rng.random() < 0.3:
    pi_cal = np.eye(A)[rng.integers(A)]
  else:
    pi_cal = rng.dirichlet(np.ones(A))
  return dict(wins=wins, pi_ref=pi_ref, pi_cal=pi_cal, beta=beta, alpha=alpha, r_max=r_max)


def trajectory_gaps(env, alpha, seeds: int, steps: int, solver, reference,
                    **agent_kwargs) -> np.ndarray:
  """Algorithm 1 at constant α with `solver` along its own trajectories; at every step and
  prompt, how far F at its r^(t+1) lies below a `reference` solve of the same problem (3.2a)
  from the same warm start: (F_ref − F) / |F_ref|, shape (seeds, steps, X). Negative where
  the agent's solve is the better one. `agent_kwargs`: more arguments of `rlhf.algorithm1`."""
  from rbx.core.protocol import Agent, pair
  inner = rlhf.algorithm1(alpha, solver=solver, **agent_kwargs)

  def update(key, state, obs, query, feedback, spec):
    old, _ = state
    new = inner.update(key, old, obs, query, feedback, spec)
    cal, alpha_x = jnp.exp(old.log_pi), alpha * spec.rho          # the step's problem (3.2a)
    solve = lambda w, pr, pc, a, r0: rlhf.solve_optimistic(w, pr, pc, spec.beta, a, spec.r_max,
                                                           r0, reference)
    best = jax.vmap(solve)(new.wins, spec.pi_ref, cal, alpha_x, old.r)
    F = jax.vmap(lambda r, w, pr, pc, a: rlhf.objective(r, w, pr, pc, spec.beta, a))
    f_ref, f = (F(r, new.wins, spec.pi_ref, cal, alpha_x) for r in (best, new.r))
    return new, (f_ref - f) / jnp.maximum(jnp.abs(f_ref), 1e-9)

  def act(key, state, obs, spec):
    inner_state, query = inner.act(key, state[0], obs, spec)
    return (inner_state, state[1]), query

  X = env.spec.pi_ref.shape[0]
  agent = Agent("gaps", lambda k, spec, h: (inner.init(k, spec, h), jnp.zeros(X)), act, update)
  run = pair(env, agent, steps)

  def one(key):
    body = lambda c, t: (lambda c2: (c2, c2[1][1]))(run.step(c, key, t)[0])
    return jax.lax.scan(body, run.init(key), 1 + jnp.arange(steps))[1]

  return np.asarray(jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(0), seeds)))
