"""Adding an agent is one function plus one registration: a toy agent defined here runs from
Python and from a TOML config, and the registry's declarations drive static fields and errors."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rbx
from rbx import rlhf
from rbx.core import Agent, registry
from rbx.core import sweep as core_sweep
from rbx.runs import config, experiment, store


def fixed_policy(mix=0.0, answers: int = 1) -> Agent:
  """Deploys π = (1 − mix) π_ref + mix · uniform at every step and never learns; `answers`
  is a static count (1: both answers from π; 2: a1 from π, a2 from π_ref)."""
  def policy(task):
    A = task.pi_ref.shape[-1]
    return jnp.log((1.0 - mix) * task.pi_ref + mix / A)

  def init(key, task, horizon):
    return jnp.zeros((), jnp.int32)

  def act(key, state, obs, task):
    k1, k2 = jax.random.split(key)
    log_pi = policy(task)
    second = log_pi if answers == 1 else jnp.log(task.pi_ref)
    return state, rlhf.Query(jax.random.categorical(k1, log_pi[obs.x]),
                             jax.random.categorical(k2, second[obs.x]), log_pi)

  def update(key, state, obs, query, a1_wins, task):
    return state + 1

  return Agent("fixed_policy", init, act, update)


@pytest.fixture
def registered():
  rlhf.FAMILY.agent("fixed_policy", fixed_policy,
                    {"mix": registry.real(0.0, 1.0), "answers": registry.integer(1, 2)})
  yield
  del rlhf.FAMILY.agents["fixed_policy"]


def closed_form(env, mix):
  pi = (1.0 - mix) * env.pi_ref + mix / env.num_actions
  return float(jnp.dot(env.rho, jax.vmap(rlhf.regret, (0, 0, 0, None))(pi, env.r_star,
                                                                     env.pi_ref, env.beta)))


def test_a_registered_toy_agent_runs_from_python_and_from_toml(registered, tmp_path):
  env = rlhf.example2(kappa=20.0, beta=0.5, r_max=4.0)
  compiles = []
  res = rbx.sweep(lambda mix, answers: (env, rlhf.get("fixed_policy", mix=mix, answers=answers)),
                  {"mix": [0.0, 0.5], "answers": [1, 2]}, seeds=3, steps=7, compiles=compiles)
  assert res.axes == ("mix", "answers", "seed", "step")
  # the declared static int is looped over (init + chunk per value); mix is vmapped
  assert len(compiles) == 4 and all("answers=" in what for what, _ in compiles)
  for mix in (0.0, 0.5):
    np.testing.assert_allclose(res.sel(mix=mix).regret, closed_form(env, mix), rtol=1e-5)
  text = """
family = "rlhf"
seeds = 3
steps = 7
[env]
name = "example2"
kappa = 20.0
beta = 0.5
r_max = 4.0
[agent]
name = "fixed_policy"
[grid]
mix = [0.0, 0.5]
answers = [1, 2]
"""
  c = config.loads(text, out=str(tmp_path / "run"))
  assert c.static() == ["answers"]                       # declared static; mix is traced
  assert experiment.run(c, progress=False, echo=lambda s: None) == experiment.COMPLETE
  back = store.load(tmp_path / "run")
  assert type(back) is type(res) is rbx.Results             # one result type, in memory and on disk
  np.testing.assert_array_equal(back.regret, res.regret)
  with pytest.raises(config.ConfigError, match=r"grid.answers\[0\] must be an integer"):
    config.loads(text.replace("answers = [1, 2]", "answers = [1.5]"))
  with pytest.raises(config.ConfigError, match=r"agent key='mx' .*did you mean 'mix'"):
    config.loads(text.replace("[agent]\nname = \"fixed_policy\"", "[agent]\nname = \"fixed_policy\"\nmx = 1.0"))


def test_the_registry_declares_which_fields_are_static():
  static = rlhf.FAMILY.static_names()
  assert {"schedule", "pi_init", "solver", "num_prompts", "seed"} <= static
  assert not {"alpha", "beta", "kappa", "p"} & static


def test_registry_params_check_kinds_and_ranges():
  p = registry.real(0.0, 0.25)
  assert p.check("p", 0.1) == 0.1 and not p.static
  with pytest.raises(ValueError, match=r"p must lie in \[0, 0.25\]"):
    p.check("p", 0.3)
  with pytest.raises(ValueError, match="width must be an integer"):
    registry.integer(2).check("width", 3.5)
  with pytest.raises(ValueError, match="did you mean 'adam'"):
    registry.string(["sgd", "adam"]).check("optimizer", "adma")
  with pytest.raises(ValueError, match="family='rlfh'.*did you mean 'rlhf'"):
    registry.get("rlfh")


def test_one_sweep_for_every_family():
  from rbx import neural
  assert rlhf.sweep is rbx.sweep and neural.sweep is rbx.sweep and rlhf.simulate is rbx.simulate


class _Stopped(Exception):
  pass


def test_a_sweeps_default_seed_batch_is_the_smallest_of_its_environments(registered, monkeypatch):
  # rbx.sweep without seed_batch: the family's for each grid point's environment, the smallest
  # (rlhf: 16 at A = 10, 1 at A = 200); a given one is kept. The run itself is not needed.
  seen = []

  def run(plan, options, **kwargs):
    seen.append(options.seed_batch)
    raise _Stopped

  monkeypatch.setattr(core_sweep.driver, "run", run)
  build = lambda A: (rlhf.random_instance(jax.random.key(0), 1, A, 0.5, 2.0, 1.0),
                     rlhf.get("fixed_policy"))
  for grid, seed_batch in (({"A": [10]}, None), ({"A": [10, 200]}, None), ({"A": [50]}, 8)):
    with pytest.raises(_Stopped):
      rbx.sweep(build, grid, seeds=2, steps=3, static=("A",), seed_batch=seed_batch)
  assert seen == [16, 1, 8]
