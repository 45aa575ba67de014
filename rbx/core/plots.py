"""Plots of a sweep's results (matplotlib, no pyplot state). Every plot function returns its
`Figure` and, given a `path`, also saves it (`save`: "out/fig" as out/fig.png and .svg,
"fig.pdf" as that file only). A guide with examples: docs/plots.md.

Results over instances (an "instance" axis) are drawn over instances: each instance's mean
over its seeds is one sample (`Results.instance_means`), so a band is the 95% CI or the
quantiles over instances, as `rbx report`'s CI is.

* `cumulative`: R(t) against t per grid point, a colour per agent and a line style per value
  of the other grid fields. `band="quantile"` (the default): the median with the 10–90% range
  over seeds (`quantiles`), which shows runs that split into stuck and escaped seeds as they
  are (a mean and its CI between two such groups describe neither); `band="ci"`: the mean over
  seeds with its 95% CI (Student t, clipped at 0 as regret is non-negative; none with fewer
  than `MIN_SEEDS_FOR_CI` seeds); `band="none"`: the mean alone. `stuck=threshold` adds a panel below with the fraction of
  seeds whose regret at step t is still ≥ threshold (`Results.stuck_fraction`); `log`: a
  logarithmic regret axis.
* `scaling`: log–log mean R(t) against t with the slope fitted over t ≥ √T per grid point,
  and, dashed, the exponent the family's paper proves for it (`Family.reference_exponent`,
  e.g. the RLHF paper's (β+1)/(β+2) for Proposition 3's α_t), stated once.
* `heatmap`: mean R(T) over two grid axes, one panel per value of the other axes.
* `plot_all`: every plot that a result supports, into a directory (`rbx plot`, `rbx report`).

Titles carry the config's title, its fixed environment and agent parameters ("κ = 500,
β = 0.1, r_max = 7, α = 3"; an agent parameter that only some agents take names them: "α = 3
(Algorithm 1)" beside greedy), the number of seeds and, for an interrupted run, how far it got
("partial: step t of T"), on lines no wider than the axes; legends read "Algorithm 1, β =
0.5" (per-agent grids: "Algorithm 1", "VPO, α = 5"). Bands are light and edged by thin lines
in their line's style, so overlapping bands stay apart. `band` and `label` draw and
name the same way on any matplotlib axes (the notebooks use them).
"""
from __future__ import annotations

import itertools
import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rbx import _checks
from rbx.core import registry
from rbx.core import results as results_lib
from rbx.core.grid import is_number

REACHED = "reached_step"    # an interrupted run's metadata: the step its run got to (`rbx.runs.report`)
MAX_LINES = 24
MAX_PANELS = 6
TITLE_WIDTH = 60                # characters on a title line (what a 7-inch figure's axes span)
MAX_TICKS = 12                  # heatmap tick labels per axis, thinned beyond
MIN_SEEDS_FOR_CI = 3
MAX_MARKERS = 60
LINESTYLES = ("-", "--", ":", "-.")
BANDS = ("ci", "quantile", "none")
NAMES = {   # agent names as the papers write them
    "algorithm1": "Algorithm 1", "vpo": "VPO", "xpo": "XPO", "selm": "SELM", "greedy": "greedy",
    "rbmle_ga": "NeuralRBMLE-GA", "rbmle_pc": "NeuralRBMLE-PC", "neural_ucb": "NeuralUCB",
    "neural_ts": "NeuralTS", "deep_fpl": "DeepFPL", "bootstrapped_nn": "BootstrappedNN",
    "lin_rbmle": "LinRBMLE", "lin_ucb": "LinUCB"}
SYMBOLS = {"alpha": "α", "beta": "β", "kappa": "κ", "schedule_kappa": "κ", "nu": "ν", "mu": "μ",
           "eta": "η", "lam": "λ", "eps": "ε", "epsilon": "ε", "rho": "ρ"}


def plot_all(res: results_lib.Results, directory: str | os.PathLike,
             reference: Callable[[dict], float | None] | None = None, log: bool = False,
             band: str = "quantile", stuck: float | None = None) -> dict[str, list[Path]]:
  """Every plot that `res` supports, saved into `directory` as PNG and SVG; name -> [png,
  svg]. `reference(point)` is the predicted regret exponent at a grid point, or None; `log`,
  `band` and `stuck` as in `cumulative`."""
  directory = Path(directory)
  out = {"cumulative": save(cumulative(res, log=log, band=band, stuck=stuck),
                            directory / "cumulative")}
  if res.coords["step"].size >= 3:
    out["scaling"] = save(scaling(res, reference=reference), directory / "scaling")
  if len(_heatmap_axes(res)) == 2:
    out["heatmap"] = save(heatmap(res), directory / "heatmap")
  return out


def save(fig: Figure, path: str | os.PathLike) -> list[Path]:
  """Saves `fig` at `path` — with a format's suffix (.png, .svg, .pdf, …) as that file, else
  as `path`.png and `path`.svg — making its directory; returns the files written."""
  path = Path(path)
  formats = fig.canvas.get_supported_filetypes()
  paths = ([path] if path.suffix[1:].lower() in formats else
           [path.with_name(path.name + ".png"), path.with_name(path.name + ".svg")])
  path.parent.mkdir(parents=True, exist_ok=True)
  for p in paths:
    fig.savefig(p, dpi=150, bbox_inches="tight")
  return paths


def cumulative(res: results_lib.Results, path: str | os.PathLike | None = None,
               log: bool = False, band: str = "quantile",
               quantiles: tuple[float, float] = results_lib.QUANTILES,
               stuck: float | None = None) -> Figure:
  """R(t) against t, one line per grid point (see the module docstring for `band`,
  `quantiles`, `stuck` and `log`); saved at `path` when given (`save`).

  Raises:
    ValueError: an unknown `band`; `stuck` for a run that did not record every step.
  """
  _checks.choice("band", band, BANDS)
  t = res.coords["step"]
  fig = Figure(figsize=(7, 4.5 if stuck is None else 6.3))
  if stuck is None:
    ax = fig.subplots()
  else:
    fractions = res.stuck_fraction(stuck).reshape(-1, t.size)
    ax, low = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1.3))
  res = res.instance_means()
  values = res.cumulative.reshape(-1, *res.cumulative.shape[-2:])
  drawn = _drawn(res, values)
  looks, handles = _looks([point for _, point in drawn])
  opacity = 0.15 if len({look["color"] for look in looks}) == len(looks) <= 4 else 0.08
  for (i, point), look in zip(drawn, looks):
    _draw_band(ax, t, values[i], None if handles else label(point) or None, opacity, band,
               quantiles, **look)
  ax.set(ylabel="cumulative regret R(t)", yscale="log" if log else "linear",
         title=title(res, "cumulative regret, " + _spread(res, band, quantiles)))
  if not log:
    ax.set_ylim(bottom=0)
  if handles or res.grid_axes:
    ax.legend(handles=handles, fontsize="small")
  if stuck is None:
    ax.set_xlabel("t")
  else:
    for (i, _), look in zip(drawn, looks):
      low.plot(t, fractions[i], **look)
    low.set(xlabel="t", ylim=(-0.03, 1.03), ylabel=f"share with r_t ≥ {stuck:g}")
    low.grid(alpha=0.3)
  fig.tight_layout()
  if path is not None:
    save(fig, path)
  return fig


def band(ax, t: np.ndarray, values: np.ndarray, label: str | None = None, alpha: float = 0.2,
         kind: str = "quantile", quantiles: tuple[float, float] = results_lib.QUANTILES,
         **style):
  """Draws `values` (seed, step) against `t` on `ax` and returns the line: with `kind` "ci"
  the mean over seeds and its 95% CI band (Student t, clipped at 0: `results.ci`; none with
  fewer than `MIN_SEEDS_FOR_CI` seeds), "quantile" the median and the band between the
  `quantiles` over seeds, "none" the mean alone; the band's opacity is `alpha`, its edges
  thin lines in the line's colour and style, so overlapping bands stay apart."""
  _checks.choice("kind", kind, BANDS)
  if kind == "quantile":
    centre, low, high = np.quantile(values, (0.5, *quantiles), axis=0)
  else:
    centre, low, high = results_lib.ci(values, axis=0)
  line, = ax.plot(t, centre, label=label, **style)
  if kind == "quantile" or (kind == "ci" and values.shape[0] >= MIN_SEEDS_FOR_CI):
    ax.fill_between(t, low, high, color=line.get_color(), alpha=alpha, linewidth=0)
    for edge in (low, high):
      ax.plot(t, edge, color=line.get_color(), linestyle=line.get_linestyle(),
              linewidth=0.6, alpha=0.7)
  return line


_draw_band = band               # `cumulative`'s argument `band` hides the function


def scaling(res: results_lib.Results, path: str | os.PathLike | None = None,
            reference: Callable[[dict], float | None] | None = None) -> Figure:
  """log mean R(t) against log t per grid point: its points, the line fitted over t ≥ √T
  and, dashed through the fit's end, the slope `reference(point)` (in the legend once when
  every point shares it, else beside each point's fitted slope); saved at `path` when given."""
  t = res.coords["step"]
  res = res.instance_means()
  values = res.cumulative.reshape(-1, *res.cumulative.shape[-2:])
  mean = values.mean(axis=-2)
  drawn = _drawn(res, values)
  papers = {i: None if reference is None else reference(point) for i, point in drawn}
  distinct = {round(p, 3) for p in papers.values() if p is not None}
  fig = Figure(figsize=(7, 4.5))
  ax = fig.subplots()
  tail = t >= np.sqrt(t.max())
  marked = np.zeros(t.size, bool)                # at most MAX_MARKERS log-spaced points
  marked[np.unique(np.geomspace(1, t.size, MAX_MARKERS).astype(int) - 1)] = True
  for i, point in drawn:
    slope = results_lib.scaling_slope(t, mean[i])
    text = f"slope {slope:.2f}"
    if papers[i] is not None and len(distinct) > 1:
      text += f" (paper {papers[i]:.2f})"
    pos = mean[i] > 0
    line, = ax.plot(t[pos & marked], mean[i][pos & marked], "o", markersize=3,
                    label=f"{label(point)}: {text}" if point else text)
    keep = tail & pos
    if np.isfinite(slope):
      coef = np.polyfit(np.log(t[keep]), np.log(mean[i][keep]), 1)
      fit = np.exp(np.polyval(coef, np.log(t[keep])))
      ax.plot(t[keep], fit, "-", color=line.get_color())
      if papers[i] is not None:
        ax.plot(t[keep], fit[-1] * (t[keep] / t[keep][-1]) ** papers[i], "--",
                color=line.get_color(), linewidth=1)
  if distinct:
    ax.plot([], [], "--", color="0.4", linewidth=1, label="dashed: the paper's exponent"
            + (f" {distinct.pop():.2f}" if len(distinct) == 1 else ""))
  ax.set(xscale="log", yscale="log", xlabel="t", ylabel="mean cumulative regret R(t)",
         title=title(res, f"mean over {_samples(res)}, slope fitted over t ≥ √T"))
  ax.legend(fontsize="small")
  fig.tight_layout()
  if path is not None:
    save(fig, path)
  return fig


def heatmap(res: results_lib.Results, path: str | os.PathLike | None = None) -> Figure:
  """Mean R(T) over the two grid axes of `_heatmap_axes`, a panel per other grid point;
  saved at `path` when given. Tick labels are thinned to `MAX_TICKS` and slanted when long."""
  ya, xa = _heatmap_axes(res)
  res = res.instance_means()
  others = [a for a in res.grid_axes if a not in (ya, xa)]
  panels = list(itertools.product(*(list(res.coords[a]) for a in others)))[:MAX_PANELS]
  fig = Figure(figsize=(4.5 * len(panels) + 0.5, 4.2))
  axes = np.atleast_1d(fig.subplots(1, len(panels)))
  for ax, values in zip(axes, panels):
    sub = res.sel(**dict(zip(others, values)))
    grid = sub.final().mean(axis=-1)
    if sub.grid_axes.index(ya) > sub.grid_axes.index(xa):
      grid = grid.T
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    if grid.size <= 144:
      size = 10 if grid.size <= 36 else 7
      text = results_lib.column([float(v) for v in grid.reshape(-1)])    # one format
      for ((r, c), v), cell in zip(np.ndenumerate(grid), text):
        if np.isfinite(v):
          ax.text(c, r, cell, ha="center", va="center", fontsize=size, color=_ink(im, v))
    xs, ys = ([_value(a, v) for v in res.coords[a]] for a in (xa, ya))
    keep_x, keep_y = (range(0, len(v), -(-len(v) // MAX_TICKS)) for v in (xs, ys))
    ax.set_xticks(keep_x, [xs[i] for i in keep_x])
    ax.set_yticks(keep_y, [ys[i] for i in keep_y])
    if sum(len(xs[i]) + 2 for i in keep_x) > 32:             # ~ what a 4.5-inch panel holds
      ax.tick_params(axis="x", labelrotation=30)
      for text in ax.get_xticklabels():
        text.set_horizontalalignment("right")
    ax.set(xlabel=_name(xa), ylabel=_name(ya), title=label(dict(zip(others, values))))
    fig.colorbar(im, ax=ax, label="mean R(T)")
  fig.suptitle(title(res, f"mean R(T) over {_samples(res)}"))
  fig.tight_layout()
  if path is not None:
    save(fig, path)
  return fig


def title(res: results_lib.Results, what: str) -> str:
  """The run's title (config or metadata) on its own line(s), then the run's fixed parameters
  (`setting`), `what` and `partial_label`, joined by " · " on lines of at most
  `TITLE_WIDTH` characters (a longer part alone on its line)."""
  name = (res.config or {}).get("title") or (res.metadata or {}).get("title")
  lines = []
  for part in filter(None, [setting(res), what, partial_label(res)]):
    if lines and len(lines[-1]) + 3 + len(part) <= TITLE_WIDTH:
      lines[-1] += " · " + part
    else:
      lines.append(part)
  if name:                # on as few lines as TITLE_WIDTH allows, of about even length
    n = -(-len(name) // TITLE_WIDTH)
    width = next((w for w in range(-(-len(name) // n), TITLE_WIDTH)
                  if len(textwrap.wrap(name, w)) <= n), TITLE_WIDTH)
    name = textwrap.wrap(name, width)
  return "\n".join((name or []) + lines)


def setting(res: results_lib.Results) -> str:
  """The numeric parameters of the config's environment and its agents' α, β, κ, ν, … that
  the grid does not vary (it is in the legend), "κ = 500, β = 0.1, r_max = 7; α = 3", and a
  schedule's name ("α_t: proposition3"); an agent parameter that only some of the run's
  agents take names them, "α = 3 (Algorithm 1, VPO)"; "" for results without a config."""
  config = res.config or {}
  takers = _takers(res)
  fixed = lambda table, keep, note: [f"{_name(k)} = {_value(k, v)}" + note(k)
                                     for k, v in table.items()
                                     if keep(k) and k not in res.fields and is_number(v)]
  env = fixed(config.get("env", {}), lambda k: True, lambda k: "")
  agent = fixed(config.get("agent", {}), lambda k: k in SYMBOLS, takers)
  schedule = config.get("agent", {}).get("schedule")
  if schedule and schedule != "constant" and "schedule" not in res.fields:
    agent.append(f"α_t: {schedule}" + takers("schedule"))
  return "; ".join(", ".join(part) for part in (env, agent) if part)


def _takers(res: results_lib.Results) -> Callable[[str], str]:
  """`key -> " (Algorithm 1, VPO)"`: the run's agents that declare `key` (the family's
  registry) when some of them do not; "" when all do, or the agents are not known."""
  config = res.config or {}
  family = registry.FAMILIES.get(config.get("family"))
  named = config.get("agent", {}).get("name")
  agents = list(dict.fromkeys(p.get("agent", named) for p in results_lib.points(res)))
  if family is None or not all(a in family.agents for a in agents):
    return lambda key: ""
  def takers(key: str) -> str:
    have = [a for a in agents if key in family.agents[a].params]
    return "" if len(have) == len(agents) or not have else (
        " (" + ", ".join(_value("agent", a) for a in have) + ")")
  return takers


def partial_label(res: results_lib.Results) -> str | None:
  """The label of an interrupted run's results (`rbx.runs.report.partial`), "partial: step t
  of T" — t where the run got to (metadata `REACHED`, as its progress bar said; with record
  "log" the last recorded step may be earlier), else the last recorded step — and how many
  grid points have run if not all; None for a complete run."""
  if res.complete:
    return None
  steps = (res.config or {}).get("steps")
  reached = (res.metadata or {}).get(REACHED, int(res.coords["step"][-1]))
  text = f"partial: step {reached}" + (f" of {steps}" if steps else "")
  final = res.final().reshape(len(results_lib.points(res)), -1)
  run = int(np.isfinite(final).all(axis=-1).sum())
  return text if run == len(final) else f"{text}, {run} of {len(final)} grid points"


def label(point: dict) -> str:
  """A readable name of a grid point: "Algorithm 1, β = 0.5, r_max = 4"."""
  return ", ".join(_value(k, v) if k == "agent" else f"{_name(k)} = {_value(k, v)}"
                   for k, v in point.items())


def _name(axis: str) -> str:
  return SYMBOLS.get(axis, axis)


def _value(axis: str, v) -> str:
  if axis == "agent":       # "class/scheme" (the RLHF agents): the scheme's name, its class
    policy_class, _, scheme = str(v).rpartition("/")
    return NAMES.get(scheme, scheme) + (f" ({policy_class})" if policy_class else "")
  return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


def _samples(res: results_lib.Results) -> str:
  """A grid point's samples (the axis before "step"): "8 seeds", or over instances
  (`Results.instance_means`) "16 instances"."""
  n = len(res.coords[res.axes[-2]])
  return f"{n} {res.axes[-2]}{'s' * (n > 1)}"


def _spread(res: results_lib.Results, band: str = "ci",
            quantiles: tuple[float, float] = results_lib.QUANTILES) -> str:
  n, axis = len(res.coords[res.axes[-2]]), res.axes[-2]
  if band == "quantile":
    low, high = (f"{100 * q:g}" for q in quantiles)
    return f"median and {low}–{high}% range over {_samples(res)}"
  if band == "none" or n < MIN_SEEDS_FOR_CI:
    return f"mean over {_samples(res)}" + (
        f" (no CI below {MIN_SEEDS_FOR_CI} {axis}s)" if band == "ci" else "")
  return f"mean and 95% CI over {_samples(res)}"


def _looks(points: list[dict]) -> tuple[list[dict], list[Line2D] | None]:
  """The colour and line style of each grid point drawn, and the legend's handles: a colour
  per agent (else per value of the first grid axis) and a line style per value of the other
  fields, with a legend of each, when those take 2 to 4 values and every point has the same
  fields; else a colour (and past 10 lines a style) per point, and None (each line names
  itself: per-agent grids' "Algorithm 1", "boltzmann, temperature = 5")."""
  keys = list(points[0]) if points else []
  if len(keys) >= 2 and all(list(p) == keys for p in points):
    hue = "agent" if "agent" in keys else keys[0]
    hues = list(dict.fromkeys(p[hue] for p in points))
    rest = [{k: v for k, v in p.items() if k != hue} for p in points]
    kinds = list(dict.fromkeys(tuple(r.items()) for r in rest))
    if len(hues) > 1 and 1 < len(kinds) <= len(LINESTYLES):
      looks = [dict(color=f"C{hues.index(p[hue]) % 10}",
                    linestyle=LINESTYLES[kinds.index(tuple(r.items()))])
               for p, r in zip(points, rest)]
      handles = [Line2D([], [], color=f"C{j % 10}", label=label({hue: h}))
                 for j, h in enumerate(hues)]
      handles += [Line2D([], [], color="0.3", linestyle=LINESTYLES[j], label=label(dict(kind)))
                  for j, kind in enumerate(kinds)]
      return looks, handles
  return [dict(color=f"C{j % 10}", linestyle=LINESTYLES[j // 10 % len(LINESTYLES)])
          for j in range(len(points))], None


def _drawn(res: results_lib.Results, values: np.ndarray) -> list[tuple[int, dict]]:
  """(index, point) of the grid points to draw: those with results, at most `MAX_LINES`; a
  run's point without the fields it lacks (per-agent grids)."""
  return [(i, results_lib.present(p)) for i, p in enumerate(results_lib.points(res))
          if np.isfinite(values[i]).any()][:MAX_LINES]


def _ink(im, v: float) -> str:
  """Black or white, whichever reads better on the colour that `im` gives `v`."""
  r, g, b, _ = im.cmap(im.norm(v))
  return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "white"


def _heatmap_axes(res: results_lib.Results) -> list[str]:
  """The last two grid axes with ≥ 2 values, numeric ones first."""
  multi = [a for a in res.grid_axes if len(res.coords[a]) >= 2]
  multi.sort(key=lambda a: not np.issubdtype(res.coords[a].dtype, np.number))
  return multi[:2]
