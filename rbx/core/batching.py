"""The default seed batch: how many seeds a device steps at once (vmapped), decided here only.

The batch is the program's width: every batch of every device holds exactly this many seeds
(the driver pads the last), so that seed s runs the same program in any run of the same
config on the same kind of device (docs/reproducibility.md). It therefore depends on the
config and the device kind only — never on the number of seeds, the slice, or free memory.

On a CPU the family's cache rule decides (`rbx.core.registry.Family.cpu_seed_batch`; rlhf:
the largest power of two ≤ 16 with seeds × |X| × A² ≤ 2^16, neural: 1): on a CPU a batch
that leaves the caches runs slower per seed-step, not faster, and padding a small run to
a batch this size costs little. An agent may declare its own rule in its family's place
(`rbx.core.Agent.cpu_seed_batch`, e.g. the dueling baselines' cheap steps: 128); a sweep
takes the smallest batch over its grid points (`Family.cpu_choice`).

On an accelerator the device's total memory decides (`memory_stats()` bytes_limit, the same
for every device of a kind and settings): with a per-seed working set of w bytes — the
carried state (`rbx.core.sweep.state_bytes`) plus what a step holds beyond it
(`Family.step_bytes`), times the G numeric grid points a batch steps at once — the batch is
the largest power of two b ≤ `CAP` with b·w ≤ `FRACTION`·total, at least 1. An accelerator
without `memory_stats` gets `FALLBACK`.
"""
from __future__ import annotations

from typing import NamedTuple

from rbx import _checks
from rbx.core.memory import show

FRACTION = 0.5      # of the device's total memory: the rest for XLA's own buffers and the records
CAP = 4096          # seeds a batch on an accelerator at most: what a small run pads up to
FALLBACK = 64       # seeds a batch on an accelerator that does not report its memory
USER = "set by the user"


class Choice(NamedTuple):
  """A seed batch and why: "set by the user", the CPU rule, or the memory arithmetic."""
  seed_batch: int
  reason: str


def choose(kind: str, total: int | None, per_seed: int, cpu_rule: Choice) -> Choice:
  """The default seed batch (see the module docstring).

  Args:
    kind: the device's platform ("cpu", "gpu", "tpu", ...).
    total: its memory in bytes (bytes_limit), or None when it does not say.
    per_seed: bytes of one seed's working set (state and step).
    cpu_rule: the family's CPU batch for the sweep's environments and the rule's words.
  """
  if kind == "cpu":
    return cpu_rule
  if total is None:
    return Choice(FALLBACK, f"{kind}: no memory_stats, the fallback {FALLBACK}")
  fits = int(FRACTION * total) // max(per_seed, 1)
  batch = 1 << (max(1, min(CAP, fits)).bit_length() - 1)
  return Choice(batch, f"{kind}: the largest power of two <= {CAP} whose seeds fit in "
                f"{FRACTION:.0%} of {show(total, exact=False)} at {show(per_seed, exact=False)} a seed")


def given(seed_batch: int | Choice) -> Choice:
  """A seed batch passed in: a `Choice` made earlier (e.g. by `rbx.runs.config`), or an int from
  the user, checked."""
  if isinstance(seed_batch, Choice):
    return seed_batch
  return Choice(_checks.positive_int("seed_batch", seed_batch), USER)
