"""The optimistic step over a shared linear reward as a researcher would solve it without rbx:
SciPy's SLSQP from many starts. The reference of `benchmarks/accuracy/linear_global.py` and
tests/rlhf/test_linear.py; it shares no code with `rbx.rlhf.linear`.

    max_θ F(θ) = Σ_D log σ(θᵀz) + α (β Σ_x ρ(x) log Σ_a π_ref(a|x) e^{θᵀφ(x,a)/β} − cᵀθ)
    s.t. θᵀ(φ(x, a) − φ(x, b)) ≤ r_max for every prompt x and answers a ≠ b,

with the analytic gradient, in float64, from θ = 0 and `starts` − 1 points drawn uniformly
along random rays inside the constraint set; the best end point by F (retracted onto the set
where SLSQP ends a hair outside).
"""
from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.special import expit, log_expit, logsumexp, softmax


def value(theta, phi, log_ref, rho, beta, alpha, z, cal):
  """F(θ) (module docstring); φ (X, A, d), log π_ref (X, A), ρ (X,), z (n, d), c (d,)."""
  lse = logsumexp(log_ref + phi @ theta / beta, axis=-1)
  return np.sum(log_expit(z @ theta)) + alpha * (beta * rho @ lse - cal @ theta)


def gradient(theta, phi, log_ref, rho, beta, alpha, z, cal):
  """∇F(θ), (d,)."""
  w = softmax(log_ref + phi @ theta / beta, axis=-1) * rho[:, None]
  return z.T @ expit(-(z @ theta)) + alpha * (np.einsum("xa,xad->d", w, phi) - cal)


def gauge(theta, phi, r_max):
  """max_x (max_a − min_a θᵀφ(x, a))/r_max: θ is feasible iff ≤ 1."""
  r = phi @ theta
  return float(np.max(r.max(-1) - r.min(-1)) / r_max)


def solve(phi, log_ref, rho, beta, alpha, r_max, z, cal, starts=20, seed=0):
  """(best F, its θ) over `starts` SLSQP runs (module docstring). Arrays as `value`'s."""
  phi, log_ref, rho, z, cal = (np.asarray(a, np.float64) for a in (phi, log_ref, rho, z, cal))
  r_max = float(r_max)
  args = (phi, log_ref, rho, float(beta), float(alpha), z, cal)
  d = phi.shape[-1]
  rows = (phi[:, :, None, :] - phi[:, None, :, :]).reshape(-1, d)
  rows = rows[np.any(rows != 0, axis=1)]
  constraint = {"type": "ineq", "fun": lambda t: r_max - rows @ t, "jac": lambda t: -rows}
  objective = lambda t: (-value(t, *args), -gradient(t, *args))
  rng = np.random.default_rng(seed)
  best = (-np.inf, None)
  for i in range(starts):
    start = np.zeros(d)
    if i:
      u = rng.normal(size=d)
      start = u / gauge(u, phi, r_max) * rng.uniform() ** (1 / d)
    res = optimize.minimize(objective, start, jac=True, method="SLSQP", constraints=[constraint],
                            options={"maxiter": 500, "ftol": 1e-12})
    theta = res.x / max(1.0, gauge(res.x, phi, r_max))
    f = value(theta, *args)
    if f > best[0]:
      best = (f, theta)
  return best
