"""Algorithm 1 of the RLHF paper as a researcher would write it without rbx: a per-seed loop
with SciPy's L-BFGS-B from 12 starts for the reward step (3.2a). A baseline of
`rlhf_throughput.py`; it shares no code with rbx.

The loop (one prompt; a1 ~ π^(t−1), a2 ~ π^(t), the Bradley–Terry comparison, the reward
re-fitted, π^(t+1) by (2.4)) is `numpy_algorithm1.run`; only the reward step
differs: maximise ℓ(r, D) + α J*(r; π^(t)) (2.2), (2.7) over [0, r_max]^A with
`scipy.optimize.minimize(method="L-BFGS-B")` and its analytic gradient, from the previous
estimate and 11 points drawn uniformly in the box, keeping the best.
"""
from __future__ import annotations

import numpy as np
from scipy import optimize
from scipy.special import expit, log_expit, logsumexp, softmax

from benchmarks.reference import numpy_algorithm1

STARTS = 12


def negative_objective(r, wins, pi_ref, pi_cal, beta, alpha):
  """−(ℓ(r) + α J*(r; π_cal)) and its gradient, for one point r (A,)."""
  d = r[:, None] - r[None, :]
  logits = np.log(pi_ref) + r / beta
  value = np.sum(wins * log_expit(d)) + alpha * (beta * logsumexp(logits) - r @ pi_cal)
  m = wins * expit(-d)
  grad = m.sum(1) - m.sum(0) + alpha * (softmax(logits) - pi_cal)
  return -value, -grad


def solve(wins, pi_ref, pi_cal, beta, alpha, r_max, r_init, rng):
  A = len(pi_ref)
  starts = [r_init] + list(rng.uniform(0, r_max, (STARTS - 1, A)))
  best = None
  for r0 in starts:
    res = optimize.minimize(negative_objective, r0, (wins, pi_ref, pi_cal, beta, alpha),
                            jac=True, method="L-BFGS-B", bounds=[(0, r_max)] * A)
    if best is None or res.fun < best.fun:
      best = res
  return best.x


def run(r_star, pi_ref, beta, r_max, alpha, steps, seed):
  """Per-step regret of Algorithm 1 with constant α for one seed, shape (steps,)."""
  rng = np.random.default_rng(seed + 10**6)        # the starts' stream, apart from the loop's
  return numpy_algorithm1.run(r_star, pi_ref, beta, r_max, alpha, steps, seed,
                              solver=dict(rng=rng), reward_step=solve)
