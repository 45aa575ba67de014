"""The progress bar of a chunked sweep (tqdm): seed-steps done, seed-steps/s, time left.

Compiles are reported on their own line and excluded from the bar's rate (`unpause`), so
the first chunk's compile does not distort the rate or the time left.
"""
from __future__ import annotations

import sys

from tqdm.auto import tqdm


class Progress:
  """A bar over the sweep's seed-steps; `enabled=False` makes every method a no-op."""

  def __init__(self, total: int, done: int = 0, enabled: bool = True, file=None):
    self.enabled = enabled
    self.bar = tqdm(total=total, initial=done, unit="seed-step", unit_scale=True, smoothing=0.1,
                    disable=not enabled, file=file or sys.stderr, dynamic_ncols=True)

  def compiled(self, what: str, seconds: float) -> None:
    """Reports a finished compile of `what` and how long it took."""
    if self.enabled:
      self.bar.write(f"compiled {what} in {seconds:.1f}s")
      self.bar.unpause()

  def advance(self, seed_steps: int, where: str) -> None:
    """Counts `seed_steps` more as done; `where` describes the position."""
    self.bar.update(seed_steps)
    self.bar.set_postfix_str(where, refresh=False)

  def note(self, text: str) -> None:
    """Prints `text` above the bar."""
    if self.enabled:
      self.bar.write(text)

  def close(self) -> None:
    """Closes the bar."""
    self.bar.close()
