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

Every policy class (`rbx.rlhf.learners`) builds its agent of any row: it names its own
policies ("previous", "current", "reference", "calibration" for the answers; "current",
"fixed", "reference" for π_cal) and calls `draw`, `calibration_policy` and `alpha_schedule` —
or, the tabular, linear and practical classes, carries the row as data (`Scheme.indices`;
`answers_of_row`, `calibration_of_row`), so that its schemes share one program. A new scheme is one row: `rbx.rlhf.registry.add_scheme` registers it on every
class. The α parameters every bonus scheme declares (`PARAMS`) are here too.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp

from rbx import _checks, schedules
from rbx.core import registry as reg

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
    doc: one line for messages and the registry (the paper's name and equations).
  """
  first: str
  second: str
  calibration: str
  bonus: bool = True
  doc: str = ""

  @property
  def draws_calibration(self) -> bool:
    """a2 is drawn from π_cal itself, so the round's a2 is a sample of E_{π_cal} (the
    practical agents' `cal_samples=0`)."""
    return (self.second, self.calibration) in (("current", "current"), ("reference", "reference"),
                                               ("calibration", "fixed"))

  @property
  def fixed_calibration(self) -> bool:
    """The scheme reads a fixed π_cal given to the agent (its `pi_cal`)."""
    return self.calibration == "fixed" or self.second == "calibration"

  def indices(self) -> tuple[int, int, int]:
    """The row as data: a1's and a2's policies as indices into `ANSWER_SOURCES`, π_cal's into
    `CALIBRATIONS` (the tabular agents carry it in their state)."""
    return (ANSWER_SOURCES.index(self.first), ANSWER_SOURCES.index(self.second),
            CALIBRATIONS.index(self.calibration))


SCHEMES: dict[str, Scheme] = {
    "algorithm1": Scheme("previous", "current", "current",
                         doc="Algorithm 1, uncertainty-based exploration (3.2a)/(3.2b)"),
    "vpo": Scheme("current", "current", "fixed", doc="VPO (3.1a)/(3.1b)"),
    "modified": Scheme("current", "calibration", "fixed",
                       doc="section 3.2's modified scheme, a2 ~ a fixed π_cal"),
    "xpo": Scheme("current", "reference", "reference", doc="XPO (Xie et al. 2025)"),
    "selm": Scheme("current", "reference", "reference",
                   doc="SELM (Zhang et al. 2025): XPO in this model"),
    "greedy": Scheme("current", "current", "reference", bonus=False,
                     doc="online MLE (online DPO), no exploration: the control"),
}
"""The table, by name; `rbx.rlhf.registry.add_scheme` adds a row."""

PARAMS = {
    "alpha": reg.real(low=0.0, doc="the constant α (schedule = \"constant\")"),
    "schedule": reg.string(schedules.SCHEDULES, doc="the α_t schedule (rbx.schedules)"),
    "nu": reg.real(low=0.0, doc="power: α_t = ν t^n"),
    "n": reg.real(low=0.0, doc="power: the exponent n"),
    "schedule_kappa": reg.real(doc="proposition3: Assumption 1's κ (default: the instance's at "
                               "τ = 1, rbx.rlhf.assumptions.kappa); not the environment's "
                               "kappa (Example 2's trap)"),
    "mu": reg.real(doc="appendix_e: Assumption 2's μ (default: the instance's, "
                   "rbx.rlhf.assumptions.mu)"),
    "scale": reg.real(low=0.0, doc="a schedule's multiplier"),
}
"""The α_t parameters of a scheme with a bonus (`rbx.rlhf.registry.prepare` makes the schedule);
a schedule's argument `kappa` is `schedule_kappa` here (`SCHEDULE_ARGS`), since parameters share
one flat namespace with the environment's, where `kappa` is Example 2's trap."""
SCHEDULE_ARGS = {"schedule_kappa": "kappa"}
"""A declared α_t parameter -> the schedule's argument it sets, where the names differ."""
POLICY = reg.vector(doc="a policy, shape (A,) or (X, A)")
"""A policy parameter (π_init, π_cal): a vector or a table of them."""


def params(scheme: Scheme) -> dict[str, reg.Param]:
  """The options every class's agent of the row declares: `PARAMS` with a bonus, `pi_cal`
  with a fixed π_cal."""
  return {**(PARAMS if scheme.bonus else {}),
          **({"pi_cal": POLICY} if scheme.fixed_calibration else {})}


def fixed_policy(pi_cal, task) -> chex.Array:
  """The fixed π_cal of a row that reads one, (X, A): the agent's `pi_cal`, (A,) or (X, A),
  broadcast to π_ref's shape, or the task's `pi_cal` where it is None."""
  return task.pi_cal if pi_cal is None else jnp.broadcast_to(
      jnp.asarray(pi_cal, jnp.float32), task.pi_ref.shape)


def alpha_schedule(scheme: Scheme, alpha: schedules.Schedule | float) -> schedules.Schedule:
  """t -> α_t: 0 without the bonus, else `alpha` itself if it is a schedule, else constant."""
  if not scheme.bonus:
    return schedules.constant(0.0)
  return alpha if callable(alpha) else schedules.constant(alpha)


def get(name: str) -> Scheme:
  """The row `name` of `SCHEMES`; ValueError naming the known ones."""
  return SCHEMES[_checks.choice("scheme", name, SCHEMES)]


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


def answers_of_row(keys: chex.Array, row: chex.Array,
                   log_policies: Mapping[str, chex.Array]) -> tuple[chex.Array, chex.Array]:
  """`answers` for a row carried as data (`Scheme.indices`, traced: agents of several rows
  share one program): every `ANSWER_SOURCES` policy's log-probabilities (A,) given, a1 drawn
  with keys[0] from the one `row[0]` names and a2 with keys[1] from `row[1]`'s."""
  rows = jnp.stack([log_policies[p] for p in ANSWER_SOURCES])       # (4, A)
  return (jax.random.categorical(keys[0], rows[row[0]]),
          jax.random.categorical(keys[1], rows[row[1]]))


def calibration_of_row(index: chex.Array, policies: Mapping[str, chex.Array]) -> chex.Array:
  """`calibration_policy` for a row carried as data: `policies[CALIBRATIONS[index]]`, index
  traced (the row's third entry), every `CALIBRATIONS` policy given in one shape."""
  return jnp.stack([policies[c] for c in CALIBRATIONS])[index]


def calibration_policy(scheme: Scheme, policies: Mapping[str, Callable[[], Any]]) -> Any:
  """π_cal of the scheme, from the class's `policies` ("current", "fixed", "reference"), in
  whatever form the class keeps it (probabilities, log-probabilities)."""
  return policies[scheme.calibration]()
