"""Assumption 1–2 constants against the paper's values on Examples 1–2 and a brute force over
pairs on random instances; schedules built from an instance."""
import functools
import itertools

import jax
import numpy as np
import pytest

from rbx import rlhf, schedules
from rbx.rlhf import assumptions


def _brute(env, tau):
  """κ(τ) and μ by looping over prompts and ordered pairs, in float64."""
  r, ref = np.asarray(env.r_star, np.float64), np.asarray(env.pi_ref, np.float64)
  kappa, mu = 1.0, 0.0
  for x in range(r.shape[0]):
    for p, m in itertools.permutations(range(r.shape[1]), 2):
      hf = np.exp(r[x, p] - r[x, m])
      if hf >= tau:
        kappa = max(kappa, ref[x, m] / ref[x, p])
      mu = max(mu, hf * ref[x, m] / ref[x, p])
  return kappa, mu


def test_example1_is_aligned():
  # The paper: Example 1 satisfies Assumption 1 with κ, τ = O(1) (π_ref uniform: κ = 1 at τ = 1).
  env = rlhf.example1(0.1, 0.5, 3.0)
  assert float(assumptions.kappa(env)) == pytest.approx(1.0)
  assert float(assumptions.mu(env)) == pytest.approx(np.e, rel=1e-5)    # r* = (1, 0, 0)


@pytest.mark.parametrize("kappa", [4.0, 100.0, 500.0])
def test_example2_kappa_is_the_papers(kappa):
  # π_ref(a1)/π_ref(a0) = (1/κ)/(1 − 2/κ) = 1/(κ − 2): "consistent with the κ here".
  env = rlhf.example2(kappa, 0.1, 7.0)
  assert float(assumptions.kappa(env)) == pytest.approx(kappa - 2.0, rel=1e-5)
  assert float(assumptions.mu(env)) == pytest.approx((kappa - 2.0) * np.exp(7.0), rel=1e-4)
  # above the largest human-preference ratio no pair is constrained: κ = 1
  assert float(assumptions.kappa(env, tau=np.exp(7.0) * 1.01)) == pytest.approx(1.0)


def test_random_instances_against_pairs():
  for i in range(5):
    env = rlhf.random_instance(jax.random.key(i), 3, 5, 0.5, 4.0, deviation=1.5)
    for tau in (1.0, 2.0, 20.0):
      k, m = _brute(env, tau)
      assert float(assumptions.kappa(env, tau)) == pytest.approx(k, rel=1e-4)
    assert float(assumptions.mu(env)) == pytest.approx(m, rel=1e-4)


def test_tau_below_one_is_refused():
  with pytest.raises(ValueError, match=r"tau must be >= 1"):
    assumptions.kappa(rlhf.example1(), tau=0.5)


def test_schedules_take_the_instances_constants():
  env = rlhf.example2(100.0, 0.5, 6.0)
  T = 200
  got = rlhf.registry.prepare({"schedule": "proposition3"}, env, T)["alpha"]
  want = schedules.proposition3(3, T, 0.5, 6.0, 98.0)
  given = rlhf.registry.prepare({"schedule": "proposition3", "schedule_kappa": 5.0}, env,
                                T)["alpha"]
  t = np.array([1.0, 50.0, 200.0])
  np.testing.assert_allclose(got(t), want(t), rtol=1e-5)
  np.testing.assert_allclose(given(t), schedules.proposition3(3, T, 0.5, 6.0, 5.0)(t), rtol=1e-5)
  mu = rlhf.registry.prepare({"schedule": "appendix_e"}, env, T)["alpha"]
  np.testing.assert_allclose(mu(t), schedules.appendix_e(3, T, 0.5, 6.0, 98.0 * np.exp(6.0))(t),
                             rtol=1e-4)


TRAP = """family = "rlhf"
seeds = 2
steps = 10
[env]
name = "contextual"
num_prompts = 4
num_actions = 3
dim = 2
kappa = 100.0
[agent]
name = "xpo"
schedule = "proposition3"
"""


def test_a_trap_cell_schedule_takes_its_own_kappa_not_the_traps(monkeypatch):
  """The environment's kappa (the trap's) never reaches the schedule: proposition3 takes the
  instance's Assumption-1 κ, or schedule_kappa; the old agent key is refused naming both."""
  from rbx.runs import config
  seen, make = [], schedules.proposition3

  @functools.wraps(make)                    # its signature: `prepare` reads the arguments
  def recorded(**kw):
    seen.append(kw["kappa"])                # concrete in the config's check, first
    return make(**kw)

  monkeypatch.setitem(schedules.SCHEDULES, "proposition3", recorded)
  cfg = config.loads(TRAP)
  env = rlhf.registry._contextual(num_prompts=4, num_actions=3, dim=2, kappa=100.0)
  assert float(seen[0]) == pytest.approx(float(assumptions.kappa(env))) and float(seen[0]) != 100
  assert cfg.effective["env"]["kappa"] == 100.0 and "kappa" not in cfg.effective["agent"]["xpo"]
  seen.clear()
  config.loads(TRAP + "schedule_kappa = 5.0\n")
  assert float(seen[0]) == 5.0
  with pytest.raises(config.ConfigError, match="agent.kappa: .*schedule_kappa"):
    config.loads(TRAP.replace("kappa = 100.0\n", "") + "kappa = 5.0\n")


def test_traced_instance_in_a_sweep():
  # κ swept: each traced Example 2 builds its own Proposition 3 schedule, one program.
  T = 5

  def build(kappa):
    env = rlhf.example2(kappa, 0.5, 6.0)
    return env, rlhf.algorithm1(schedules.proposition3(3, T, 0.5, 6.0, assumptions.kappa(env)))

  res = rlhf.sweep(build, grid={"kappa": [10.0, 100.0]}, seeds=2, steps=T, progress=False)
  assert res.final().shape == (2, 2) and np.isfinite(res.final()).all()


def test_contextual_environments_take_the_worst_prompt():
  # A contextual environment's constants are its preference environment's: the maxima over
  # the prompts of ρ's support (module docstring), by the brute force over pairs.
  env = rlhf.random_contextual(jax.random.key(3), 6, 4, 3, 0.5, 4.0, deviation=1.8)
  for tau in (1.0, 3.0):
    k, m = _brute(env.base, tau)
    assert float(assumptions.kappa(env, tau)) == pytest.approx(k, rel=1e-4)
  assert float(assumptions.mu(env)) == pytest.approx(m, rel=1e-4)
  assert float(assumptions.kappa(env)) > 1.0
  # a prompt that is never asked does not count
  base = env.base
  rho = np.zeros(6)
  rho[0] = 1.0
  one = rlhf.make_env(base.r_star, base.pi_ref, 0.5, 4.0, rho=rho)
  first = rlhf.make_env(base.r_star[:1], base.pi_ref[:1], 0.5, 4.0)
  assert float(assumptions.kappa(one)) == pytest.approx(float(assumptions.kappa(first)), rel=1e-5)
  assert float(assumptions.mu(one)) == pytest.approx(float(assumptions.mu(first)), rel=1e-5)
  with pytest.raises(ValueError, match="env must be"):
    assumptions.kappa(env.spec)


def test_a_contextual_config_with_proposition3_runs():
  from rbx.runs import config
  c = config.loads('family = "rlhf"\nseeds = 2\nsteps = 3\n[env]\nname = "contextual"\n'
                   'num_prompts = 5\nnum_actions = 3\ndim = 2\n[agent]\n'
                   'name = "practical_algorithm1"\npolicy = "loglinear"\nschedule = "proposition3"')
  env, agent = c.build(**c.fixed)
  T = 3
  want = schedules.proposition3(3, T, env.beta, env.r_max, assumptions.kappa(env.base))
  got = rlhf.registry.prepare({"schedule": "proposition3"}, env, T)["alpha"]
  t = np.array([1.0, 2.0, 3.0])
  np.testing.assert_allclose(got(t), want(t), rtol=1e-5)
  res = rlhf.sweep(lambda: (env, agent), {}, seeds=2, steps=T, progress=False)
  assert np.isfinite(res.regret).all()


def test_the_contextual_trap_is_example2_at_every_prompt():
  env = rlhf.random_contextual(jax.random.key(1), 7, 5, 3, 0.5, 4.0, kappa=20.0)
  pi_ref, r_star = np.asarray(env.base.pi_ref), np.asarray(env.base.r_star)
  worst = r_star.argmin(-1)
  np.testing.assert_allclose(pi_ref[np.arange(7), worst], 1 - 4 / 20, rtol=1e-6)
  others = np.ones_like(pi_ref, bool)
  others[np.arange(7), worst] = False
  np.testing.assert_allclose(pi_ref[others], 1 / 20, rtol=1e-6)       # the best answer too
  with pytest.raises(ValueError, match="kappa"):
    rlhf.random_contextual(jax.random.key(1), 7, 5, 3, 0.5, 4.0, kappa=4.0)
  with pytest.raises(ValueError, match="deviation or kappa"):
    rlhf.random_contextual(jax.random.key(1), 7, 5, 3, 0.5, 4.0, deviation=2.0, kappa=20.0)
