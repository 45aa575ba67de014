"""Exploration-bonus schedules α_t as traced functions of the step t (1-based).

A `Schedule` is any callable `t -> alpha_t` that works on a traced scalar `t`, so the
whole simulation stays one jitted program and the schedules' scale factors can be
vmapped over in a sweep. The constructors below are those of the RLHF paper
(`online-rlhf-exploration.txt`); the neural-bandit family's α(t) = ν·t^n is `power`.

The number of answers A may be any Python integer (A = V^L over sequences: 32^32 ≈ 10^48):
the schedules read it as log A, so their terms in 1/A stay finite, and a term of size A
(Theorem 1's floor A log T, Appendix E's A) that exceeds float32 is a ValueError saying so.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

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
  log_A, T, beta, r_max = _common(num_actions, horizon, beta, r_max)
  _checks.positive("kappa", kappa)
  floor = _sized("A log T", num_actions, math.log(horizon), scale)
  logT = jnp.log(T)
  b = beta
  coef = jnp.exp(b / (b + 2) * jnp.log(r_max / kappa)
                 + (b + 1) / (b + 2) * (jnp.log(logT / (r_max + logT)) - log_A))
  return lambda t: scale * (floor + jnp.asarray(t, jnp.float32) ** (1 / (b + 2)) * coef)


def theorem1_beta0(num_actions, horizon, r_max, scale=1.0) -> Schedule:
  """The β = 0 schedule of the discussion after Theorem 1: α_t = A log T + sqrt(t / (A r_max)),

  multiplied by `scale`. Gives regret Õ(√T).
  """
  log_A, _, _, r_max = _common(num_actions, horizon, 1.0, r_max)
  floor = _sized("A log T", num_actions, math.log(horizon), scale)
  coef = jnp.exp(-0.5 * (log_A + jnp.log(r_max)))                   # 1/sqrt(A r_max)
  return lambda t: scale * (floor + jnp.sqrt(jnp.asarray(t, jnp.float32)) * coef)


def appendix_e(num_actions, horizon, beta, r_max, mu, scale=1.0) -> Schedule:
  """Appendix E of the RLHF paper (under Assumption 2 with constant μ):

    α_t = A + t^((β+1)/(3β+2)) (r_max/μ)^(β/(3β+2)) (log T / (A (r_max + log T)))^((2β+1)/(3β+2)),

  multiplied by `scale`. Gives regret O(T^((2β+1)/(3β+2))).
  """
  log_A, T, beta, r_max = _common(num_actions, horizon, beta, r_max)
  _checks.positive("mu", mu)
  floor = _sized("A", num_actions, 1.0, scale)
  logT = jnp.log(T)
  b = beta
  coef = jnp.exp(b / (3 * b + 2) * jnp.log(r_max / mu)
                 + (2 * b + 1) / (3 * b + 2) * (jnp.log(logT / (r_max + logT)) - log_A))
  return lambda t: scale * (floor + jnp.asarray(t, jnp.float32) ** ((b + 1) / (3 * b + 2)) * coef)


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
  return (jnp.float32(math.log(num_actions)), jnp.float32(horizon),
          jnp.asarray(beta, jnp.float32), jnp.asarray(r_max, jnp.float32))


def _sized(term: str, num_actions: int, factor: float, scale) -> jnp.ndarray:
  """The schedule's term A·factor (A exact, any size) as a float32, after checking that it, and
  scale times it when scale is concrete, fit float32 (the log-space check: log A + log factor)."""
  log_value = math.log(num_actions) + math.log(factor)
  if _checks.is_concrete(scale) and float(scale) > 0:
    log_value += math.log(float(scale))
  if log_value > math.log(float(np.finfo(np.float32).max)):
    raise ValueError(
        f"alpha_t = {term} + ... >= 10^{log_value / math.log(10):.1f} exceeds float32 (max 3.4e38) "
        f"at num_actions = A = 10^{math.log10(num_actions):.1f} (V^L answers: log A = L log V): "
        f"use a constant alpha or a schedule without an A term")
  return jnp.float32(float(num_actions) * factor)
