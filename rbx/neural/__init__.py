"""Neural contextual bandits (paper: `neural-rbmle.txt`): the network of (2), surrogate
likelihoods (9), Z⁻¹ representations, environments, and the agents NeuralRBMLE-GA,
NeuralRBMLE-PC, NeuralUCB and NeuralTS with `simulate` and `sweep`."""
from rbx.neural import buffer, likelihoods, network, precision
from rbx.neural.agents import (AGENTS, Agent, AgentState, StepInfo, get, neural_ts, neural_ucb,
                               rbmle_ga, rbmle_pc, regularised_log_likelihood)
from rbx.neural.env import ClassificationEnv, Round, SyntheticEnv, classification, synthetic
from rbx.neural.network import Params
from rbx.neural.simulate import rollout, simulate, sweep

__all__ = [
    "buffer", "likelihoods", "network", "precision",
    "AGENTS", "Agent", "AgentState", "StepInfo", "get", "neural_ts", "neural_ucb", "rbmle_ga",
    "rbmle_pc", "regularised_log_likelihood",
    "ClassificationEnv", "Round", "SyntheticEnv", "classification", "synthetic",
    "Params", "rollout", "simulate", "sweep",
]
