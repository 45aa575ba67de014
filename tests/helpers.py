"""Helpers shared by several test modules (tests/ is on sys.path, see conftest.py)."""
from typing import Any, NamedTuple

import jax
import numpy as np


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
