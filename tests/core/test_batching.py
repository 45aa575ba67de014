"""The default seed batch as a function of the config and the device kind: a CPU keeps the
family's cache rule, an accelerator the largest power of two (≤ CAP) that fits in half its total
memory — never the number of seeds or the free memory, so a seed's program is the same in any
run."""
import jax
import pytest

import rbx
from rbx import neural, rlhf
from rbx.core import batching
from rbx.core import sweep as core_sweep

GIB = 2 ** 30
RLHF_CPU = batching.Choice(16, "cpu cache rule: seeds × |X| × A² ≤ 2^16")


def working_set(env) -> int:
  """An rlhf sweep's per-seed bytes on `env`: its family's step bytes and a small state."""
  return rlhf.FAMILY.working_set([env], 4096)


def test_a_cpu_keeps_the_familys_cache_rule_whatever_the_memory():
  for free in (None, 140 * GIB):
    assert batching.choose("cpu", free, 10 ** 6, RLHF_CPU) == RLHF_CPU
  env = lambda A, X=1: rlhf.random_instance(jax.random.key(0), X, A, 0.5, 2.0, 1.0)
  assert [rlhf.FAMILY.cpu_choice([env(A)]).seed_batch for A in (10, 50, 100, 200)] == [16, 16, 4, 1]
  assert rlhf.FAMILY.cpu_choice([env(10), env(100)]).seed_batch == 4
  assert rlhf.FAMILY.cpu_choice([env(10, X=100)]).seed_batch == 4
  assert neural.FAMILY.cpu_choice([neural.synthetic()]) == batching.Choice(
      1, "cpu cache rule: 1 seed (a seed's round keeps a core busy)")


def test_an_agent_may_declare_its_own_cpu_batch_and_a_sweep_takes_the_smallest():
  """The dueling baselines' cheap steps run 128 seeds a CPU batch (`Agent.cpu_seed_batch`)
  where the family's rule, sized for the exact solver, gives 16; a grid that mixes them with
  Algorithm 1 keeps 16; the sweep's plan chooses it from its grid points' agents."""
  env = lambda A, X=1: rlhf.random_instance(jax.random.key(0), X, A, 0.5, 2.0, 1.0)
  rucb, dts, alg1 = rlhf.get("rucb"), rlhf.get("double_ts"), rlhf.get("algorithm1")
  own = rlhf.FAMILY.cpu_choice([env(5), env(5)], [rucb, dts])
  assert own == batching.Choice(128, "cpu: the agents' own rule (rucb, double_ts; "
                                     "Agent.cpu_seed_batch)")
  assert rlhf.FAMILY.cpu_choice([env(10, X=100)], [rucb]).seed_batch == 64
  assert rlhf.FAMILY.cpu_choice([env(5), env(5)], [rucb, alg1]) == RLHF_CPU
  e = env(5)
  plan = core_sweep.plan(lambda agent: (e, rlhf.get(agent)), {"agent": ["rucb", "rmed1"]}, 4,
                         check=False)
  assert plan.seed_batch.seed_batch == 128
  with pytest.raises(ValueError, match="1 agents for 2 environments"):
    rlhf.FAMILY.cpu_choice([e, e], [rucb])


def test_an_accelerator_takes_the_largest_power_of_two_that_fits_in_half_its_memory():
  one_prompt = working_set(rlhf.random_instance(jax.random.key(0), 1, 10, 0.5, 2.0, 1.0))
  big = batching.choose("gpu", int(139.5 * GIB), one_prompt, RLHF_CPU)
  assert big.seed_batch == batching.CAP
  assert big.reason.startswith("gpu: the largest power of two <= 4096 whose seeds fit in 50% "
                               "of 139.5 GiB at ")
  small = batching.choose("gpu", 64 * 2 ** 20, one_prompt, RLHF_CPU)
  b = small.seed_batch
  assert 1 < b < batching.CAP and b & (b - 1) == 0          # a power of two
  assert b * one_prompt <= 32 * 2 ** 20 < 2 * b * one_prompt
  # larger problems: fewer seeds a batch in the same memory, never fewer than 1
  sizes = [working_set(rlhf.random_instance(jax.random.key(0), 1, A, 0.5, 2.0, 1.0))
           for A in (10, 50, 200, 1000)]
  batches = [batching.choose("gpu", 1 * GIB, w, RLHF_CPU).seed_batch for w in sizes]
  assert batches == sorted(batches, reverse=True) and batches[0] > batches[-1] >= 1
  assert batching.choose("tpu", 0, 1, RLHF_CPU).seed_batch == 1


def test_an_accelerator_without_memory_stats_gets_the_fallback():
  assert batching.choose("gpu", None, 1, RLHF_CPU) == batching.Choice(
      batching.FALLBACK, f"gpu: no memory_stats, the fallback {batching.FALLBACK}")


def test_a_given_seed_batch_is_checked_and_recorded_as_the_users():
  assert batching.given(8) == batching.Choice(8, "set by the user")
  assert batching.given(RLHF_CPU) is RLHF_CPU
  with pytest.raises(ValueError, match="seed_batch must be"):
    batching.given(0)


def test_a_sweeps_timing_records_its_seed_batch_and_why():
  build = lambda: (rlhf.example1(), rlhf.get("greedy"))
  default = rbx.sweep(build, {}, seeds=2, steps=2, progress=False).timing
  assert (default["seed_batch"], default["seed_batch_reason"]) == RLHF_CPU
  # the default's size, given: the same program (compiled once), recorded as the user's
  given = rbx.sweep(build, {}, seeds=2, steps=2, seed_batch=16, progress=False).timing
  assert (given["seed_batch"], given["seed_batch_reason"]) == (16, "set by the user")
  envs = [build()[0]]
  assert core_sweep.default_seed_batch(build, {}, 2, static=(), envs=envs) == RLHF_CPU


def test_the_working_set_counts_every_numeric_grid_point_of_a_batch(monkeypatch):
  """A batch steps its seeds at all G vmapped grid points at once: G times the bytes a seed."""
  seen = []
  monkeypatch.setattr(batching, "choose", lambda kind, total, per_seed, *rest:
                      seen.append(per_seed) or RLHF_CPU)
  build = lambda alpha: (rlhf.example1(), rlhf.get("xpo", alpha=alpha))
  envs = [rlhf.example1()]
  for alphas in ([1.0], [1.0, 2.0, 3.0]):
    core_sweep.default_seed_batch(build, {"alpha": alphas}, 4, static=(), envs=envs)
  assert seen[1] == 3 * seen[0] > 0
