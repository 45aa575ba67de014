"""The scheme table (`rbx.rlhf.schemes`): every policy class draws its answers and its
calibration policy where the table says, and every registered agent's regret is the one
recorded before the table existed (tests/rlhf/scheme_regrets.py)."""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from scheme_regrets import RECORDING, SEEDS, STEPS, conditions, regrets  # noqa: E402

from rbx.rlhf import schemes


@pytest.mark.slow
def test_every_registered_agent_keeps_its_recorded_regret():
  recorded = np.load(RECORDING)
  same = all(str(recorded[f"_{k}"]) == v for k, v in conditions().items())
  got = regrets()
  assert set(got) == {k for k in recorded.files if not k.startswith("_")}, \
      "an agent was added or removed: rerun tests/rlhf/scheme_regrets.py"
  for name, regret in got.items():
    assert np.ptp(regret) > 0, name                  # the policy moved: a non-trivial check
    if same:
      np.testing.assert_array_equal(regret, recorded[name], err_msg=name)
    else:                    # another jaxlib, platform, CPU or XLA flags (scheme_regrets.py)
      np.testing.assert_allclose(regret, recorded[name], rtol=1e-2, atol=1e-5, err_msg=name)


def _step_program(env, agent) -> str:
  """The lowered text of one step of `agent` on `env`, its state an argument."""
  from rbx.core import protocol
  run = protocol.pair(env, agent, 8)
  carry = jax.eval_shape(run.init, jax.random.key(0))
  return jax.jit(run.step).lower(carry, jax.random.key(0), jnp.int32(1)).as_text()


@pytest.mark.parametrize("policy_class, rows", [
    ("tabular", ["xpo", "selm", "modified", "vpo"]),          # algorithm1: π_cal moves
    ("linear", ["algorithm1", "vpo", "greedy"]),
    ("practical", ["algorithm1", "xpo", "selm", "modified"])])  # vpo: cal_samples = 1
def test_the_rows_of_a_class_share_one_step_program(policy_class, rows):
  # the row is data in the agent's state: the rows' agents lower to one program, which a sweep
  # compiles once (rbx.core.driver); a row whose agent differs in a setting does not
  from rbx import rlhf
  env = rlhf.random_contextual(jax.random.key(3), 3, 4, 3, beta=0.5, r_max=2.0)
  programs = {row: _step_program(env, rlhf.get(f"{policy_class}/{row}")) for row in rows}
  assert len(set(programs.values())) == 1, programs.keys()
  if policy_class == "practical":
    assert _step_program(env, rlhf.get("practical/vpo")) != programs["xpo"]


def test_the_table_is_the_papers():
  t = {name: row._replace(doc="") for name, row in schemes.SCHEMES.items()}
  assert t["algorithm1"] == schemes.Scheme("previous", "current", "current")
  assert t["vpo"] == schemes.Scheme("current", "current", "fixed")
  assert t["xpo"] == t["selm"] == schemes.Scheme("current", "reference", "reference")
  assert t["modified"] == schemes.Scheme("current", "calibration", "fixed")
  assert [n for n, s in t.items() if s.draws_calibration] == ["algorithm1", "modified", "xpo", "selm"]
  assert not t["greedy"].bonus and all(s.bonus for n, s in t.items() if n != "greedy")
  assert schemes.alpha_schedule(t["greedy"], 3.0)(jnp.int32(5)) == 0.0
  assert schemes.alpha_schedule(t["xpo"], 3.0)(jnp.int32(5)) == 3.0


@pytest.mark.parametrize("name", ["algorithm1", "vpo", "modified", "xpo", "greedy"])
def test_answers_come_from_the_schemes_policies(name):
  """With point-mass policies, a1 and a2 are the answers the table names, for each class."""
  scheme = schemes.SCHEMES[name]
  point = lambda a: jnp.log(jax.nn.one_hot(a, 4) + 1e-30)
  policies = {"previous": lambda: point(0), "current": lambda: point(1),
              "reference": lambda: point(2), "calibration": lambda: point(3)}
  a1, a2 = schemes.answers(jax.random.split(jax.random.key(0)), scheme, policies)
  index = {"previous": 0, "current": 1, "reference": 2, "calibration": 3}
  assert (int(a1), int(a2)) == (index[scheme.first], index[scheme.second])
  cal = schemes.calibration_policy(scheme, {"current": lambda: 1, "fixed": lambda: 2,
                                            "reference": lambda: 3})
  assert cal == {"current": 1, "fixed": 2, "reference": 3}[scheme.calibration]



# --- The product of the table and the classes, extended from outside the package. ---

@pytest.fixture
def restored_registry():
  """The scheme table, the classes and the registry as they were, after the test."""
  from rbx import rlhf
  from rbx.rlhf import learners
  saved = [(d, dict(d)) for d in (schemes.SCHEMES, learners.CLASSES, rlhf.FAMILY.agents,
                                  rlhf.FAMILY.agents.aliases)]
  yield
  for d, items in saved:
    dict.clear(d)
    dict.update(d, items)


def _frozen_class():
  """A policy class defined here: π^(t) = π_ref for ever; the answers from the row's sources
  (all π_ref), so its regret is π_ref's at every step."""
  from rbx.core import Agent
  from rbx.rlhf.env import Query
  from rbx.rlhf.learners import PolicyClass, agent_name

  def make(scheme, alpha=1.0):
    row = schemes.get(scheme)

    def act(key, state, obs, task):
      log_ref = jnp.log(task.pi_ref)
      a1, a2 = schemes.answers(jax.random.split(key), row,
                               {s: (lambda: log_ref[obs.x]) for s in schemes.ANSWER_SOURCES})
      return state, Query(a1, a2, log_ref)

    return Agent(agent_name("frozen", scheme), lambda key, task, horizon: jnp.zeros(()), act,
                 lambda key, state, obs, query, a1_wins, task: state + 1)

  return PolicyClass("frozen", make, schemes.params, doc="π_ref")


def test_a_scheme_and_a_class_added_from_outside_run_on_every_class(restored_registry):
  from rbx import rlhf
  from rbx.rlhf import sequences
  # A copy of XPO's row under a new name runs as XPO on every class (its recorded regret, bit
  # for bit, scheme_regrets.py's run); a new row (both answers and π_cal from π_ref) runs too,
  # and a class defined here runs every row.
  rlhf.add_scheme("xpo_again", schemes.SCHEMES["xpo"]._replace(doc="XPO's row, renamed"))
  rlhf.add_scheme("reference_pair", schemes.Scheme("reference", "reference", "reference"))
  rlhf.add_class(_frozen_class())
  recorded = np.load(RECORDING)
  same = all(str(recorded[f"_{k}"]) == v for k, v in conditions().items())
  env = rlhf.random_contextual(jax.random.key(3), 3, 4, 3, beta=0.5, r_max=2.0)
  tokens = sequences.random_sequences(jax.random.key(3), 3, 2, 2, 3, beta=0.5, r_max=2.0)
  for policy_class in ("tabular", "linear", "practical", "sequence", "frozen"):
    on = tokens if policy_class == "sequence" else env
    res = rlhf.sweep(lambda agent: (on, rlhf.get(agent)),
                     {"agent": [f"{policy_class}/xpo_again", f"{policy_class}/reference_pair"]},
                     seeds=SEEDS, steps=STEPS, devices=1, seed_batch=SEEDS, progress=False)
    again, pair = np.asarray(res.regret).reshape(2, SEEDS, STEPS)
    assert np.isfinite(pair).all(), policy_class
    if policy_class == "frozen":
      assert np.ptp(pair) == 0 and pair[0, 0] > 0        # π_ref's regret, every step
      continue
    xpo = recorded[f"{policy_class}/xpo"]
    assert np.ptp(again) > 0, policy_class               # the policy moved
    if same:
      np.testing.assert_array_equal(again, xpo, err_msg=policy_class)
    else:
      np.testing.assert_allclose(again, xpo, rtol=1e-2, atol=1e-5, err_msg=policy_class)
  assert rlhf.get("frozen/vpo").name == "frozen/vpo"
  with pytest.raises(ValueError, match="taken"):
    rlhf.add_scheme("xpo", schemes.SCHEMES["xpo"])


def test_every_agent_is_a_class_and_a_scheme_and_todays_names_are_aliases():
  from rbx import rlhf
  from rbx.rlhf import learners
  from rbx.rlhf.learners import contextual_dueling, dueling   # the baselines beside the product
  assert list(rlhf.FAMILY.agents) == [f"{c}/{s}" for c in learners.CLASSES
                                      for s in schemes.SCHEMES] + list(dueling.AGENTS) + list(
                                          contextual_dueling.AGENTS)
  for old, new in {"algorithm1": "tabular/algorithm1", "linear_xpo": "linear/xpo",
                   "practical_vpo": "practical/vpo", "online_dpo": "practical/greedy",
                   "sequence_dpo": "sequence/greedy", "sequence_selm": "sequence/selm"}.items():
    assert rlhf.get(old).name == new
  # Options by row: α's only with a bonus, π_cal only with a fixed π_cal.
  params = {name: rlhf.FAMILY.agents[name].params for name in rlhf.FAMILY.agents}
  assert "alpha" not in params["linear/greedy"] and "alpha" in params["sequence/xpo"]
  assert "pi_cal" in params["practical/modified"] and "pi_cal" not in params["practical/xpo"]
  assert rlhf.FAMILY.agents["practical/vpo"].defaults()["cal_samples"] == 1
  assert rlhf.FAMILY.agents["practical/xpo"].defaults()["cal_samples"] == 0
