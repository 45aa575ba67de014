"""The one agent protocol and the one environment protocol, and the run that pairs them.

An `Agent` is the learner: three pure functions over its own state, seeing only what a
learner sees (the design is explained in `rbx.core`'s docstring):

    state  = agent.init(key, spec, horizon)           # spec: what the learner is told
    state, action = agent.act(key, state, obs, spec)  # obs: this step's context / prompt
    state  = agent.update(key, state, obs, action, feedback, spec)

An environment is a pytree (its arrays may be traced) with gymnax-style pure methods:

    env.spec                                          # what the learner is told, a pytree
    env_state          = env.reset(key)
    env_state, obs     = env.observe(key, env_state)
    feedback, regret   = env.feedback(key, env_state, obs, action)

Beside the regret, a family may declare named per-step metrics of its environments
(`add_metrics`: e.g. the RLHF environments' weak and strong dueling regrets), which every run
scores in the same program (`Transition.metrics`) and the sweep records beside the regret.

`pair(env, agent, horizon)` is one seed's run as `init(key) -> carry` and
`step(carry, key, t) -> (carry, Transition)`. Step t (1-based) splits `fold_in(key, t)` into an
environment key (given to both `observe` and `feedback`) and an agent key (given to both
`act` and `update`); each side splits its own key as it needs, and neither ever sees the
other's. The set-up key `fold_in(key, 0)` splits the same way for `reset` and `init`. So a run
of T steps is a prefix of a run of T' > T steps, and seed s (key `jax.random.key(s)`) follows
the same trajectory whatever seeds or grid points share its batch.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

import chex
import jax
import jax.numpy as jnp


class Agent(NamedTuple):
  """A learner: `init(key, spec, horizon) -> state`,
  `act(key, state, obs, spec) -> (state, action)` and
  `update(key, state, obs, action, feedback, spec) -> state`, all pure and traceable.

  `spec` is the environment's `spec` (what the learner is told), passed to every call as
  gymnax passes `EnvParams`, so no agent carries a copy of it per seed.

  Attributes:
    name: the agent's registered name (for messages).
    init: the state before step 1, from the environment's `spec` and the number of steps
      `horizon` (a static int: buffer sizes and horizon-dependent schedules).
    act: the action at this step from the observation (for RLHF also the policy the learner
      deploys, which the regret scores), and the state with what the choice computed that
      `update` needs (e.g. NeuralRBMLE-GA's per-arm estimates, NeuralUCB's gradients).
    update: the state after the feedback on `action`.
    requires: None, or `requires(env)`, called by `pair` with the environment: a ValueError
      naming what is wrong for an environment the agent cannot run on (e.g. a dueling agent
      on an instance without a Condorcet winner). It sees the environment's arrays where
      they are concrete (a sweep's plan, `simulate`: before anything compiles) and should
      skip value checks on traced ones.
    cpu_seed_batch: None (its family's CPU rule), or `cpu_seed_batch(env) -> int`, the seeds
      this agent is vmapped over at once per CPU device on `env`, in place of its family's
      cache rule: for an agent whose step is much cheaper than the family's costliest, which
      sizes that rule (e.g. the dueling baselines beside the RLHF family's exact solver).
      A sweep takes the smallest over its grid points (`rbx.core.batching`).
  """
  name: str
  init: Callable[[chex.PRNGKey, Any, int], Any]
  act: Callable[[chex.PRNGKey, Any, Any, Any], tuple[Any, Any]]
  update: Callable[[chex.PRNGKey, Any, Any, Any, Any, Any], Any]
  requires: Callable[[Any], None] | None = None
  cpu_seed_batch: Callable[[Any], int] | None = None


class Environment(Protocol):
  """What an environment provides (a pytree; see the module docstring)."""

  @property
  def spec(self) -> Any:
    """What the learner is told about the problem (no ground truth)."""

  def reset(self, key: chex.PRNGKey) -> Any:
    """The seed's environment state before step 1 (e.g. its data order)."""

  def observe(self, key: chex.PRNGKey, state: Any) -> tuple[Any, Any]:
    """(state, observation) of the next step."""

  def feedback(self, key: chex.PRNGKey, state: Any, obs: Any, action: Any) -> tuple[Any, chex.Array]:
    """(the learner's feedback on `action`, this step's regret term), with the same key as
    `observe`."""


class Transition(NamedTuple):
  """One step as the run saw it: the observation, the action, the feedback, the regret
  term (a float32 scalar of the family's cumulative regret) and the environment's named
  per-step metrics (`add_metrics`; {} where it declares none), name -> float32 scalar.
  Stacked over steps by `rollout`."""
  obs: Any
  action: Any
  feedback: Any
  regret: chex.Array
  metrics: dict = {}


_METRICS: dict[type, tuple[Callable[[Any, Any, Any, Any], dict], tuple[str, ...]]] = {}


def add_metrics(env_type: type, metrics: Callable[[Any, Any, Any, Any], dict],
                names: Sequence[str]) -> None:
  """Declares the named per-step metrics of the environments of `env_type` (and of its
  subclasses): `metrics(env, env_state, obs, action) -> {name: float32 scalar}`, pure and
  traceable, scored by every run beside the regret (`Transition.metrics`) and recorded by the
  sweep under each name (`rbx.Results.metric`). `names` are the keys it returns, declared
  so that a sweep knows its records before anything is traced (`metric_names`: the memory
  estimate, `rbx.core.memory`); none may be "regret"."""
  if not isinstance(env_type, type) or not callable(metrics):
    raise ValueError(f"add_metrics takes an environment class and a function, got "
                     f"{env_type!r}, {metrics!r}")
  if isinstance(names, str):
    raise ValueError(f"add_metrics: names must be a sequence of names, got the string {names!r}")
  names = tuple(names)
  if (not names or not all(isinstance(n, str) and n for n in names)
      or len(set(names)) < len(names)):
    raise ValueError(f"add_metrics: names must be distinct non-empty strings, got {names!r}")
  if "regret" in names:
    raise ValueError(f"add_metrics: names {names!r} include 'regret', which is the regret's "
                     "own name")
  _METRICS[env_type] = (metrics, names)


def _declared(env) -> tuple[type, Callable, tuple[str, ...]] | None:
  """(class, function, names) that `add_metrics` declares for `env`'s type (the nearest class
  in its MRO), or None."""
  for cls in type(env).__mro__:
    if cls in _METRICS:
      return (cls, *_METRICS[cls])
  return None


def metric_names(env) -> tuple[str, ...]:
  """The names of the per-step metrics declared for `env`'s type (`add_metrics`), in the
  declared order; () where none are declared. Nothing is traced."""
  declared = _declared(env)
  return () if declared is None else declared[2]


def step_metrics(env, env_state, obs, action) -> dict:
  """The named per-step metrics that `add_metrics` declares for `env`'s type (the nearest
  class in its MRO), as float32 scalars; {} where none are declared. ValueError when the
  function returns other names than it declared."""
  declared = _declared(env)
  if declared is None:
    return {}
  cls, metrics, names = declared
  out = metrics(env, env_state, obs, action)
  if set(out) != set(names):
    raise ValueError(f"the metrics of {cls.__name__} returned {sorted(out)}, but add_metrics "
                     f"declared {list(names)}")
  return {k: jnp.asarray(out[k], jnp.float32) for k in names}


class Run(NamedTuple):
  """One seed's run: `init(key) -> carry`, `step(carry, key, t) -> (carry, Transition)`; pure.

  The carry is (environment state, agent state).
  """
  init: Callable[[chex.PRNGKey], Any]
  step: Callable[[Any, chex.PRNGKey, chex.Array], tuple[Any, Transition]]


def pair(env: Environment, agent: Agent, horizon: int) -> Run:
  """`agent` on `env` for `horizon` steps as a `Run` (keys as in the module docstring). What
  the agent's functions return is checked as they are traced (`ProtocolError`), at no cost
  to the compiled program; `agent.requires(env)`, if any, is called first."""
  if agent.requires is not None:
    agent.requires(env)

  def init(key):
    k_env, k_agent = jax.random.split(jax.random.fold_in(key, 0))
    return env.reset(k_env), _call(agent, "init", k_agent, env.spec, horizon)

  def step(carry, key, t):
    env_state, state = carry
    k_env, k_agent = jax.random.split(jax.random.fold_in(key, t))
    env_state, obs = env.observe(k_env, env_state)
    acted = _call(agent, "act", k_agent, state, obs, env.spec)
    if not (isinstance(acted, tuple) and len(acted) == 2):
      raise ProtocolError(_broken(agent, "act", f"returned {_what(acted)}"))
    _same_state(agent, "act", state, acted[0])
    state, action = acted
    feedback, regret = env.feedback(k_env, env_state, obs, action)
    updated = _call(agent, "update", k_agent, state, obs, action, feedback, env.spec)
    _same_state(agent, "update", state, updated)
    metrics = step_metrics(env, env_state, obs, action)
    return (env_state, updated), Transition(obs, action, feedback, regret, metrics)

  return Run(init, step)


PROTOCOL = {"init": "init(key, spec, horizon) -> state",
            "act": "act(key, state, obs, spec) -> (state, action)",
            "update": "update(key, state, obs, action, feedback, spec) -> state"}


class ProtocolError(ValueError):
  """An agent's function does not keep the agent protocol (`PROTOCOL`)."""


def check(env: Environment, agent: Agent, horizon: int = 1) -> None:
  """Traces one step of `agent` on `env` abstractly (`jax.eval_shape`: nothing compiles or
  runs); a `ProtocolError` naming the protocol, with a short traceback, if `init`, `act` or
  `update` does not keep it."""
  run = pair(env, agent, horizon)
  key = jax.random.key(0)
  try:
    jax.eval_shape(lambda k: run.step(run.init(k), k, jnp.int32(1)), key)
  except ProtocolError as e:
    raise ProtocolError(str(e)) from None


def _call(agent: Agent, name: str, *args):
  """`agent.<name>(*args)`; a `ProtocolError` when it cannot take these arguments."""
  f = getattr(agent, name)
  try:
    inspect.signature(f).bind(*args)
  except TypeError as e:
    raise ProtocolError(_broken(agent, name, f"does not take the protocol's {len(args)} "
                                             f"arguments ({e})")) from None
  except ValueError:                 # no signature to read (a builtin): call it as it is
    pass
  return f(*args)


def _same_state(agent: Agent, name: str, state, new) -> None:
  """`new` must be a state like `state`: the same pytree structure and leaf shapes."""
  if jax.tree.structure(new) != jax.tree.structure(state):
    raise ProtocolError(_broken(agent, name, f"returned {_what(new)} as the state, which is "
                                             f"{_what(state)}"))
  shapes = [(jnp.shape(a), jnp.shape(b)) for a, b in zip(jax.tree.leaves(state),
                                                        jax.tree.leaves(new))]
  if any(a != b for a, b in shapes):
    raise ProtocolError(_broken(agent, name, "returned a state whose arrays have other shapes "
                                             f"({[b for a, b in shapes]} for {[a for a, b in shapes]})"))


def _broken(agent: Agent, name: str, what: str) -> str:
  return (f"agent {agent.name!r}: {name} {what}; the agent protocol is {PROTOCOL[name]} "
          "(rbx.core.Agent)")


def _what(x) -> str:
  """A returned value for a message: "a tuple of 3", "an array of shape (4,)", "a Query"."""
  if type(x) is tuple:
    return f"a tuple of {len(x)}"
  if hasattr(x, "shape") and hasattr(x, "dtype"):
    return f"an array of shape {tuple(x.shape)}"
  return f"a {type(x).__name__} of {len(jax.tree.leaves(x))} array(s)"


def scan(run: Run, key: chex.PRNGKey, carry, t0, length: int,
         keep: Callable[[Transition], Any] = lambda transition: transition):
  """Steps t0, …, t0 + length − 1 of `run` from `carry`; returns (carry, `keep` of each
  step's `Transition`, stacked with leading axis length). The sweep keeps the regret and the
  metrics only."""
  def body(c, t):
    c, transition = run.step(c, key, t)
    return c, keep(transition)
  return jax.lax.scan(body, carry, t0 + jnp.arange(length))


def rollout(env: Environment, agent: Agent, key: chex.PRNGKey, steps: int,
            horizon: int | None = None) -> Transition:
  """One seed's steps 1..steps as stacked `Transition`s (leading axis steps), traceable;
  `horizon` (default `steps`) is what `agent.init` is told."""
  run = pair(env, agent, steps if horizon is None else horizon)
  return scan(run, key, run.init(key), 1, steps)[1]


def batched_map(f: Callable, xs, batch: int):
  """`lax.map(f, xs)` in vmapped batches of `batch` along the leading axis; batch = 1 maps the
  unbatched f (a vmap of one would still batch every operation, loops included)."""
  return jax.lax.map(f, xs, batch_size=None if batch == 1 else batch)
