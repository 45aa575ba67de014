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
from scheme_regrets import RECORDING, conditions, regrets  # noqa: E402

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


def test_the_table_is_the_papers():
  t = schemes.SCHEMES
  assert t["algorithm1"] == schemes.Scheme("previous", "current", "current")
  assert t["vpo"] == schemes.Scheme("current", "current", "fixed")
  assert t["xpo"] == t["selm"] == schemes.Scheme("current", "reference", "reference")
  assert t["modified"] == schemes.Scheme("current", "calibration", "fixed")
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

