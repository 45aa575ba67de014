"""An instance's constants of the RLHF paper's Assumption 1 (κ, τ) and Assumption 2 (μ).

Both compare human preference π_HF(a | x) ∝ exp(r*(x, a)) ((2.1)'s policy) with π_ref over
ordered pairs of answers (a₊, a₋) of one prompt:

* Assumption 1 (section 4): π_HF(a₊)/π_HF(a₋) ≥ τ  ⟹  π_ref(a₊)/π_ref(a₋) ≥ 1/κ, with κ, τ ≥ 1.
  For a given τ the smallest such κ is
  κ(τ) = max(1, max over pairs with r*(a₊) − r*(a₋) ≥ log τ of π_ref(a₋)/π_ref(a₊)).
* Assumption 2 (Appendix E): π_HF(a₊)/π_HF(a₋) ≤ μ π_ref(a₊)/π_ref(a₋) for every pair; the
  smallest μ is max over pairs of exp(r*(a₊) − r*(a₋)) π_ref(a₋)/π_ref(a₊).

With several prompts the constants are the maxima over prompts: the paper states both for the
bandit (one prompt; its section 2 defines π_HF(·|x) and π_ref(·|x) per prompt), and a single κ
or μ that enters the worst-case schedules of Proposition 3 and Appendix E must hold at every
prompt the learner may be asked, so the contextual analogue is the worst case over the
prompts of ρ's support (an expectation over ρ would not bound the per-prompt terms of the
regret's proof, Appendix D). A contextual environment (`rbx.rlhf.contextual`) is read through
its `base` preference environment (its r* per prompt). Everything is computed in log space with
jax.numpy, so it works on traced environments (a sweep over Example 2's κ builds Proposition
3's schedule from each traced instance); the
schedules `proposition3` and `appendix_e` take their κ and μ from here when a config or
`rbx.rlhf.get` leaves them out.
"""
from __future__ import annotations

import jax.numpy as jnp

from rbx import _checks
from rbx.rlhf.env import PreferenceEnv


def kappa(env, tau=1.0) -> jnp.ndarray:
  """The smallest κ ≥ 1 of Assumption 1 at this τ ≥ 1 over every prompt with ρ(x) > 0, a
  scalar (float32). `env`: a `PreferenceEnv` or a `ContextualPreferenceEnv`."""
  if _checks.is_concrete(tau) and not float(tau) >= 1.0:
    raise ValueError(f"tau must be >= 1 (Assumption 1), got {tau}")
  r, log_ref, asked = _pairs(env)
  applies = asked & (r >= jnp.log(jnp.asarray(tau, jnp.float32)))  # π_HF ratio ≥ τ
  worst = jnp.max(jnp.where(applies, -log_ref, 0.0))               # log π_ref(a₋)/π_ref(a₊)
  return jnp.exp(jnp.maximum(worst, 0.0))


def mu(env) -> jnp.ndarray:
  """The smallest μ of Assumption 2 over every prompt with ρ(x) > 0, a scalar (float32; ≥ 1, as
  the pairs come both ways). `env`: a `PreferenceEnv` or a `ContextualPreferenceEnv`."""
  r, log_ref, asked = _pairs(env)
  return jnp.exp(jnp.max(jnp.where(asked, r - log_ref, 0.0)))


def _pairs(env) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
  """r*(a₊) − r*(a₋), log π_ref(a₊)/π_ref(a₋) for every prompt and ordered pair, and whether
  the prompt has ρ(x) > 0, (X, A, A) each (broadcast)."""
  env = getattr(env, "base", env)          # a contextual environment's preference environment
  if not isinstance(env, PreferenceEnv):
    raise ValueError(f"env must be an rbx.rlhf preference environment (PreferenceEnv or "
                     f"ContextualPreferenceEnv), got {type(env).__name__}")
  r = env.r_star[:, :, None] - env.r_star[:, None, :]
  log_pi = jnp.log(env.pi_ref)
  asked = jnp.broadcast_to((env.rho > 0)[:, None, None], r.shape)
  return r, log_pi[:, :, None] - log_pi[:, None, :], asked
