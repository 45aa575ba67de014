"""Online RLHF under the Bradley–Terry model: objectives, the optimistic solver, environments,
exploration agents, the family's registry and analysis (paper: `online-rlhf-exploration.txt`);
`practical` has the same schemes as DPO-form losses on the parametric policies of `policies`,
`contextual` the environments with many prompts and features, and `sequences` those whose
answers are token sequences (enumerated: exact ground truth) with autoregressive policies.

`rbx.rlhf.sweep` is `rbx.sweep`; `simulate` runs one seed (`rbx.simulate`).
"""
from rbx.core.sweep import simulate, sweep
from rbx.rlhf import (analysis, assumptions, contextual, linear, linear_agents, policies,
                      practical, registry, sequences)
from rbx.rlhf.agents import AgentState, algorithm1, greedy, modified, selm, vpo, xpo
from rbx.rlhf.contextual import (ContextualPreferenceEnv, ContextualTask, make_contextual,
                                 random_contextual)
from rbx.rlhf.env import (PreferenceEnv, Prompt, Query, Task, example1, example2, make_env,
                          preference, random_instance)
from rbx.rlhf.objectives import J, J_star, kl, log_likelihood, log_optimal_policy, optimal_policy, regret
from rbx.rlhf.registry import FAMILY, get
from rbx.rlhf.solver import SolverConfig, objective, solve_optimistic

__all__ = [
    "analysis", "assumptions", "registry", "FAMILY", "get",
    "contextual", "linear", "linear_agents", "policies", "practical", "sequences", "ContextualPreferenceEnv", "ContextualTask",
    "make_contextual", "random_contextual",
    "AgentState", "algorithm1", "greedy", "modified", "selm", "vpo", "xpo",
    "PreferenceEnv", "Prompt", "Query", "Task", "example1", "example2", "make_env", "preference",
    "random_instance", "J", "J_star", "kl", "log_likelihood", "log_optimal_policy",
    "optimal_policy", "regret", "simulate", "sweep", "SolverConfig", "objective",
    "solve_optimistic",
]
