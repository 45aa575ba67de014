"""RLHF-specific analysis of results: the paper's regret exponent for a run's grid point."""
from __future__ import annotations

from typing import Any

from rbx.core.results import Results



def paper_exponent(results: Results, point: dict[str, Any]) -> float | None:
  """(β+1)/(β+2), the regret exponent of Proposition 3 / Theorem 1, for the β of `point` or of
  the config's [env]; None when the run has no β."""
  beta = point.get("beta")
  if beta is None and results.config is not None:
    beta = results.config.get("env", {}).get("beta")
  if beta is None:
    return None
  return (beta + 1) / (beta + 2)
