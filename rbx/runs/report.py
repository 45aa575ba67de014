"""`rbx report DIR`: a Markdown summary of a run directory (`rbx.runs.experiment`) — what ran,
where and how fast, R(T) per grid point with its 95% CI (clipped at 0) and quantiles, the same
of each named metric recorded beside the regret (`metrics_section`), the regret exponents, and
the plots (`rbx.core.plots`). It sits beside `rbx.runs.experiment`, above
the shared machinery of `rbx.core` that it reads with.

An interrupted run, or one still running (no results yet, a checkpoint), is reported from its
newest checkpoint as far as it got (`load`, `partial`), labelled "partial: step t of T". The
report and plots go into the run directory, or `out` (for a read-only run directory).
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import tomllib
from pathlib import Path

import numpy as np

from rbx.core import plots, registry, stats
from rbx.core import results as results_lib
from rbx.core.grid import is_number
from rbx.core.record import Recorder
from rbx.runs import checkpoint, experiment, rundir, store
from rbx.runs import config as config_lib

REPORT = "report.md"


def write(directory: str | os.PathLike, out: str | os.PathLike | None = None,
          log: bool = False, band: str = "quantile", stuck: float | None = None,
          compare: list[str] = (), level: float = stats.LEVEL,
          power: float = stats.POWER, tune_seeds: int | None = None) -> Path:
  """Writes report.md and plots/ into `out` (default the run `directory`); returns its path.
  `log`: a log regret axis in the cumulative plot; `band`: its bands (`plots.cumulative`:
  "quantile", "ci" or "none"); `stuck`: its panel of the share of seeds whose per-step
  regret is still ≥ `stuck`; `compare`: labels whose paired differences the report ends
  with (`comparisons`, at `level` and `power`), checked before anything is written, after
  the split of each agent's advantage into sampling and bonus where the grid has it
  (`decomposition`) and, with `tune_seeds`, each agent at its α selected on those seeds
  (`tuned`)."""
  res = load(directory)
  section = (decomposition(res, level, power)
             + (tuned(res, tune_seeds, level, power) if tune_seeds is not None else [])
             + (comparisons(res, compare, level, power) if compare else []))
  target = writable(directory if out is None else out, suggest_out=out is None)
  reference = reference_exponent(res)
  figures = plots.plot_all(res, target / "plots", reference, log, band, stuck)
  path = target / REPORT
  path.write_text(markdown(res, {k: v[0].relative_to(target) for k, v in figures.items()},
                           reference, directory) + "".join(line + "\n" for line in section))
  return path


COMPARISONS = "Paired comparisons"


def comparisons(res: results_lib.Results, labels: list[str], level: float = stats.LEVEL,
                power: float = stats.POWER) -> list[str]:
  """The lines of the report's section `COMPARISONS`: R(T) under label i minus under label j,
  for every i < j of `labels` (each "field=value[,field=value…]", grid coordinates as in
  `Results.sel`, e.g. "agent=xpo", "agent=xpo,alpha=0"), paired over the run's seeds (over
  instances: over the instances' means over their seeds), at every grid point the labels leave
  (the same for each): `rbx.core.stats.paired` at `level`, Holm over all of them, the
  detectable difference at `power`.

  Raises:
    ValueError: fewer than 2 labels, a label that is not field=value, an unknown field or
      value (naming it), labels that leave different grid points, a level or power outside
      (0, 1), or a comparison with fewer than 2 seeds run.
  """
  if len(labels) < 2:
    raise ValueError(f"--compare needs at least 2 labels, got {list(labels)}")
  stats.check_unit("level", level)
  stats.check_unit("power", power)
  subs = {label: _labelled(res, label) for label in labels}
  first, *others = labels
  for label in others:
    a, b = subs[first], subs[label]
    if a.axes != b.axes or any(list(a.coords[x]) != list(b.coords[x]) for x in a.grid_axes):
      raise ValueError(f"--compare {first} leaves the grid points {results_lib.points(a)}, "
                       f"{label} leaves {results_lib.points(b)}: name the same fields in "
                       "every label")
  where = results_lib.points(subs[first])
  family = {}
  for i, a in enumerate(labels):
    for b in labels[i + 1:]:
      xa, xb = (_samples(subs[x], res.instances) for x in (a, b))
      for k, point in enumerate(where):
        try:
          family[a, b, k] = stats.paired(xa[k], xb[k], level)
        except ValueError as e:
          raise ValueError(f"--compare {a} − {b} at {point or 'the run'}: {e}") from e
  family = stats.holm(family, power)
  fields = list(subs[first].fields)
  over = ("the instances (each instance's mean over its seeds; n: instances)" if res.instances
          else "seeds (seed s draws the same prompts and keys under both)")
  lines = ["", f"## {COMPARISONS}", "",
           f"R(T) of the first label minus the second's, paired over {over}: the mean "
           f"difference, its {level:.0%} Student-t interval, the paired t-test's two-sided p, "
           f"Holm's adjusted p over these {len(family)} comparisons (bold: below "
           f"{1 - level:.2g}) and, where not separated, the smallest |difference| a paired "
           f"t-test at {1 - level:.2g}/{len(family)} detects with {power:.0%} power at the "
           "observed spread (`rbx.core.stats`).", "",
           "| comparison | " + " | ".join(fields + ["n", "difference", f"{level:.0%} CI", "p",
                                                    "Holm p", "detectable"]) + " |",
           "|---|" + "---|" * (len(fields) + 6)]
  cs = list(family.values())
  like = [v for c in cs for v in (c.mean, c.low, c.high)]
  text = {k: iter(results_lib.column([getattr(c, k) for c in cs], like=like))
          for k in ("mean", "low", "high", "detectable")}
  for (a, b, k), c in family.items():
    v = {name: next(t) for name, t in text.items()}
    bold = "**" if c.separated else ""
    lines.append("| " + " | ".join(
        [f"{a} − {b}"] + [results_lib.cell(where[k][f]) for f in fields]
        + [str(c.n), f"{bold}{v['mean']}{bold}", f"[{v['low']}, {v['high']}]", f"{c.p:.2g}",
           f"{c.p_holm:.2g}", "" if c.separated else v["detectable"]]) + " |")
  return lines


DECOMPOSITION = "Sampling and bonus"
EFFECTS = ("scheme − control", "sampling: α = 0 − control", "bonus: scheme − α = 0")
TUNED = "α tuned on held-out seeds"


def _agents_at_alpha(res: results_lib.Results, samples: np.ndarray):
  """(family, grid points, the fields beside agent and alpha, {(registered agent, α, other
  fields' cells): grid point index}) of a run with "agent" and "alpha" in its grid whose
  family is known, over the points whose `samples` (points, n) are finite; None otherwise."""
  family = registry.FAMILIES.get((res.config or {}).get("family"))
  if family is None or not {"agent", "alpha"} <= set(res.fields):
    return None
  where = results_lib.points(res)
  rest = [f for f in res.fields if f not in ("agent", "alpha")]
  at = {}
  for i, p in enumerate(where):
    if (p["agent"] is not None and is_number(p["alpha"]) and np.isfinite(p["alpha"])
        and np.isfinite(samples[i]).all()):
      other = tuple(results_lib.cell(p[f]) for f in rest)
      at.setdefault((family.agents.resolve(p["agent"]), float(p["alpha"]), other), i)
  return family, where, rest, at


def _paired_family(pairs: dict, level: float, power: float, section: str, where) -> dict:
  """{key: `stats.Comparison`} of `pairs` {key: (grid point i, a samples, b samples)}, Holm over
  them all; a ValueError naming the section and the grid point otherwise."""
  family = {}
  for key, (i, a, b) in pairs.items():
    try:
      family[key] = stats.paired(a, b, level)
    except ValueError as e:
      raise ValueError(f"{section} at {where[i]}: {e}") from e
  return stats.holm(family, power)


def _intervals(family: dict) -> dict:
  """{key: "mean [low, high]"} of comparisons in one number format, bold where separated."""
  text = iter(results_lib.column([v for c in family.values() for v in (c.mean, c.low, c.high)]))
  shown = {}
  for key, c in family.items():
    mean, low, high = next(text), next(text), next(text)
    bold = "**" if c.separated else ""
    shown[key] = f"{bold}{mean}{bold} [{low}, {high}]"
  return shown


def decomposition(res: results_lib.Results, level: float = stats.LEVEL,
                  power: float = stats.POWER) -> list[str]:
  """The lines of the report's section `DECOMPOSITION` ([] where the grid has no such cells):
  for every grid point of an agent at α ≠ 0 whose family names a control (`Family.control`:
  RLHF's greedy agent of its policy class) and whose grid also holds the agent at α = 0 and
  the control (at the same other fields), R(T) of

    scheme − control = (α = 0 − control) + (scheme − α = 0)
                     =  sampling effect  +  bonus effect,

  each paired over the run's seeds (over instances: the instances' means) with its
  `level` Student-t interval, Holm over all of them (`rbx.core.stats`). At α = 0 the agent
  draws its answers by its scheme's rule (XPO's a2 from π_ref, Algorithm 1's from the
  previous policy, …) with the same keys, and fits without the bonus: what sampling alone
  does. The control explores nowhere and ignores α."""
  samples = _samples(res, res.instances)
  found = _agents_at_alpha(res, samples)
  if found is None:
    return []
  family, where, rest, at = found
  cells = {}
  for (agent, alpha, other), i in at.items():
    zero = at.get((agent, 0.0, other))
    controls = [j for (a, _, o), j in at.items() if a == family.control(agent) and o == other]
    if alpha != 0.0 and zero is not None and controls:
      cells[i] = (controls[0], zero)
  if not cells:
    return []
  rows = {i: dict(zip(EFFECTS, ((i, c), (zero, c), (i, zero)))) for i, (c, zero) in cells.items()}
  pairs = {(a, b): (i, samples[a], samples[b])   # a sampling effect serves every α's row
           for i, row in rows.items() for a, b in row.values()}
  compared = _paired_family(pairs, level, power, DECOMPOSITION, where)
  shown = _intervals(compared)
  over = ("the instances (each instance's mean over its seeds)" if res.instances
          else "seeds (seed s draws the same prompts and keys under each)")
  lines = ["", f"## {DECOMPOSITION}", "",
           "Where an agent's advantage over its control (the agent of its class that explores "
           "nowhere) comes from: R(T) of the agent at its α minus the control's = the sampling "
           "effect (the agent at α = 0 — its scheme's draws of the answers, no bonus — minus "
           "the control) + the bonus effect (the agent at its α minus at α = 0). Each is the "
           f"mean paired difference over {over} with its {level:.0%} Student-t interval; bold: "
           f"Holm-adjusted p below {1 - level:.2g} over these {len(compared)} distinct "
           "differences (`rbx.core.stats`).", "",
           "| " + " | ".join(["agent", "alpha", *rest, "control", "n", *EFFECTS]) + " |",
           "|" + "---|" * (len(rest) + 4 + len(EFFECTS))]
  for i, row in rows.items():
    lines.append("| " + " | ".join(
        [results_lib.cell(where[i][f]) for f in ("agent", "alpha", *rest)]
        + [results_lib.cell(where[cells[i][0]]["agent"]), str(compared[row[EFFECTS[0]]].n),
           *(shown[key] for key in row.values())]) + " |")
  return lines


def tuned(res: results_lib.Results, tune_seeds: int, level: float = stats.LEVEL,
          power: float = stats.POWER) -> list[str]:
  """The lines of the report's section `TUNED`: each agent's α selected on the run's first
  `tune_seeds` seeds (the least mean R(T) over the grid's α's, α = 0 included) and reported on
  the others only, so the selection never sees the seeds it is judged on: its R(T) there with
  a `level` Student-t interval and, where the family names a control (`Family.control`), R(T)
  minus the control's, paired over the held-out seeds, Holm over the agents (over instances:
  the first `tune_seeds` seeds of every instance select, each instance's mean over its other
  seeds is a sample).

  Raises:
    ValueError: a run without "agent" and "alpha" in its grid, or `tune_seeds` not leaving at
      least 2 seeds on each side (naming the run's seeds).
  """
  final = res.final()
  S = final.shape[-1]
  if not 2 <= tune_seeds <= S - 2:
    raise ValueError(f"--tune-seeds must leave at least 2 seeds on each side of the run's {S}, "
                     f"got {tune_seeds}")
  split = [final[..., :tune_seeds], final[..., tune_seeds:]]
  if res.instances:
    split = [part.mean(axis=-1) for part in split]
  selecting, held_out = (part.reshape(-1, part.shape[-1]) for part in split)
  found = _agents_at_alpha(res, held_out)
  if found is None:
    raise ValueError("--tune-seeds selects α per agent: the run's grid needs the fields agent "
                     f"and alpha, it has {list(res.fields)}")
  family, where, rest, at = found
  groups = {}
  for (agent, alpha, other), i in at.items():
    groups.setdefault((agent, other), []).append(i)
  best = {key: min(points, key=lambda i: selecting[i].mean()) for key, points in groups.items()
          if len(points) >= 2}
  controls = {key: next((j for (a, _, o), j in at.items()
                         if a == family.control(key[0]) and o == key[1]), None) for key in best}
  pairs = {key: (i, held_out[i], held_out[controls[key]])
           for key, i in best.items() if controls[key] is not None}
  compared = _paired_family(pairs, level, power, TUNED, where)
  shown = _intervals(compared)
  n = held_out.shape[-1]
  t = stats.t_quantile((1 + level) / 2, n - 1)
  text = iter(results_lib.column([v for i in best.values() for v in (
      float(held_out[i].mean()), float(t * held_out[i].std(ddof=1) / np.sqrt(n)))]))
  lines = ["", f"## {TUNED}", "",
           f"Each agent's α selected on the first {tune_seeds} seeds (the least mean R(T) over "
           f"the grid's α's) and reported on the other {S - tune_seeds} only: R(T) there with its "
           f"{level:.0%} Student-t interval (± its half-width) and, beside its control, R(T) − "
           "the control's paired over the held-out seeds, bold where Holm's adjusted p is below "
           f"{1 - level:.2g} over these {len(compared)} comparisons.", "",
           "| " + " | ".join(["agent", *rest, "selected alpha", "n", "R(T)", "control",
                              "− control"]) + " |", "|" + "---|" * (len(rest) + 6)]
  for key, i in best.items():
    mean, half = next(text), next(text)
    c = controls[key]
    lines.append("| " + " | ".join(
        [results_lib.cell(where[i][f]) for f in ("agent", *rest, "alpha")]
        + [str(n), f"{mean} ± {half}",
           "" if c is None else results_lib.cell(where[c]["agent"]), shown.get(key, "")])
        + " |")
  return lines


def _labelled(res: results_lib.Results, label: str) -> results_lib.Results:
  """`res.sel` at the label "field=value[,field=value…]" (a value as its axis writes it)."""
  where = {}
  for part in label.split(","):
    field, sep, text = (s.strip() for s in part.partition("="))
    if not sep or not field or field in (results_lib.INSTANCE, "seed", "step"):
      raise ValueError(f"--compare takes labels field=value[,field=value…] of grid fields, "
                       f"got {label!r}")
    columns = res.run_columns()
    values = (res.coords[field].tolist() if field in res.axes else columns.get(field, []))
    match = [v for v in values if text in (str(v), results_lib.cell(v))
             or (is_number(v) and _number(text) == v)]
    where[field] = match[0] if match else text
  try:
    return res.sel(**where)
  except ValueError as e:
    raise ValueError(f"--compare {label}: {e}") from e


def _samples(res: results_lib.Results, instances: int | None) -> np.ndarray:
  """R(T) per grid point and sample, (points, n): the seeds, or the instances' means."""
  final = res.final()
  if instances:
    final = final.mean(axis=-1)
  return final.reshape(-1, final.shape[-1])


def _number(text: str) -> float | None:
  try:
    return float(text)
  except ValueError:
    return None


def load(directory: str | os.PathLike) -> results_lib.Results:
  """The run's results: the finished run's (`rbx.runs.store.load`), or an interrupted or
  running run's so far, from its newest good checkpoint (`partial`).

  Raises:
    FileNotFoundError: no results and nothing to report, saying why (`rundir.describe`:
      failed, killed, still running, interrupted before its first checkpoint, no run).
    checkpoint.CheckpointError: the checkpoints are corrupt or from another config.
  """
  directory = Path(directory)
  if (directory / store.INDEX).is_file():
    return store.load(directory)
  path = experiment.checkpoint_path(directory)
  meta_path = directory / store.METADATA
  status = store.read_json(meta_path).get("status") if meta_path.is_file() else None
  if (status not in (rundir.INTERRUPTED, rundir.RUNNING)
      or not (path.exists() or checkpoint.previous(path).exists())):
    raise FileNotFoundError(rundir.describe(directory))
  text = (directory / store.CONFIG).read_text()
  config = config_lib.loads(text, out=str(directory))
  arrays, meta, _ = checkpoint.load_latest(path)
  if meta["digest"] != config.digest():
    raise checkpoint.CheckpointError(f"{path} was written by a different config than "
                                     f"{directory / store.CONFIG}")
  grid, instances = config.plan.sweep.grid, config.plan.sweep.instances
  rows = grid.num_points * (1 if instances is None else instances.size)
  recorder = Recorder(config.record, config.steps,
                      (len(grid.combos()), rows, config.seeds.size), config.log_points)
  recorder.restore({k[len("records."):]: v for k, v in arrays.items()
                    if k.startswith("records.")})         # the regret's and the metrics
  reached = int(meta["t"]) or config.steps  # the bar's t; 0: the units before are done
  return partial(results_lib.from_records(
      grid, config.seeds, recorder, recorder.data, instances, complete=False,
      timing=meta["stats"],
      config=tomllib.loads(text),
      metadata={**store.read_json(meta_path), plots.REACHED: reached},
      runs=config.plan.runs))


def partial(res: results_lib.Results) -> results_lib.Results:
  """An interrupted run's `res` (NaN where not run) cut to the recorded steps that every
  started run has reached and to the seeds that every started grid point has run; grid
  points not started stay NaN (`plots.partial_label` says how many ran).

  Raises:
    ValueError: nothing recorded yet.
  """
  field = "regret" if res.regret is not None else "recorded"
  data = getattr(res, field)
  reach = np.isfinite(data).sum(axis=-1).reshape(-1, data.shape[-2])   # runs fill from t = 1
  started = reach.any(axis=-1)
  if not started.any():
    summary = field == "recorded" and res.coords["step"].size == 1
    raise ValueError("the run has recorded nothing yet" + (
        " (record = \"summary\" keeps R(T) only, once a grid point finishes)" if summary else ""))
  seeds = (reach[started] > 0).all(axis=0)
  k = int(reach[started][:, seeds].min())
  coords = {**res.coords, "seed": res.coords["seed"][seeds], "step": res.coords["step"][:k]}
  metrics = {name: v[..., seeds, :k] for name, v in (res.metrics or {}).items()} or None
  return dataclasses.replace(res, coords=coords, complete=False,
                             **{field: data[..., seeds, :k]}, metrics=metrics)


def writable(directory: str | os.PathLike, suggest_out: bool = True) -> Path:
  """`directory`, made if need be, once a file can be written where it is (or would be)
  made; else an OSError that says so (and, with `suggest_out`, to use --out)."""
  directory = Path(directory)
  try:
    existing = next(p for p in (directory, *directory.parents) if p.is_dir())
    tempfile.TemporaryFile(dir=existing).close()
    directory.mkdir(parents=True, exist_ok=True)
  except OSError as e:
    raise OSError(f"cannot write to {directory} ({e.strerror or e})"
                  + ("; write elsewhere with --out DIR" if suggest_out else "")) from e
  return directory


def reference_exponent(res: results_lib.Results):
  """`point -> exponent | None` from the run's family (`Family.reference_exponent`)."""
  family = registry.FAMILIES.get((res.config or {}).get("family"))
  if family is None:
    return lambda point: None
  return lambda point: family.reference_exponent(res, point)


def markdown(res: results_lib.Results, figures: dict[str, Path], reference=None,
             directory: str | os.PathLike | None = None) -> str:
  """The report's text; `figures` maps plot names to PNG paths relative to the report;
  `reference(point)` is the family's predicted regret exponent (or None); `directory` is the
  run's, for the command that continues a partial run."""
  reference = reference or (lambda point: None)
  meta, config = res.metadata or {}, res.config or {}
  sizes = meta.get("sizes", {})
  title = meta.get("title") or config.get("title") or "rbx sweep"
  partial_text = plots.partial_label(res)
  lines = [f"# {title}" + (f" ({partial_text})" if partial_text else ""), ""]
  if partial_text:
    going = meta.get("status") == rundir.RUNNING
    lines += [f"**Partial results** ({partial_text}): the run "
              + ("is still running" if going else "stopped before the end") + "; below are "
              "its newest checkpoint's records up to that step (grid points not started: "
              "\"not run yet\")." + ("" if going else " Continue it with `rbx run --resume "
                                         f"{directory or 'DIR'}`."),
              ""]
  env = dict(config.get("env", {}))
  lines += [
      f"- family `{config.get('family', '?')}`, environment `{env.pop('name', '?')}`"
      + (f" ({_args(env)})" if env else "")
      + (f", agent settings ({_args(config['agent'])})" if config.get("agent") else ""),
      f"- grid {_grid_args(config.get('grid', {}))}; "
      + (f"{res.instances} instances (the environment at seed = 0..{res.instances - 1}) × "
         if res.instances else "") + f"{res.cumulative.shape[-2]} seeds,"
      f" T = {config.get('steps') or int(res.coords['step'][-1])}, record "
      f"`{sizes.get('record', '?')}`",
  ]
  if meta.get("effective"):
    lines.append("- every parameter as run (the config's values, else the constructors' defaults): "
                 + _effective(meta["effective"], config))
  if meta:
    v = meta.get("versions", {})
    lines += [
        f"- status **{meta.get('status')}**, started {meta.get('started')}, finished "
        f"{meta.get('finished')}, wall {meta.get('wall_seconds', 0):.1f}s over "
        f"{len(meta.get('segments', []))} segment(s)",
        f"- {meta.get('seed_steps', 0):,} seed-steps in {meta.get('run_seconds', 0):.1f}s: "
        f"**{meta.get('seed_steps_per_second', 0):,.0f} seed-steps/s**; compile "
        f"{meta.get('compile_seconds', 0):.1f}s",
        f"- {meta.get('backend')} · {meta.get('local_devices_used')} device(s) used of "
        f"{len(meta.get('devices', []))} · {meta.get('processes')} process(es) · rbx "
        f"{v.get('rbx')}, jax {v.get('jax')}, jaxlib {v.get('jaxlib')}",
    ]
  t_end = int(res.coords["step"][-1])
  lines += ["", f"## Cumulative regret R({'T' if res.complete else t_end})", "",
            ("Over instances and seeds: the mean over both, the two spreads — std between "
             "seeds within an instance (pooled) and std between instances (of each instance's "
             "mean over its seeds), ddof = 1 — and the 95% confidence interval of the mean "
             "over instances (Student t over the instances' means" if res.instances else
             "Over seeds: the mean, the standard deviation (ddof = 1) and the 95% confidence "
             "interval of the mean (Student t") + ", its lower end clipped at 0 since regret is "
            "non-negative, like the plots' CI bands); the median and the 10% and 90% quantiles"
            + (" over every run" if res.instances else "")
            + ", which show seeds that split into stuck and escaped.", ""]
  lines += summary_table(res)
  fields = list(res.fields)
  if "cumulative" in figures:
    lines += ["", f"![cumulative regret]({figures['cumulative']})"]
  lines += metrics_section(res)
  if "scaling" in figures:
    t = res.coords["step"]
    mean = res.instance_means().cumulative.mean(axis=-2).reshape(-1, t.size)
    points = [(i, p, reference(p)) for i, p in enumerate(results_lib.points(res))
              if np.isfinite(mean[i]).all()]
    papers = any(paper is not None for _, _, paper in points)
    lines += ["", "## Regret against T", "",
              "Least-squares slope of log R(t) on log t over t ≥ √T"
              + (", beside the exponent the family's paper proves for the run's schedule "
                 "(RLHF: (β+1)/(β+2) for the α_t of Proposition 3)." if papers else "."), "",
              "| " + " | ".join(fields + ["slope"] + ["paper exponent"] * papers) + " |",
              "|" + "---|" * (len(fields) + 1 + papers)]
    for i, point, paper in points:
      lines.append("| " + " | ".join(
          [results_lib.cell(point[f]) for f in fields] + [f"{results_lib.scaling_slope(t, mean[i]):.3f}"]
          + (["—" if paper is None else f"{paper:.3f}"] if papers else [])) + " |")
    lines += ["", f"![regret against T]({figures['scaling']})"]
  if "heatmap" in figures:
    lines += ["", "## R(T) over the grid", "", f"![heatmap]({figures['heatmap']})"]
  return "\n".join(lines) + "\n"


METRICS = "Recorded metrics"


def metrics_section(res: results_lib.Results) -> list[str]:
  """The lines of the report's section `METRICS` (none when the run recorded no named
  metrics): for each per-step metric m_t that the environment records beside the regret
  (`Results.metric`, e.g. the RLHF environments' weak and strong dueling regrets), its
  cumulative value M(T) = Σ_{t ≤ T} m_t per grid point, with R(T)'s statistics
  (`summary_table`)."""
  if not res.metric_names:
    return []
  t_end = "T" if res.complete else str(int(res.coords["step"][-1]))
  lines = ["", f"## {METRICS} at {t_end}", "",
           f"Each named per-step metric m_t recorded beside the regret, summed to M({t_end}) = "
           f"Σ_{{t ≤ {t_end}}} m_t, with the same statistics as R({t_end}) above"
           + (" (weak_regret, strong_regret: the classic dueling regrets against the "
              "Condorcet winner, docs/algorithms.md)"
              if {"weak_regret", "strong_regret"} <= set(res.metric_names) else "") + "."]
  for name in res.metric_names:
    lines += ["", f"### {name}", "", *summary_table(res.metric(name))]
  return lines


def summary_table(res: results_lib.Results) -> list[str]:
  """The final cumulative value per grid point — R(T), or M(T) of the metric of
  `res.metric(name)` — as the lines of a Markdown table (`Results.summary`): n, mean, std,
  95% CI, median and 10–90% quantiles, all in one number format (`results.column`: the
  decimals that give the largest 4 significant digits)."""
  rows = res.summary()
  fields = list(res.fields)
  between = ["std_instance"] if res.instances else []     # over instances: both spreads
  keys = ("mean", "std", *between, "ci_low", "ci_high", "median", "q10", "q90")
  ran = [r for r in rows if np.isfinite(r["mean"])]
  like = [r[k] for r in ran for k in keys]
  text = {k: iter(results_lib.column([r[k] for r in ran], like=like)) for k in keys}
  counts = ["instances", "n"] if res.instances else ["n"]
  spreads = ["std (seeds)", "std (instances)"] if res.instances else ["std"]
  lines = ["| " + " | ".join(fields + counts + ["mean", *spreads, "95% CI", "median", "10–90%"])
           + " |", "|" + "---|" * (len(fields) + len(counts) + len(spreads) + 4)]
  for r in rows:
    if np.isfinite(r["mean"]):
      v = {k: next(text[k]) for k in keys}
      cells = [v["mean"], *(v[k] for k in ("std", *between)),
               f"[{v['ci_low']}, {v['ci_high']}]", v["median"], f"[{v['q10']}, {v['q90']}]"]
    else:
      cells = ["not run yet"] + [""] * (len(spreads) + 3)
    lines.append("| " + " | ".join([results_lib.cell(r[f]) for f in fields]
                                   + [str(r[k]) for k in counts] + cells) + " |")
  return lines


def _effective(effective: dict, config: dict) -> str:
  """`rbx.runs.config.Config.effective` (metadata.json's) table as "env (p = 0.0, ...); every
  agent (solver = (...)); algorithm1 (...); vpo": what several agents share with the same
  value (the solver's settings) is listed once, under "every agent". A value that the config
  sets in [env] only is the environment's: it is listed there, not under agents with a
  parameter of that name. A None — a
  default derived from another value, as learner_r_max = r_max — is left out."""
  env = {k: v for k, v in effective.get("env", {}).items() if k != "name" and v is not None}
  env_only = set(config.get("env", {})) - set(config.get("agent", {}))
  agents = {name: {k: v for k, v in params.items() if k not in env_only}
            for name, params in effective.get("agent", {}).items()}
  first, *others = list(agents.values()) or [{}]
  shared = {k: v for k, v in first.items()
            if others and all(k in p and p[k] == v for p in others)}
  own = {name: {k: v for k, v in params.items() if k not in shared}
         for name, params in agents.items()}
  return "; ".join([f"env ({_values(env)})"]
                   + ([f"every agent ({_values(shared)})"] if shared else [])
                   + [f"{name} ({_values(params)})" if params else name
                      for name, params in own.items()])


def _values(table: dict) -> str:
  return ", ".join(f"{k} = ({_values(v)})" if isinstance(v, dict) else f"{k} = {v}"
                   for k, v in table.items())


def _grid_args(grid: dict | list) -> str:
  """[grid] as "beta = [0.1, 0.5]", or each [[grid]] in parentheses; "(none)" when empty."""
  if isinstance(grid, list):
    return "; ".join(f"({_args(g)})" for g in grid)
  return _args(grid) or "(none)"


def _args(table: dict) -> str:
  return ", ".join(f"{k} = {v}" for k, v in table.items() if not isinstance(v, dict))

