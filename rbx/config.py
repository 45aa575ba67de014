"""Sweep configs in TOML, validated before anything compiles.

A config names a family, an environment, agents, a hyperparameter grid and how to run:

```toml
family = "rlhf"              # "rlhf" or "neural"
title = "Example 1"          # optional, for the report
seeds = 64                   # n (seeds 0..n-1) or a list of seeds
steps = 500                  # T
chunk = 100                  # steps per jitted chunk (checkpoint, progress); default min(T, 1000)
record = "steps"             # "steps", "log" (R(t) at log_points log-spaced t) or "summary" (R(T))
log_points = 50
seed_batch = 64              # seeds vmapped at once per device (default rlhf 64; neural 1 on
                             # a CPU, 64 on an accelerator: rbx.neural.default_seed_batch)
seed_block = 4096            # seeds held in memory at once (default: all)
devices = 8                  # local devices to shard the seeds over (default: all)
out = "runs/example1"        # the run directory (default runs/<config name>)

[env]
name = "example1"            # rlhf: example1, example2, random_instance, custom
p = 0.0                      # neural: synthetic, classification (dataset = "mushroom")
beta = 0.5

[agent]
name = "algorithm1"          # or a list in [grid] agent = [...]
alpha = 3.0                  # rlhf: the constant schedule's α, or schedule = "proposition3"
                             # with its own parameters (scale, kappa, mu, ...)
[agent.solver]               # rlhf only: `rbx.rlhf.SolverConfig` fields
starts = 16

[grid]                       # lists; the Cartesian product is swept
agent = ["algorithm1", "vpo", "xpo"]
beta = [0.1, 0.5]
```

Parameters live in one flat namespace: a name is set once, in [env], [agent] or [grid], and
goes to whichever of the environment, the agent and the schedule take it (a schedule's
num_actions, horizon, beta and r_max come from the environment and T). Real-valued parameters
are traced (a grid over them is vmapped in one program); names, sizes and flags are static
(one program per value). `load` checks keys (with the nearest valid name for a typo), types,
ranges, and then builds every grid point's environment and agent concretely, so any bad
value is reported as a `ConfigError` naming its key before the sweep compiles.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from rbx import _checks, neural, rlhf, schedules
from rbx import data as data_lib
from rbx.core import driver, loop
from rbx.core.grid import Grid
from rbx.core.record import RECORDS

REAL, INT, STR, BOOL, VECTOR = "real", "int", "str", "bool", "vector"
_KIND_NAMES = {REAL: "a number", INT: "an integer", STR: "a string", BOOL: "true or false",
               VECTOR: "a list of numbers"}

RUN_KEYS = {"family": STR, "title": STR, "seeds": "seeds", "steps": INT, "chunk": INT,
            "record": STR, "log_points": INT, "seed_batch": INT, "seed_block": INT,
            "devices": INT, "out": STR}
TABLES = ("env", "agent", "grid")
DEFAULT_CHUNK = 1000


class ConfigError(ValueError):
  """A config that cannot run; the message names the key."""


class Family(NamedTuple):
  """A family's environments and agents: name -> {parameter: kind}, and how to build a run
  from a flat point of parameters."""
  envs: dict[str, dict[str, str]]
  agents: dict[str, dict[str, str]]
  schedules: dict[str, dict[str, str]]
  tables: dict[str, dict[str, str]]
  build: Callable[["Config", dict[str, Any]], loop.Run]
  seed_batch: Callable[[], int]          # the default seed_batch


class Config(NamedTuple):
  """A validated config.

  Attributes:
    family: "rlhf" or "neural".
    title: a title for the report.
    env: the environment's name.
    fixed: the fixed parameters (from [env] and [agent], the agent's name as "agent").
    grid: field -> values, in the config's order.
    tables: sub-tables of [agent] (the RLHF solver settings).
    seeds: the seeds, int array.
    steps, chunk, record, log_points, seed_batch, seed_block, devices: how to run.
    out: the run directory.
    text: the config file's text.
  """
  family: str
  title: str
  env: str
  fixed: dict[str, Any]
  grid: dict[str, list]
  tables: dict[str, dict[str, Any]]
  seeds: np.ndarray
  steps: int
  chunk: int
  record: str
  log_points: int
  seed_batch: int
  seed_block: int | None
  devices: int | None
  out: str
  text: str

  def build(self, point: dict[str, Any]) -> loop.Run:
    """The run of one grid point (its grid values, traced or concrete)."""
    return FAMILIES[self.family].build(self, {**self.fixed, **point})

  def sweep(self, seeds: np.ndarray | None = None) -> driver.Sweep:
    """The driver's sweep over `seeds` (default all of the config's)."""
    static = [f for f in self.grid if self.kind(f) != REAL]
    return driver.Sweep(self.build, Grid(self.grid, static=static),
                        self.seeds if seeds is None else seeds, self.steps)

  def options(self) -> driver.Options:
    """How the driver runs this config: chunk, record, log points, seed batch and block."""
    return driver.Options(self.chunk, self.record, self.log_points, self.seed_batch,
                          self.seed_block)

  def kind(self, name: str) -> str:
    """The kind ("real", "int", "str", "bool", "vector") of parameter `name`."""
    return _parameters(FAMILIES[self.family], self.env, self._agents(), self._schedules())[name]

  def digest(self) -> str:
    """A hash of everything that determines the results (not `out`, `title` or `devices`)."""
    keep = {k: v for k, v in tomllib.loads(self.text).items()
            if k not in ("out", "title", "devices")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()

  def _agents(self) -> list[str]:
    return list(self.grid.get("agent", [self.fixed.get("agent")]))

  def _schedules(self) -> list[str]:
    return list(self.grid.get("schedule", [self.fixed.get("schedule", "constant")]))


def load(path: str | os.PathLike, out: str | None = None) -> Config:
  """Reads and validates the config at `path`; `out` overrides its run directory."""
  path = Path(path)
  try:
    text = path.read_text()
  except OSError as e:
    raise ConfigError(f"cannot read config {str(path)!r}: {e.strerror}") from e
  return loads(text, default_out=str(Path("runs") / path.stem), out=out)


def loads(text: str, default_out: str = "runs/sweep", out: str | None = None) -> Config:
  """Validates a config given as TOML text (see the module docstring)."""
  try:
    raw = tomllib.loads(text)
  except tomllib.TOMLDecodeError as e:
    raise ConfigError(f"config is not valid TOML: {e}") from e
  for key in raw:
    _checks_key("config key", key, list(RUN_KEYS) + list(TABLES))
  run = {k: v for k, v in raw.items() if k not in TABLES}
  for key, value in run.items():
    _check_run_value(key, value)
  for table in TABLES:
    if not isinstance(raw.get(table, {}), dict):
      raise ConfigError(f"config [{table}] must be a table, got {raw[table]!r}")
  if "family" not in run:
    raise ConfigError(f"config needs family = one of {list(FAMILIES)}")
  fam_name = _wrap(lambda: _checks.choice("family", run["family"], FAMILIES))
  family = FAMILIES[fam_name]
  steps = _need(run, "steps")
  seeds = _need(run, "seeds")
  chunk = run.get("chunk", min(steps, DEFAULT_CHUNK))
  if chunk > steps:
    raise ConfigError(f"config chunk must be <= steps = {steps}, got {chunk}")
  record = _wrap(lambda: _checks.choice("record", run.get("record", "steps"), RECORDS))

  env_table = dict(raw.get("env", {}))
  agent_table = dict(raw.get("agent", {}))
  grid = dict(raw.get("grid", {}))
  if "name" not in env_table:
    raise ConfigError(f"config [env] needs name = one of {list(family.envs)}")
  env_name = _wrap(lambda: _checks.choice("env.name", env_table.pop("name"), family.envs))
  tables = {k: agent_table.pop(k) for k in family.tables if k in agent_table}
  if "name" in agent_table:
    agent_table["agent"] = agent_table.pop("name")
  if "agent" not in agent_table and "agent" not in grid:
    raise ConfigError(f"config needs an agent: [agent] name = one of {list(family.agents)}, or "
                      "[grid] agent = [...]")

  for key, values in grid.items():
    if not isinstance(values, list) or not values:
      raise ConfigError(f"config grid.{key} must be a non-empty list of values, got {values!r}")
  agents = grid.get("agent", [agent_table.get("agent")])
  for i, a in enumerate(agents):
    where = f"grid.agent[{i}]" if "agent" in grid else "agent.name"
    if not isinstance(a, str):
      raise ConfigError(f"config {where} must be a string, got {a!r}")
    _wrap(lambda: _checks.choice(where, a, family.agents))
  scheds = grid.get("schedule", [agent_table.get("schedule", "constant")])
  for s in scheds if family.schedules else ():
    if not isinstance(s, str):
      raise ConfigError(f"config schedule must be a string, got {s!r}")
    _wrap(lambda: _checks.choice("schedule", s, family.schedules))
  params = _parameters(family, env_name, agents, scheds)

  fixed, where = {}, {}
  for table, entries in (("env", env_table), ("agent", agent_table), ("grid", grid)):
    for key, value in entries.items():
      if key in where:
        raise ConfigError(f"config {table}.{key} is already set in [{where[key]}]; set it once")
      allowed = _allowed(family, table, env_name, params)
      _checks_key(f"{table} key", key, allowed)
      where[key] = table
      if table == "grid":
        if params[key] == VECTOR:
          raise ConfigError(f"config grid.{key}: {key} is a vector and cannot be swept")
        for i, v in enumerate(value):
          _check_kind(f"grid.{key}[{i}]", v, params[key])
        if len({json.dumps(v) for v in value}) < len(value):
          raise ConfigError(f"config grid.{key} has repeated values {value}")
      else:
        fixed[key] = _check_kind(f"{table}.{key}", value, params[key])
  for table_name, table in tables.items():
    if not isinstance(table, dict):
      raise ConfigError(f"config [agent.{table_name}] must be a table, got {table!r}")
    for key, value in table.items():
      _checks_key(f"agent.{table_name} key", key, family.tables[table_name])
      _check_kind(f"agent.{table_name}.{key}", value, family.tables[table_name][key])

  seed_block = run.get("seed_block")
  config = Config(family=fam_name, title=run.get("title", ""), env=env_name, fixed=fixed, grid=grid,
                  tables=tables, seeds=_seeds(seeds), steps=steps, chunk=chunk, record=record,
                  log_points=run.get("log_points", 50),
                  seed_batch=run.get("seed_batch", family.seed_batch()),
                  seed_block=seed_block, devices=run.get("devices"),
                  out=out or run.get("out", default_out), text=text)
  _check_points(config, where)
  return config


def _check_points(config: Config, where: dict[str, str]) -> None:
  """Builds every grid point's environment and agent concretely (no tracing)."""
  static = [f for f in config.grid if config.kind(f) != REAL]
  for point in Grid(config.grid, static=static).each():
    try:
      config.build(point)
    except ValueError as e:
      msg = str(e)
      field = msg.split("=")[0].split(" ")[0]
      loc = f"{where[field]}.{field}" if field in where else "config"
      at = f" at grid point {point}" if point else ""
      raise ConfigError(f"config {loc}{at}: {msg}") from e
    except (OSError, TypeError) as e:
      raise ConfigError(f"config [env] {config.env}: {e}") from e


def _parameters(family: Family, env: str, agents: list[str], scheds: list[str]) -> dict[str, str]:
  """Every parameter name the env, the agents and the schedules take -> its kind."""
  params = {"agent": STR}
  if family.schedules:
    params["schedule"] = STR
  params.update(family.envs[env])
  for a in agents:
    params.update(family.agents.get(a, {}))
  for s in scheds:
    params.update(family.schedules.get(s, {}))
  return params


def _allowed(family: Family, table: str, env: str, params: dict[str, str]) -> list[str]:
  if table == "env":
    return list(family.envs[env])
  if table == "agent":
    return [k for k in params if k not in family.envs[env]] + list(family.tables)
  return list(params)


def _checks_key(what: str, key: str, allowed) -> None:
  _wrap(lambda: _checks.choice(what, key, allowed))


def _wrap(check):
  try:
    return check()
  except ValueError as e:
    raise ConfigError(f"config: {e}") from e


def _check_run_value(key: str, value) -> None:
  if key == "seeds":
    return
  kind = RUN_KEYS[key]
  _check_kind(key, value, kind)
  if kind == INT:
    low = 2 if key == "log_points" else 1
    if value < low:
      raise ConfigError(f"config {key} must be an integer >= {low}, got {value}")
  if key == "out" and not value:
    raise ConfigError("config out must be a non-empty path")


def _check_kind(key: str, value, kind: str):
  ok = {
      REAL: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
      INT: lambda v: isinstance(v, int) and not isinstance(v, bool),
      STR: lambda v: isinstance(v, str),
      BOOL: lambda v: isinstance(v, bool),
      VECTOR: lambda v: isinstance(v, list) and bool(v) and all(
          isinstance(x, (int, float, list)) and not isinstance(x, bool) for x in v),
  }[kind]
  if not ok(value):
    raise ConfigError(f"config {key} must be {_KIND_NAMES[kind]}, got {value!r}")
  return value


def _need(run: dict, key: str):
  if key not in run:
    raise ConfigError(f"config needs {key} = ...")
  return run[key]


def _seeds(seeds) -> np.ndarray:
  if isinstance(seeds, int) and not isinstance(seeds, bool):
    if seeds < 1:
      raise ConfigError(f"config seeds must be an integer >= 1 or a list of seeds, got {seeds}")
    return np.arange(seeds)
  if (not isinstance(seeds, list) or not seeds
      or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
    raise ConfigError(f"config seeds must be an integer >= 1 or a non-empty list of integers >= 0,"
                      f" got {seeds!r}")
  if len(set(seeds)) < len(seeds):
    raise ConfigError(f"config seeds has repeated seeds {seeds}")
  return np.asarray(seeds)


# ---------------------------------------------------------------------------- the families

_AUTO = ("num_actions", "horizon", "beta", "r_max")   # a schedule's arguments from the env and T


def _rlhf_build(config: Config, point: dict[str, Any]) -> loop.Run:
  fam = FAMILIES["rlhf"]
  env_fn = {"example1": rlhf.example1, "example2": rlhf.example2, "custom": rlhf.make_env,
            "random_instance": _random_instance}[config.env]
  env = env_fn(**_take(point, fam.envs[config.env]))
  name, sched = point["agent"], point.get("schedule", "constant")
  agent_kwargs = _take(point, fam.agents[name])
  takes_alpha = "alpha" in inspect.signature(rlhf.AGENTS[name]).parameters
  if takes_alpha and not (sched == "constant" and "alpha" not in point):   # else its default α
    auto = dict(num_actions=env.num_actions, horizon=config.steps, beta=env.beta, r_max=env.r_max)
    args = inspect.signature(schedules.SCHEDULES[sched]).parameters
    kwargs = {**{k: v for k, v in auto.items() if k in args}, **_take(point, fam.schedules[sched])}
    missing = [k for k in args if k not in kwargs and args[k].default is inspect.Parameter.empty]
    if missing:
      raise ValueError(f"{missing[0]}=? is needed by schedule {sched!r}: set it in [agent] or [grid]")
    agent_kwargs["alpha"] = schedules.get(sched, **kwargs)
  solver = rlhf.SolverConfig(**config.tables.get("solver", {}))
  return rlhf.make_run(env, rlhf.get(name, solver=solver, **agent_kwargs))


def _random_instance(num_prompts=4, num_actions=3, beta=0.5, r_max=2.0, deviation=1.0, seed=0):
  return rlhf.random_instance(jax.random.key(seed), num_prompts, num_actions, beta, r_max, deviation)


def _neural_build(config: Config, point: dict[str, Any]) -> loop.Run:
  fam = FAMILIES["neural"]
  env_args = _take(point, fam.envs[config.env])
  if config.env == "synthetic":
    env = neural.synthetic(**env_args)
  else:
    if "dataset" not in env_args:
      raise ValueError("dataset=? is needed by env 'classification': a data set name or CSV path")
    ds = data_lib.load(env_args["dataset"], data_dir=env_args.get("data_dir"),
                   label=env_args.get("label", "label"))
    env = neural.classification(ds.features, ds.labels, env_args.get("num_arms"))
  agent = neural.get(point["agent"], **_take(point, fam.agents[point["agent"]]))
  return neural.make_run(env, agent, capacity=config.steps)


def _take(point: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
  return {k: point[k] for k in params if k in point}


_TRAINING = {"width": INT, "depth": INT, "train_steps": INT, "batch_size": INT, "restart": BOOL,
             "optimizer": STR}
_STATIC_INTS = {"arm_batch"}            # int parameters whose default is None


def _agent_parameters(make) -> dict[str, str]:
  """A neural agent constructor's parameters -> kinds, from its defaults' types
  (`**training` gives the training settings)."""
  kinds = {}
  for name, p in inspect.signature(make).parameters.items():
    if p.kind is inspect.Parameter.VAR_KEYWORD:
      kinds.update(_TRAINING)
    elif isinstance(p.default, bool):
      kinds[name] = BOOL
    elif isinstance(p.default, int) or name in _STATIC_INTS:
      kinds[name] = INT
    elif isinstance(p.default, str):
      kinds[name] = STR
    else:
      kinds[name] = REAL
  return kinds


FAMILIES: dict[str, Family] = {
    "rlhf": Family(
        envs={"example1": {"p": REAL, "beta": REAL, "r_max": REAL},
              "example2": {"kappa": REAL, "beta": REAL, "r_max": REAL},
              "random_instance": {"num_prompts": INT, "num_actions": INT, "beta": REAL,
                                  "r_max": REAL, "deviation": REAL, "seed": INT},
              "custom": {"r_star": VECTOR, "pi_ref": VECTOR, "beta": REAL, "r_max": REAL,
                         "rho": VECTOR, "pi_cal": VECTOR}},
        agents={"algorithm1": {"pi_init": VECTOR, "pi_prev_init": VECTOR},
                "vpo": {"pi_cal": VECTOR, "pi_init": VECTOR},
                "xpo": {"pi_init": VECTOR}, "selm": {"pi_init": VECTOR},
                "greedy": {"pi_init": VECTOR}},
        schedules={"constant": {"alpha": REAL}, "power": {"nu": REAL, "n": REAL},
                   "proposition3": {"kappa": REAL, "scale": REAL},
                   "theorem1_beta0": {"scale": REAL},
                   "appendix_e": {"mu": REAL, "scale": REAL}},
        tables={"solver": {k: INT if isinstance(v, int) else REAL
                           for k, v in rlhf.SolverConfig._field_defaults.items()}},
        build=_rlhf_build, seed_batch=lambda: 64),
    "neural": Family(
        envs={"synthetic": {"reward": STR, "dim": INT, "num_arms": INT, "noise": REAL, "seed": INT},
              "classification": {"dataset": STR, "data_dir": STR, "label": STR, "num_arms": INT}},
        agents={name: _agent_parameters(make) for name, make in neural.AGENTS.items()},
        schedules={}, tables={}, build=_neural_build, seed_batch=neural.default_seed_batch),
}
