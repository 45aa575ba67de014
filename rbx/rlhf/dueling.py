"""The classic dueling-bandit view of the RLHF preference environments: the Condorcet winner and
the weak and strong dueling regrets, recorded by every run beside the paper's regret (2.6).

At a prompt x the Bradley–Terry oracle (2.1) prefers a to b with probability
P_x(a ≻ b) = σ(r*(x, a) − r*(x, b)), so the preference matrix has a Condorcet winner — an answer
preferred to every other with probability > 1/2 — exactly when r*(x, ·) has a unique maximiser
a*(x), and then it is that answer. Arm a's gap is

    Δ_x(a) = P_x(a*(x) ≻ a) − 1/2 = σ(max_b r*(x, b) − r*(x, a)) − 1/2  ∈ [0, 1/2),

and a step that compares a1 and a2 at the observed prompt x_t scores (Yue et al. 2012; Chen &
Frazier 2017; duelpy's `WeakRegret` and `StrongRegret`)

    weak_regret   = min(Δ_x(a1), Δ_x(a2)),    strong_regret = max(Δ_x(a1), Δ_x(a2)).

Their mean (Δ_x(a1) + Δ_x(a2))/2 is the "regret" of the RUCB, RMED and Double Thompson Sampling
papers (duelpy's `AverageRegret`). x_t ~ ρ, so their expectation is the ρ-weighted mean over
prompts. The gaps are defined with ties at the maximum too (every maximiser has Δ = 0), so the
metrics are recorded for every agent on every instance; the dueling agents
(`rbx.rlhf.learners.dueling`) additionally require a Condorcet winner (`require_condorcet`).
"""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.core import protocol
from rbx.rlhf import contextual, env as env_lib

METRICS = ("weak_regret", "strong_regret")
"""The names of the metrics recorded beside the regret (2.6)."""


def r_star(env) -> chex.Array:
  """r* (X, A) of a tabular or contextual preference environment."""
  return env.base.r_star if isinstance(env, contextual.ContextualPreferenceEnv) else env.r_star


def gaps(r: chex.Array) -> chex.Array:
  """Δ(a) = σ(max r − r_a) − 1/2 of every answer, (..., A) -> (..., A)."""
  return jax.nn.sigmoid(jnp.max(r, axis=-1, keepdims=True) - r) - 0.5


def dueling_regrets(env, state, obs, query) -> dict[str, chex.Array]:
  """{"weak_regret", "strong_regret"} of the step that compares `query.a1` and `query.a2` at
  prompt `obs.x` (module docstring); float32 scalars."""
  del state
  gap = gaps(r_star(env)[obs.x])
  pair = jnp.stack([gap[query.a1], gap[query.a2]])
  return {"weak_regret": jnp.min(pair), "strong_regret": jnp.max(pair)}


def condorcet_winner(env) -> np.ndarray:
  """The Condorcet winner a*(x) of every prompt, int (X,); ValueError naming the first prompt
  whose r*(x, ·) has a tie at its maximum (no Condorcet winner under Bradley–Terry)."""
  r = np.asarray(r_star(env))
  top = r == r.max(axis=-1, keepdims=True)
  tied = np.flatnonzero(top.sum(axis=-1) > 1)
  if tied.size:
    x = int(tied[0])
    raise ValueError(
        f"r_star has no Condorcet winner at prompt {x}: answers "
        f"{np.flatnonzero(top[x]).tolist()} tie at its maximum {r[x].max():g} (under "
        "Bradley–Terry the Condorcet winner is the unique maximiser of r*(x, ·)); the dueling "
        "agents need r_star with a unique maximum at every prompt")
  return top.argmax(axis=-1)


def require_condorcet(agent: str):
  """`rbx.core.Agent.requires` of a dueling agent named `agent`: a tabular or contextual
  preference environment (ValueError naming the type otherwise) whose r* has a Condorcet
  winner at every prompt (`condorcet_winner`), checked where its r* is concrete."""
  def requires(env) -> None:
    if not isinstance(env, (env_lib.PreferenceEnv, contextual.ContextualPreferenceEnv)):
      raise ValueError(f"agent {agent!r} runs on the tabular and contextual preference "
                       "environments (PreferenceEnv, ContextualPreferenceEnv: example1, "
                       "example2, random_instance, custom, contextual), got "
                       f"{type(env).__name__}")
    if _checks.is_concrete(r_star(env)):
      condorcet_winner(env)
  return requires


protocol.add_metrics(env_lib.PreferenceEnv, dueling_regrets, METRICS)
protocol.add_metrics(contextual.ContextualPreferenceEnv, dueling_regrets, METRICS)
