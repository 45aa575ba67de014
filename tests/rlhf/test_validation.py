"""Bad input raises ValueError naming the field and the allowed values, before compiling."""
import jax
import pytest

from rbx import rlhf, schedules


@pytest.mark.parametrize("kwargs,field", [
    (dict(beta=-1.0), "beta"),
    (dict(r_max=0.0), "r_max"),
    (dict(r_star=[0.5, 2.5]), "r_star"),
    (dict(r_star=[-0.1, 1.0]), "r_star"),
    (dict(pi_ref=[0.5, 0.6]), "pi_ref"),
    (dict(pi_ref=[1.0, 0.0]), "pi_ref"),
    (dict(pi_ref=[0.2, 0.3, 0.5]), "pi_ref"),
    (dict(rho=[0.5, 0.5]), "rho"),
    (dict(pi_cal=[0.9, 0.9]), "pi_cal"),
    (dict(r_star=[1.0]), "r_star"),
])
def test_make_env_rejects(kwargs, field):
  args = dict(r_star=[0.5, 1.0], pi_ref=[0.5, 0.5], beta=1.0, r_max=2.0)
  args.update(kwargs)
  with pytest.raises(ValueError, match=field):
    rlhf.make_env(**args)


def test_example_and_instance_constructors_reject():
  with pytest.raises(ValueError, match="p must"):
    rlhf.example1(p=0.3)
  with pytest.raises(ValueError, match="kappa"):
    rlhf.example2(kappa=2.0)
  with pytest.raises(ValueError, match="r_star"):
    rlhf.example2(kappa=10.0, r_max=1.0)          # r*(a2) = r_max − 2 < 0
  with pytest.raises(ValueError, match="deviation"):
    rlhf.random_instance(jax.random.key(0), 2, 3, 1.0, 1.0, deviation=3.0)
  with pytest.raises(ValueError, match="num_actions"):
    rlhf.random_instance(jax.random.key(0), 2, 0, 1.0, 1.0)


def test_names_and_steps():
  with pytest.raises(ValueError, match=r"agent='vpoo' is not one of .*did you mean 'vpo'"):
    rlhf.get("vpoo")
  with pytest.raises(ValueError, match=r"schedule='const'.*'constant'"):
    schedules.get("const", alpha=1.0)
  env, agent = rlhf.example1(), rlhf.vpo(1.0)
  for steps in (0, -3, 2.5):
    with pytest.raises(ValueError, match="steps"):
      rlhf.simulate(env, agent, jax.random.key(0), steps)
  with pytest.raises(ValueError, match="agent"):
    rlhf.simulate(env, "vpo", jax.random.key(0), 3)
  with pytest.raises(ValueError, match="pi_cal"):
    rlhf.vpo(1.0, pi_cal=[0.5, 0.2, 0.2])
  with pytest.raises(ValueError, match="alpha"):
    rlhf.vpo(-1.0)


def test_sweep_validates_every_grid_point_before_compiling():
  calls = []

  def build(beta):
    calls.append(beta)
    return rlhf.example1(beta=beta), rlhf.vpo(1.0)

  with pytest.raises(ValueError, match="beta"):
    rlhf.sweep(build, {"beta": [0.5, -0.5]}, seeds=2, steps=5)
  assert calls == [0.5, -0.5]                      # concrete calls only: nothing was traced
  with pytest.raises(ValueError, match=r"grid.beta must be a non-empty list of values"):
    rlhf.sweep(build, {"beta": []}, seeds=2, steps=5)
  with pytest.raises(ValueError, match="seeds"):
    rlhf.sweep(build, {"beta": [0.5]}, seeds=0, steps=5)
  with pytest.raises(ValueError, match="axis"):
    rlhf.sweep(build, {"beta": [0.5]}, seeds=1, steps=2).sel(alpha=1.0)


def test_schedules_reject_and_evaluate():
  with pytest.raises(ValueError, match="horizon"):
    schedules.proposition3(3, 1, 0.5, 1.0, 2.0)
  with pytest.raises(ValueError, match="kappa"):
    schedules.proposition3(3, 100, 0.5, 1.0, 0.0)
  with pytest.raises(ValueError, match="beta"):
    schedules.appendix_e(3, 100, 0.0, 1.0, 2.0)
