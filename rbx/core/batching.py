"""The default seed batch: how many seeds a device steps at once (vmapped), decided here only.

On a CPU the family's cache rule decides (`rbx.core.registry.Family.cpu_seed_batch`; rlhf:
the largest power of two ≤ 64 with seeds × |X| × A² ≤ 2^16, neural: 1): on a CPU a batch
that leaves the caches runs slower per seed-step, not faster.

On an accelerator memory decides: with F free bytes on the device (`memory_stats()`
bytes_limit − bytes_in_use, `rbx.core.memory.device_available`) and a per-seed working set
of w bytes — the carried state (`rbx.core.sweep.state_bytes`) plus what a step holds beyond
it (`Family.step_bytes`, e.g. rlhf's solver arrays), times the G numeric grid points that a
batch steps at once — the batch is the largest b with
b·w ≤ `FRACTION`·F, at most the device's ⌈seeds/devices⌉ seeds and at least 1. A batch
that small leaves the device idle (on one H200, Algorithm 1 at A = 10 ran 11.8× faster with
all 4,096 seeds in one batch than with 64; benchmarks/throughput/gpu.py). An accelerator without
`memory_stats` gets `FALLBACK`.
"""
from __future__ import annotations

from typing import NamedTuple

from rbx import _checks
from rbx.core.memory import show

FRACTION = 0.5      # of the device's free memory: the rest for XLA's own buffers and the records
FALLBACK = 64       # seeds a batch on an accelerator that does not report its memory
USER = "set by the user"


class Choice(NamedTuple):
  """A seed batch and why: "set by the user", the CPU rule, or the memory arithmetic."""
  seed_batch: int
  reason: str


def choose(kind: str, free: int | None, per_seed: int, seeds_per_device: int,
           cpu_rule: Choice) -> Choice:
  """The default seed batch (see the module docstring).

  Args:
    kind: the device's platform ("cpu", "gpu", "tpu", ...).
    free: its free bytes, or None when it does not say.
    per_seed: bytes of one seed's working set (state and step).
    seeds_per_device: ⌈seeds / devices⌉, the most a batch can hold.
    cpu_rule: the family's CPU batch for the sweep's environments and the rule's words.
  """
  if kind == "cpu":
    return cpu_rule
  if free is None:
    return Choice(FALLBACK, f"{kind}: no memory_stats, the fallback {FALLBACK}")
  fits = int(FRACTION * free) // max(per_seed, 1)
  batch = max(1, min(seeds_per_device, fits))
  which = (f"{batch:,} seeds per device" if batch == seeds_per_device
           else f"{batch:,} of {seeds_per_device:,} seeds per device")
  return Choice(batch, f"{kind}: {which} fit in {FRACTION:.0%} of {show(free, exact=False)} free at "
                f"{show(per_seed, exact=False)} a seed")


def given(seed_batch: int | Choice) -> Choice:
  """A seed batch passed in: a `Choice` made earlier (e.g. by `rbx.runs.config`), or an int from
  the user, checked."""
  if isinstance(seed_batch, Choice):
    return seed_batch
  return Choice(_checks.positive_int("seed_batch", seed_batch), USER)
