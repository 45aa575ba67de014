"""Exploration-bonus schedules α_t as traced functions of the step t (1-based).

A `Schedule` is any callable `t -> alpha_t` that works on a traced scalar `t`, so the
whole simulation stays one jitted program and the schedules' scale factors can be
vmapped over in a sweep. The constructors below are those of the RLHF paper
(`online-rlhf-exploration.txt`); the neural-bandit family's α(t) = ν·t^n is `power`.
"""
from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp

from rbx import _checks

Schedule = Callable[[jnp.ndarray], jnp.ndarray]


def constant(alpha) -> Schedule:
  """α_t = alpha for every t (VPO's and XPO's fixed α, (3.1a))."""
  _checks.positive("alpha", alpha, strict=False)
  return lambda t: jnp.asarray(alpha, jnp.float32) + 0.0 * jnp.asarray(t, jnp.float32)


def power(nu, n=0.5) -> Schedule:
  """α_t = ν · t^n, the neural-bandit bias term α(t) (NeuralRBMLE paper, section 4)."""
  _checks.positive("nu", nu, strict=False)
  return lambda t: jnp.asarray(nu, jnp.float32) * jnp.asarray(t, jnp.float32) ** n


def proposition3(num_actions, horizon, beta, r_max, kappa, scale=1.0) -> Schedule:
  """Proposition 3 of the RLHF paper (under Assumption 1 with constant κ):

    α_t = A log T + t^(1/(β+2)) (r_max/κ)^(β/(β+2)) (log T / (A (r_max + log T)))^((β+1)/(β+2)),

  multiplied by `scale`. Gives regret O(T^((β+1)/(β+2))).
  """
  A, T, beta, r_max = _common(num_actions, horizon, beta, r_max)
  _checks.positive("kappa", kappa)
  logT = jnp.log(T)
  b = beta
  coef = (r_max / kappa) ** (b / (b + 2)) * (logT / (A * (r_max + logT))) ** ((b + 1) / (b + 2))
  return lambda t: scale * (A * logT + jnp.asarray(t, jnp.float32) ** (1 / (b + 2)) * coef)


def theorem1_beta0(num_actions, horizon, r_max, scale=1.0) -> Schedule:
  """The β = 0 schedule of the discussion after Theorem 1: α_t = A log T + sqrt(t / (A r_max)),

  multiplied by `scale`. Gives regret Õ(√T).
  """
  A, T, _, r_max = _common(num_actions, horizon, 1.0, r_max)
  logT = jnp.log(T)
  return lambda t: scale * (A * logT + jnp.sqrt(jnp.asarray(t, jnp.float32) / (A * r_max)))


def appendix_e(num_actions, horizon, beta, r_max, mu, scale=1.0) -> Schedule:
  """Appendix E of the RLHF paper (under Assumption 2 with constant μ):

    α_t = A + t^((β+1)/(3β+2)) (r_max/μ)^(β/(3β+2)) (log T / (A (r_max + log T)))^((2β+1)/(3β+2)),

  multiplied by `scale`. Gives regret O(T^((2β+1)/(3β+2))).
  """
  A, T, beta, r_max = _common(num_actions, horizon, beta, r_max)
  _checks.positive("mu", mu)
  logT = jnp.log(T)
  b = beta
  coef = (r_max / mu) ** (b / (3 * b + 2)) * (logT / (A * (r_max + logT))) ** ((2 * b + 1) / (3 * b + 2))
  return lambda t: scale * (A + jnp.asarray(t, jnp.float32) ** ((b + 1) / (3 * b + 2)) * coef)


SCHEDULES: dict[str, Callable[..., Schedule]] = {
    "constant": constant,
    "power": power,
    "proposition3": proposition3,
    "theorem1_beta0": theorem1_beta0,
    "appendix_e": appendix_e,
}


def get(name: str, **kwargs) -> Schedule:
  """A schedule by name, e.g. `get("proposition3", num_actions=3, horizon=T, ...)`."""
  return SCHEDULES[_checks.choice("schedule", name, SCHEDULES)](**kwargs)


def _common(num_actions, horizon, beta, r_max):
  _checks.positive_int("num_actions", num_actions)
  _checks.positive_int("horizon", horizon)
  if horizon < 2:
    raise ValueError(f"horizon must be >= 2 so that log T > 0, got {horizon}")
  _checks.positive("beta", beta)
  _checks.positive("r_max", r_max)
  return (jnp.float32(num_actions), jnp.float32(horizon),
          jnp.asarray(beta, jnp.float32), jnp.asarray(r_max, jnp.float32))
