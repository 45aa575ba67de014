"""rbx: exploration algorithms for online RLHF and neural contextual bandits in JAX.

Every agent is an `init`/`act`/`update` triple of pure functions over explicit state, and every
environment a pytree with `reset`/`observe`/`feedback` (`rbx.core.protocol`), so a whole regret
sweep — seeds × hyperparameter grid × steps — is one jitted program: `rbx.sweep`, which returns
an `rbx.Results` (saved by `rbx run` or `rbx.save(res, DIR)`, read back by `rbx.load(DIR)`).

Families: `rbx.rlhf` (the online-RLHF paper: Algorithm 1, VPO, XPO/SELM, greedy, the
optimistic solver, Examples 1–2) and `rbx.neural` (the NeuralRBMLE paper: NeuralRBMLE-GA/PC,
NeuralUCB, NeuralTS, DeepFPL, BootstrappedNN, LinRBMLE, LinUCB), each declaring its
environments and agents in a registry (`rbx.core.registry`). Shared: `rbx.schedules` (α_t),
`rbx.data` (data sets), `rbx.core` (protocol, sweep, driver, devices, results, plots) and
`rbx.runs` (run directories: TOML configs, `rbx run`, checkpoints, results on disk, reports;
`rbx.submit`, slices of a sweep's seeds on a Slurm cluster through submitit, merged).

Importing rbx gives JAX one CPU device per core (`rbx.core.devices.use_every_core`;
`RBX_NUM_CPU_DEVICES=1` turns it off, and it does not apply if JAX has started or its CPU
device count is set); sweeps shard their seeds over all local devices by default.
"""
from rbx.core import devices as _devices

_devices.use_every_core()                 # before any JAX work: one CPU device per core

from rbx import neural, rlhf, schedules  # noqa: E402
from rbx._version import __version__  # noqa: E402
from rbx.core.results import Results  # noqa: E402
from rbx.core.sweep import simulate, sweep  # noqa: E402
from rbx.runs.store import load, save  # noqa: E402
from rbx.runs.submit import submit  # noqa: E402
from rbx.runs.trace import trace  # noqa: E402

__all__ = ["neural", "rlhf", "schedules", "sweep", "simulate", "Results", "load", "save",
           "submit", "trace", "__version__"]
