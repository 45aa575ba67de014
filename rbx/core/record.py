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
  """

  def __init__(self, record: str, num_steps: int, shape: tuple[int, int, int], log_points: int = 50):
    self.record = record
    self.steps = recorded_steps(record, num_steps, log_points)
    dtype = np.float32 if record == "steps" else np.float64
    self.data = np.full(shape + (self.steps.size,), np.nan, dtype)
    self.cum = np.zeros(shape, np.float64)

  @property
  def name(self) -> str:
    """The records' array name: "regret" (per step) or "cumulative" (R(t))."""
    return "regret" if self.record == "steps" else "cumulative"

  def add(self, combo: int, seeds: slice, t0: int, regret: np.ndarray) -> None:
    """Records steps t0..t0+C−1 of the runs (combo, :, seeds); `regret` has shape (G, S_b, C)."""
    G, C = regret.shape[0], regret.shape[-1]     # G ≤ the records' G (a list of sub-grids)
    cum = self.cum[combo, :G, seeds, None] + np.cumsum(regret, axis=-1, dtype=np.float64)
    if self.record == "steps":
      self.data[combo, :G, seeds, t0 - 1:t0 - 1 + C] = regret
    else:
      lo, hi = np.searchsorted(self.steps, [t0, t0 + C])
      self.data[combo, :G, seeds, lo:hi] = cum[..., self.steps[lo:hi] - t0]
    self.cum[combo, :G, seeds] = cum[..., -1]

  def state(self) -> dict[str, np.ndarray]:
    """The records so far as arrays (for a checkpoint; `restore` reads them back)."""
    return {"data": self.data, "cum": self.cum}

  def restore(self, state: dict[str, np.ndarray]) -> None:
    """Continues from `state()`; raises ValueError if its shapes differ from this recorder's."""
    for name in ("data", "cum"):
      have, want = state[name], getattr(self, name)
      if have.shape != want.shape or have.dtype != want.dtype:
        raise ValueError(f"recorded {name} has shape {have.shape} {have.dtype}, this sweep needs "
                         f"{want.shape} {want.dtype}")
      setattr(self, name, np.array(have))
