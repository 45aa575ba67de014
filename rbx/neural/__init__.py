"""Neural contextual bandits (paper: `neural-rbmle.txt`): the network of (2), surrogate
likelihoods (9), Z⁻¹ representations, environments, and the agents NeuralRBMLE-GA,
NeuralRBMLE-PC, NeuralUCB and NeuralTS, the baselines LinRBMLE, LinUCB, DeepFPL and
BootstrappedNN (`rbx.neural.baselines`), with `simulate` and `sweep`."""
from rbx.neural import baselines, buffer, likelihoods, network, precision
from rbx.neural.agents import (AGENTS, Agent, AgentState, StepInfo, get, neural_ts, neural_ucb,
                               rbmle_ga, rbmle_pc, regularised_log_likelihood)
from rbx.neural.baselines import bootstrapped_nn, deep_fpl, lin_rbmle, lin_ucb
from rbx.neural.env import ClassificationEnv, Round, SyntheticEnv, classification, synthetic
from rbx.neural.network import Params
from rbx.neural.simulate import default_seed_batch, make_run, rollout, simulate, sweep

AGENTS.update(baselines.BASELINES)      # `get(name)` and sweeps by name reach the baselines too

__all__ = [
    "baselines", "buffer", "likelihoods", "network", "precision",
    "bootstrapped_nn", "deep_fpl", "lin_rbmle", "lin_ucb",
    "AGENTS", "Agent", "AgentState", "StepInfo", "get", "neural_ts", "neural_ucb", "rbmle_ga",
    "rbmle_pc", "regularised_log_likelihood",
    "ClassificationEnv", "Round", "SyntheticEnv", "classification", "synthetic",
    "Params", "default_seed_batch", "make_run", "rollout", "simulate", "sweep",
]
