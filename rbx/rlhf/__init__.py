"""Online RLHF under the Bradley–Terry model: objectives, the optimistic solver, environments,
exploration agents and simulation (paper: `online-rlhf-exploration.txt`)."""
from rbx.rlhf.agents import AGENTS, Agent, AgentState, StepInfo, algorithm1, get, greedy, selm, vpo, xpo
from rbx.rlhf.env import PreferenceEnv, example1, example2, make_env, preference, random_instance
from rbx.rlhf.objectives import J, J_star, kl, log_likelihood, log_optimal_policy, optimal_policy, regret
from rbx.rlhf.simulate import make_run, rollout, simulate, sweep
from rbx.rlhf.solver import SolverConfig, objective, solve_optimistic

__all__ = [
    "AGENTS", "Agent", "AgentState", "StepInfo", "algorithm1", "get", "greedy", "selm", "vpo", "xpo",
    "PreferenceEnv", "example1", "example2", "make_env", "preference", "random_instance",
    "J", "J_star", "kl", "log_likelihood", "log_optimal_policy", "optimal_policy", "regret",
    "make_run", "rollout", "simulate", "sweep", "SolverConfig", "objective", "solve_optimistic",
]
