"""The interface a policy class implements: its agent of any row of the scheme table.

A scheme (`rbx.rlhf.schemes.Scheme`) says where a round's two answers and the bonus's
calibration policy come from ("previous", "current", "reference", "calibration"; "current",
"fixed", "reference") and whether the bonus is on. A policy class says what those policies
are and how the optimistic step (3.1a)/(3.2a) refits the current one: inside its `make`, it
draws a1 and a2 from its own policies by `schemes.draw` (or the tabular class, by the row as
data), takes π_cal by `schemes.calibration_policy`, weighs the bonus by
`schemes.alpha_schedule`, and reports the deployed π^(t) in its `Query`. The registry
(`rbx.rlhf.registry`) is the product of the classes and the schemes, one loop, named
"class/scheme".
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from rbx import _checks
from rbx.core import registry as reg
from rbx.core.protocol import Agent
from rbx.rlhf.schemes import Scheme


SOLVER = {"solver": reg.table(doc="rbx.rlhf.SolverConfig fields")}
"""The exact classes' solver settings (tabular, linear)."""


class PolicyClass(NamedTuple):
  """A policy class of the RLHF schemes.

  Attributes:
    name: the registry's prefix ("tabular", "linear", "practical", "sequence").
    make: `make(scheme, **options) -> Agent`, the agent of the row named `scheme` in
      `rbx.rlhf.schemes.SCHEMES`, named "class/scheme" (`agent_name`); it checks its options
      (ValueError naming the field) before anything compiles.
    params: `params(scheme) -> {name: rbx.core.registry.Param}`, the options a config may set
      for that row (α's only with a bonus, π_cal's only with a fixed π_cal, ...).
    defaults: `defaults(scheme) -> {option: value}`, the options whose default depends on the
      row (the practical agents' `cal_samples`); {} for none.
    doc: one line: the policy, its refit, the environments it runs on.
  """
  name: str
  make: Callable[..., Agent]
  params: Callable[[Scheme], dict[str, reg.Param]]
  defaults: Callable[[Scheme], dict[str, Any]] = lambda scheme: {}
  doc: str = ""


def agent_name(policy_class: str, scheme: str) -> str:
  """"class/scheme": the registry's and `Agent.name`'s name of a class's agent of a row."""
  return f"{policy_class}/{scheme}"


def positive_beta(name: str, beta, why: str) -> None:
  """ValueError naming `beta` and agent `name` where β = 0 (or < 0) is concrete: the class's
  agents need β > 0 (`why`); the unregularised problem runs on the exact agents (tabular,
  linear)."""
  if _checks.is_concrete(beta) and not float(beta) > 0.0:
    raise ValueError(f"beta must be > 0 for {name} ({why}), got {float(beta):g}: β = 0, the "
                     f"unregularised problem, runs on the exact agents (tabular/..., linear/...)")
