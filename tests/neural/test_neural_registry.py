"""The neural family's registry: every agent and environment declared with its parameters'
kinds (reals traced, sizes and names static), `get`, and the environments' loaders."""
import jax
import pytest

from helpers import toy_data
from rbx import neural
from rbx.core import Agent, registry
from rbx.core import sweep as core_sweep
from rbx.core.registry import BOOL, INT, REAL, STR

AGENTS = ["rbmle_ga", "rbmle_pc", "neural_ucb", "neural_ts", "lin_rbmle", "lin_ucb", "deep_fpl",
          "bootstrapped_nn"]
TRAINING = {"width": INT, "depth": INT, "train_steps": INT, "batch_size": INT, "restart": BOOL,
            "optimizer": STR, "scaling": STR, "procedure": STR, "max_updates": INT,
            "tolerance": REAL, "network": STR, "thin_after": INT, "thin_every": INT,
            "first_layer": STR, "matmul_precision": STR}
STATIC_REALS = {"tolerance"}        # a setting of the training procedure, not swept


def test_the_family_is_registered_with_its_environments_and_agents():
  assert registry.FAMILIES["neural"] is neural.FAMILY
  assert list(neural.FAMILY.agents) == AGENTS
  assert list(neural.FAMILY.envs) == ["synthetic", "classification"]
  assert core_sweep.family_of(neural.synthetic()) is neural.FAMILY
  assert core_sweep.family_of(neural.classification(*toy_data())) is neural.FAMILY
  assert neural.FAMILY.cpu_choice([neural.synthetic()]).seed_batch == 1


@pytest.mark.parametrize("name", AGENTS)
def test_reals_are_traced_and_the_rest_static(name):
  params = neural.FAMILY.agents[name].params
  for field, p in params.items():
    assert p.static == (p.kind != REAL or field in STATIC_REALS), (field, p)
  neural_training = name not in ("lin_rbmle", "lin_ucb")
  for field, kind in TRAINING.items():
    assert (field in params) == neural_training, field
    if neural_training:
      assert params[field].kind == kind and params[field].static
  reals = {f for f, p in params.items() if p.kind == REAL}
  assert reals <= {"nu", "n", "lam", "eta", "zeta", "zeta_n", "p", "tolerance"}
  assert params.get("batch_size") is None or params["batch_size"].optional
  # the constructor takes every declared parameter
  sample = {REAL: 0.5, INT: 2, BOOL: True, STR: None}
  values = {f: p.choices[-1] if p.kind == STR else sample[p.kind] for f, p in params.items()}
  if values.get("procedure") == "neuralucb":
    values["batch_size"] = None                     # the per-row procedure takes no minibatch
  if neural_training and name not in ("rbmle_pc", "neural_ucb", "neural_ts"):
    values["thin_after"] = None                     # only these thin their training rounds
  assert neural.FAMILY.agents[name].make(**values).name == name


def test_declared_choices_match_the_libraries():
  ga = neural.FAMILY.agents["rbmle_ga"].params
  assert set(ga["likelihood"].choices) == {"gaussian", "bernoulli", "mixture"}
  assert ga["arm_batch"].optional and ga["arm_batch"].kind == INT
  assert set(ga["optimizer"].choices) == {"sgd", "adam"}
  assert set(neural.FAMILY.agents["neural_ucb"].params["precision"].choices) == {"diag", "exact"}
  with pytest.raises(ValueError, match="optimizer"):
    neural.FAMILY.agents["rbmle_ga"].check({"optimizer": "lbfgs"})
  with pytest.raises(ValueError, match="width"):
    neural.FAMILY.agents["rbmle_ga"].check({"width": 3.5})
  with pytest.raises(ValueError, match="p must lie in"):
    neural.FAMILY.agents["bootstrapped_nn"].check({"p": 1.5})
  assert set(neural.FAMILY.static_names()) >= set(TRAINING) | {"num_networks", "arm_batch"}


def test_get_is_the_family_get_agent():
  agent = neural.get("lin_ucb", nu=0.5)
  assert isinstance(agent, Agent) and agent.name == "lin_ucb"
  for name in AGENTS:
    assert neural.get(name).name == name
  with pytest.raises(ValueError, match="did you mean"):
    neural.get("neural_ucbb")


def test_environments_load_from_their_declared_parameters():
  env = neural.FAMILY.load_env("synthetic", {"reward": "cosine", "dim": 3, "num_arms": 5})
  assert isinstance(env, neural.SyntheticEnv) and env.spec == neural.Spec(3, 5, 1)
  X, y = toy_data()                      # arrays: naming a data set is rbx.runs.config's (DATASET)
  env = neural.FAMILY.load_env("classification", {"features": X, "labels": y})
  assert isinstance(env, neural.ClassificationEnv) and env.spec == neural.Spec(6, 3, 3)
  env, agent = neural.FAMILY.build("classification", {"features": X, "labels": y, "num_arms": 4},
                                   "neural_ucb", {"nu": 0.5, "width": 8}, steps=5)
  assert agent.name == "neural_ucb" and env.num_arms == 4
  assert neural.simulate(env, agent, jax.random.key(0), 5).regret.shape == (5,)
