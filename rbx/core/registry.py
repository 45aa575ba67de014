"""Family registries: each family declares its environments and agents once, with every
parameter's kind, and everything else — TOML validation, the Python sweep's `static` fields,
`rbx run` and the error messages — reads that declaration.

A `Param` says what a parameter is: its kind ("real", "int", "str", "bool", "vector" or
"table"), whether it is static (a shape, a count, a name: one compiled program per value) or
traced (a real scalar: vmapped over in one program), and its allowed values or range. A
`Family` holds name -> `Entry` for environments and agents; adding an agent is one function
plus one `family.agent(name, make, params)` call.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from rbx import _checks

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

  def __post_init__(self):
    _checks.choice("kind", self.kind, KINDS)
    if self.static is None:
      object.__setattr__(self, "static", self.kind != REAL)

  def check(self, field: str, value) -> Any:
    """`value` if it is of this kind and in range; ValueError naming `field` otherwise."""
    if value is None and self.optional:
      return value
    ok = {
        REAL: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
        STR: lambda v: isinstance(v, str),
        BOOL: lambda v: isinstance(v, bool),
        VECTOR: lambda v: _is_vector(v),
        TABLE: lambda v: isinstance(v, Mapping),
    }[self.kind]
    if not ok(value):
      raise ValueError(f"{field} must be {_KIND_NAMES[self.kind]}, got {value!r}")
    if self.choices is not None:
      _checks.choice(field, value, self.choices)
    if self.kind in (REAL, INT):
      if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
        raise ValueError(f"{field} must lie in [{_bound(self.low, '-inf')}, "
                         f"{_bound(self.high, 'inf')}], got {value!r}")
    return value


def real(low=None, high=None, doc="", static=False) -> Param:
  """A real scalar, traced (swept in one program) unless `static`."""
  return Param(REAL, static, low, high, doc=doc)


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
    seed_batch: `seed_batch(env) -> int`, the default seeds vmapped at once per device for an
      environment of the family (64 unless the family says otherwise).
    prepare: `prepare(agent_params, env, steps) -> agent_params` turns declared parameters
      into constructor arguments (e.g. a schedule's name and parameters into α_t); identity
      by default.
    load_env: `load_env(name, params) -> env`, for environments that read files (default
      `envs[name].make(**params)`).
    reference_exponent: `(results, point) -> float | None`, the exponent a paper predicts for
      R(T) ∝ T^e at a grid point (reports print it beside the fitted slope), or None.
  """

  def __init__(self, name: str, env_types: tuple[type, ...] = (),
               seed_batch: Callable[[Any], int] = lambda env: 64, prepare: Callable | None = None,
               load_env: Callable | None = None, reference_exponent: Callable | None = None):
    self.name = name
    self.env_types = tuple(env_types)
    self.envs: dict[str, Entry] = {}
    self.agents: dict[str, Entry] = {}
    self.seed_batch = seed_batch
    self.prepare = prepare or (lambda params, env, steps: params)
    self.load_env = load_env or (lambda name, params: self.envs[name].make(**params))
    self.reference_exponent = reference_exponent or (lambda results, point: None)

  def grid_seed_batch(self, envs) -> int:
    """The default seed batch of a sweep over these environments: the smallest of theirs."""
    return min(self.seed_batch(env) for env in envs)

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

  def get_agent(self, name: str, **params):
    """Agent `name` built from `params` (the "did you mean" error for an unknown name)."""
    return self.agents[_checks.choice("agent", name, self.agents)].make(**params)

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


FAMILIES: dict[str, Family] = {}


def family(name: str, **kwargs) -> Family:
  """Creates and registers the family `name` (once, at the family's import)."""
  FAMILIES[name] = Family(name, **kwargs)
  return FAMILIES[name]


def get(name: str) -> Family:
  """The registered family `name` (the "did you mean" error for an unknown one)."""
  return FAMILIES[_checks.choice("family", name, FAMILIES)]


def _is_vector(v) -> bool:
  return isinstance(v, (list, tuple)) and bool(v) and all(
      (isinstance(x, (int, float)) and not isinstance(x, bool)) or _is_vector(x) for x in v)


def _bound(x, none: str) -> str:
  return none if x is None else f"{x:g}"


def _first_line(f) -> str:
  return (inspect.getdoc(f) or "").split("\n")[0]
