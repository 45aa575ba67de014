"""Sweep configs in TOML, validated before anything compiles.

A config names a family, an environment, agents, a hyperparameter grid and how to run (every
key with its kind, default and meaning: docs/config_keys.md, printed by `rbx keys` from
`RUN_KEYS` and the registries, `rbx.runs.config_keys`):

```toml
import = ["my_agents"]       # optional: modules (names, or .py files relative to this
                             # config) imported first, so the agents they register exist
family = "rlhf"              # "rlhf" or "neural"
title = "Example 1"          # optional, for the report
seeds = 64                   # n (seeds 0..n-1), a list of seeds, or "1000:2000" (seeds
                             # 1000..1999, half-open: one slice of a job array, merged with
                             # `rbx merge`, docs/runs.md)
instances = 16               # optional: the environment at seed = 0..15, an axis like the
                             # seeds (environments built from an integer seed only)
steps = 500                  # T
chunk = 100                  # steps per jitted chunk (checkpoint, progress); default 1000;
                             # never more than steps
record = "steps"             # "steps", "log" (R(t) at log_points log-spaced t) or "summary" (R(T))
log_points = 50
seed_batch = 64              # seeds vmapped at once per device, every batch full (default,
                             # rbx.core.batching: on a CPU the family's cache rule, rlhf the
                             # largest power of two <= 16 with seeds x |X| x A^2 <= 2^16,
                             # neural 1; on an accelerator the largest power of two <= 4096
                             # whose seeds fit in half its total memory); metadata.json says why
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
                             # with its own parameters (scale, schedule_kappa, mu, ...)
first_layer = "blocks"       # neural network agents: the first layer's products, "blocks" or
                             # "dense" (one GEMM over all blocks); matmul_precision = "float32",
                             # "tf32" or "bf16"; unset: the device kind's
                             # (rbx.neural.network.default_compute), recorded as run
[agent.solver]               # rlhf only: `rbx.rlhf.SolverConfig` fields
starts = 16
                             # algorithm1 only: [agent.unsampled_solver] (the same fields) and
                             # full_solves, its opt-in lazy re-solve on many prompts

[grid]                       # lists; the Cartesian product is swept
agent = ["algorithm1", "vpo", "xpo"]
beta = [0.1, 0.5]
```

Per-agent grids: instead of one [grid], several [[grid]] tables, each swept on its own (e.g.
`[[grid]] agent = ["algorithm1"]` and `[[grid]] agent = ["eps_greedy"]` with `epsilon =
[0.05, 0.1]`: Algorithm 1 runs once, not once per ε). The results then have the axes ("run",
"seed", "step"), each run labelled by its fields (`rbx.core.grid.expand`).

Parameters live in one flat namespace: a name is set once, in [env], [agent] or [grid], and
goes to whichever of the environment, the agent and the schedule take it (a schedule's
num_actions, horizon, beta and r_max come from the environment and T; its κ is
`schedule_kappa`, never the environment's `kappa`, Example 2's trap). Real-valued parameters
are traced (a grid over them is vmapped in one program); names, sizes and flags are static
(one program per value). `load` checks keys (with the nearest valid name for a typo), types,
ranges, and then builds every grid point's environment and agent concretely, so any bad
value is reported as a `ConfigError` naming its key before the sweep compiles. A name that
none of the config's environment and agents declare is an error; each of them takes the names
it declares (the rule of `rbx.core.registry`, which `rlhf.get` and `neural.get` follow too).
It also estimates the memory the run needs (`rbx.core.memory`) and refuses one that does not
fit, with the figure, the limit and the fix, before anything is allocated.

One's own agents and environments: `import` lists modules that register them
(`rlhf.FAMILY.agent(...)`, see docs/concepts.md), imported before anything is validated — a
module name (importable, or a file in the current directory) or a .py file, relative to the
config's directory; `rbx run --import X` adds to the list. `load` records files as absolute
paths in the run's config.toml, so `rbx run --resume` and `rbx report` import them too, and
metadata.json records every module's file ("imports").

A parameter the config leaves out runs with its constructor's default: rbx does not require
it, it records it. `Config.effective` holds the value every parameter of the environment
and of each agent runs with — the config's, or the registered constructor's default
(`Entry.defaults`: its signature's, and those of the functions its `**kwargs` go to, e.g. a
neural agent's training settings), tables with every field (a partial [agent.solver]
completed with `SolverConfig`'s defaults) — and `rbx run` writes it to metadata.json
("effective") for `rbx report`. Grid fields are left out (they are in [grid]), and so are an
RLHF schedule's own defaults (e.g. scale = 1; `rbx.schedules`).

Data sets: an environment that takes arrays `features` and `labels` (the neural
classification bandit) is given them here: its [env] table names a data set with the keys of
`DATASET` (`dataset = "mushroom"`, `label`, `bad_cells`, ...), which `load` reads with
`rbx.data.load` into `Config.fixed`, so the families never read files. A `dataset` path and
`data_dir` are relative to the config's folder (`load`).

A `Config` is complete once `load` returns it: parsed, validated, its modules imported and
its sweep planned there, once — its `build` (`rbx.core.registry.Build`), `effective` values,
`imports` and `plan` (`rbx.core.sweep.Plan`: every grid point checked, the seed batch chosen),
which the memory check, `rbx.runs.experiment` (the run and its metadata), `rbx trace` and
`rbx report` read. So `rbx.core` gets plain values and never calls back into this module
(which sits above it, below `rbx.runs.experiment` and `rbx.cli`).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import tomli_w

from rbx import _checks
from rbx import data as data_lib
from rbx.core import registry
from rbx.core import sweep as sweep_lib
from rbx.core.grid import Grid, runs
from rbx.core.record import RECORDS
from rbx.core.registry import INT, STR, TABLE, VECTOR, Param

DEFAULT_CHUNK = 1000


class RunKey(NamedTuple):
  """A top-level config key: its kind (a `rbx.core.registry` kind, or "seeds" and "import",
  checked on their own), its meaning, whether a config must set it, and its default (None:
  the meaning says what is used)."""
  kind: str
  doc: str
  required: bool = False
  default: Any = None


RUN_KEYS = {
    "import": RunKey("import", "modules (names importable here or in the current directory, "
                     "or .py files relative to the config) imported first, so the agents and "
                     "environments they register exist; `rbx run --import` adds to it", False, []),
    "family": RunKey(STR, "the family: " + " or ".join(f'"{f}"' for f in ("rlhf", "neural")),
                     True),
    "title": RunKey(STR, "a title for the report and the plots", False, ""),
    "seeds": RunKey("seeds", 'n (seeds 0..n-1), a list of seeds, or "START:STOP" (half-open: '
                    "one slice of a job array, joined by `rbx merge`)", True),
    "instances": RunKey(INT, "I: the environment at seed = 0..I-1, swept in the same program "
                        "like the seeds (the results' axis \"instance\"; the report averages "
                        "over instances and seeds); only an environment built from an integer "
                        "`seed` (rlhf: random_instance, contextual, sequences, hard_sequences)"),
    "steps": RunKey(INT, "T, the steps of every run", True),
    "chunk": RunKey(INT, "steps per jitted chunk (a checkpoint and a progress line after "
                    "each); at most `steps`", False, DEFAULT_CHUNK),
    "record": RunKey(STR, '"steps" (every r_t), "log" (R(t) at `log_points` log-spaced t) or '
                     '"summary" (R(T) only)', False, "steps"),
    "log_points": RunKey(INT, 'the steps that record = "log" keeps', False, 50),
    "seed_batch": RunKey(INT, "seeds vmapped at once per device, every batch full (default: "
                         "the family's on a CPU: rlhf 16, fewer for large A and |X|, neural 1; "
                         "on an accelerator what fits in half its memory, <= 4096)"),
    "seed_block": RunKey(INT, "seeds whose state is held in memory at once (default: all)"),
    "devices": RunKey(INT, "local devices to shard the seeds over (default: all)"),
    "out": RunKey(STR, "the run directory, relative to the current directory (default: "
                  "runs/<the config's name>)"),
}
"""Every top-level key of a config; the tables [env], [agent] and [grid] are `TABLES`."""
TABLES = ("env", "agent", "grid")
RENAMED = {"kappa": "schedule_kappa"}
"""Old key -> its new name, where an agent's parameter was renamed away from an environment's
(so that neither takes the other's value): the old key where only the new one fits is refused,
naming both."""
DATA_FIELDS = ("features", "labels")
DATASET: dict[str, Param] = {
    "dataset": registry.string(doc="a data set name in the data directory, or a CSV path"),
    "data_dir": registry.string(doc="the data directory (default $RBX_DATA_DIR or the per-user "
                                "one)"),
    "label": registry.string(doc="the class column"),
    "bad_cells": registry.string(data_lib.BAD_CELLS, doc="a numeric column's cells that are not "
                                 "numbers (x, inf): error, missing or categorical (see "
                                 "rbx.data.loader)"),
    "bad_cells_by_column": registry.table(doc="{column = error|missing|categorical}, over "
                                          "bad_cells"),
    "categorical": registry.string(data_lib.CATEGORICAL, doc="categorical columns one-hot "
                                   "(onehot) or as codes with missing -1 (ordinal, the public "
                                   "NeuralUCB/NeuralTS code)"),
}
"""The [env] keys of an environment that takes `DATA_FIELDS` (arrays, e.g. the neural
classification bandit): the data set that `load` reads into them with `rbx.data.load` (these
are its keyword arguments), once per config; they cannot be swept."""
DATASET_ENTRY = registry.Entry("data set", data_lib.load, DATASET)     # (its defaults: load's)


class ConfigError(ValueError):
  """A config that cannot run; the message names the key."""


class Config(NamedTuple):
  """A validated config.

  Attributes:
    family: the family's name (a key of `rbx.core.registry.FAMILIES`).
    title: a title for the report.
    env: the environment's name.
    fixed: the fixed parameters (from [env] and [agent], the agent's name as "agent").
    grid: field -> values, in the config's order; or a list of such sub-grids ([[grid]]).
    seeds: the seeds, int array (from n, a list or "START:STOP").
    instances: I, the environment's instances at seed = 0..I−1 (None: no instance axis).
    steps, chunk, record, log_points, seed_block, devices: how to run.
    out: the run directory.
    text: the config file's text.
    imports: each `import` entry -> its module's file (`import_modules`).
    build: `build(**point) -> (env, agent)` of one grid point (its grid values, traced or
      concrete), for `rbx.sweep` (`rbx.core.registry.Build`).
    effective: the value every parameter runs with, defaults included, as JSON data:
      {"env": {"name": ..., param: value}, "agent": {agent name: {param: value}}}, the grid
      fields left out (they are in `grid`); see the module docstring.
    plan: the sweep planned once (`rbx.core.sweep.Plan`: every grid point checked, the seed
      batch chosen), which the memory check, the run and its metadata read.

  Parameters it does not set run with their constructors' defaults, which `effective` records;
  `seed_batch` and `seed_batch_reason` are the plan's.
  """
  family: str
  title: str
  env: str
  fixed: dict[str, Any]
  grid: dict[str, list] | list[dict[str, list]]
  seeds: np.ndarray
  instances: int | None
  steps: int
  chunk: int
  record: str
  log_points: int
  seed_block: int | None
  devices: int | None
  out: str
  text: str
  imports: dict[str, str]
  build: registry.Build
  effective: dict[str, Any]
  plan: sweep_lib.Plan

  @property
  def seed_batch(self) -> int:
    """Seeds vmapped at once per device (the plan's)."""
    return self.plan.seed_batch.seed_batch

  @property
  def seed_batch_reason(self) -> str:
    """Why `seed_batch`: "set by the user" or `rbx.core.batching`'s words."""
    return self.plan.seed_batch.reason

  def static(self) -> list[str]:
    """The grid fields looped over in Python: those declared static (strings always are),
    of every sub-grid of a list ([[grid]], whose runs of the same static fields share a
    program: `rbx.core.grid.Runs`)."""
    fields = (dict.fromkeys(f for sub in self.grid for f in sub) if isinstance(self.grid, list)
              else self.grid)
    return [f for f in fields if self.param(f).static]

  def points(self) -> list[dict[str, Any]]:
    """Every grid point (of every sub-grid), as {field: value}."""
    if isinstance(self.grid, list):
      return list(runs(self.grid).values())
    return list(Grid(self.grid).each())

  def param(self, name: str) -> Param:
    """The declaration of parameter `name` (`rbx.core.registry.Param`)."""
    return _parameters(registry.get(self.family), self.env, self._agents())[name]

  def sweep_options(self) -> dict[str, Any]:
    """The keyword arguments of `rbx.sweep` that this config sets: its plan's and its
    `run_options`'."""
    return dict(static=self.static(), devices=self.devices, seed_batch=self.plan.seed_batch,
                instances=self.instances, **self._run_keys())

  def run_options(self, **hooks) -> sweep_lib.RunOptions:
    """How `plan` runs (`rbx.core.sweep.run`), with `hooks` (progress, start, on_chunk, stop,
    compiles)."""
    return sweep_lib.RunOptions(**self._run_keys(), **hooks)

  def _run_keys(self) -> dict[str, Any]:
    return dict(chunk=self.chunk, record=self.record, log_points=self.log_points,
                seed_block=self.seed_block)

  def digest(self) -> str:
    """A hash of everything that determines the results (not `out`, `title` or `devices`)."""
    return hashlib.sha256(json.dumps(results_keys(self.text), sort_keys=True,
                                     default=str).encode()).hexdigest()

  def _agents(self) -> list[str]:
    names = [p.get("agent", self.fixed.get("agent")) for p in self.points()]
    return list(dict.fromkeys(names))


def results_keys(text: str) -> dict[str, Any]:
  """The keys of the config `text` (TOML) that determine the results: all but `out`, `title`
  and `devices` (`Config.digest` hashes them)."""
  return {k: v for k, v in tomllib.loads(text).items() if k not in ("out", "title", "devices")}


def load(path: str | os.PathLike, out: str | None = None,
         overrides: dict[str, Any] | None = None, imports: list[str] = ()) -> Config:
  """Reads and validates the config at `path`; `out` overrides its run directory,
  `overrides` its keys (see `override`) and `imports` are added to its `import` list
  (`rbx run --import`; files relative to the current directory). Its paths — .py files in
  `import`, [env] `dataset` when a path (`rbx.data.is_path`; a name is looked up in the data
  directory) and `data_dir` — are relative to its folder and recorded absolute, so the run's
  config.toml finds them again."""
  path = Path(path)
  try:
    text = path.read_text()
  except OSError as e:
    raise ConfigError(f"cannot read config {str(path)!r}: {e.strerror}") from e
  overrides = dict(overrides or {})
  try:
    given = tomllib.loads(text).get("import", [])
  except tomllib.TOMLDecodeError as e:
    raise ConfigError(f"config is not valid TOML: {e}") from e
  if isinstance(given, list):              # else `loads` says what is wrong with it
    listed = ([_absolute(e, path.parent) for e in given]
              + [_absolute(e, Path.cwd()) for e in imports])
    if listed != given:
      overrides["import"] = listed
  env = tomllib.loads(text).get("env")
  for key in ("dataset", "data_dir"):        # paths from the config's folder, as imports
    value = env.get(key) if isinstance(env, dict) else None
    if (isinstance(value, str) and f"env.{key}" not in overrides
        and (key == "data_dir" or data_lib.is_path(value))):
      overrides[f"env.{key}"] = str((path.parent / Path(value).expanduser()).absolute())
  if overrides:
    text = override(text, overrides)
  return loads(text, default_out=str(Path("runs") / path.stem), out=out)


def _absolute(entry, base: Path):
  """An `import` entry that is a file (ends in .py), as an absolute path from `base`; a
  module name (or anything else, checked by `loads`) as it is."""
  if isinstance(entry, str) and entry.endswith(".py"):
    return str((base / Path(entry).expanduser()).resolve())
  return entry


def import_modules(entries: list[str]) -> dict[str, str]:
  """Imports the `import` entries — a module name (importable, or in the current directory)
  or a .py file (an absolute path, as `load` records it) — so that the agents and
  environments they register exist; returns entry -> the module's file. A module imported
  before is not imported again.

  Raises:
    ConfigError: no such module or file, or the module raised while it was imported.
  """
  files = {}
  for entry in entries:
    try:
      if entry.endswith(".py"):
        path = Path(entry)
        name = f"rbx_user_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:8]}"
        module = sys.modules.get(name)
        if module is None:
          if not path.is_file():
            raise ConfigError(f"config import {entry!r}: no such file {str(path.absolute())!r}")
          spec = importlib.util.spec_from_file_location(name, path)
          module = importlib.util.module_from_spec(spec)
          sys.modules[name] = module
          try:
            spec.loader.exec_module(module)
          except BaseException:
            del sys.modules[name]
            raise
      else:
        sys.path.insert(0, os.getcwd())
        try:
          module = importlib.import_module(entry)
        finally:
          sys.path.remove(os.getcwd())
    except ConfigError:
      raise
    except ModuleNotFoundError as e:
      raise ConfigError(f"config import {entry!r}: {e} (a module name importable here or in "
                        "the current directory, or a .py file)") from e
    except Exception as e:
      raise ConfigError(f"config import {entry!r} raised {type(e).__name__}: {e}") from e
    files[entry] = getattr(module, "__file__", None) or entry
  return files


def override(text: str, overrides: dict[str, Any]) -> str:
  """The TOML `text` with dotted keys set (`{"seeds": 4, "env.beta": 0.1, "grid.alpha": [1, 3]}`):
  the config a run records, so `config.toml` says what ran."""
  try:
    raw = tomllib.loads(text)
  except tomllib.TOMLDecodeError as e:
    raise ConfigError(f"config is not valid TOML: {e}") from e
  for key, value in overrides.items():
    *tables, name = key.split(".")
    table = raw
    for t in tables:
      table = table.setdefault(t, {})
      if not isinstance(table, dict):
        raise ConfigError(f"config --set {key}: {t} is not a table")
    table[name] = value
  return tomli_w.dumps(raw)


def parse_setting(setting: str) -> tuple[str, Any]:
  """`KEY=VALUE` from the command line: VALUE read as a TOML value (`0.5`, `[1, 2]`, `"vpo"`,
  `true`), else as a string."""
  key, sep, value = setting.partition("=")
  if not sep or not key.strip():
    raise ConfigError(f"--set takes KEY=VALUE (e.g. env.beta=0.1), got {setting!r}")
  try:
    parsed = tomllib.loads(f"v = {value.strip()}")["v"]
  except tomllib.TOMLDecodeError:
    parsed = value.strip()
  return key.strip(), parsed


def loads(text: str, default_out: str = "runs/sweep", out: str | None = None) -> Config:
  """Validates a config given as TOML text, imports its modules and plans its sweep, once
  (see the module docstring)."""
  raw, imports = _parse(text)
  run = {k: v for k, v in raw.items() if k not in TABLES}
  if "family" not in run:
    raise ConfigError(f"config needs family = one of {list(registry.FAMILIES)}")
  fam_name = _wrap(lambda: _checks.choice("family", run["family"], registry.FAMILIES))
  family = registry.FAMILIES[fam_name]
  steps = _need(run, "steps")
  seeds = _need(run, "seeds")
  if isinstance(seeds, str):
    seeds = _wrap(lambda: _checks.seed_range(seeds), "config ")
  record = _wrap(lambda: _checks.choice("record", run.get("record", RUN_KEYS["record"].default),
                                        RECORDS))

  env_table = dict(raw.get("env", {}))
  agent_table = dict(raw.get("agent", {}))
  grid = raw.get("grid", {})
  subgrids = {"grid": grid} if isinstance(grid, dict) else {f"grid[{i}]": g
                                                           for i, g in enumerate(grid)}
  if "name" not in env_table:
    raise ConfigError(f"config [env] needs name = one of {list(family.envs)}")
  _other_family(fam_name, "envs", "env.name", env_table["name"])
  env_name = _wrap(lambda: _checks.choice("env.name", env_table.pop("name"), family.envs))
  if "name" in agent_table:
    agent_table["agent"] = agent_table.pop("name")
  agents = _agents(fam_name, run, agent_table, subgrids)
  fixed, where = _values(family, env_name, agents,
                         {"env": env_table, "agent": agent_table, **subgrids})
  if all(f in family.envs[env_name].params for f in DATA_FIELDS):
    fixed = _read_dataset(fixed, env_name)
  if isinstance(grid, list):
    _wrap(lambda: runs(grid), "config ")      # no run in two sub-grids
  if "instances" in run:
    _check_instances(family, env_name, run["instances"], where)
  num_seeds = len(seeds) if isinstance(seeds, range) else _num_seeds(seeds)
  config = _planned(Config(
      family=fam_name, title=run.get("title", ""), env=env_name, fixed=fixed, grid=grid,
      seeds=np.zeros(0, np.int64),     # made once their memory is checked, below
      instances=run.get("instances"),
      steps=steps, chunk=min(run.get("chunk", DEFAULT_CHUNK), steps),   # at most one chunk
      record=record, log_points=run.get("log_points", RUN_KEYS["log_points"].default),
      seed_block=run.get("seed_block"), devices=run.get("devices"),
      out=out or run.get("out", default_out), text=text, imports=imports,
      build=registry.Build(family, env_name, fixed, steps), effective={}, plan=None),
      where, run.get("seed_batch"))
  _wrap(lambda: sweep_lib.check_memory(config.plan, num_seeds, config.run_options(),
                                       checkpoint=True))
  return config._replace(seeds=np.arange(seeds) if isinstance(seeds, int) else np.asarray(seeds))


def _parse(text: str) -> tuple[dict[str, Any], dict[str, str]]:
  """The config `text` read as TOML, its keys and top-level values checked and the modules it
  imports imported (before the names they register are checked): (the TOML's tables, entry
  -> the module's file, `import_modules`)."""
  try:
    raw = tomllib.loads(text)
  except tomllib.TOMLDecodeError as e:
    raise ConfigError(f"config is not valid TOML: {e}") from e
  for key in raw:
    _checks_key("config key", key, list(RUN_KEYS) + list(TABLES))
  for key, value in raw.items():
    if key not in TABLES:
      _check_run_value(key, value)
  imports = import_modules(raw.get("import", []))
  for table in TABLES:
    value = raw.get(table, {})
    if not (isinstance(value, dict) or (table == "grid" and isinstance(value, list) and value
                                        and all(isinstance(g, dict) for g in value))):
      raise ConfigError(f"config [{table}] must be a table"
                        + (" or an array of tables ([[grid]])" if table == "grid" else "")
                        + f", got {value!r}")
  return raw, imports


def _agents(family: str, run: dict, agent_table: dict, subgrids: dict) -> list[str]:
  """The agents of `family` that the config names — [agent]'s, or each sub-grid's list — in
  order, each once; the sub-grids' values checked."""
  names = registry.FAMILIES[family].agents
  if "agent" not in agent_table and not all("agent" in g for g in subgrids.values()):
    raise ConfigError(f"config needs an agent: [agent] name = one of {list(names)}, or "
                      "[grid] agent = [...] (in every [[grid]])")
  agents = []
  for table, sub in subgrids.items():
    for key, values in sub.items():
      _wrap(lambda: _checks.grid_values(f"{table}.{key}", values), "config ")
    listed = sub.get("agent", [agent_table.get("agent")])
    for i, a in enumerate(listed):
      where = f"{table}.agent[{i}]" if "agent" in sub else "agent.name"
      if not isinstance(a, str):
        raise ConfigError(f"config {where} must be a string, got {a!r}")
      if a not in names:
        _other_family(family, "agents", where, a)
        _wrap(lambda: _checks.choice(where, a, names.known()), _unregistered(run, a))
      agents += [a] * (a not in agents)
  return agents


def _values(family: registry.Family, env: str, agents: list[str],
            tables: dict[str, dict]) -> tuple[dict[str, Any], dict[str, str]]:
  """(the fixed values, key -> the table that sets it) of `tables` — "env", "agent" and the
  sub-grids, name -> entries — each key checked to be one its table may set, and set once,
  and each value its kind."""
  params = _parameters(family, env, agents)
  env_keys = list(env_params(family, env))
  allowed = {"env": env_keys, "agent": [k for k in params if k not in env_keys]}
  fixed, where = {}, {}
  for table, entries in tables.items():
    for key, value in entries.items():
      if key in where and not (table.startswith("grid[") and where[key].startswith("grid[")):
        raise ConfigError(f"config {table}.{key} is already set in [{where[key]}]; set it once")
      if key in RENAMED and key not in allowed.get(table, params) and RENAMED[key] in params:
        raise ConfigError(f"config {table}.{key}: the schedule's κ is now {RENAMED[key]}; {key} "
                          "is the environment's (Example 2's trap, env.kappa): rename it "
                          f"{RENAMED[key]}")
      _checks_key(f"{table} key", key, allowed.get(table, params))
      where.setdefault(key, table)
      if table.startswith("grid"):
        if key in DATASET:
          raise ConfigError(f"config {table}.{key}: the data set is read once per config, so "
                            f"{key} cannot be swept")
        if params[key].kind in (VECTOR, TABLE):
          raise ConfigError(f"config {table}.{key}: {key} is a {params[key].kind} and cannot be "
                            "swept")
        for i, v in enumerate(value):
          _check_kind(f"{table}.{key}[{i}]", v, params[key])
      else:
        fixed[key] = _check_kind(f"{table}.{key}", value, params[key])
  return fixed, where


def _check_instances(family: registry.Family, env: str, instances: int,
                     where: dict[str, str]) -> None:
  """A ConfigError unless environment `env` has an instance axis — it takes an integer `seed`
  — that the config does not set ([env] or [grid] seed)."""
  if "seed" not in family.envs[env].params:
    seeded = [e for e, entry in family.envs.items() if "seed" in entry.params]
    raise ConfigError(f"config instances = {instances}: environment {env!r} has no instance "
                      f"axis (it is not built from a seed); instances sweep an environment "
                      f"built from an integer seed: {seeded}")
  if "seed" in where:
    raise ConfigError(f"config {where['seed']}.seed: with instances = {instances}, instance i "
                      f"is the environment at seed = i (0..{instances - 1}); set instances or "
                      "seed, not both")


def _planned(config: Config, where: dict[str, str], seed_batch: int | None) -> Config:
  """`config` with its effective values and its sweep's plan (`rbx.core.sweep.plan`, of the
  grid points `_check_points` built; `seed_batch` None: the default)."""
  built = _check_points(config, where)
  family = registry.FAMILIES[config.family]
  config = config._replace(effective=_resolve_effective(config, family,
                                                        [env for env, _ in built]))
  return config._replace(plan=_wrap(lambda: sweep_lib.plan(
      config.build, config.grid, config.steps, static=config.static(), devices=config.devices,
      seed_batch=seed_batch, instances=config.instances, built=built,
      check=False)))                                        # traced when it runs


def _resolve_effective(config: Config, family: registry.Family, envs: list) -> dict[str, Any]:
  """`Config.effective` of a checked `config` whose grid points' environments are `envs` (in
  `Config.points` order, `_check_points`)."""
  points = config.points()
  swept = {f for p in points for f in p} | ({"seed"} if config.instances else set())
  env_entry, read = family.envs[config.env], "dataset" in config.fixed
  env_given = {k: v for k, v in config.fixed.items()
               if k in env_params(family, config.env) and not (read and k in DATA_FIELDS)}
  env = _effective(env_entry, env_given, env_given, swept)
  if read:                                   # the data set's options, not its arrays
    env.update({k: as_data(v) for k, v in DATASET_ENTRY.defaults().items() if k not in env})
  out = {"env": {"name": config.env, **env}, "agent": {}}
  for name in config._agents():
    i = next(i for i, p in enumerate(points) if p.get("agent", name) == name)
    values = {**config.fixed, **points[i]}
    entry = family.agents[name]
    prepared = family.prepare({k: values[k] for k in entry.params if k in values}, envs[i],
                              config.steps)
    given = {k: v for k, v in config.fixed.items() if k in entry.params}
    out["agent"][name] = _effective(entry, given, prepared, swept)
  return out


def _effective(entry: registry.Entry, given: dict[str, Any], prepared: dict[str, Any],
               swept: set[str]) -> dict[str, Any]:
  """`given` (the config's values of `entry`'s parameters) completed with what the family's
  `prepare` made of them where that is data (a table with every field), and with the
  constructor's defaults of what it did not set; grid fields (`swept`) left out."""
  out = {k: as_data(v) for k, v in given.items()}
  for k, v in prepared.items():
    if k in entry.params and k not in swept:
      try:
        out[k] = as_data(v)
      except TypeError:             # e.g. a schedule's function: the config's values say it
        pass
  for k, v in entry.defaults().items():
    if k not in out and k not in prepared and k not in swept:
      out[k] = as_data(v)
  return out


def as_data(value):
  """`value` as JSON data (a NamedTuple as a table); TypeError for what is not data."""
  if value is None or isinstance(value, (bool, int, float, str)):
    return value
  if isinstance(value, np.generic):
    return value.item()
  if hasattr(value, "_asdict"):
    return {k: as_data(v) for k, v in value._asdict().items()}
  if isinstance(value, dict):
    return {k: as_data(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [as_data(v) for v in value]
  if hasattr(value, "__array__"):
    return np.asarray(value).tolist()
  raise TypeError(f"{type(value).__name__} is not data")


def _check_points(config: Config, where: dict[str, str]) -> list:
  """Every grid point's (environment, agent), built concretely (no tracing), in
  `Config.points` order; a bad point's error names its key."""
  built = []
  for point in config.points():
    try:
      built.append(config.build(**point))
    except ValueError as e:
      msg = str(e)
      field = msg.split("=")[0].split(" ")[0]
      at = f" at grid point {point}" if point else ""
      loc = f" {where[field]}.{field}" if field in where else ""
      raise ConfigError(f"config{loc}{at}: {msg}") from e
    except (OSError, TypeError) as e:
      raise ConfigError(f"config [env] {config.env}: {e}") from e
  return built


def _parameters(family: registry.Family, env: str, agents: list[str]) -> dict[str, Param]:
  """Every parameter name the env and the agents take -> its declaration (the first one)."""
  params = {"agent": registry.string(family.agents.known()), **env_params(family, env)}
  for entry in (family.agents[a] for a in agents if a in family.agents):
    for k, p in entry.params.items():
      params.setdefault(k, p)
  return params


def env_params(family: registry.Family, env: str) -> dict[str, Param]:
  """The [env] keys of environment `env`: its declared parameters, and `DATASET`'s where it
  takes `DATA_FIELDS`."""
  params = family.envs[env].params
  return {**params, **DATASET} if all(f in params for f in DATA_FIELDS) else dict(params)


def _read_dataset(fixed: dict[str, Any], env: str) -> dict[str, Any]:
  """`fixed` with the `DATA_FIELDS` of the data set its `DATASET` keys name (`rbx.data.load`),
  for environment `env`; unchanged where it gives those arrays itself."""
  given = {k: fixed[k] for k in DATASET if k in fixed}
  arrays = [f for f in DATA_FIELDS if f in fixed]
  if "dataset" not in given:
    if arrays == list(DATA_FIELDS) and not given:
      return fixed
    raise ConfigError(f"config [env] {env} needs dataset = a data set name in the data directory"
                      f" or a CSV path (or both {' and '.join(DATA_FIELDS)} as lists)")
  if arrays:
    raise ConfigError(f"config [env] {arrays[0]}: set either dataset = ... or "
                      f"{' and '.join(DATA_FIELDS)}, not both")
  try:
    ds = data_lib.load(given.pop("dataset"), **given)
  except (OSError, ValueError) as e:
    raise ConfigError(f"config [env] {env}: {e}") from e
  return {**fixed, **{f: getattr(ds, f) for f in DATA_FIELDS}}


def _other_family(family: str, kind: str, where: str, name) -> None:
  """A ConfigError when `name` is not of `family`'s `kind` ("envs" or "agents") but of
  another family's: it says which, and what to change."""
  names = getattr(registry.FAMILIES[family], kind)
  other = (registry.elsewhere(kind, name, family) if isinstance(name, str) and name not in names
           else None)
  if other is not None:
    what, plural, rest = (("an environment", "environments", "its agents") if kind == "envs"
                          else ("an agent", "agents", "one of its environments"))
    raise ConfigError(f"config {where}: {name!r} is {what} of family {other!r}, not of the "
                      f"config's family {family!r}, whose {plural} are {list(names)}; to run "
                      f"{name!r}, set family = {other!r} (with {rest})")


def _unregistered(run: dict, agent: str):
  """A `_wrap` that adds to "is not one of" where an agent of one's own comes from."""
  def wrap(message: str) -> str:
    if run.get("import"):
      return (f"config {message}; the modules in import = {run['import']} do not register "
              f"{agent!r}")
    return (f"config {message}; an agent of one's own is registered by a module of yours: "
            "rbx run --import my_agents.py, or import = [\"my_agents.py\"] in the config "
            "(docs/concepts.md, \"Adding an agent\")")
  return wrap


def _checks_key(what: str, key: str, allowed) -> None:
  _wrap(lambda: _checks.choice(what, key, allowed))


def _wrap(check, prefix="config: "):
  """`check()`, its ValueError as a ConfigError: `prefix` + its message, or `prefix(message)`."""
  try:
    return check()
  except ValueError as e:
    raise ConfigError(prefix(str(e)) if callable(prefix) else f"{prefix}{e}") from e


def _check_run_value(key: str, value) -> None:
  if key == "seeds":
    return
  if key == "import":
    if not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
      raise ConfigError(f"config import must be a list of module names or .py files, got "
                        f"{value!r}")
    return
  kind = RUN_KEYS[key].kind
  _check_kind(key, value, kind)
  if kind == INT:
    low = 2 if key == "log_points" else 1
    if value < low:
      raise ConfigError(f"config {key} must be an integer >= {low}, got {value}")
  if key == "out" and not value:
    raise ConfigError("config out must be a non-empty path")


def _check_kind(key: str, value, kind: str | Param):
  param = kind if isinstance(kind, Param) else Param(kind)
  try:
    return param.check(key, value)
  except ValueError as e:
    raise ConfigError(f"config {e}") from e


def _need(run: dict, key: str):
  if key not in run:
    raise ConfigError(f"config needs {key} = ...")
  return run[key]


def _num_seeds(seeds) -> int:
  """The number of seeds of a valid `seeds` (`rbx._checks.num_seeds`)."""
  return _wrap(lambda: _checks.num_seeds(seeds), "config ")
