"""Global maximisation of the optimistic reward objective (3.1a)/(3.2a) of the RLHF paper.

    F(r) = ℓ(r, D) + α J*(r; π_cal)  over the box  r ∈ [0, r_max]^A.

ℓ (2.2) is concave and J* (2.7) is convex, so F is a difference of convex functions with,
in general, several local maxima: the optimism bonus pushes r to the corners of the box
wherever the data leave it free. A single projected-gradient run stalls in one of them.

Method (fixed iteration counts, so it jits and vmaps):

1. *Candidates.* Local maxima of the convex part sit at vertices, so the candidate starts are
   box vertices r ∈ {0, r_max}^A: all 2^A − 2 non-constant ones when A ≤ `max_vertex_actions`,
   otherwise the A − 1 "threshold" vertices of two orderings (by log π_ref − log π_cal, the
   vertex order of the data-free problem, and by the warm start). The constant vector
   (placed at r_max/2) and the warm start `r_init` are always candidates. F is evaluated at
   all of them and the best `starts` are refined (optionally only the best `keep` of them
   after `prune_after` iterations: faster, but on the tests' random instances keeping fewer
   than all 16 vertex starts of A = 4 misses some global maxima, so the default keeps all).
2. *Refinement.* Each start takes `iterations` steps of a safeguarded projected Newton
   method. Bounds that are active (at 0 with ∂F/∂r < 0, or at r_max with ∂F/∂r > 0) are
   frozen; on the free coordinates three directions are tried — the Newton direction of the
   concave minorant ℓ(r) + α ∇J*(r_k)·r (a DC / majorise–minimise step, always an ascent
   direction), the Newton direction of F itself (quadratic convergence near a strict local
   maximum; truncated at negative curvature) and the gradient scaled to the box — each at the
   step sizes `shrink`^0, …, `shrink`^(`line_search`−1). Newton systems are solved by conjugate
   gradients (A steps), which vectorise across seeds and starts where batched LAPACK calls do
   not. The best projected point by F is kept, so F never decreases.
3. The best refined point is returned.

F and ℓ are invariant under r → r + c, so the maximiser is unique only up to such shifts
inside the box; the policy π_r it induces is unique where the maximum is.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx.rlhf import objectives


class SolverConfig(NamedTuple):
  """Static settings of `solve_optimistic` (they set array shapes, so they are not traced).

  A step of an agent costs about starts × iterations × (3 · line_search + 1) evaluations of F,
  each O(A²). The defaults reach the brute-force maximum to 1e-3 on the tests' random
  instances; lowering `starts` to 8 for A ≤ 4 does not (it drops vertex basins).
  """
  iterations: int = 12
  starts: int = 16
  line_search: int = 6
  prune_after: int = 4
  keep: int = 16
  shrink: float = 0.2
  max_vertex_actions: int = 5


def objective(r, wins, pi_ref, pi_cal, beta, alpha):
  """F(r) = ℓ(r, wins) + α J*(r; π_cal), the objective of (3.1a)/(3.2a); scalar."""
  return objectives.log_likelihood(r, wins) + alpha * objectives.J_star(r, pi_ref, pi_cal, beta)


def solve_optimistic(wins: chex.Array, pi_ref: chex.Array, pi_cal: chex.Array, beta, alpha,
                     r_max, r_init: chex.Array | None = None,
                     config: SolverConfig = SolverConfig()) -> chex.Array:
  """argmax over r ∈ [0, r_max]^A of ℓ(r, wins) + α J*(r; π_cal), (3.1a)/(3.2a).

  Args:
    wins: win counts, shape (A, A). pi_ref, pi_cal: shape (A,). beta, alpha, r_max: scalars.
    r_init: optional warm start, shape (A,) (e.g. the previous round's estimate).
    config: iteration counts; see the module docstring for the method.
  Returns:
    the maximiser r, shape (A,).
  """
  chex.assert_rank([wins, pi_ref, pi_cal], [2, 1, 1])
  A = pi_ref.shape[0]
  r_max = jnp.asarray(r_max, jnp.float32)
  F = lambda r: objective(r, wins, pi_ref, pi_cal, beta, alpha)

  cands = [jnp.full((1, A), 0.5) * r_max]
  if A <= config.max_vertex_actions:
    cands.append(jnp.asarray(_vertices(A)) * r_max)
  else:
    orders = [jnp.log(pi_ref) - jnp.log(pi_cal)]
    if r_init is not None:
      orders.append(r_init)
    cands += [_threshold_vertices(o) * r_max for o in orders]
  if r_init is not None:
    cands.append(jnp.clip(r_init, 0.0, r_max)[None])
  cands = jnp.concatenate(cands)
  values = jax.vmap(F)(cands)
  if cands.shape[0] > config.starts:
    _, idx = jax.lax.top_k(values, config.starts)
    cands = cands[idx]

  step = lambda r, _: (_ascent_step(r, wins, pi_ref, pi_cal, beta, alpha, r_max, config), None)
  ascend = lambda rs, n: jax.vmap(lambda r0: jax.lax.scan(step, r0, None, length=n)[0])(rs)
  if config.keep < cands.shape[0]:
    cands = ascend(cands, config.prune_after)
    _, idx = jax.lax.top_k(jax.vmap(F)(cands), config.keep)
    cands = ascend(cands[idx], config.iterations - config.prune_after)
  else:
    cands = ascend(cands, config.iterations)
  return cands[jnp.argmax(jax.vmap(F)(cands))]


def _ascent_step(r, wins, pi_ref, pi_cal, beta, alpha, r_max, config):
  """One safeguarded projected Newton step (module docstring, step 2)."""
  F = lambda x: objective(x, wins, pi_ref, pi_cal, beta, alpha)
  g = jax.grad(F)(r)
  # -∇²ℓ is the Laplacian of the comparison graph with weights (W_ab + W_ba) σ'(r_a − r_b).
  a, b, D = objectives.pair_incidence(r.shape[0])
  d = r @ D
  lap = (D * ((wins[a, b] + wins[b, a]) * jax.nn.sigmoid(d) * jax.nn.sigmoid(-d))) @ D.T
  pi = objectives.optimal_policy(r, pi_ref, beta)
  curv_j = alpha / beta * (jnp.diag(pi) - jnp.outer(pi, pi))         # ∇²(α J*)

  tol = 1e-6 * r_max
  frozen = ((r <= tol) & (g < 0)) | ((r >= r_max - tol) & (g > 0))
  free = ~frozen
  g_free = jnp.where(free, g, 0.0)
  scale = 1.0 + jnp.max(jnp.diag(lap)) + jnp.max(jnp.diag(curv_j))
  ridge = 1e-6 * scale
  gmax = jnp.max(jnp.abs(g_free))
  directions = jnp.stack([
      _truncated_cg(lap, g_free, free, ridge),           # DC / MM step on the concave minorant
      _truncated_cg(lap - curv_j, g_free, free, ridge),  # Newton on F (fast near a strict max)
      g_free * r_max / jnp.where(gmax > 0, gmax, 1.0),   # scaled projected gradient
  ])
  sizes = config.shrink ** jnp.arange(config.line_search, dtype=jnp.float32)
  trial = jnp.clip(r + sizes[:, None, None] * directions[None], 0.0, r_max).reshape(-1, r.shape[0])
  trial = jnp.concatenate([r[None], trial])
  values = jax.vmap(F)(trial)
  values = jnp.where(jnp.isfinite(values), values, -jnp.inf)
  return trial[jnp.argmax(values)]


def _truncated_cg(m, b, free, ridge):
  """Solves (m + ridge·I) x = b on the `free` coordinates by conjugate gradients, A steps.

  Stops at the first direction of non-positive curvature (Steihaug's truncation), so for an
  indefinite m it still returns an ascent direction (or 0). Pure array ops: unlike a batched
  LAPACK solve it vectorises over any number of seeds and starts.
  """
  mask = free.astype(b.dtype)
  matvec = lambda p: mask * (m @ (mask * p)) + ridge * p
  tiny = 1e-20 * (1.0 + jnp.dot(b, b))

  def body(_, carry):
    x, res, p, rs, done = carry
    mp = matvec(p)
    curv = jnp.dot(p, mp)
    done = done | (curv <= 0)
    step = jnp.where(done, 0.0, rs / jnp.where(curv > 0, curv, 1.0))
    x, res = x + step * p, res - step * mp
    rs_new = jnp.dot(res, res)
    done = done | (rs_new <= tiny)
    p = res + jnp.where(done, 0.0, rs_new / jnp.where(rs > 0, rs, 1.0)) * p
    return x, res, p, rs_new, done

  rs = jnp.dot(b, b)
  init = (jnp.zeros_like(b), b, b, rs, rs <= tiny)
  return jax.lax.fori_loop(0, b.shape[0] + 2, body, init)[0]


def _vertices(A: int) -> np.ndarray:
  """The 2^A − 2 non-constant vertices of {0, 1}^A, shape (2^A − 2, A)."""
  v = np.array(list(itertools.product([0.0, 1.0], repeat=A)), np.float32)
  return v[1:-1]


def _threshold_vertices(score: chex.Array) -> chex.Array:
  """Vertices 1{score ≥ k-th largest} for k = 1..A−1, shape (A−1, A)."""
  A = score.shape[0]
  rank = jnp.argsort(jnp.argsort(-score))          # 0 for the largest score
  return (rank[None, :] < jnp.arange(1, A)[:, None]).astype(jnp.float32)
