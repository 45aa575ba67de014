"""The progress bar of a chunked sweep (tqdm): seed-steps done, seed-steps/s, time left.

Compiles are reported on their own line (on the bar's stream, stderr) and excluded from the
bar's rate (`unpause`), so the first chunk's compile does not distort the rate or the time left.

`progress=None` (the Python sweep's default) means "where someone watches": the bar is drawn
when stderr is a terminal or in a Jupyter kernel, only once the sweep has run `AUTO_DELAY`
seconds, without the compile lines. In a Jupyter kernel the bar is tqdm's widget when
ipywidgets is importable and the text bar otherwise (chosen here, so tqdm.auto's
`TqdmWarning: IProgress not found` never appears).

Where stderr is not a terminal (a log file, a batch job's output) a shown bar writes plain
lines — tqdm's text at most every `PLAIN_INTERVAL` seconds and at the end — instead of
redrawing itself with carriage returns. `progress=PLAIN` writes those lines (and the compile
lines) even on a terminal: no bar, but a long run still says how far it is (`rbx run
--no-progress`).
"""
from __future__ import annotations

import importlib.util
import sys
import time

AUTO_DELAY = 3.0        # seconds before the bar of progress=None appears
AUTO_CHUNKS = 20        # about how often a shown bar of an unchunked sweep moves
PLAIN_INTERVAL = 10.0   # seconds between the plain lines written where stderr is not a terminal
PLAIN = "plain"         # progress=PLAIN: plain lines, never a bar


def shown(progress: bool | str | None) -> bool:
  """Whether progress is shown: `progress` (True, False or `PLAIN`), or for None whether
  someone watches (stderr is a terminal, or this is a Jupyter kernel)."""
  if progress is None:
    return in_notebook() or bool(getattr(sys.stderr, "isatty", lambda: False)())
  return bool(progress)


def in_notebook() -> bool:
  """Whether this runs in a Jupyter (IPython) kernel."""
  ipython = sys.modules.get("IPython")
  shell = ipython.get_ipython() if ipython is not None else None
  return shell is not None and hasattr(shell, "kernel")


def bar_class():
  """tqdm's widget bar in a Jupyter kernel with ipywidgets, else its text bar."""
  if in_notebook() and importlib.util.find_spec("ipywidgets") is not None:
    from tqdm.notebook import tqdm
  else:
    from tqdm.std import tqdm
  return tqdm


def chunk_for(steps: int) -> int:
  """Steps per chunk for a bar that moves about `AUTO_CHUNKS` times: the smallest divisor
  of `steps` not below steps / AUTO_CHUNKS (so one chunk program serves every chunk)."""
  return next(d for d in range(-(-steps // AUTO_CHUNKS), steps + 1) if steps % d == 0)


class Progress:
  """A bar over the sweep's seed-steps; `enabled` is True, False (every method a no-op),
  `PLAIN` (plain lines, no bar) or None (`shown(None)`, the bar after `AUTO_DELAY` seconds,
  no compile lines)."""

  def __init__(self, total: int, done: int = 0, enabled: bool | str | None = True, file=None):
    self.enabled = shown(enabled)
    self.notes = enabled is not None
    self.file = file or sys.stderr
    self.plain = enabled == PLAIN or (self.enabled and not in_notebook()
                                      and not getattr(self.file, "isatty", lambda: False)())
    self.last_line, self.printed = time.monotonic(), done
    self.bar = bar_class()(total=total, initial=done, unit="seed-step", unit_scale=True,
                           smoothing=0.1, disable=not self.enabled,
                           file=_Discard() if self.plain else self.file,
                           ncols=100 if self.plain else None, dynamic_ncols=not self.plain,
                           delay=0.0 if self.notes else AUTO_DELAY)

  def compiled(self, what: str, seconds: float) -> None:
    """Reports a finished compile of `what` and how long it took."""
    if self.enabled:
      if self.notes:
        self.note(f"compiled {what} in {seconds:.1f}s")
      self.bar.unpause()

  def advance(self, seed_steps: int, where: str) -> None:
    """Counts `seed_steps` more as done; `where` describes the position."""
    self.bar.update(seed_steps)
    self.bar.set_postfix_str(where, refresh=False)
    if self.plain and (time.monotonic() - self.last_line >= PLAIN_INTERVAL
                       or self.bar.n >= self.bar.total):
      self._line()

  def note(self, text: str) -> None:
    """Prints `text` above the bar."""
    if self.enabled:
      if self.plain:
        print(text, file=self.file, flush=True)
      else:
        self.bar.write(text, file=self.file)

  def close(self) -> None:
    """Closes the bar (a plain bar writes its last line, if it moved since)."""
    if self.plain and self.bar.n > self.printed:
      self._line()
    self.bar.close()

  def _line(self) -> None:
    print(str(self.bar), file=self.file, flush=True)
    self.printed, self.last_line = self.bar.n, time.monotonic()


class _Discard:
  """A stream that drops what tqdm writes (a plain bar prints its own lines)."""

  def write(self, text: str) -> None:
    """Drops `text`."""

  def flush(self) -> None:
    """Nothing to flush."""
