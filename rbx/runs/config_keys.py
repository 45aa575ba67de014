"""The reference of every config key (`rbx keys`, docs/config_keys.md): the run keys
(`rbx.runs.config.RUN_KEYS`) and, per family, every environment's and agent's parameters with
their kind, default and meaning, read from the registries (`rbx.core.registry`), so the page
says what `rbx.runs.config.load` checks. Only what rbx itself registers is listed (one's own
agents: their `FAMILY.agent(...)` declarations).
"""
from __future__ import annotations

import inspect

import numpy as np

from rbx.runs import config as config_lib
from rbx.core import registry
from rbx.core.registry import BOOL, INT, REAL, STR, TABLE, VECTOR, Entry, Param

PAGE = "docs/config_keys.md"
_KINDS = {REAL: "real", INT: "integer", STR: "string", BOOL: "bool", VECTOR: "list of numbers",
          TABLE: "table", "seeds": "integer, list or string", "import": "list of strings"}

HEAD = f"""# Config keys

Every key of a sweep config (TOML, `rbx run`; docs/runs.md), generated from the registries
by `rbx keys` (`rbx.runs.config_keys.reference`): do not edit; regenerate with
`rbx keys > {PAGE}`. A parameter is set once, in [env], [agent] or [grid] (a list of
values, or several `[[grid]]` tables: per-agent grids), and goes to whichever of the
environment and the agents declare it. Real parameters are traced, so a grid over them runs
as one program; the other kinds (and reals marked static) compile one program per value. A
default "—" is derived or unused: the meaning says which. One's own agents take the keys of
their `FAMILY.agent(...)` declaration (docs/concepts.md).
"""


def reference() -> str:
  """The Markdown page: the run keys, then per family its environments and agents."""
  lines = [HEAD, "## Run keys (top level)", "", *_header()]
  for key, run_key in config_lib.RUN_KEYS.items():
    default = "required" if run_key.required else _default(run_key.default)
    lines.append(_row(key, _KINDS[run_key.kind], default, run_key.doc))
  for name, family in sorted(registry.FAMILIES.items()):
    envs, agents = _own(family.envs), _own(family.agents)
    lines += ["", f"## Family `{name}`", "", f"`family = \"{name}\"`. Environments ([env] "
              f"`name`): {_names(envs)}. Agents ([agent] `name`, or [grid] `agent = [...]`): "
              f"{_names(agents)}."]
    aliases = family.agents.aliases
    if aliases:
      lines += ["", "Other names (aliases): " + ", ".join(
          f"`{alias}` = `{name}`" for alias, name in aliases.items()) + "."]
    for what, table, entries in (("Environment", "env", envs), ("Agent", "agent", agents)):
      for entry in entries.values():
        params = (config_lib.env_params(family, entry.name) if table == "env"
                  else entry.params)
        defaults = {**config_lib.DATASET_ENTRY.defaults(), **entry.defaults()}
        lines += ["", f"### {what} `{entry.name}`", "", f"{_cell(entry.doc)} ([{table}] "
                  f"name = \"{entry.name}\")", ""]
        if not params:
          lines.append("No parameters.")
          continue
        lines += _header()
        lines += [_row(k, _kind(p), _default(defaults.get(k, inspect.Parameter.empty)), p.doc)
                  for k, p in params.items()]
  return "\n".join(lines) + "\n"


def _own(entries: dict[str, Entry]) -> dict[str, Entry]:
  """The entries rbx registers (not a user's module's)."""
  return {k: e for k, e in entries.items()
          if getattr(e.make, "func", e.make).__module__.split(".")[0] == "rbx"}   # or a partial


def _names(entries: dict[str, Entry]) -> str:
  return ", ".join(f"`{k}`" for k in entries)


def _header() -> list[str]:
  return ["| key | kind | default | meaning |", "|---|---|---|---|"]


def _row(key: str, kind: str, default: str, doc: str) -> str:
  return f"| `{key}` | {kind} | {default} | {_cell(doc) or '—'} |"


def _kind(p: Param) -> str:
  """"real in [0, 1]", "real in (0, 1]", "integer ≥ 1", "string: "a", "b"", "real ≥ 0,
  static"."""
  text = _KINDS[p.kind]
  if p.choices is not None:
    text += ": " + ", ".join(f'"{c}"' for c in p.choices)
  if p.low is not None and p.high is not None:
    text += f" in {p.range_text()}"
  elif p.low is not None:
    text += f" {'>' if p.open_low else '≥'} {p.low:g}"
  elif p.high is not None:
    text += f" ≤ {p.high:g}"
  if p.optional:
    text += " or unset"
  return text + (", static" if p.kind == REAL and p.static else "")


def _default(value) -> str:
  """`value` as TOML would write it; "—" for none (or one that is not data: a function)."""
  if value is inspect.Parameter.empty or value is None:
    return "—"
  try:
    return f"`{_toml(config_lib.as_data(value))}`"
  except TypeError:
    return "—"


def _toml(v) -> str:
  if isinstance(v, bool):
    return "true" if v else "false"
  if isinstance(v, str):
    return f'"{v}"'
  if isinstance(v, float):
    return repr(v) if np.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")
  if isinstance(v, dict):
    return "{" + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items() if x is not None) + "}"
  if isinstance(v, list):
    return "[" + ", ".join(_toml(x) for x in v) + "]"
  return str(v)


def _cell(text: str) -> str:
  """`text` on one line, safe in a Markdown table cell."""
  return " ".join(text.split()).replace("|", "\\|")
