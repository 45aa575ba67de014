"""Neural contextual bandits (paper: `neural-rbmle.txt`): the network of (2), surrogate
likelihoods (9), Z⁻¹ representations, training (`rbx.neural.training`), environments, and the
agents NeuralRBMLE-GA, NeuralRBMLE-PC, NeuralUCB and NeuralTS, the baselines LinRBMLE, LinUCB,
DeepFPL and BootstrappedNN (`rbx.neural.baselines`), all registered in
`rbx.neural.registry.FAMILY`.

Agents are `rbx.core.Agent`s and environments `rbx.core.Environment`s, so one seed runs with
`simulate` and a seeds × grid sweep with `sweep` (`rbx.core.sweep.sweep`; the registry makes
`width`, `train_steps` and the other sizes and names static fields).
"""
from rbx.core.protocol import Agent, Transition
from rbx.core.sweep import simulate as _simulate
from rbx.core.sweep import sweep
from rbx.neural import baselines, buffer, likelihoods, network, precision, registry, training
from rbx.neural.agents import AgentState, neural_ts, neural_ucb, rbmle_ga, rbmle_pc
from rbx.neural.baselines import bootstrapped_nn, deep_fpl, lin_rbmle, lin_ucb
from rbx.neural.env import (ClassificationEnv, Context, Spec, SyntheticEnv, classification,
                            synthetic)
from rbx.neural.network import Params
from rbx.neural.registry import FAMILY, get
from rbx.neural.training import regularised_log_likelihood


def simulate(env, agent: Agent, key, steps: int, capacity: int | None = None) -> Transition:
  """Runs one seed for `steps` rounds; returns the stacked `Transition`s (obs, action = the
  arm, feedback = its reward, regret), each with leading axis `steps`. Cumulative regret (1)
  is `out.regret.cumsum()`; `capacity` (default `steps`) is the history buffer's size. Seed s
  of a sweep is `simulate(..., jax.random.key(s), T)`."""
  return _simulate(env, agent, key, steps, horizon=capacity)


__all__ = [
    "baselines", "buffer", "likelihoods", "network", "precision", "registry", "training",
    "bootstrapped_nn", "deep_fpl", "lin_rbmle", "lin_ucb",
    "Agent", "AgentState", "Transition", "get", "neural_ts", "neural_ucb", "rbmle_ga",
    "rbmle_pc", "regularised_log_likelihood",
    "ClassificationEnv", "Context", "Spec", "SyntheticEnv", "classification", "synthetic",
    "FAMILY", "Params", "simulate", "sweep",
]
