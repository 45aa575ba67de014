"""What a sweep keeps of each seed's regret: every step, log-spaced checkpoints, or the end.

==========  =====================================  ==================================
record      array kept (host memory)               shape, dtype
==========  =====================================  ==================================
"steps"     `regret`: per-step regret r_t          (combos, G, S, T) float32
"log"       `cumulative`: R(t) at ~`log_points`    (combos, G, S, ≤ log_points) float64
            log-spaced t (always t = 1 and T)
"summary"   `cumulative`: R(T) only                (combos, G, S, 1) float64
==========  =====================================  ==================================

R(t) = Σ_{s ≤ t} r_s is accumulated on the host in float64 between chunks (`cum`), so the
cumulative records do not depend on the chunk size.

The environment's named per-step metrics (`rbx.core.protocol.add_metrics`, e.g. the RLHF
environments' weak and strong dueling regrets) are kept the same way as the regret, one
array of the same shape each (`metrics`, `metrics_cum`): host memory grows by that factor.
"""
from __future__ import annotations

import numpy as np

from rbx import _checks

RECORDS = ("steps", "log", "summary")


def recorded_steps(record: str, steps: int, log_points: int = 50) -> np.ndarray:
  """The steps t (1-based) at which `record` keeps a value."""
  _checks.choice("record", record, RECORDS)
  if record == "steps":
    return np.arange(1, steps + 1)
  if record == "summary":
    return np.array([steps])
  _checks.positive_int("log_points", log_points)
  return np.unique(np.round(np.geomspace(1, steps, log_points)).astype(int))


class Recorder:
  """Host-side records of a sweep, filled chunk by chunk.

  Attributes:
    record: one of `RECORDS`.
    steps: the recorded steps t, shape (R,).
    data: the records, shape (num_combos, G, S, R); NaN where not yet run (and past a
      combination's own G_c, in a list of sub-grids: `rbx.core.grid.Runs`).
    cum: R(t) so far per run, float64 (num_combos, G, S).
    metrics, metrics_cum: name -> the records and the running sums of each named per-step
      metric, as `data` and `cum` (allocated when a chunk first brings the name).
  """

  def __init__(self, record: str, num_steps: int, shape: tuple[int, int, int], log_points: int = 50):
    self.record = record
    self.steps = recorded_steps(record, num_steps, log_points)
    self.data, self.cum = self._empty(shape)
    self.metrics: dict[str, np.ndarray] = {}
    self.metrics_cum: dict[str, np.ndarray] = {}

  def _empty(self, shape) -> tuple[np.ndarray, np.ndarray]:
    """(records, running sums) of one quantity: NaN and 0."""
    dtype = np.float32 if self.record == "steps" else np.float64
    return (np.full(tuple(shape) + (self.steps.size,), np.nan, dtype),
            np.zeros(tuple(shape), np.float64))

  @property
  def name(self) -> str:
    """The records' array name: "regret" (per step) or "cumulative" (R(t))."""
    return "regret" if self.record == "steps" else "cumulative"

  def add(self, combo: int, seeds: slice, t0: int, regret: np.ndarray,
          metrics: dict[str, np.ndarray] | None = None) -> None:
    """Records steps t0..t0+C−1 of the runs (combo, :, seeds); `regret` and each of the named
    `metrics` have shape (G, S_b, C)."""
    self._fill(self.data, self.cum, combo, seeds, t0, regret)
    for name, values in (metrics or {}).items():
      if name not in self.metrics:
        self.metrics[name], self.metrics_cum[name] = self._empty(self.cum.shape)
      self._fill(self.metrics[name], self.metrics_cum[name], combo, seeds, t0, values)

  def _fill(self, data, running, combo, seeds, t0, values) -> None:
    G, C = values.shape[0], values.shape[-1]     # G ≤ the records' G (a list of sub-grids)
    cum = running[combo, :G, seeds, None] + np.cumsum(values, axis=-1, dtype=np.float64)
    if self.record == "steps":
      data[combo, :G, seeds, t0 - 1:t0 - 1 + C] = values
    else:
      lo, hi = np.searchsorted(self.steps, [t0, t0 + C])
      data[combo, :G, seeds, lo:hi] = cum[..., self.steps[lo:hi] - t0]
    running[combo, :G, seeds] = cum[..., -1]

  def state(self) -> dict[str, np.ndarray]:
    """The records so far as arrays (for a checkpoint; `restore` reads them back): "data",
    "cum", and "metric.<name>", "metric_cum.<name>" of each named metric."""
    return {"data": self.data, "cum": self.cum,
            **{f"metric.{k}": v for k, v in self.metrics.items()},
            **{f"metric_cum.{k}": v for k, v in self.metrics_cum.items()}}

  def restore(self, state: dict[str, np.ndarray]) -> None:
    """Continues from `state()`; raises ValueError if its shapes differ from this recorder's."""
    for name in ("data", "cum"):
      setattr(self, name, _same(name, state[name], getattr(self, name)))
    for key in state:
      if key.startswith("metric."):
        name = key[len("metric."):]
        self.metrics[name] = _same(key, state[key], self.data)
        self.metrics_cum[name] = _same(f"metric_cum.{name}", state[f"metric_cum.{name}"],
                                       self.cum)


def _same(name: str, have: np.ndarray, want: np.ndarray) -> np.ndarray:
  """A copy of `have`; ValueError unless it has `want`'s shape and dtype."""
  if have.shape != want.shape or have.dtype != want.dtype:
    raise ValueError(f"recorded {name} has shape {have.shape} {have.dtype}, this sweep needs "
                     f"{want.shape} {want.dtype}")
  return np.array(have)
