"""Comparisons of agents over common seeds: paired differences with Student-t intervals at any
level (and Welch's interval for two independent samples, `welch`), Holm's step-down correction over a family of comparisons, and the smallest difference a
run of n seeds detects at a given power; Student's t from `scipy.stats` (the tests check the
paired test against `scipy.stats.ttest_rel`).

Seed s draws the same prompts and keys under every agent (`rbx.core.protocol.pair`), so two
agents' R(T) over the same seeds are paired: the differences dᵢ = aᵢ − bᵢ, i = 1..n, have mean
d̄ and standard deviation s (ddof = 1), and

  interval   d̄ ± t_{(1+level)/2, n−1} · s/√n
  p          2 P(T_{n−1} > |d̄| / (s/√n))         (two-sided paired t-test)
  Holm       p₍ᵢ₎ ↦ max_{j ≤ i} min(1, (m − j + 1) p₍ⱼ₎) over the m p's in ascending order
  detectable δ = (t_{1−α/(2m), n−1} + t_{power, n−1}) · s/√n

δ is the difference a paired t-test at level α/m (Bonferroni: Holm's first, most stringent
step) detects with probability `power`: the usual approximation of the noncentral t by a shifted
central t, within 0.01 of the exact power for n ≥ 10 at 80% (tests/core/test_stats.py).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

LEVEL = 0.95          # the intervals' level; 1 − LEVEL is the family's error rate
POWER = 0.8           # the power of the detectable difference


def t_quantile(q: float, df: float) -> float:
  """The q-quantile t_{q, df} of Student's t, 0 < q < 1 (NaN for df ≤ 0)."""
  from scipy import stats as scipy_stats        # imported when used: `import rbx` stays light
  check_unit("q", q)
  return float(scipy_stats.t.ppf(q, df)) if df > 0 else math.nan


@dataclasses.dataclass(frozen=True)
class Comparison:
  """a − b paired over n seeds: the mean d̄, its standard deviation s, the `level` Student-t
  interval [low, high], the paired t-test's two-sided p; after `holm`, the family's adjusted p
  and the detectable difference (module docstring)."""
  mean: float
  sd: float
  n: int
  level: float
  low: float
  high: float
  p: float
  p_holm: float = math.nan
  detectable: float = math.nan

  @property
  def half(self) -> float:
    """The interval's half-width t_{(1+level)/2, n−1} s/√n."""
    return 0.5 * (self.high - self.low)

  @property
  def separated(self) -> bool:
    """Holm's adjusted p below the family's error rate 1 − level."""
    return self.p_holm < 1.0 - self.level


def paired(a, b, level: float = LEVEL) -> Comparison:
  """a − b over common seeds: `a`, `b` are R(T) (or any statistic) per seed, shape (n,), seed
  i the same in both; n ≥ 2.

  Raises:
    ValueError: `level` outside (0, 1), shapes that differ, fewer than 2 seeds, or NaN.
  """
  check_unit("level", level)
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if a.ndim != 1 or a.shape != b.shape:
    raise ValueError(f"paired: a and b must be one value per seed over the same seeds, got "
                     f"shapes {a.shape} and {b.shape}")
  if a.size < 2 or not np.isfinite(a - b).all():
    raise ValueError(f"paired: needs at least 2 seeds with finite values in both, got "
                     f"{int(np.isfinite(a - b).sum())} of {a.size}")
  d = a - b
  n, mean, sd = d.size, float(d.mean()), float(d.std(ddof=1))
  half = t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
  from scipy import stats as scipy_stats
  p = (float(mean == 0.0) if sd == 0 else
       min(1.0, 2.0 * float(scipy_stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))))
  return Comparison(mean, sd, n, level, mean - half, mean + half, p)


def welch(a, b, level: float = LEVEL) -> tuple[float, float, float]:
  """(mean(a) − mean(b), the ends of Welch's `level` t interval for it): two independent
  samples (another program's seeds beside rbx's), shapes (n_a,), (n_b,), each n ≥ 2, their
  variances unequal; df by Welch–Satterthwaite,
  (v_a + v_b)² / (v_a²/(n_a − 1) + v_b²/(n_b − 1)), v = s²/n."""
  check_unit("level", level)
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  if a.ndim != 1 or b.ndim != 1 or min(a.size, b.size) < 2:
    raise ValueError(f"welch: needs two samples of at least 2 values each, got shapes {a.shape} "
                     f"and {b.shape}")
  va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
  df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
  half = t_quantile(0.5 + level / 2, df) * math.sqrt(va + vb)
  diff = float(a.mean() - b.mean())
  return diff, diff - half, diff + half


def holm_adjust(p) -> np.ndarray:
  """Holm's step-down adjusted p-values of a family of m p's, in their order (module
  docstring); rejecting where the adjusted p < α keeps the family-wise error ≤ α."""
  p = np.asarray(p, np.float64)
  order = np.argsort(p, kind="stable")
  m = p.size
  steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
  out = np.empty(m)
  out[order] = np.maximum.accumulate(steps)
  return out


def detectable(sd: float, n: int, alpha: float = 1 - LEVEL, power: float = POWER,
               m: int = 1) -> float:
  """The difference δ = (t_{1−α/(2m), n−1} + t_{power, n−1}) · sd/√n that a two-sided paired
  t-test at level α/m over n seeds detects with probability ≈ `power` (module docstring)."""
  check_unit("alpha", alpha)
  check_unit("power", power)
  return ((t_quantile(1 - alpha / (2 * m), n - 1) + t_quantile(power, n - 1))
          * sd / math.sqrt(n))


def holm(comparisons: dict, power: float = POWER) -> dict:
  """The family `comparisons` (key -> `Comparison`, one level) with Holm's adjusted p and
  each one's detectable difference at α/m, α = 1 − level (`detectable`)."""
  adjusted = holm_adjust([c.p for c in comparisons.values()])
  m = len(comparisons)
  return {k: dataclasses.replace(c, p_holm=float(q),
                                 detectable=detectable(c.sd, c.n, 1 - c.level, power, m))
          for (k, c), q in zip(comparisons.items(), adjusted)}


def check_unit(name: str, value: float) -> None:
  """A ValueError naming `name` unless 0 < value < 1 (a level, a power, a quantile)."""
  if not 0.0 < value < 1.0:
    raise ValueError(f"{name} must be in (0, 1), got {value!r}")
