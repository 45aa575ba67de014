"""Slow, independent float64 references (NumPy/SciPy) that the tests compare rbx against."""
from __future__ import annotations

import itertools

import numpy as np
from scipy import optimize
from scipy.special import log_expit, logsumexp


def objective(r, wins, pi_ref, pi_cal, beta, alpha):
  """ℓ(r) + α J*(r; π_cal) in float64; r may carry leading batch axes."""
  r = np.asarray(r, np.float64)
  d = r[..., :, None] - r[..., None, :]
  ll = np.sum(wins * log_expit(d), axis=(-1, -2))
  jstar = beta * logsumexp(np.log(pi_ref) + r / beta, axis=-1) - r @ pi_cal
  return ll + alpha * jstar


def brute_force_max(wins, pi_ref, pi_cal, beta, alpha, r_max, grid=None, refine=24):
  """Global max of the objective over [0, r_max]^A: dense grid, then L-BFGS-B from the best
  grid points and from every vertex. Returns (max value, argmax)."""
  A = len(pi_ref)
  n = grid or {2: 401, 3: 81, 4: 31}.get(A, 11)
  axis = np.linspace(0.0, r_max, n)
  pts = np.array(list(itertools.product(axis, repeat=A - 1)))
  pts = np.concatenate([np.zeros((len(pts), 1)), pts], axis=1)    # r_0 = 0 ... but shift
  # every r in the box is a shift of one with min 0; cover those by also letting r_0 vary
  pts = np.concatenate([pts, r_max - pts]) if A > 1 else pts
  vals = objective(pts, wins, pi_ref, pi_cal, beta, alpha)
  starts = list(pts[np.argsort(-vals)[:refine]])
  starts += [np.array(v, float) * r_max for v in itertools.product([0, 1], repeat=A)]
  best_v, best_r = -np.inf, None
  f = lambda r: -objective(r, wins, pi_ref, pi_cal, beta, alpha)
  for s in starts:
    res = optimize.minimize(f, s, method="L-BFGS-B", bounds=[(0.0, r_max)] * A,
                            options=dict(maxiter=2000, ftol=1e-15, gtol=1e-12))
    for cand in (res.x, s):
      v = -f(cand)
      if v > best_v:
        best_v, best_r = v, np.asarray(cand)
  return best_v, best_r


def random_problem(rng: np.random.Generator, A: int):
  """A random optimistic-MLE instance with β, α, r_max and counts varied over decades."""
  beta = 10 ** rng.uniform(-3, 1)
  r_max = min(10 ** rng.uniform(-1, 1.7), 500 * beta)
  alpha = 10 ** rng.uniform(-2, 3)
  scale = 10 ** rng.uniform(0, 4)
  mask = rng.random((A, A)) < rng.uniform(0.2, 1.0)
  wins = np.where(mask, np.floor(rng.random((A, A)) * scale), 0.0)
  np.fill_diagonal(wins, 0.0)
  pi_ref = rng.dirichlet(np.full(A, rng.choice([0.3, 1.0, 5.0])))
  pi_ref = np.maximum(pi_ref, 1e-6); pi_ref /= pi_ref.sum()
  if rng.random() < 0.3:
    pi_cal = np.eye(A)[rng.integers(A)]
  else:
    pi_cal = rng.dirichlet(np.ones(A))
  return dict(wins=wins, pi_ref=pi_ref, pi_cal=pi_cal, beta=beta, alpha=alpha, r_max=r_max)
