"""Agents of one's own, written as plain JAX in a file outside the package: they sweep on two
CPU devices with the one-device results, run from `rbx run --import` with per-agent grids
(resume and report find the module), and Python and TOML check their arguments alike."""
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rbx
from rbx import cli, neural, rlhf
from rbx.core import driver
from rbx.runs import config, experiment, store
from helpers import CPU_ONLY, subprocess_env

ROOT = Path(__file__).parents[2]

# A user's module: an RLHF ε-greedy agent calling `solve_optimistic` without `r_init`, a
# 12-line neural agent whose update runs `lax.fori_loop(0, 3, ..., jnp.zeros(()))` (both
# failed on several devices before the driver's shard_map stopped checking varying axes), and
# a learning-free RLHF agent whose regret has a closed form.
MODULE = '''
import jax, jax.numpy as jnp
from rbx import core, neural, rlhf
from rbx.core import registry

def own_eps_greedy(epsilon=0.1):
  def init(key, task, horizon):
    X, A = task.pi_ref.shape
    return jnp.zeros((X, A, A)), jnp.log(task.pi_ref)
  def act(key, state, obs, task):
    wins, log_pi = state
    ke, k1, k2 = jax.random.split(key, 3)
    logits = jnp.where(jax.random.uniform(ke) < epsilon, 0.0, log_pi[obs.x])
    return state, rlhf.Query(jax.random.categorical(k1, logits),
                             jax.random.categorical(k2, logits), log_pi)
  def update(key, state, obs, q, a1_wins, task):
    wins, log_pi = state
    wins = wins.at[obs.x, jnp.where(a1_wins, q.a1, q.a2), jnp.where(a1_wins, q.a2, q.a1)].add(1.)
    p = task.pi_ref[obs.x]
    r = rlhf.solve_optimistic(wins[obs.x], p, p, task.beta, 0., task.r_max,
                              config=rlhf.SolverConfig(starts=2, iterations=2, dc_iterations=1))
    return wins, log_pi.at[obs.x].set(rlhf.log_optimal_policy(r, p, task.beta))
  return core.Agent("own_eps_greedy", init, act, update)

def own_counter():
  def init(key, spec, horizon):
    return jnp.zeros(spec.num_arms)
  def act(key, state, obs, spec):
    return state, jnp.argmax(state + jax.random.uniform(key, state.shape))
  def update(key, state, obs, arm, reward, spec):
    total = jax.lax.fori_loop(0, 3, lambda i, c: c + reward / 3, jnp.zeros(()))
    return state.at[arm].add(total)
  return core.Agent("own_counter", init, act, update)

def own_mix(mix=0.0):
  def log_pi(task):
    return jnp.log((1.0 - mix) * task.pi_ref + mix / task.pi_ref.shape[-1])
  def act(key, state, obs, task):
    k1, k2 = jax.random.split(key)
    lp = log_pi(task)
    return state, rlhf.Query(jax.random.categorical(k1, lp[obs.x]),
                             jax.random.categorical(k2, lp[obs.x]), lp)
  return core.Agent("own_mix", lambda key, task, horizon: jnp.zeros(()), act,
                    lambda key, state, obs, q, won, task: state)

rlhf.FAMILY.agent("own_eps_greedy", own_eps_greedy, {"epsilon": registry.real(0.0, 1.0)})
rlhf.FAMILY.agent("own_mix", own_mix, {"mix": registry.real(0.0, 1.0)})
neural.FAMILY.agent("own_counter", own_counter, {})
'''


@pytest.fixture
def module(tmp_path):
  """The module written to tmp_path/own_agents.py; its registrations removed afterwards."""
  path = tmp_path / "own_agents.py"
  path.write_text(MODULE)
  before = {f: dict(f.agents) for f in (rlhf.FAMILY, neural.FAMILY)}
  yield path
  for family, agents in before.items():
    family.agents.clear()
    family.agents.update(agents)
  for name in [m for m in sys.modules if m.startswith("rbx_user_own_agents")]:
    del sys.modules[name]


@CPU_ONLY
@pytest.mark.slow                                 # a subprocess with two CPU devices
def test_own_agents_sweep_on_two_devices_with_the_one_device_results(module):
  script = textwrap.dedent("""
      import sys
      import jax, numpy as np
      import rbx
      from rbx import neural, rlhf
      from rbx.runs import config
      assert jax.local_device_count() == 2
      config.import_modules([sys.argv[1]])
      env, bandit = rlhf.example1(), neural.synthetic(dim=3, num_arms=3)
      for build in (lambda: (env, rlhf.get("own_eps_greedy", epsilon=0.2)),
                    lambda: (bandit, neural.get("own_counter"))):
        run = lambda devices: rbx.sweep(build, {}, seeds=4, steps=5, devices=devices).regret
        one, two = run(1), run(2)
        assert np.isfinite(one).all() and np.array_equal(one, two), (one, two)
      print("identical")
  """)
  out = subprocess.run([sys.executable, "-c", script, str(module)], cwd=ROOT,
                       env=subprocess_env(RBX_NUM_CPU_DEVICES="2"), capture_output=True,
                       text=True, timeout=600)
  assert out.returncode == 0 and "identical" in out.stdout, out.stderr[-3000:]


def closed_form(env, mix):
  pi = (1.0 - mix) * env.pi_ref + mix / env.num_actions
  return float(rlhf.regret(pi[0], env.r_star[0], env.pi_ref[0], env.beta))     # one prompt


def test_rbx_run_imports_ones_own_module_with_per_agent_grids(module, tmp_path, capsys):
  cfg = tmp_path / "own.toml"
  cfg.write_text(textwrap.dedent("""
      import = ["own_agents.py"]      # relative to this config
      family = "rlhf"
      seeds = 2
      steps = 3
      [env]
      name = "example2"
      kappa = 20.0
      [[grid]]
      agent = ["own_mix"]
      [[grid]]
      agent = ["own_mix"]
      mix = [0.5, 1.0]
  """))
  out = tmp_path / "run"
  with pytest.raises(config.ConfigError, match=r"grid\[1\] repeats the run 'agent=own_mix'"):
    config.load(cfg, overrides={"grid": [{"agent": ["own_mix"]}, {"agent": ["own_mix"]}]})
  assert cli.main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 0
  printed = capsys.readouterr().out
  assert "| own_mix | 0.5 | 2 |" in printed                     # the summary table, by field
  res = store.load(out)
  labels = ["agent=own_mix", "agent=own_mix, mix=0.5", "agent=own_mix, mix=1.0"]
  assert res.axes == ("run", "seed", "step") and res.coords["run"].tolist() == labels
  env = rlhf.example2(kappa=20.0)
  for label, mix in zip(labels, (0.0, 0.5, 1.0)):
    np.testing.assert_allclose(res.sel(run=label).regret, closed_form(env, mix), rtol=1e-5)
  assert res.runs[labels[1]] == {"agent": "own_mix", "mix": 0.5}          # saved per run
  np.testing.assert_array_equal(res.sel(agent="own_mix", mix=1.0).regret, res.regret[2])
  recorded = (out / store.CONFIG).read_text()
  assert str(module) in recorded                                 # absolute, for --resume/report
  assert store.read_json(out / store.METADATA)["imports"] == {str(module): str(module)}
  assert cli.main(["run", str(cfg), "--out", str(out), "--no-progress"]) == cli.EXIT_ERROR
  assert "already holds a complete run: run it again with --overwrite" in capsys.readouterr().err
  (out / "marker.txt").write_text("mine")
  assert cli.main(["run", str(cfg), "--out", str(out), "--no-progress", "--overwrite"]) == 0
  assert (out / "marker.txt").read_text() == "mine"             # only the run's files replaced
  np.testing.assert_array_equal(store.load(out).regret, res.regret)
  # A fresh process (the registration gone) finds the module through the recorded config.
  del rlhf.FAMILY.agents["own_mix"]
  for name in [m for m in sys.modules if m.startswith("rbx_user_own_agents")]:
    del sys.modules[name]
  assert config.loads(recorded).grid[1]["mix"] == [0.5, 1.0]
  assert "own_mix" in rlhf.FAMILY.agents


def test_ctrl_c_during_a_compile_stops_at_once_and_a_stop_before_any_chunk_runs(module):
  config.import_modules([str(module)])
  env, agent, traced = rlhf.example2(kappa=20.0), rlhf.get("own_mix"), []

  def init(key, task, horizon):               # traced while the driver compiles
    traced.append(driver.compiling())
    return agent.init(key, task, horizon)

  res = rbx.sweep(lambda: (env, agent._replace(init=init)), {}, seeds=2, steps=4,
                  stop=lambda: True)              # asked during the first compile
  assert not res.complete and res.timing["seed_steps"] == 0 and traced[-1]
  assert not driver.compiling()
  handler = experiment._StopOnSignal(echo=lambda text: None)
  handler._handle(signal.SIGINT, None)            # between compiles: after the chunk
  assert handler()
  with pytest.MonkeyPatch.context() as m:
    m.setattr(driver, "_COMPILING", ["chunk"])
    with pytest.raises(KeyboardInterrupt):        # during one: at once
      experiment._StopOnSignal(echo=lambda text: None)._handle(signal.SIGINT, None)


@pytest.mark.parametrize("call, message", [
    (lambda env: rbx.sweep(lambda: (env, rlhf.get("xpo")), {}, seeds=2.5, steps=3),
     r"seeds must be an integer >= 1 or a non-empty list of integers >= 0, got 2.5"),
    (lambda env: rbx.sweep(lambda: (env, rlhf.get("xpo")), {}, seeds=[-1], steps=3),
     r"seeds must be .* integers >= 0, got \[-1\]"),
    (lambda env: rbx.sweep(lambda agent: (env, rlhf.get(agent)), {"agent": "xpo"}, seeds=2,
                           steps=3), r"grid.agent must be a non-empty list of values, got 'xpo'"),
    (lambda env: rbx.sweep(lambda: (env, rlhf.get("xpo", alpha="3")), {}, seeds=2, steps=3),
     r"alpha must be a number, got '3'"),
    (lambda env: rbx.sweep(lambda: (env, neural.get("rbmle_ga")), {}, seeds=2, steps=3),
     r"agent 'rbmle_ga' is of family 'neural' and env \(PreferenceEnv\) of family 'rlhf', "
     r"whose agents are \['tabular/algorithm1'"),
    (lambda env: rlhf.get("algorithm1", alhpa=3),
     r"alhpa=3 is not a parameter of rlhf agent 'algorithm1', which takes \['alpha'.*"
     r"\(did you mean 'alpha'\?\)"),
    (lambda env: neural.get("rbmle_ga", widht=8), r"which takes .*did you mean 'width'"),
    (lambda env: rlhf.get("algorithm1", schedule="proposition3"),
     r"schedule= is a config parameter .* alpha=rbx.schedules"),
    (lambda env: rbx.sweep(lambda: (env, rlhf.get("xpo")), [{"agent": ["xpo"]}, "vpo"], seeds=2,
                           steps=3), r"grid\[1\] must be a table"),
])
def test_python_arguments_are_checked_before_anything_compiles(call, message):
  with pytest.raises(ValueError, match=message):
    call(rlhf.example1())


@pytest.mark.parametrize("part, broken, message", [
    ("act", lambda a: lambda key, state, obs, spec: a.act(key, state, obs, spec)[1],
     r"agent 'mine': act returned a Query of 3 array\(s\); the agent protocol is "
     r"act\(key, state, obs, spec\) -> \(state, action\)"),
    ("update", lambda a: lambda key, state, *rest: (a.update(key, state, *rest), 0.0),
     r"agent 'mine': update returned a tuple of 2 as the state, .*; the agent protocol is "
     r"update\(key, state, obs, action, feedback, spec\) -> state"),
    ("init", lambda a: lambda key, spec: a.init(key, spec, 1),
     r"agent 'mine': init does not take the protocol's 3 arguments \(.*\); the agent protocol is "
     r"init\(key, spec, horizon\) -> state"),
])
def test_an_agent_that_breaks_the_protocol_is_told_it_before_anything_compiles(
    part, broken, message, monkeypatch):
  env, agent = rlhf.example1(), rlhf.get("greedy")
  mine = agent._replace(name="mine", **{part: broken(agent)})
  monkeypatch.setattr(driver, "run", lambda *args, **kwargs: pytest.fail("the sweep compiled"))
  for call in (lambda: rbx.sweep(lambda: (env, mine), {}, seeds=2, steps=3),
               lambda: rlhf.simulate(env, mine, jax.random.key(0), 3)):
    with pytest.raises(ValueError, match=message) as e:
      call()
    assert len(e.traceback) <= 8, e.traceback          # a few lines, not JAX's trace


def test_python_and_toml_share_the_parameter_rule_and_the_messages():
  # a parameter another agent declares is ignored, as a config's [agent] table is filtered
  assert rlhf.get("online_dpo", alpha=3.0).name == "practical/greedy"
  assert rlhf.get("algorithm1", alpha=jnp.float32(3.0)).name == "tabular/algorithm1"  # arrays pass
  text = textwrap.dedent("""
      family = "rlhf"
      seeds = [-1]
      steps = 3
      [env]
      name = "example1"
      [agent]
      name = "xpo"
      alpha = "3"
  """)
  with pytest.raises(config.ConfigError, match=r"seeds must be .* integers >= 0, got \[-1\]"):
    config.loads(text.replace('"3"', "3.0"))
  with pytest.raises(config.ConfigError, match=r"alpha must be a number, got '3'"):
    config.loads(text.replace("[-1]", "2"))
