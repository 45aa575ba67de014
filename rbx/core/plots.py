"""Plots of a sweep's results (matplotlib, no pyplot state), each saved as PNG and SVG.

* `cumulative`: R(t) against t per grid point (agent, …), mean with its 95% CI band.
* `scaling`: log–log R(t) against t with the fitted slope over t ≥ √T, beside the exponent
  the family's paper predicts (`Family.reference_exponent`, e.g. the RLHF paper's (β+1)/(β+2)).
* `heatmap`: mean R(T) over two grid axes, one panel per value of the other axes.
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


def plot_all(res: results_lib.Results, directory: str | Path,
             reference: Callable[[dict], float | None] | None = None) -> dict[str, list[Path]]:
  """Every plot that `res` supports, into `directory`; name -> [png, svg]. `reference(point)`
  is the predicted regret exponent at a grid point, or None."""
  directory = Path(directory)
  directory.mkdir(parents=True, exist_ok=True)
  out = {"cumulative": cumulative(res, directory / "cumulative")}
  if res.coords["step"].size >= 3:
    out["scaling"] = scaling(res, directory / "scaling", reference)
  if len(_heatmap_axes(res)) == 2:
    out["heatmap"] = heatmap(res, directory / "heatmap")
  return out


def cumulative(res: results_lib.Results, stem: Path) -> list[Path]:
  """R(t) against t, mean over seeds with a 95% CI band, one line per grid point."""
  t = res.coords["step"]
  mean, _, half = results_lib.mean_ci(res.cumulative, axis=-2)
  mean, half = mean.reshape(-1, t.size), half.reshape(-1, t.size)
  fig = Figure(figsize=(7, 4.5))
  ax = fig.subplots()
  for i, point in list(enumerate(results_lib.points(res)))[:MAX_LINES]:
    line, = ax.plot(t, mean[i], label=_label(point) or "mean")
    if np.isfinite(half[i]).any():
      ax.fill_between(t, mean[i] - half[i], mean[i] + half[i], color=line.get_color(), alpha=0.2,
                      linewidth=0)
  ax.set(xlabel="t", ylabel="cumulative regret R(t)",
         title=f"mean and 95% CI over {res.cumulative.shape[-2]} seeds")
  ax.legend(fontsize="small")
  return _save(fig, stem)


def scaling(res: results_lib.Results, stem: Path,
            reference: Callable[[dict], float | None] | None = None) -> list[Path]:
  """log R(t) against log t per grid point, with its fitted slope and `reference(point)`."""
  t = res.coords["step"]
  mean = res.cumulative.mean(axis=-2).reshape(-1, t.size)
  fig = Figure(figsize=(7, 4.5))
  ax = fig.subplots()
  tail = t >= np.sqrt(t.max())
  for i, point in list(enumerate(results_lib.points(res)))[:MAX_LINES]:
    slope = results_lib.scaling_slope(t, mean[i])
    paper = None if reference is None else reference(point)
    text = f"slope {slope:.2f}" + ("" if paper is None else f" (paper {paper:.2f})")
    pos = mean[i] > 0
    line, = ax.plot(t[pos], mean[i][pos], "o", markersize=3,
                    label=f"{_label(point)}: {text}" if point else text)
    if np.isfinite(slope):
      keep = tail & pos
      coef = np.polyfit(np.log(t[keep]), np.log(mean[i][keep]), 1)
      ax.plot(t[keep], np.exp(np.polyval(coef, np.log(t[keep]))), "-", color=line.get_color())
  ax.set(xscale="log", yscale="log", xlabel="T", ylabel="mean cumulative regret R(T)",
         title="regret against T (slope fitted over T ≥ √T_max)")
  ax.legend(fontsize="small")
  return _save(fig, stem)


def heatmap(res: results_lib.Results, stem: Path) -> list[Path]:
  """Mean R(T) over the two grid axes of `_heatmap_axes`, a panel per other grid point."""
  ya, xa = _heatmap_axes(res)
  others = [a for a in res.grid_axes if a not in (ya, xa)]
  panels = list(itertools.product(*(list(res.coords[a]) for a in others)))[:MAX_PANELS]
  fig = Figure(figsize=(4.5 * len(panels), 4))
  axes = np.atleast_1d(fig.subplots(1, len(panels)))
  for ax, values in zip(axes, panels):
    sub = res.sel(**dict(zip(others, values)))
    grid = sub.final().mean(axis=-1)
    if sub.grid_axes.index(ya) > sub.grid_axes.index(xa):
      grid = grid.T
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    for (r, c), v in np.ndenumerate(grid):
      ax.text(c, r, f"{v:.3g}", ha="center", va="center", color="w", fontsize="small")
    ax.set_xticks(range(grid.shape[1]), [str(v) for v in res.coords[xa]])
    ax.set_yticks(range(grid.shape[0]), [str(v) for v in res.coords[ya]])
    ax.set(xlabel=xa, ylabel=ya, title=_label(dict(zip(others, values))) or "mean R(T)")
    fig.colorbar(im, ax=ax, label="mean R(T)")
  fig.tight_layout()
  return _save(fig, stem)


def _heatmap_axes(res: results_lib.Results) -> list[str]:
  """The last two grid axes with ≥ 2 values, numeric ones first."""
  multi = [a for a in res.grid_axes if len(res.coords[a]) >= 2]
  multi.sort(key=lambda a: not np.issubdtype(res.coords[a].dtype, np.number))
  return multi[:2]


def _label(point: dict) -> str:
  return ", ".join(f"{k}={v}" for k, v in point.items())


def _save(fig: Figure, stem: Path) -> list[Path]:
  paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
  for p in paths:
    fig.savefig(p, dpi=120, bbox_inches="tight")
  return paths
