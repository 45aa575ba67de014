"""Online RLHF under the Bradley–Terry model (paper: `online-rlhf-exploration.txt`): the
objectives, the optimistic solvers, the environments (`env`: tabular, `contextual`: many prompts
with features, `generated`: contexts drawn from a generator every round, `drift`: a truth θ*_t
that moves, with the learners' forgetting likelihoods in `forgetting`, `sequences`: answers
as token sequences, `markov`: their exact values by recursion over the positions), the scheme
table (`schemes`), the policy classes that run every
scheme (`learners`: tabular, linear, practical, sequence), the family's registry
("class/scheme" agents: `get`) and analysis. The tabular class's paper-named constructors
(`algorithm1`, `vpo`, ...) are here.

`rbx.rlhf.sweep` is `rbx.sweep`; `simulate` runs one seed (`rbx.simulate`).
"""
from rbx.core.sweep import simulate, sweep
from rbx.rlhf import (analysis, assumptions, contextual, drift, forgetting, generated, learners,
                      linear, markov, registry, schemes, sequences)
from rbx.rlhf.learners.tabular import AgentState, algorithm1, greedy, modified, selm, vpo, xpo
from rbx.rlhf.contextual import (ContextualPreferenceEnv, ContextualTask, make_contextual,
                                 random_contextual)
from rbx.rlhf.drift import Drift, DriftingEnv
from rbx.rlhf.generated import Context, GeneratedContextualEnv, LogLinear, generated_contextual
from rbx.rlhf.env import (PreferenceEnv, Prompt, Query, Task, example1, example2, make_env,
                          preference, random_instance)
from rbx.rlhf.objectives import J, J_star, kl, log_likelihood, log_optimal_policy, optimal_policy, regret
from rbx.rlhf.registry import FAMILY, add_class, add_scheme, get
from rbx.rlhf.solver import SolverConfig, objective, solve_optimistic

__all__ = [
    "analysis", "assumptions", "registry", "FAMILY", "get", "add_class", "add_scheme",
    "contextual", "drift", "forgetting", "generated", "learners", "linear", "markov", "schemes", "sequences",
    "ContextualPreferenceEnv", "ContextualTask", "Context", "Drift", "DriftingEnv", "GeneratedContextualEnv", "LogLinear",
    "make_contextual", "random_contextual", "generated_contextual",
    "AgentState", "algorithm1", "greedy", "modified", "selm", "vpo", "xpo",
    "PreferenceEnv", "Prompt", "Query", "Task", "example1", "example2", "make_env", "preference",
    "random_instance", "J", "J_star", "kl", "log_likelihood", "log_optimal_policy",
    "optimal_policy", "regret", "simulate", "sweep", "SolverConfig", "objective",
    "solve_optimistic",
]
