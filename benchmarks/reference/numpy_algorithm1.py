"""Algorithm 1 of the RLHF paper in plain NumPy, one seed at a time: what a researcher would
write without rbx. The reference side of `rlhf_throughput.py`; it shares no code with rbx.

Single prompt (the bandit setting of the paper's section 4). The reward step (3.2a) uses the
same method as rbx's solver (vertex multi-start, the starts chosen by F and by the relaxed
score; per start, DC steps on the concave problem of the start's policy, then safeguarded
projected Newton steps on F (the DC direction with the current slope and the scaled gradient;
with `newton_f`, F's own Newton direction too; the DC steps try the DC direction alone, and the
scaled gradient with `dc_gradient`); a fixed step-size grid; ℓ and σ from A exponentials as rbx,
`pair_ratios`), with `np.linalg.solve` for the Newton systems (rbx: at most `cg_iterations`
preconditioned conjugate-gradient steps, which vectorise over seeds and starts; a direct
solve is what a NumPy loop would use, and at these sizes it costs the loop no more).
"""
from __future__ import annotations

import itertools

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax


def pair_ratios(r, r_max):
  """e^(r_b − r_a) for points r in the box, shape (..., A) -> (..., A, A), as rbx's solver
  computes it for r_max ≤ 88: from the A numbers e^(r − r_max/2) (dense beyond)."""
  if r_max > 88:
    return np.exp(r[..., None, :] - r[..., :, None])
  u = np.exp(r - 0.5 * r_max)
  return u[..., None, :] / u[..., :, None]


def objective(r, wins, pi_ref, pi_cal, beta, alpha, r_max):
  """ℓ(r) + α J*(r; π_cal) for a batch of points r, shape (n, A) -> (n,)."""
  ll = -np.sum(wins * np.log1p(pair_ratios(r, r_max)), axis=(1, 2))
  return ll + alpha * (beta * logsumexp(np.log(pi_ref) + r / beta, axis=1) - r @ pi_cal)


def log_likelihood_gradient(r, wins, r_max):
  v = pair_ratios(r, r_max)
  m = wins * v / (1.0 + v)                                          # W_ab σ(r_b − r_a)
  return m.sum(1) - m.sum(0)


def solve(wins, pi_ref, pi_cal, beta, alpha, r_max, r_init, iterations, dc_iterations, starts,
          sizes, newton_f=False, dc_gradient=False):
  A = len(pi_ref)
  cands = [np.full(A, 0.5 * r_max), np.clip(r_init, 0, r_max)]
  if A <= 5:
    cands += [np.array(v, float) * r_max for v in itertools.product([0, 1], repeat=A)][1:-1]
  else:
    cands += list(np.eye(A) * r_max)                                # the one-action vertices
    for score in (np.log(pi_ref) - np.log(np.maximum(pi_cal, 1e-300)), r_init):
      order = np.argsort(-score)
      cands += [np.isin(np.arange(A), order[:k]) * r_max for k in range(1, A)]
  cands = np.array(cands, float)
  values = np.concatenate([objective(cands[i:i + 64], wins, pi_ref, pi_cal, beta, alpha, r_max)
                           for i in range(0, len(cands), 64)])   # (64, A, A) at a time
  # relaxed score: a low action's win over a high one at log σ(0), not log σ(−r_max); the
  # centre and the warm start (rows 0, 1) always refined; the rest alternately by each score
  high = cands > 0.5 * r_max
  contradicted = np.einsum("ca,ab,cb->c", ~high, wins, high)
  relaxed = values + (-np.log(2.0) - log_expit(-r_max)) * contradicted
  relaxed[:2] = np.inf
  chosen = []
  for i in range(min(starts, len(cands))):
    score = (relaxed if i % 2 == 0 else values).copy()
    score[chosen] = -np.inf
    chosen.append(int(np.argmax(score)))
  cands = cands[chosen]
  best, best_value = None, -np.inf
  for r in cands:
    slope = alpha * (softmax(np.log(pi_ref) + r / beta) - pi_cal)   # the start's DC slope
    for it in range(iterations):
      dc = it < dc_iterations
      pi = softmax(np.log(pi_ref) + r / beta)
      g = log_likelihood_gradient(r, wins, r_max) + (slope if dc else alpha * (pi - pi_cal))
      v = pair_ratios(r, r_max)
      c = (wins + wins.T) * v / (1.0 + v) ** 2                      # σ(d) σ(−d)
      lap = np.diag(c.sum(1)) - c
      curv = alpha / beta * (np.diag(pi) - np.outer(pi, pi))
      free = ~(((r <= 1e-6 * r_max) & (g < 0)) | ((r >= r_max * (1 - 1e-6)) & (g > 0)))
      ridge = 1e-6 * (1 + lap.diagonal().max() + curv.diagonal().max())
      dirs = []
      for m in (lap, lap - curv) if newton_f and not dc else (lap,):
        sub = m[np.ix_(free, free)] + ridge * np.eye(free.sum())
        step = np.zeros(A)
        try:
          step[free] = np.linalg.solve(sub, g[free])
        except np.linalg.LinAlgError:
          pass
        dirs.append(step)
      gf = np.where(free, g, 0.0)
      if not dc or dc_gradient:
        dirs.append(gf * r_max / max(np.abs(gf).max(), 1e-30))
      trial = np.clip(r + sizes[:, None, None] * np.array(dirs)[None], 0, r_max).reshape(-1, A)
      trial = np.vstack([r[None], trial])
      if dc:
        vals = objective(trial, wins, pi_ref, pi_cal, beta, 0.0, r_max) + trial @ slope
      else:
        vals = objective(trial, wins, pi_ref, pi_cal, beta, alpha, r_max)
      vals[~np.isfinite(vals)] = -np.inf
      r = trial[np.argmax(vals)]
    v = objective(r[None], wins, pi_ref, pi_cal, beta, alpha, r_max)[0]
    if v > best_value:
      best, best_value = r, v
  return best


def run(r_star, pi_ref, beta, r_max, alpha, steps, seed, solver, reward_step=None):
  """Per-step regret of Algorithm 1 with constant α for one seed, shape (steps,).

  `solver`: the keyword arguments of `reward_step` (default `solve`: iterations,
  dc_iterations, starts, sizes); another reward step (e.g. `scipy_algorithm1.solve`) may
  replace it, the loop and its random stream unchanged.
  """
  reward_step = reward_step or solve
  rng = np.random.default_rng(seed)
  A = len(r_star)
  pi_ref = pi_ref / pi_ref.sum()
  pi_star = softmax(np.log(pi_ref) + r_star / beta)
  wins = np.zeros((A, A))
  r = np.full(A, 0.5 * r_max)
  pi_prev = pi = pi_ref.copy()
  regret = np.empty(steps)
  for t in range(steps):
    regret[t] = beta * np.sum(pi * (np.log(np.maximum(pi, 1e-300)) - np.log(pi_star)))
    a1, a2 = rng.choice(A, p=pi_prev), rng.choice(A, p=pi)
    if rng.random() < expit(r_star[a1] - r_star[a2]):
      wins[a1, a2] += 1
    else:
      wins[a2, a1] += 1
    r = reward_step(wins, pi_ref, pi, beta, alpha, r_max, r, **solver)
    pi_prev, pi = pi, softmax(np.log(pi_ref) + r / beta)
  return regret
