"""rbx: exploration algorithms for online RLHF and neural contextual bandits in JAX.

Families: `rbx.rlhf` (the RLHF paper). Shared machinery: `rbx.schedules` (α_t), `rbx.sweep`
(seeds × grid sweeps with named axes).
"""
from rbx import neural, rlhf, schedules, sweep
from rbx.sweep import SweepResult

__version__ = "0.1.0"
__all__ = ["neural", "rlhf", "schedules", "sweep", "SweepResult", "__version__"]
