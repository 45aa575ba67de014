"""`rbx report DIR`: a Markdown summary of a run — what ran, where and how fast, R(T) per
grid point with its 95% CI, the regret exponents, and the plots (`rbx.core.plots`)."""
from __future__ import annotations

from pathlib import Path

from rbx.core import plots, registry
from rbx.core import results as results_lib

REPORT = "report.md"


def write(directory: str | Path) -> Path:
  """Writes `directory`/report.md (and the plots under `directory`/plots); returns its path."""
  directory = Path(directory)
  res = results_lib.load(directory)
  reference = reference_exponent(res)
  figures = plots.plot_all(res, directory / "plots", reference)
  path = directory / REPORT
  path.write_text(markdown(res, {k: v[0].relative_to(directory) for k, v in figures.items()},
                           reference))
  return path


def reference_exponent(res: results_lib.Results):
  """`point -> exponent | None` from the run's family (`Family.reference_exponent`)."""
  family = registry.FAMILIES.get((res.config or {}).get("family"))
  if family is None:
    return lambda point: None
  return lambda point: family.reference_exponent(res, point)


def markdown(res: results_lib.Results, figures: dict[str, Path], reference=None) -> str:
  """The report's text; `figures` maps plot names to PNG paths relative to the report;
  `reference(point)` is the family's predicted regret exponent (or None)."""
  reference = reference or (lambda point: None)
  meta, config = res.metadata or {}, res.config or {}
  sizes = meta.get("sizes", {})
  title = meta.get("title") or config.get("title") or "rbx sweep"
  lines = [f"# {title}", ""]
  env = dict(config.get("env", {}))
  lines += [
      f"- family `{config.get('family', '?')}`, environment `{env.pop('name', '?')}`"
      + (f" ({_args(env)})" if env else "")
      + (f", agent settings ({_args(config['agent'])})" if config.get("agent") else ""),
      f"- grid {_args(config.get('grid', {})) or '(none)'}; {res.cumulative.shape[-2]} seeds,"
      f" T = {int(res.coords['step'][-1])}, record `{sizes.get('record', '?')}`",
  ]
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
  lines += ["", "## Cumulative regret R(T)", "",
            "Mean, standard deviation and 95% confidence interval (Student t) over seeds.", ""]
  rows = res.summary()
  fields = list(res.grid_axes)
  lines += ["| " + " | ".join(fields + ["n", "mean", "std", "95% CI"]) + " |",
            "|" + "---|" * (len(fields) + 4)]
  for r in rows:
    lines.append("| " + " | ".join([str(r[f]) for f in fields] + [
        str(r["n"]), f"{r['mean']:.4g}", f"{r['std']:.3g}",
        f"[{r['ci_low']:.4g}, {r['ci_high']:.4g}]"]) + " |")
  if "cumulative" in figures:
    lines += ["", f"![cumulative regret]({figures['cumulative']})"]
  if "scaling" in figures:
    t = res.coords["step"]
    mean = res.cumulative.mean(axis=-2).reshape(-1, t.size)
    lines += ["", "## Regret against T", "",
              "Least-squares slope of log R(t) on log t over t ≥ √T, beside the exponent the "
              "family's paper predicts (RLHF: (β+1)/(β+2), Proposition 3).", "",
              "| " + " | ".join(fields + ["slope", "paper exponent"]) + " |",
              "|" + "---|" * (len(fields) + 2)]
    for i, point in enumerate(results_lib.points(res)):
      paper = reference(point)
      lines.append("| " + " | ".join([str(point[f]) for f in fields] + [
          f"{results_lib.scaling_slope(t, mean[i]):.3f}",
          "—" if paper is None else f"{paper:.3f}"]) + " |")
    lines += ["", f"![regret against T]({figures['scaling']})"]
  if "heatmap" in figures:
    lines += ["", "## R(T) over the grid", "", f"![heatmap]({figures['heatmap']})"]
  return "\n".join(lines) + "\n"


def _args(table: dict) -> str:
  return ", ".join(f"{k} = {v}" for k, v in table.items() if not isinstance(v, dict))

