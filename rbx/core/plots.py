"""Plots of a sweep's results (matplotlib, no pyplot state), each saved as PNG and SVG.

* `cumulative`: R(t) against t per grid point (agent, …): the mean over seeds with its 95% CI
  band (Student t, clipped at 0; no band with fewer than `MIN_SEEDS_FOR_CI` seeds); `log`
  for a logarithmic regret axis.
* `scaling`: log–log mean R(t) against t with the slope fitted over t ≥ √T per grid point,
  and, dashed, the exponent the family's paper proves for it (`Family.reference_exponent`,
  e.g. the RLHF paper's (β+1)/(β+2) for Proposition 3's α_t), stated once.
* `heatmap`: mean R(T) over two grid axes, one panel per value of the other axes.

Titles carry the config's title, the number of seeds and, for an interrupted run, how far it
got ("partial: step t of T"); legends read "Algorithm 1, β = 0.5". `band` and `label` draw
and name the same way on any matplotlib axes (the notebooks use them).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from rbx.core import results as results_lib

MAX_LINES = 24
MAX_PANELS = 6
MIN_SEEDS_FOR_CI = 3
MAX_MARKERS = 60
NAMES = {   # agent names as the papers write them
    "algorithm1": "Algorithm 1", "vpo": "VPO", "xpo": "XPO", "selm": "SELM", "greedy": "greedy",
    "rbmle_ga": "NeuralRBMLE-GA", "rbmle_pc": "NeuralRBMLE-PC", "neural_ucb": "NeuralUCB",
    "neural_ts": "NeuralTS", "deep_fpl": "DeepFPL", "bootstrapped_nn": "BootstrappedNN",
    "lin_rbmle": "LinRBMLE", "lin_ucb": "LinUCB"}
SYMBOLS = {"alpha": "α", "beta": "β", "kappa": "κ", "nu": "ν", "mu": "μ", "eta": "η",
           "lam": "λ", "eps": "ε", "rho": "ρ"}


def plot_all(res: results_lib.Results, directory: str | Path,
             reference: Callable[[dict], float | None] | None = None,
             log: bool = False) -> dict[str, list[Path]]:
  """Every plot that `res` supports, into `directory`; name -> [png, svg]. `reference(point)`
  is the predicted regret exponent at a grid point, or None; `log` as in `cumulative`."""
  directory = Path(directory)
  directory.mkdir(parents=True, exist_ok=True)
  out = {"cumulative": cumulative(res, directory / "cumulative", log)}
  if res.coords["step"].size >= 3:
    out["scaling"] = scaling(res, directory / "scaling", reference)
  if len(_heatmap_axes(res)) == 2:
    out["heatmap"] = heatmap(res, directory / "heatmap")
  return out


def cumulative(res: results_lib.Results, stem: Path, log: bool = False) -> list[Path]:
  """`cumulative_figure` saved as `stem`.png and .svg."""
  return _save(cumulative_figure(res, log), stem)


def cumulative_figure(res: results_lib.Results, log: bool = False) -> Figure:
  """R(t) against t, one line per grid point (see `band`); `log`: a log regret axis."""
  t = res.coords["step"]
  values = res.cumulative.reshape(-1, *res.cumulative.shape[-2:])
  fig = Figure(figsize=(7, 4.5))
  ax = fig.subplots()
  drawn = _drawn(res, values)
  for i, point in drawn:                         # lighter bands when many overlap
    band(ax, t, values[i], label=label(point) or None, alpha=0.2 if len(drawn) <= 4 else 0.1)
  ax.set(xlabel="t", ylabel="cumulative regret R(t)", yscale="log" if log else "linear",
         title=title(res, "cumulative regret, " + _spread(values.shape[-2])))
  if res.grid_axes:
    ax.legend(fontsize="small")
  return fig


def band(ax, t: np.ndarray, values: np.ndarray, label: str | None = None, alpha: float = 0.2,
         **style):
  """The mean over seeds of `values` (seed, step) against `t`, with its 95% CI band (Student
  t, opacity `alpha`) clipped at 0, none with fewer than `MIN_SEEDS_FOR_CI` seeds; returns
  the line."""
  mean, _, half = results_lib.mean_ci(values, axis=0)
  line, = ax.plot(t, mean, label=label, **style)
  if values.shape[0] >= MIN_SEEDS_FOR_CI:
    ax.fill_between(t, np.maximum(mean - half, 0.0), mean + half, color=line.get_color(),
                    alpha=alpha, linewidth=0)
  return line


def scaling(res: results_lib.Results, stem: Path,
            reference: Callable[[dict], float | None] | None = None) -> list[Path]:
  """`scaling_figure` saved as `stem`.png and .svg."""
  return _save(scaling_figure(res, reference), stem)


def scaling_figure(res: results_lib.Results,
                   reference: Callable[[dict], float | None] | None = None) -> Figure:
  """log mean R(t) against log t per grid point: its points, the line fitted over t ≥ √T
  and, dashed through the fit's end, the slope `reference(point)` (in the legend once when
  every point shares it, else beside each point's fitted slope)."""
  t = res.coords["step"]
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
         title=title(res, f"mean over {values.shape[-2]} seeds, slope fitted over t ≥ √T"))
  ax.legend(fontsize="small")
  return fig


def heatmap(res: results_lib.Results, stem: Path) -> list[Path]:
  """`heatmap_figure` saved as `stem`.png and .svg."""
  return _save(heatmap_figure(res), stem)


def heatmap_figure(res: results_lib.Results) -> Figure:
  """Mean R(T) over the two grid axes of `_heatmap_axes`, a panel per other grid point."""
  ya, xa = _heatmap_axes(res)
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
      for (r, c), v in np.ndenumerate(grid):
        if np.isfinite(v):
          ax.text(c, r, f"{v:.3g}", ha="center", va="center", fontsize=size, color=_ink(im, v))
    ax.set_xticks(range(grid.shape[1]), [_value(xa, v) for v in res.coords[xa]])
    ax.set_yticks(range(grid.shape[0]), [_value(ya, v) for v in res.coords[ya]])
    ax.set(xlabel=_name(xa), ylabel=_name(ya), title=label(dict(zip(others, values))))
    fig.colorbar(im, ax=ax, label="mean R(T)")
  fig.suptitle(title(res, f"mean R(T) over {res.cumulative.shape[-2]} seeds"))
  fig.tight_layout()
  return fig


def title(res: results_lib.Results, what: str) -> str:
  """`what` under the run's title (config or metadata), with `partial_label` when there is one."""
  name = (res.config or {}).get("title") or (res.metadata or {}).get("title")
  partial = partial_label(res)
  what = what if partial is None else f"{what} — {partial}"
  return what if not name else f"{name}\n{what}"


def partial_label(res: results_lib.Results) -> str | None:
  """The label of an interrupted run's results (`rbx.core.report.partial`), "partial: step t
  of T" and how many grid points have run if not all; None for a complete run."""
  if res.complete:
    return None
  steps = (res.config or {}).get("steps")
  text = f"partial: step {int(res.coords['step'][-1])}" + (f" of {steps}" if steps else "")
  final = res.final().reshape(-1, res.cumulative.shape[-2])
  run = int(np.isfinite(final).all(axis=-1).sum())
  return text if run == len(final) else f"{text}, {run} of {len(final)} grid points"


def label(point: dict) -> str:
  """A readable name of a grid point: "Algorithm 1, β = 0.5, r_max = 4"."""
  return ", ".join(_value(k, v) if k == "agent" else f"{_name(k)} = {_value(k, v)}"
                   for k, v in point.items())


def _name(axis: str) -> str:
  return SYMBOLS.get(axis, axis)


def _value(axis: str, v) -> str:
  if axis == "agent":
    return NAMES.get(str(v), str(v))
  return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


def _spread(seeds: int) -> str:
  if seeds < MIN_SEEDS_FOR_CI:
    return f"mean over {seeds} seed{'s' * (seeds > 1)} (no CI below {MIN_SEEDS_FOR_CI} seeds)"
  return f"mean and 95% CI over {seeds} seeds"


def _drawn(res: results_lib.Results, values: np.ndarray) -> list[tuple[int, dict]]:
  """(index, point) of the grid points to draw: those with results, at most `MAX_LINES`."""
  return [(i, p) for i, p in enumerate(results_lib.points(res))
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


def _save(fig: Figure, stem: Path) -> list[Path]:
  paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
  for p in paths:
    fig.savefig(p, dpi=120, bbox_inches="tight")
  return paths
