"""rbx: exploration algorithms for online RLHF and neural contextual bandits in JAX.

Every agent is an `init`/`step` pair of pure functions over explicit state, so a whole
regret sweep — seeds × hyperparameter grid × steps — is one jitted program.

Families: `rbx.rlhf` (the online-RLHF paper: Algorithm 1, VPO, XPO/SELM, greedy, the
optimistic solver, Examples 1–2) and `rbx.neural` (the NeuralRBMLE paper: NeuralRBMLE-GA/PC,
NeuralUCB, NeuralTS, DeepFPL, BootstrappedNN, LinRBMLE, LinUCB). Shared: `rbx.schedules` (α_t),
`rbx.sweep` (in-memory seeds × grid sweeps with named axes), `rbx.data` (data sets),
`rbx.core` (chunked driver, checkpoints, devices, results, plots), `rbx.config` and
`rbx.experiment` (TOML configs and `rbx run`).
"""
from rbx import neural, rlhf, schedules, sweep
from rbx.sweep import SweepResult

__version__ = "0.1.0"
__all__ = ["neural", "rlhf", "schedules", "sweep", "SweepResult", "__version__"]
