"""The neural family's registry: its environments and agents, each with its parameters
declared once (`rbx.core.registry`), for TOML configs, `rbx run` and the sweep's static
fields.

Reals (ν, n, λ, η, ζ, p, the reward noise) are traced: a grid over them runs in one program.
Everything else is static, one program per value: the network and training settings
(`width`, `depth`, `train_steps`, `batch_size`, `restart`, `optimizer`, `scaling`), how the
network's products run (`first_layer`, `matmul_precision`), GA's `arm_batch`,
BootstrappedNN's `num_networks`, and the names (`likelihood`, `precision`, the environment's
`reward`, ...).

The environments take arrays: the classification bandit its `features` and `labels`. Naming a
data set (`dataset = "mushroom"` in a config's [env] table) is the config layer's business
(`rbx.runs.config.DATASET`, which reads it with `rbx.data.load`), so this family never reads files.
"""
from __future__ import annotations

import jax

from rbx.core import registry
from rbx.core.protocol import Agent
from rbx.core.registry import Param, boolean, integer, real, string, vector
from rbx.neural import agents, baselines, likelihoods, precision, training
from rbx.neural import env as env_lib
from rbx.neural import network as network_lib


def step_bytes(env, state: int) -> int:
  """Bytes a round holds per seed beyond its state, at most: per arm a gradient and its
  products, each smaller than the state (which holds the network, its Z and the history):
  K × state."""
  return env.num_arms * state


def prepare(params: dict, env, steps: int) -> dict:
  """`params` with the device kind's `first_layer` and `matmul_precision`
  (`rbx.neural.network.default_compute`) where they are not given, so a config's run records
  the values it ran with (`rbx.runs.config.Config.effective`); agents that do not declare them
  ignore them."""
  del env, steps
  return network_lib.default_compute(jax.default_backend())._asdict() | params


FAMILY = registry.family(
    "neural", env_types=(env_lib.ClassificationEnv, env_lib.SyntheticEnv),
    cpu_seed_batch=lambda env: 1, step_bytes=step_bytes, prepare=prepare,
    # A neural seed's round is many products of rows × (d, m) blocks, large enough to keep a
    # CPU core busy alone; vmapping seeds batches them further and, for full-batch training,
    # turns the loop over the history's chunks into a masked loop over the longest seed's,
    # which runs slower per seed-step on a CPU than each seed unbatched (benchmarks/README.md).
    cpu_rule="1 seed (a seed's round keeps a core busy)")

FAMILY.env("synthetic", env_lib.synthetic, {
    "reward": string(env_lib.SYNTHETIC_REWARDS, doc="h(x): xᵀa, 10(xᵀa)² or cos(3xᵀa)"),
    "dim": integer(1, doc="d, the contexts' dimension"),
    "num_arms": integer(2, doc="K"),
    "noise": real(0.0, doc="the reward noise's standard deviation"),
    "seed": integer(0, doc="draws the unit vector a of h"),
})
FAMILY.env("classification", env_lib.classification, {
    "features": vector(doc="X, (n, d') rows (a config names a data set instead: dataset = ...,"
                       " rbx.runs.config.DATASET)"),
    "labels": vector(doc="(n,) integer classes 0..K-1"),
    "num_arms": integer(2, doc="K (default: the number of classes)"),
})

# the network and its training (`rbx.neural.training.settings`), static
TRAINING: dict[str, Param] = {
    "width": integer(1, doc="m, the network's width (even for network=paper)"),
    "depth": integer(2, doc="L, the network's depth"),
    "train_steps": integer(1, doc="J, optimiser steps per round"),
    "batch_size": integer(1, optional=True, doc="B, minibatch rows per step (None: full batch)"),
    "restart": boolean(doc="train every round from θ_0 (else warm start)"),
    "optimizer": string(training.OPTIMIZERS, doc="sgd (gradient ascent) or adam"),
    "scaling": string(training.SCALINGS, doc="the objective divided by n_t (mean) or as "
                      "(10)/(12) are written (sum)"),
    "procedure": string(training.PROCEDURES, doc="J optimiser steps (steps), the public "
                        "NeuralUCB code's per-row SGD (neuralucb) or the public NeuralTS "
                        "code's J full-batch steps on the MSE (neuralts)"),
    "max_updates": integer(1, doc="neuralucb procedure: updates per round at most"),
    "tolerance": real(0.0, static=True, doc="neuralucb procedure: stop after a pass whose "
                      "mean loss is at most this"),
    "network": string(network_lib.NETWORKS, doc="f of (2) with θ_0 of section 2.2 (paper) or "
                      "the public code's torch Linear-ReLU-Linear with biases (torch)"),
    "thin_after": integer(0, optional=True, doc="from round thin_after + 1 on, store and train "
                          "only every thin_every-th round (NeuralUCB's train.py: 2000)"),
    "thin_every": integer(1, doc="see thin_after (NeuralUCB's train.py: 100)"),
    "first_layer": string(network_lib.FIRST_LAYERS, doc="the first layer's products: each row "
                          "times its own block (blocks) or all rows times all blocks in one "
                          "GEMM, each row's block then selected (dense); default: the device "
                          "kind's (rbx.neural.network.default_compute)"),
    "matmul_precision": string(network_lib.MATMUL_PRECISIONS, doc="the network's products: "
                               "exact float32, tf32 (TensorFloat-32 where the hardware has it) "
                               "or bf16 (bfloat16 operands, float32 sums); default: the device "
                               "kind's"),
}
_TRAINS = (training.settings,)      # where the agents' **training go: their defaults
_NU = real(0.0, doc="ν: α(t) = ν t^n, or the exploration weight")
_N = real(0.0, doc="n of α(t) = ν t^n")
_LAM = real(0.0, doc="λ, the regulariser of (10) (> 0)")
_ETA = real(0.0, doc="η, the optimiser's step size (> 0)")
_PRECISION = string(precision.PRECISIONS, doc="Z⁻¹: diag (Appendix F) or exact (Sherman–Morrison)")

FAMILY.agent("rbmle_ga", agents.rbmle_ga, {
    "nu": _NU, "n": _N, "lam": _LAM, "eta": _ETA,
    "zeta": real(0.0, doc="ζ of ζ(t) = ζ t^zeta_n, the index's weight on the bias term"),
    "zeta_n": real(0.0, doc="the exponent of ζ(t) = ζ t^zeta_n (0: a constant ζ)"),
    "likelihood": string(likelihoods.LIKELIHOODS, doc="the surrogate likelihood of (9)"),
    "arm_batch": integer(1, optional=True, doc="arm problems vmapped at once (None: auto)"),
    **TRAINING,
}, forwards=_TRAINS)
FAMILY.agent("rbmle_pc", agents.rbmle_pc, {
    "nu": _NU, "n": _N, "lam": _LAM, "eta": _ETA, "precision": _PRECISION, **TRAINING},
             forwards=_TRAINS)
_FORM = string(agents.FORMS, doc="the confidence width: the papers' ν √(gᵀZ⁻¹g/m) (paper) or "
               "the public code's √(λν gᵀU⁻¹g) (reference)")
FAMILY.agent("neural_ucb", agents.neural_ucb, {
    "nu": _NU, "lam": _LAM, "eta": _ETA, "precision": _PRECISION, "form": _FORM,
    **TRAINING}, forwards=_TRAINS)
FAMILY.agent("neural_ts", agents.neural_ts, {
    "nu": _NU, "lam": _LAM, "eta": _ETA, "precision": _PRECISION, "form": _FORM,
    **TRAINING}, forwards=_TRAINS)
FAMILY.agent("lin_rbmle", baselines.lin_rbmle, {"nu": _NU, "n": _N, "lam": _LAM})
FAMILY.agent("lin_ucb", baselines.lin_ucb, {"nu": _NU, "lam": _LAM})
FAMILY.agent("deep_fpl", baselines.deep_fpl, {
    "nu": real(0.0, doc="ν, the reward perturbation's scale"), "lam": _LAM, "eta": _ETA,
    **TRAINING}, forwards=_TRAINS)
FAMILY.agent("bootstrapped_nn", baselines.bootstrapped_nn, {
    "p": real(0.0, 1.0, doc="the probability that an observation joins a network's data"),
    "lam": _LAM, "eta": _ETA,
    "num_networks": integer(1, doc="q, the number of networks"),
    **TRAINING,
}, forwards=_TRAINS)


def get(name: str, **params) -> Agent:
  """The neural agent `name` (one of `FAMILY.agents`) built from `params`."""
  return FAMILY.get_agent(name, **params)
