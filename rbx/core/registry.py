"""Family registries: each family declares its environments and agents once, with every
parameter's kind, and everything else — TOML validation, the Python sweep's `static` fields,
`rbx run` and the error messages — reads that declaration.

A `Param` says what a parameter is: its kind ("real", "int", "str", "bool", "vector" or
"table"), whether it is static (a shape, a count, a name: one compiled program per value) or
traced (a real scalar: vmapped over in one program), and its allowed values or range. A
`Family` holds name -> `Entry` for environments and agents; adding an agent is one function
plus one `family.agent(name, make, params)` call.

One parameter rule for Python and TOML: a parameter goes to whichever of the environment and
the agent declare it and is ignored by the others; a name that none of them declares is a
`ValueError` naming it, the allowed names and the nearest one. In a TOML config "them" are the
config's environment and agents (`rbx.runs.config`); in Python, `Family.get_agent` (`rlhf.get`,
`neural.get`) does not know the environment, so it is every agent and environment of the
family: `rlhf.get(name, alpha=3.0)` gives α to the agents that take one (algorithm1, xpo, ...)
and builds the others (online_dpo, greedy, an agent of one's own) without it. Values are
checked by their declaration (`Param.check`) in both.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.core import batching

REAL, INT, STR, BOOL, VECTOR, TABLE = "real", "int", "str", "bool", "vector", "table"
KINDS = (REAL, INT, STR, BOOL, VECTOR, TABLE)
_KIND_NAMES = {REAL: "a number", INT: "an integer", STR: "a string", BOOL: "true or false",
               VECTOR: "a list of numbers", TABLE: "a table"}


@dataclasses.dataclass(frozen=True)
class Param:
  """One parameter of an environment or agent.

  Attributes:
    kind: one of `KINDS`.
    static: looped over in Python (one program per value) rather than traced; reals are
      traced unless declared static, every other kind is static.
    low, high: the allowed range of a number (inclusive), or None.
    open_low: `low` itself is excluded (a rate in (0, 1]).
    choices: the allowed values of a string, or None.
    optional: None is allowed (e.g. "no minibatches").
    doc: one line for messages and the README.
  """
  kind: str
  static: bool | None = None
  low: float | None = None
  high: float | None = None
  choices: tuple[str, ...] | None = None
  optional: bool = False
  doc: str = ""
  open_low: bool = False

  def __post_init__(self):
    _checks.choice("kind", self.kind, KINDS)
    if self.static is None:
      object.__setattr__(self, "static", self.kind != REAL)

  def check(self, field: str, value) -> Any:
    """`value` if it is of this kind and in range; ValueError naming `field` otherwise.

    TOML gives plain values; from Python a real may also be a numeric array or a traced one
    (a swept grid field; its range is checked where it is concrete) or a callable (an α
    schedule, `rbx.schedules`), an integer a NumPy integer, a vector an array, and a table a
    NamedTuple (e.g. `rbx.rlhf.SolverConfig`)."""
    if value is None and self.optional:
      return value
    ok = {
        REAL: lambda v: _is_number(v) or _is_numeric_array(v) or callable(v),
        INT: lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool),
        STR: lambda v: isinstance(v, str),
        BOOL: lambda v: isinstance(v, (bool, np.bool_)),
        VECTOR: lambda v: _is_vector(v) or _is_numeric_array(v),
        TABLE: lambda v: isinstance(v, Mapping) or hasattr(v, "_fields"),
    }[self.kind]
    if not ok(value):
      raise ValueError(f"{field} must be {_KIND_NAMES[self.kind]}, got {value!r}")
    if self.choices is not None:
      _checks.choice(field, value, self.choices)
    if self.kind in (REAL, INT) and not callable(value) and _checks.is_concrete(value):
      v = np.asarray(value, dtype=float)
      below = self.low is not None and ((v <= self.low) if self.open_low else (v < self.low)).any()
      if below or (self.high is not None and (v > self.high).any()):
        raise ValueError(f"{field} must lie in {self.range_text()}, got {value!r}")
    return value

  def range_text(self) -> str:
    """The allowed range as an interval: "[0, 1]", "(0, 1]", "[1, inf]"."""
    return (f"{'(' if self.open_low else '['}{_bound(self.low, '-inf')}, "
            f"{_bound(self.high, 'inf')}]")


def real(low=None, high=None, doc="", static=False, open_low=False) -> Param:
  """A real scalar, traced (swept in one program) unless `static`; `open_low` excludes `low`."""
  return Param(REAL, static, low, high, doc=doc, open_low=open_low)


def integer(low=None, high=None, doc="", optional=False) -> Param:
  """A static integer (a size or a count)."""
  return Param(INT, True, low, high, optional=optional, doc=doc)


def string(choices=None, doc="") -> Param:
  """A static string, one of `choices` when given."""
  return Param(STR, True, choices=None if choices is None else tuple(choices), doc=doc)


def boolean(doc="") -> Param:
  """A static flag."""
  return Param(BOOL, True, doc=doc)


def vector(doc="") -> Param:
  """A static list of numbers (or of lists), e.g. a policy; never swept."""
  return Param(VECTOR, True, doc=doc)


def table(doc="") -> Param:
  """A static table of settings (e.g. the RLHF solver's); never swept."""
  return Param(TABLE, True, doc=doc)


class Entries(dict):
  """name -> `Entry` that also answers to aliases (`in`, `[]`, `get`); iterating, `keys` and
  messages give the names only."""

  def __init__(self):
    super().__init__()
    self.aliases: dict[str, str] = {}

  def resolve(self, name: str) -> str:
    """The registered name that `name` is or is an alias of (else `name` itself)."""
    return self.aliases.get(name, name)

  def known(self) -> list[str]:
    """Every name that resolves: the registered ones, then the aliases."""
    return [*self, *self.aliases]

  def __contains__(self, name) -> bool:
    return dict.__contains__(self, self.resolve(name))

  def __getitem__(self, name) -> Entry:
    return dict.__getitem__(self, self.resolve(name))

  def get(self, name, default=None):
    """The entry of `name` or of the name it is an alias of, else `default`."""
    return self[name] if name in self else default


@dataclasses.dataclass(frozen=True)
class Entry:
  """A registered environment or agent: `make(**params)` and its declared parameters;
  `forwards` are the functions `make` passes its `**kwargs` to (e.g. the neural agents'
  training settings), whose defaults are those parameters' defaults."""
  name: str
  make: Callable[..., Any]
  params: dict[str, Param]
  doc: str = ""
  forwards: tuple[Callable[..., Any], ...] = ()

  def defaults(self) -> dict[str, Any]:
    """The default of every declared parameter that `make` (or a forward) has one for."""
    out = {}
    for f in (*self.forwards, self.make):
      for k, p in inspect.signature(f).parameters.items():
        if k in self.params and p.default is not inspect.Parameter.empty:
          out[k] = p.default
    return out

  def takes(self, key: str) -> bool:
    """Whether `make` (or a forward) takes the keyword `key` (a declared parameter it does
    not take is one the family's `prepare` turns into others, e.g. an RLHF schedule's)."""
    sigs = [inspect.signature(f).parameters for f in (self.make, *self.forwards)]
    return any(key in p for p in sigs) or (not self.forwards and any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in sigs[0].values()))

  def check(self, params: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """`params` checked against the declaration (names with "did you mean", kinds, ranges)."""
    for key, value in params.items():
      _checks.choice(f"{where}{self.name} parameter", key, self.params)
      self.params[key].check(key, value)
    return dict(params)


class Family:
  """A family's registries of environments and agents.

  Attributes:
    name: "rlhf", "neural", ...
    env_types: the classes of the family's environments (how `rbx.sweep` finds the family).
    envs, agents: name -> `Entry`, in registration order.
    cpu_seed_batch: `cpu_seed_batch(env) -> int`, the seeds vmapped at once per CPU device
      for an environment of the family (64 unless the family says otherwise), by the rule
      `cpu_rule` states in words (`rbx.core.batching`).
    step_bytes: `step_bytes(env, state) -> int`, the bytes a step holds per seed beyond its
      `state` bytes of carried state, at most (0 unless the family says): with the state, the
      per-seed working set that sizes the seed batch on an accelerator.
    prepare: `prepare(agent_params, env, steps) -> agent_params` turns declared parameters
      into constructor arguments (e.g. a schedule's name and parameters into α_t); identity
      by default.
    reference_exponent: `(results, point) -> float | None`, the exponent a paper predicts for
      R(T) ∝ T^e at a grid point (reports print it beside the fitted slope), or None.
    control: `control(agent) -> str | None`, the registered name of the agent that explores
      nowhere but otherwise learns as `agent` does (RLHF: the greedy scheme of its policy
      class), or None (`agent` is it, or has none). With the agent's `alpha` = 0 (its sampling
      without its bonus) it splits an agent's advantage into sampling and bonus effects
      (`rbx.runs.report.decomposition`).
  """

  def __init__(self, name: str, env_types: tuple[type, ...] = (),
               cpu_seed_batch: Callable[[Any], int] = lambda env: 64,
               cpu_rule: str = "64 seeds", step_bytes: Callable[[Any, int], int] = lambda env, state: 0,
               prepare: Callable | None = None, reference_exponent: Callable | None = None,
               control: Callable[[str], str | None] = lambda agent: None):
    self.name = name
    self.env_types = tuple(env_types)
    self.envs: dict[str, Entry] = {}
    self.agents = Entries()
    self.cpu_seed_batch = cpu_seed_batch
    self.cpu_rule = cpu_rule
    self.step_bytes = step_bytes
    self.prepare = prepare or (lambda params, env, steps: params)
    self.reference_exponent = reference_exponent or (lambda results, point: None)
    self.control = control

  def cpu_choice(self, envs, agents=None) -> batching.Choice:
    """The CPU seed batch of a sweep over these environments — with `agents`, the agent of
    each grid point beside its environment — the smallest of theirs: an agent's own
    (`Agent.cpu_seed_batch`) where it declares one, else the family's rule's."""
    agents = [None] * len(envs) if agents is None else list(agents)
    if len(agents) != len(envs):
      raise ValueError(f"cpu_choice: {len(agents)} agents for {len(envs)} environments")
    sizes = []
    for env, agent in zip(envs, agents):
      own = getattr(agent, "cpu_seed_batch", None)
      sizes.append((own(env), agent.name) if own is not None else (self.cpu_seed_batch(env), None))
    batch = min(size for size, _ in sizes)
    if any(by is None for size, by in sizes if size == batch):
      return batching.Choice(batch, f"cpu cache rule: {self.cpu_rule}")
    names = ", ".join(dict.fromkeys(by for size, by in sizes if size == batch))
    return batching.Choice(batch, f"cpu: the agents' own rule ({names}; Agent.cpu_seed_batch)")

  def working_set(self, envs, state: int) -> int:
    """Bytes per seed of a sweep over these environments with `state` bytes of carried
    state a seed: the state and the largest step's transients."""
    return state + max(self.step_bytes(env, state) for env in envs)

  def env(self, name: str, make: Callable, params: Mapping[str, Param], doc: str = "") -> Callable:
    """Registers environment `name`; returns `make`."""
    self.envs[name] = Entry(name, make, dict(params), doc or _first_line(make))
    return make

  def agent(self, name: str, make: Callable, params: Mapping[str, Param], doc: str = "",
            forwards: tuple[Callable, ...] = ()) -> Callable:
    """Registers agent `name` (`make(**params) -> rbx.core.Agent`; `forwards`: see `Entry`);
    returns `make`."""
    self.agents[name] = Entry(name, make, dict(params), doc or _first_line(make), tuple(forwards))
    return make

  def alias(self, alias: str, name: str) -> None:
    """Registers `alias` as another name of agent `name` (e.g. a name it had before)."""
    _checks.choice("agent", name, self.agents)
    self.agents.aliases[alias] = name

  def load_env(self, name: str, params: Mapping[str, Any]):
    """Environment `name` from its declared parameters: `envs[name].make(**params)` (arrays,
    not files: a config's data set is read by `rbx.runs.config`)."""
    return self.envs[name].make(**params)

  def get_agent(self, name: str, **params):
    """Agent `name` built from `params` by the module docstring's rule: the ones it declares
    are checked (`Param.check`) and passed, those only other agents or environments of the
    family declare are ignored, any other name is a ValueError with the nearest names.

    Raises:
      ValueError: an unknown agent or parameter, a value of the wrong kind or out of range,
        or a parameter that only configs take (e.g. an RLHF `schedule`; in Python pass
        `alpha=rbx.schedules.<name>(...)`).
    """
    if name not in self.agents and (other := elsewhere("agents", name, self.name)):
      raise ValueError(f"agent={name!r} is an agent of family {other!r}, not {self.name!r} "
                       f"(rbx.{other}.get({name!r}))")
    entry = self.agents[_checks.choice("agent", name, self.agents.known())]
    known = self.param_names()
    for key, value in params.items():
      if key in entry.params:
        if not entry.takes(key):
          raise ValueError(f"{key}= is a config parameter of {self.name} agent {name!r} that its "
                           f"constructor does not take; from Python it takes "
                           f"{[k for k in entry.params if entry.takes(k)]}"
                           + (" (an α schedule: alpha=rbx.schedules.<name>(...))"
                              if "alpha" in entry.params else ""))
        entry.params[key].check(key, value)
      elif key not in known:
        near = _checks.did_you_mean(key, entry.params) or _checks.did_you_mean(key, known)
        raise ValueError(f"{key}={value!r} is not a parameter of {self.name} agent {name!r}, "
                         f"which takes {list(entry.params)}, nor of any other {self.name} agent "
                         f"or environment{near}")
    return entry.make(**{k: v for k, v in params.items() if k in entry.params})

  def param_names(self) -> set[str]:
    """Every parameter name that some environment or agent of the family declares."""
    return {k for e in (*self.envs.values(), *self.agents.values()) for k in e.params}

  def static_names(self) -> set[str]:
    """Every parameter name that some environment or agent of the family declares static."""
    return {k for e in (*self.envs.values(), *self.agents.values())
            for k, p in e.params.items() if p.static}

  def build(self, env_name: str, env_params: Mapping[str, Any], agent_name: str,
            agent_params: Mapping[str, Any], steps: int):
    """(env, agent) from registered names and parameters (concrete or traced)."""
    env = self.load_env(env_name, dict(env_params))
    agent = self.get_agent(agent_name, **self.prepare(dict(agent_params), env, steps))
    return env, agent


@dataclasses.dataclass(frozen=True, eq=False)
class Build:
  """`build(**point) -> (env, agent)` for `rbx.sweep` from resolved values (a config's,
  `rbx.runs.config.Config.build`): environment `env` and the agent that `{**fixed, **point}` names
  under "agent", each given the values it declares (the module docstring's rule, over one
  environment and its agents), built by `Family.build`.

  Attributes:
    family: the `Family`.
    env: the environment's name.
    fixed: the values that are not swept (the agent's name as "agent" unless swept).
    steps: T (`Family.prepare` gives it to a schedule).
  """
  family: Family
  env: str
  fixed: Mapping[str, Any]
  steps: int

  def __call__(self, **point):
    values = {**self.fixed, **point}
    name = values["agent"]
    env_entry, agent_entry = self.family.envs[self.env], self.family.agents[name]
    return self.family.build(self.env, {k: values[k] for k in env_entry.params if k in values},
                             name, {k: values[k] for k in agent_entry.params if k in values},
                             self.steps)


FAMILIES: dict[str, Family] = {}


def family(name: str, **kwargs) -> Family:
  """Creates and registers the family `name` (once, at the family's import)."""
  FAMILIES[name] = Family(name, **kwargs)
  return FAMILIES[name]


def elsewhere(kind: str, name: str, family: str) -> str | None:
  """The first registered family other than `family` whose `kind` ("envs" or "agents") has
  `name`, or None: for "is an agent of family 'neural'" rather than "is not one of"."""
  return next((f.name for f in FAMILIES.values()
               if f.name != family and name in getattr(f, kind)), None)


def get(name: str) -> Family:
  """The registered family `name` (the "did you mean" error for an unknown one)."""
  return FAMILIES[_checks.choice("family", name, FAMILIES)]


def _is_number(v) -> bool:
  return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _is_numeric_array(v) -> bool:
  """A NumPy or JAX array (or tracer) of numbers."""
  dtype = getattr(v, "dtype", None)
  try:
    return hasattr(v, "shape") and dtype is not None and bool(jnp.issubdtype(dtype, jnp.number))
  except TypeError:                          # e.g. a PRNG key array's dtype
    return False


def _is_vector(v) -> bool:
  return isinstance(v, (list, tuple)) and bool(v) and all(
      (isinstance(x, (int, float)) and not isinstance(x, bool)) or _is_vector(x) for x in v)


def _bound(x, none: str) -> str:
  return none if x is None else f"{x:g}"


def _first_line(f) -> str:
  return (inspect.getdoc(f) or "").split("\n")[0]
