"""RLHF-specific analysis of results: the paper's regret exponent for a run's grid point."""
from __future__ import annotations

from typing import Any

from rbx.core.results import Results

EXPONENTS = {   # α_t schedule (rbx.schedules) -> the regret exponent the paper proves for it
    "proposition3": lambda beta: (beta + 1) / (beta + 2),            # Proposition 3 / Theorem 1
    "appendix_e": lambda beta: (2 * beta + 1) / (3 * beta + 2),      # Appendix E
}


def paper_exponent(results: Results, point: dict[str, Any]) -> float | None:
  """The regret exponent the RLHF paper proves for the α_t schedule of `point` (or of the
  config's [agent]) at its β (or the config's [env] β, or the environment's default recorded
  in the metadata): (β+1)/(β+2) for Proposition 3's, (2β+1)/(3β+2) for Appendix E's; None
  for a constant α, any other schedule, or no β."""
  config = results.config or {}
  effective = (results.metadata or {}).get("effective", {}).get("env", {})
  schedule = point.get("schedule", config.get("agent", {}).get("schedule"))
  beta = point.get("beta", config.get("env", {}).get("beta", effective.get("beta")))
  if schedule not in EXPONENTS or beta is None:
    return None
  return EXPONENTS[schedule](beta)
