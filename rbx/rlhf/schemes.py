"""The exploration schemes of the RLHF paper, declared once: where a round's two answers and
the calibration policy of its bonus come from, and whether the bonus is on (section 3).

=============  ===========  ===========  ==============  ============
scheme         a1 ~         a2 ~         π_cal           α
=============  ===========  ===========  ==============  ============
`algorithm1`   π^(t−1)      π^(t)        π^(t)           schedule α_t
`vpo`          π^(t)        π^(t)        fixed           constant
`modified`     π^(t)        π_cal        fixed           constant
`xpo`/`selm`   π^(t)        π_ref        π_ref           constant
`greedy`       π^(t)        π^(t)        —               0
=============  ===========  ===========  ==============  ============

Algorithm 1 is (3.2a)/(3.2b); VPO (3.1a)/(3.1b); the modified scheme and XPO (its π_cal = π_ref)
section 3.2; SELM is XPO in this model; greedy is online MLE (online DPO in the loss form), the
no-exploration control. "fixed" is a calibration policy given to the agent, by default the
task's `pi_cal` (Example 1's (1 − 2p, p, p), else π_ref). The α column is what the paper
analyses; every agent accepts a schedule or a constant.

Every policy class builds its agents from a `Scheme` — the tabular exact agents
(`rbx.rlhf.agents`), the shared-linear-reward exact agents (`rbx.rlhf.linear_agents`) and the
DPO-form losses (`rbx.rlhf.practical`) — by naming its own policies ("previous", "current",
"reference", "calibration" for the answers; "current", "fixed", "reference" for π_cal) and
calling `answers`, `calibration_policy` and `alpha_schedule` — or, the tabular agents, by
carrying the row as data (`Scheme.indices`), so that their schemes share one program.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import chex
import jax

from rbx import schedules

ANSWER_SOURCES = ("previous", "current", "reference", "calibration")
CALIBRATIONS = ("current", "fixed", "reference")


class Scheme(NamedTuple):
  """One row of the table.

  Attributes:
    first: a1's policy, "previous" (π^(t−1)) or "current" (π^(t)).
    second: a2's policy, "current", "reference" (π_ref) or "calibration" (the fixed π_cal).
    calibration: π_cal of the bonus α_t J*(r; π_cal): "current" (π^(t), so it moves every
      round), "fixed" or "reference".
    bonus: False: α ≡ 0 (π_cal then plays no part).
  """
  first: str
  second: str
  calibration: str
  bonus: bool = True

  def indices(self) -> tuple[int, int, int]:
    """The row as data: a1's and a2's policies as indices into `ANSWER_SOURCES`, π_cal's into
    `CALIBRATIONS` (the tabular agents carry it in their state)."""
    return (ANSWER_SOURCES.index(self.first), ANSWER_SOURCES.index(self.second),
            CALIBRATIONS.index(self.calibration))


SCHEMES: dict[str, Scheme] = {
    "algorithm1": Scheme("previous", "current", "current"),
    "vpo": Scheme("current", "current", "fixed"),
    "modified": Scheme("current", "calibration", "fixed"),
    "xpo": Scheme("current", "reference", "reference"),
    "selm": Scheme("current", "reference", "reference"),
    "greedy": Scheme("current", "current", "reference", bonus=False),
}


def alpha_schedule(scheme: Scheme, alpha: schedules.Schedule | float) -> schedules.Schedule:
  """t -> α_t: 0 without the bonus, else `alpha` itself if it is a schedule, else constant."""
  if not scheme.bonus:
    return schedules.constant(0.0)
  return alpha if callable(alpha) else schedules.constant(alpha)


def answers(keys: chex.Array, scheme: Scheme,
            log_policies: Mapping[str, Callable[[], chex.Array]]) -> tuple[chex.Array, chex.Array]:
  """(a1, a2): a1 ~ `log_policies[scheme.first]()`, a2 ~ `log_policies[scheme.second]()`,
  each the log-probabilities (A,) of the round's prompt, drawn with keys[0] and keys[1]. Only
  the two policies the scheme names are computed."""
  return draw(keys, scheme, {name: (lambda key, f=f: jax.random.categorical(key, f()))
                             for name, f in log_policies.items()})


def draw(keys: chex.Array, scheme: Scheme,
         samplers: Mapping[str, Callable[[chex.PRNGKey], chex.Array]]) -> tuple[chex.Array, chex.Array]:
  """(a1, a2) = (`samplers[scheme.first](keys[0])`, `samplers[scheme.second](keys[1])`), each
  sampler key -> an answer (`answers`' categorical draw, or a policy's own sampler: the
  ancestral sampling of `rbx.rlhf.sequences`). Only the two the scheme names are called."""
  return samplers[scheme.first](keys[0]), samplers[scheme.second](keys[1])


def calibration_policy(scheme: Scheme, policies: Mapping[str, Callable[[], Any]]) -> Any:
  """π_cal of the scheme, from the class's `policies` ("current", "fixed", "reference"), in
  whatever form the class keeps it (probabilities, log-probabilities)."""
  return policies[scheme.calibration]()
