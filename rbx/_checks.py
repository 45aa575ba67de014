"""Input validation shared by every family: clear `ValueError`s before anything compiles.

Checks only look at concrete values; under `jit`/`vmap` tracers pass through unchecked
(the sweeps validate every grid point concretely before tracing).
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

import jax
import numpy as np


def is_concrete(*xs) -> bool:
  """True when no argument is a JAX tracer, so its values can be inspected."""
  return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(xs))


def choice(field: str, value: str, allowed: Iterable[str]) -> str:
  """`value` must be one of `allowed`; the error suggests the nearest name."""
  allowed = list(allowed)
  if value not in allowed:
    raise ValueError(f"{field}={value!r} is not one of {allowed}{did_you_mean(value, allowed)}")
  return value


def did_you_mean(value, allowed: Iterable[str]) -> str:
  """" (did you mean 'x'?)" for the nearest of `allowed` (ignoring case first), or ""."""
  allowed = [str(a) for a in allowed if str(a) != str(value)]
  same_case = [a for a in allowed if a.lower() == str(value).lower()]
  near = same_case or difflib.get_close_matches(str(value), allowed, n=1)
  return f" (did you mean {near[0]!r}?)" if near else ""


def positive(field: str, value, *, strict: bool = True):
  """A scalar or array whose entries are all > 0 (or >= 0 when `strict=False`)."""
  if is_concrete(value):
    v = np.asarray(value, dtype=float)
    bad = ~np.isfinite(v) | ((v <= 0) if strict else (v < 0))
    if bad.any():
      rel = "> 0" if strict else ">= 0"
      raise ValueError(f"{field} must be finite and {rel}, got {_show(v)}")
  return value


def in_range(field: str, value, lo: float, hi: float):
  """Every entry of `value` finite and in [lo, hi]."""
  if is_concrete(value, lo, hi):
    v = np.asarray(value, dtype=float)
    lo_, hi_ = float(lo), float(hi)
    if (~np.isfinite(v)).any() or (v < lo_).any() or (v > hi_).any():
      raise ValueError(f"{field} must lie in [{lo_:g}, {hi_:g}], got {_show(v)}")
  return value


def probability(field: str, p, *, strict: bool = False, atol: float = 1e-5):
  """Rows of `p` (last axis) are probability vectors; `strict` also demands p > 0."""
  if is_concrete(p):
    v = np.asarray(p, dtype=float)
    if v.ndim == 0:
      raise ValueError(f"{field} must be a probability vector, got the scalar {v:g}")
    low = (v <= 0) if strict else (v < 0)
    if (~np.isfinite(v)).any() or low.any():
      rel = "> 0" if strict else ">= 0"
      raise ValueError(f"{field} must have entries {rel}, got {_show(v)}")
    if not np.allclose(v.sum(-1), 1.0, atol=atol):
      raise ValueError(f"{field} must sum to 1 along its last axis, sums are {_show(v.sum(-1))}")
  return p


def shape(field: str, x, expected: tuple[int, ...]):
  """`x` has exactly the shape `expected`."""
  if tuple(np.shape(x)) != tuple(expected):
    raise ValueError(f"{field} must have shape {tuple(expected)}, got {tuple(np.shape(x))}")
  return x


def positive_int(field: str, value, low: int = 1) -> int:
  """A Python integer >= `low` (default 1)."""
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
    raise ValueError(f"{field} must be an integer >= {low}, got {value!r}")
  return int(value)


def num_seeds(seeds) -> int:
  """How many seeds `seeds` names — n (seeds 0..n−1) or a non-empty list of distinct integers
  ≥ 0 — without making n seeds' array; ValueError naming "seeds" otherwise."""
  if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
    if seeds < 1:
      raise ValueError(f"seeds must be an integer >= 1 or a list of seeds, got {seeds}")
    return int(seeds)
  listed = isinstance(seeds, (list, tuple)) or (isinstance(seeds, np.ndarray) and seeds.ndim == 1)
  if (not listed or len(seeds) == 0 or not all(
      isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) and s >= 0
      for s in seeds)):
    raise ValueError("seeds must be an integer >= 1 or a non-empty list of integers >= 0, got "
                     f"{seeds!r}")
  if len(set(int(s) for s in seeds)) < len(seeds):
    raise ValueError(f"seeds has repeated seeds {[int(s) for s in seeds]}")
  return len(seeds)


def seed_range(text: str) -> range:
  """The seeds that "START:STOP" names, half-open like a Python slice ("1000:2000": seeds
  1000..1999; ":STOP" starts at 0); ValueError naming "seeds" unless 0 <= START < STOP."""
  start, sep, stop = str(text).partition(":")
  try:
    bounds = (int(start) if start.strip() else 0, int(stop))
  except ValueError:
    bounds = None
  if not sep or bounds is None or not 0 <= bounds[0] < bounds[1]:
    raise ValueError('seeds must be an integer >= 1, a list of seeds or "START:STOP" (half-open, '
                     f"integers 0 <= START < STOP), got {text!r}")
  return range(*bounds)


def grid_values(field: str, values) -> list:
  """A grid field's values: a non-empty list (a tuple or 1-D array in Python) of distinct
  values, not a string; ValueError naming `field` (e.g. "grid.beta") otherwise."""
  listed = (isinstance(values, (list, tuple))
            or (isinstance(values, np.ndarray) and values.ndim == 1))
  if not listed or len(values) == 0:
    raise ValueError(f"{field} must be a non-empty list of values, got {values!r}")
  values = list(values)
  if len({repr(plain(v)) for v in values}) < len(values):
    raise ValueError(f"{field} has repeated values {values}")
  return values


def plain(v):
  """A NumPy scalar as the Python value (np.str_('x') -> 'x'); anything else as it is."""
  return v.item() if isinstance(v, np.generic) else v


def _show(v: np.ndarray) -> str:
  return np.array2string(np.asarray(v), precision=4, threshold=8)
