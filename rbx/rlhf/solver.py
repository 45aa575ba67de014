"""Global maximisation of the optimistic reward objective (3.1a)/(3.2a) of the RLHF paper.

    F(r) = ℓ(r, D) + α J*(r; π_cal)  over the box  r ∈ [0, r_max]^A.

ℓ (2.2) is concave and J* (2.7) is convex, so F is a difference of convex functions with,
in general, several local maxima: the optimism bonus pushes r to the corners of the box
wherever the data leave it free. A single projected-gradient run stalls in one of them.

Method (fixed iteration counts, so it jits and vmaps):

1. *Candidates.* Local maxima of the convex part sit at vertices, so the candidate starts are
   box vertices r ∈ {0, r_max}^A: all 2^A − 2 non-constant ones when A ≤ `max_vertex_actions`,
   otherwise the A one-action vertices r_max·e_a (a policy on one answer: the basins that
   matter at small β, where J* is nearly max_a r_a) and the A − 1 "threshold" vertices of two
   orderings (by log π_ref − log π_cal, the vertex order of the data-free problem, and by the
   warm start); `tests/rlhf/test_solver.py` checks that the solution beats every one of
   them. The constant vector
   (placed at r_max/2) and the warm start `r_init` are always candidates, and always refined.
   Of the vertices, `starts` − 2 are refined, chosen alternately by two scores in closed form:
   F at the vertex, and a relaxed score that charges each comparison the vertex contradicts
   (a low action's win over a high one) log σ(0) instead of log σ(−r_max) — the refinement can
   level a few such pairs, so with sparse data a vertex that few comparisons contradict heads a
   basin far above F at the vertex, which F alone ranks low (`screen="value"`, F alone, misses
   along Algorithm 1's trajectories at A = 50, β = 0.1 the maximum of every candidate's
   refinement in most steps; `benchmarks/accuracy/solver_accuracy.py`
   and `tests/rlhf/test_solver.py::test_the_relaxed_screen_finds_the_basins_of_sparse_data`).
   Optionally only the best `keep` starts by F are refined after `prune_after` iterations:
   faster, but on the tests' random instances keeping fewer than all 16 vertex starts of
   A = 4 misses some global maxima, so the default keeps all.
2. *Refinement.* Each start r0 stands for the policy π_{r0} (a vertex's policy puts its mass
   on the vertex's high actions). Its first `dc_iterations` steps ascend the concave problem
   of that policy, M(r) = ℓ(r) + α ∇J*(r0)·r — the DC (difference-of-convex) minorant of F at
   r0, so M(r) − M(r0) ≤ F(r) − F(r0) and F increases too. Ranking trial points by M keeps the
   start in its own basin: ranked by F, a long first step from a saturated vertex can jump to
   another vertex's basin (on one random 4-action instance of 180 that cost 20% of F). The
   remaining steps ascend F itself. Every step is a safeguarded projected Newton step: bounds
   that are active (at 0 with ascent direction < 0, or at r_max with > 0) are frozen; on the
   free coordinates the direction tried is the Newton direction of ℓ + linear term (the DC
   step; on F with the linear term α ∇J*(r) of the current point: a Newton step whose Hessian
   leaves out ∇²(α J*)), and on F also the gradient scaled to the box, each at the step sizes
   `shrink`^0, …, `shrink`^(`line_search`−1). Two more directions are options: the scaled
   gradient in every step (`dc_gradient`) and, in steps on F, F's own Newton direction
   (`newton_f`: quadratic convergence near a strict local maximum; truncated at negative
   curvature; a second Newton system a step). Without them, the default, Algorithm 1 runs
   1.4–1.5× faster at A = 10 and 50 and along its trajectories misses the global maximum by
   > 1e-3 no more often, by > 1e-5 somewhat more often (the last digits converge linearly;
   benchmarks/README.md, "Accuracy"). Newton systems are solved
   by conjugate gradients preconditioned by the Laplacian's diagonal, at most `cg_iterations`
   steps (an inexact Newton direction, still one of ascent; exact CG, A + 2 steps, reaches the
   same maxima on the accuracy benchmark at a higher cost); they
   vectorise across seeds and starts where batched LAPACK calls do not, and run on several
   CPU devices at once. ℓ, ∇ℓ and the Laplacian are dense over the (A, A) pairs, O(A²) a
   step; for r_max ≤ 88 their A² terms e^(r_b − r_a) are ratios of the A numbers
   e^(r − r_max/2) (`Problem.ratios`: A exponentials, not A²; an ascent step at A = 10
   takes half the time, `python -m benchmarks.profiles.solver_profile`, table 1). The best trial point
   (including the current one) is kept, so the ranked function never decreases.
3. The best refined point is returned. *Ties*: candidates whose F lies within rounding
   (`TIE_RTOL`) of the best count as tied, and the first of them in candidate order wins —
   as in step 1's choice of starts and the β = 0 path's. Symmetric problems have exactly tied
   maxima (every prompt's data-free problem at a uniform π_ref: the A one-action vertices), and
   a plain argmax broke the tie by the last bit of F, which XLA:CPU rounds differently with
   the batch's width: a seed's policy then depended on how many seeds were vmapped with it
   (`tests/rlhf/test_solver.py::test_tied_maxima_are_broken_alike_at_every_batch_width`).

*β = 0* (the discussion after Theorem 1). Then J*(r) = max_a r_a − π_cal·r, so
F(r) = max_{a*} M_{a*}(r) with the concave M_{a*}(r) = ℓ(r) + α (e_{a*} − π_cal)·r, and
max_box F = max_{a*} max_box M_{a*}: the global maximum is the best of A concave problems.
Each starts from the best (by M_{a*}) of the vertex r_max·e_{a*}, the centre and the warm
start, ascends M_{a*} by `iterations` DC steps (whose linear term is then exact, not a
minorant), and the end point with the largest F is returned. Where β is known when the sweep
is traced (an environment the sweep closes over) only its path is traced and compiled;
where β is a traced grid field the branch is a `lax.cond`, which stays a branch under `vmap`
over seeds or prompts with one β, and runs both paths and selects when β itself is batched
(a vmapped β grid: correct, only slower). The test r_max ≤ `_RATIO_RANGE` below is decided
the same way.

F and ℓ are invariant under r → r + c, so the maximiser is unique only up to such shifts
inside the box; the policy π_r it induces is unique where the maximum is.
"""
from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.rlhf import objectives


SCREENS = ("both", "value")


class SolverConfig(NamedTuple):
  """Static settings of `solve_optimistic` (they set array shapes, so they are not traced).

  A solve costs about starts × iterations × (2 · line_search + 1) evaluations of F, each O(A²)
  (line_search + 1 in the `dc_iterations` DC steps), plus one Newton system per iteration of
  at most `cg_iterations` O(A²) products; at β = 0 it is A × iterations × (line_search + 1).
  `newton_f` adds a direction and a second Newton system to the steps on F, `dc_gradient` a
  direction to the DC steps. The defaults reach the brute-force maximum to 1e-3
  on the tests' random instances; lowering `starts` to 8 for A ≤ 4 does not (it drops vertex
  basins), nor does `dc_iterations=0` (see step 2). Two step sizes and four CG steps (the
  defaults) miss the global maximum by > 1e-3 no more often than 3 and exact CG on
  the accuracy benchmark and along Algorithm 1's trajectories (benchmarks/accuracy/solver_accuracy.py),
  at 1.3× the speed; refining fewer starts (`keep`) misses more. `screen` ∈ `SCREENS`: how
  step 1 ranks the vertices, "both" (F and the relaxed score) or "value" (F alone).
  `newton_f`: steps on F also try F's own Newton direction; `dc_gradient`: DC steps also try
  the scaled gradient (step 2 of the module docstring: more precise last digits, slower).
  `tolerance` (the shared-linear search's, `rbx.rlhf.linear`; this solver ignores it): > 0
  makes `iterations` a cap, the steps on F stopping once every warm start's model predicts a
  gain ≤ `tolerance` (0: exactly `iterations` steps).
  """
  iterations: int = 10
  dc_iterations: int = 4
  starts: int = 16
  line_search: int = 2
  prune_after: int = 4
  keep: int = 16
  shrink: float = 0.2
  max_vertex_actions: int = 5
  cg_iterations: int = 4
  screen: str = "both"
  newton_f: bool = False
  dc_gradient: bool = False
  tolerance: float = 0.0


def objective(r, wins, pi_ref, pi_cal, beta, alpha):
  """F(r) = ℓ(r, wins) + α J*(r; π_cal), the objective of (3.1a)/(3.2a); scalar."""
  return objectives.log_likelihood(r, wins) + alpha * objectives.J_star(r, pi_ref, pi_cal, beta)


def solve_optimistic(wins: chex.Array, pi_ref: chex.Array, pi_cal: chex.Array, beta, alpha,
                     r_max, r_init: chex.Array | None = None,
                     config: SolverConfig = SolverConfig()) -> chex.Array:
  """argmax over r ∈ [0, r_max]^A of ℓ(r, wins) + α J*(r; π_cal), (3.1a)/(3.2a).

  Args:
    wins: win counts, shape (A, A). pi_ref, pi_cal: shape (A,). beta, alpha, r_max: scalars;
      β ≥ 0 (β = 0: the exact path of the module docstring).
    r_init: optional warm start, shape (A,) (e.g. the previous round's estimate).
    config: iteration counts; see the module docstring for the method.
  Returns:
    the maximiser r, shape (A,).
  """
  chex.assert_rank([wins, pi_ref, pi_cal], [2, 1, 1])
  if config.screen not in SCREENS:
    raise ValueError(f"SolverConfig.screen must be one of {SCREENS}, got {config.screen!r}")
  return _solve(wins, pi_ref, pi_cal, beta, alpha, r_max, r_init, config,
                _known(beta, lambda b: b == 0), _known(r_max, lambda m: m <= _RATIO_RANGE))


def _known(x, test) -> bool | None:
  """`test(x)` where `x` is concrete (an environment the sweep closes over, not a traced grid
  field), else None: the solver then takes the branch it names instead of a `lax.cond`,
  which compiles both (the β = 0 path alone is ~40% of the solver's compile time)."""
  return bool(test(np.asarray(x))) if _checks.is_concrete(x) else None


@functools.partial(jax.jit, static_argnames=("config", "beta_zero", "ratio_range"))
def _solve(wins, pi_ref, pi_cal, beta, alpha, r_max, r_init, config, beta_zero, ratio_range):
  """`solve_optimistic` with its branches' tests decided where they are known (`_known`). A
  jitted function of its own: JAX traces and batches it once per shape and setting, however
  many agents, prompts and examples of a sweep call it."""
  r_max = jnp.asarray(r_max, jnp.float32)
  problem = Problem(wins, pi_ref, pi_cal, beta, alpha, r_max, ratio_range)
  dtype = jnp.result_type(r_max, *([] if r_init is None else [r_init]))
  return _branch(beta_zero, lambda: beta == 0,
                 lambda: _solve_beta0(problem, r_max, r_init, config).astype(dtype),
                 lambda: _solve_dc(problem, r_max, r_init, config))


def _branch(known, test, true_fn, false_fn, *operands):
  """The branch `known` names, or `lax.cond(test(), ...)` where it is None."""
  if known is not None:
    return true_fn(*operands) if known else false_fn(*operands)
  return jax.lax.cond(test(), true_fn, false_fn, *operands)


def _solve_beta0(problem, r_max, r_init, config):
  """β = 0 (module docstring): the best of the A concave maximisations of
  M_{a*}(r) = ℓ(r) + α (e_{a*} − π_cal)·r over the box, by F; shape (A,)."""
  A = problem.pi_ref.shape[0]
  slopes = problem.alpha * (jnp.eye(A) - problem.pi_cal[None])            # (A, A), row a*
  cands = [jnp.eye(A)[:, None] * r_max, jnp.full((A, 1, A), 0.5) * r_max]  # (A, 1, A) each
  ells = [problem.vertex_log_likelihood(jnp.eye(A), r_max),               # ℓ of each, (A,)
          jnp.full(A, -jnp.log(2.0) * jnp.sum(problem.wins))]
  if r_init is not None:
    r0 = jnp.clip(r_init, 0.0, r_max)
    cands.append(jnp.broadcast_to(r0, (A, 1, A)))
    ells.append(jnp.full(A, problem.log_likelihood(r0)))
  cands = jnp.concatenate(cands, axis=1)                                  # (A, starts, A)
  values = jnp.stack(ells, axis=1) + jnp.sum(cands * slopes[:, None], axis=2)   # M_{a*}
  starts = cands[jnp.arange(A), first_best(values, problem.alpha * r_max)]  # (A, A)

  def run(r, slope):
    step = lambda carry, _: (ascent_step(*carry, problem, r_max, config, slope), None)
    return jax.lax.scan(step, (r, ranked(problem, slope)(r)), None,
                        length=config.iterations)[0][0]

  rs = jax.vmap(run)(starts, slopes)
  return rs[first_best(jax.vmap(problem.value)(rs), problem.alpha * r_max)]


def _candidates(problem, r_init, config):
  """Step 1's candidate starts without the warm start, as indicators h ∈ {0, 1}^A of their
  high actions (the vertex r_max·h; the all-zero row stands for the centre): the centre and
  the vertices (all non-constant ones for A ≤ `max_vertex_actions`, else the A one-action
  vertices and the threshold vertices of the two orderings); shape (C, A)."""
  A = problem.pi_ref.shape[0]
  cands = [jnp.zeros((1, A))]
  if A <= config.max_vertex_actions:
    cands.append(jnp.asarray(_vertices(A)))
  else:
    orders = [jnp.log(problem.pi_ref) - jnp.log(problem.pi_cal)]
    if r_init is not None:
      orders.append(r_init)
    cands += [jnp.eye(A)] + [_threshold_vertices(o) for o in orders]
  return jnp.concatenate(cands)


def _screened(problem, r_max, r_init, config):
  """The candidate starts: the centre first, then the vertices, the warm start last; F and
  the relaxed score (`Problem.vertex_values`) at each, +inf at the centre and the warm start
  (always kept); shapes (C, A), (C,), (C,). No (C, A, A) arrays: A = 1000 has ~3,000
  candidates."""
  h = _candidates(problem, r_init, config)
  values, relaxed = problem.vertex_values(h, r_max)
  cands = jnp.where(jnp.any(h > 0, axis=1, keepdims=True), h * r_max, 0.5 * r_max)
  relaxed = relaxed.at[0].set(jnp.inf)                   # h = 0: the centre
  if r_init is not None:
    r0 = jnp.clip(r_init, 0.0, r_max)
    cands = jnp.concatenate([cands, r0[None]])
    values = jnp.concatenate([values, problem.value(r0)[None]])
    relaxed = jnp.concatenate([relaxed, jnp.full(1, jnp.inf)])
  return cands, values, relaxed


def select_starts(values, relaxed, starts, scale=0.0):
  """Indices of the `starts` candidates to refine (step 1): alternately the best remaining by
  the relaxed score and by F (ties, within `first_best`'s tolerance for `scale`, to the first
  in candidate order); the relaxed score is +inf at the centre and the warm start, so they are
  taken in its first turns; shape (starts,)."""
  chosen = []
  for i in range(starts):
    score = relaxed if i % 2 == 0 else values
    score = score.at[jnp.asarray(chosen, jnp.int32)].set(-jnp.inf) if chosen else score
    chosen.append(first_best(score, scale))
  return jnp.stack(chosen)


# Scores within this share of their scale (`first_best`) of the best are tied: ~8 float32
# ulps, above the last-bit differences that XLA:CPU's lowering at different batch widths
# leaves in F, far below the solver's accuracy (1e-3 on the tests' instances).
TIE_RTOL = 1e-6


def first_best(values, scale=0.0):
  """Index of the first of `values` (along the last axis) within TIE_RTOL·(1 + |max| +
  `scale`) of their maximum: an argmax whose ties, exact ones included, do not depend on
  rounding. `scale` bounds the terms F is a sum of beyond |F| itself (α r_max: the bonus,
  which ℓ can cancel). Where the maximum is ±inf it is the plain argmax."""
  best = jnp.max(values, axis=-1, keepdims=True)
  tol = TIE_RTOL * (1.0 + jnp.abs(best) + jnp.abs(scale))
  tol = jnp.where(jnp.isfinite(best), tol, 0.0)
  return jnp.argmax(values >= best - tol, axis=-1)


def _solve_dc(problem, r_max, r_init, config):
  """β > 0 (module docstring, steps 1–3): vertex starts, DC then Newton steps; shape (A,)."""
  F = jax.vmap(problem.value)
  cands, values, relaxed = _screened(problem, r_max, r_init, config)
  if cands.shape[0] > config.starts:
    if config.screen == "value":
      relaxed = values
    cands = cands[select_starts(values, relaxed, config.starts, problem.alpha * r_max)]
  if config.keep < cands.shape[0]:
    slopes = jax.vmap(problem.slope)(cands)
    cands = _refine(problem, r_max, cands, config, 0, config.prune_after, slopes)
    _, idx = jax.lax.top_k(F(cands), config.keep)
    cands = _refine(problem, r_max, cands[idx], config, config.prune_after, config.iterations,
                    slopes[idx])
  else:
    cands = _refine(problem, r_max, cands, config)
  return cands[first_best(F(cands), problem.alpha * r_max)]


def _refine(problem, r_max, starts, config, first=0, last=None, slopes=None):
  """Iterations first..last−1 (default all) of step 2 from each start: DC steps with the slope
  α ∇J*(r0) of the start r0 (the concave problem max ℓ(r) + α ∇J*(r0)·r of the policy π_{r0}
  that the start stands for; `slopes` (n, A) when `starts` are not those r0), then Newton steps
  on F; shape (n, A) -> (n, A)."""
  last = config.iterations if last is None else last
  slopes = jax.vmap(problem.slope)(starts) if slopes is None else slopes

  def run(r, slope):
    for dc, lo, hi in ((True, first, min(last, config.dc_iterations)),
                       (False, max(first, config.dc_iterations), last)):
      if hi > lo:
        s = slope if dc else None
        step = lambda carry, _, s=s: (ascent_step(*carry, problem, r_max, config, s), None)
        r = jax.lax.scan(step, (r, ranked(problem, s)(r)), None, length=hi - lo)[0][0]
    return r
  return _each(lambda a: run(*a), (starts, slopes), starts.shape[1])


class Problem(NamedTuple):
  """One instance of (3.1a)/(3.2a): its data and the pieces of F the solver needs."""
  wins: chex.Array          # (A, A)
  pi_ref: chex.Array        # (A,)
  pi_cal: chex.Array        # (A,)
  beta: chex.Array
  alpha: chex.Array
  r_max: chex.Array = float("inf")     # the box [0, r_max]^A; ≤ _RATIO_RANGE: see `ratios`
  ratio_range: bool | None = None      # r_max ≤ _RATIO_RANGE where known (`_known`)

  def value(self, r):
    """F(r), scalar."""
    return self.log_likelihood(r) + self.alpha * objectives.J_star(r, self.pi_ref, self.pi_cal,
                                                                   self.beta)

  def log_likelihood(self, r):
    """ℓ(r) of (2.2) for r in the box, scalar: from `ratios` for r_max ≤ `_RATIO_RANGE`, else
    `objectives.log_likelihood` (decided at trace time where r_max is known, else a
    `lax.cond`)."""
    from_ratios = lambda r, wins: -jnp.sum(wins * jnp.log1p(self.ratios(r)))
    return _branch(self.ratio_range, lambda: self.r_max <= _RATIO_RANGE, from_ratios,
                   objectives.log_likelihood,
                   r, self.wins)

  def ratios(self, r):
    """v_ab = e^(r_b − r_a) for r in the box, shape (A, A), from A exponentials: u_b / u_a with
    u = e^(r − r_max/2) — exact to rounding, and finite, for r_max ≤ `_RATIO_RANGE`, where the
    dense e^(r_b − r_a) costs A² (`python -m benchmarks.profiles.solver_profile`, tables 1–2).
    log σ(r_a − r_b) = −log1p(v_ab), σ(r_a − r_b) = 1/(1 + v_ab)."""
    u = jnp.exp(r - 0.5 * self.r_max)
    return (1.0 / u)[:, None] * u[None, :]

  def vertex_log_likelihood(self, h, r_max, violated=None):
    """ℓ at the vertices r_max·h for indicators h (C, A) ∈ {0, 1}: every difference is r_max,
    −r_max or 0, so ℓ = log σ(r_max) W(H → L) + log σ(−r_max) W(L → H) − log 2 · W(same side),
    with W(H → L) = hᵀW(1 − h) the wins of high over low actions; products with W only, O(CA²)
    in one matrix product and no transcendental a pair; shape (C,). `violated` replaces
    log σ(−r_max), the term of a low action's win over a high one."""
    w = self.wins
    hw = h @ w                                       # (C, A): Σ_a h_a W_ab
    high_high = jnp.sum(hw * h, axis=1)
    high_low = jnp.sum(hw, axis=1) - high_high
    low_high = h @ jnp.sum(w, axis=0) - high_high
    same = jnp.sum(w) - high_low - low_high
    violated = jax.nn.log_sigmoid(-r_max) if violated is None else violated
    return jax.nn.log_sigmoid(r_max) * high_low + violated * low_high - jnp.log(2.0) * same

  def vertex_values(self, h, r_max):
    """F at the vertices r_max·h (the all-zero row: any constant vector) and their relaxed
    score, F with each low action's win over a high one charged log σ(0) = −log 2 instead of
    log σ(−r_max): the value of the vertex's basin if the refinement can level the few pairs
    that the data contradict (with sparse data it can, and the basin's maximum lies far above
    F at the vertex); shapes (C,), (C,)."""
    j_star = lambda r: objectives.J_star(r, self.pi_ref, self.pi_cal, self.beta)
    bonus = self.alpha * jax.vmap(j_star)(h * r_max)
    return (self.vertex_log_likelihood(h, r_max) + bonus,
            self.vertex_log_likelihood(h, r_max, -jnp.log(2.0)) + bonus)

  def slope(self, r):
    """α ∇J*(r) = α (π_r − π_cal), shape (A,)."""
    return self.alpha * (objectives.optimal_policy(r, self.pi_ref, self.beta) - self.pi_cal)

  def derivatives(self, r):
    """∇ℓ(r), shape (A,), and −∇²ℓ(r) = diag(c 1) − c with c_ab = (W_ab + W_ba) σ′(r_a − r_b),
    the Laplacian of the comparison graph, shape (A, A); in closed form over the dense (A, A)
    pairs, O(A²), σ from `ratios` for r_max ≤ `_RATIO_RANGE` (cheaper than autodiff). Row
    sums are products with a ones vector: on XLA:CPU about 6× faster than `jnp.sum` over the
    last axis on these small batched matrices (`python -m benchmarks.profiles.solver_profile`, table
    2)."""
    A = r.shape[0]
    ones = jnp.ones(A, r.dtype)
    n = self.wins + self.wins.T
    s = 1.0 / (1.0 + _branch(self.ratio_range, lambda: self.r_max <= _RATIO_RANGE,   # σ(r_a − r_b)
                             self.ratios,
                             lambda r: jnp.exp(r[None, :] - r[:, None]), r))
    c = n * s * (1.0 - s)
    return self.wins @ ones - (n * s) @ ones, jnp.eye(A, dtype=r.dtype) * (c @ ones)[:, None] - c


# The largest r_max for which e^(r − r_max/2), r ∈ [0, r_max], and the ratios of two such
# numbers are finite normal float32 numbers (e^(±44); float32's range is e^(±87.3)).
_RATIO_RANGE = 88.0


def ranked(problem, slope=None):
  """The function a step ranks its trial points by: M(x) = ℓ(x) + s·x for a `slope` s (A,)
  (a DC step), else F."""
  if slope is None:
    return problem.value
  return lambda x: problem.log_likelihood(x) + jnp.dot(slope, x)


def ascent_step(r, value, problem, r_max, config, slope=None):
  """One safeguarded projected Newton step (module docstring, step 2) from r, whose ranked
  value (`ranked`) is `value`; returns the next point and its value, shapes (A,), ().

  With a `slope` s (A,), the step ascends the concave function M(x) = ℓ(x) + s·x along its
  Newton direction (and the scaled gradient with `config.dc_gradient`) and ranks its trial
  points by M (a DC step); otherwise it ascends F along the DC direction with the slope
  α ∇J*(r) and the scaled gradient (and F's own Newton direction with `config.newton_f`) and
  ranks by F.
  """
  g, lap = problem.derivatives(r)
  pi = objectives.optimal_policy(r, problem.pi_ref, problem.beta)
  g = g + (problem.alpha * (pi - problem.pi_cal) if slope is None else slope)   # ∇F or ∇M
  beta = problem.beta                 # ∇²(α J*), 0 at β = 0 (where J* is piecewise linear)
  coef = jnp.where(beta > 0, problem.alpha / objectives.safe_beta(beta), 0.0)
  # −∇²ℓ and ∇²(α J*) = coef (diag π − ππᵀ) applied as products, the latter never formed
  newton_l = lambda p: lap @ p
  newton_f = lambda p: newton_l(p) - coef * (pi * p - pi * jnp.dot(pi, p))

  tol = 1e-6 * r_max
  frozen = ((r <= tol) & (g < 0)) | ((r >= r_max - tol) & (g > 0))
  free = ~frozen
  g_free = jnp.where(free, g, 0.0)
  ridge = 1e-6 * (1.0 + jnp.max(jnp.diag(lap)) + coef * jnp.max(pi * (1.0 - pi)))
  gmax = jnp.max(jnp.abs(g_free))
  cg = lambda m: truncated_cg(m, g_free, free, ridge, jnp.diag(lap), config.cg_iterations)
  directions = [cg(newton_l)]                                       # Newton on ℓ + linear
  if slope is None or config.dc_gradient:
    directions.append(g_free * r_max / jnp.where(gmax > 0, gmax, 1.0))   # scaled gradient
  if slope is None and config.newton_f:
    directions.append(cg(newton_f))                                 # Newton on F
  sizes = config.shrink ** jnp.arange(config.line_search, dtype=jnp.float32)
  trial = jnp.clip(r + sizes[:, None, None] * jnp.stack(directions)[None], 0.0, r_max)
  trial = jnp.concatenate([r[None], trial.reshape(-1, r.shape[0])])
  values = _each(ranked(problem, slope), trial[1:], r.shape[0])
  values = jnp.concatenate([value[None], jnp.where(jnp.isfinite(values), values, -jnp.inf)])
  best = jnp.argmax(values)
  return trial[best], values[best]


# From this many actions on, starts and trial points are mapped one after another (the seeds
# of a batch still vmapped) instead of vmapped: each holds (A, A) temporaries, and vmapping
# 16 starts × 5–7 trial points × the seeds of a batch leaves the CPU's caches (at A = 1000 it
# exhausted the host's memory). `python -m benchmarks.profiles.solver_profile` (table 3, Algorithm 1
# sweeps on one device), mapped against vmapped: A = 200 4.8× faster; A = 3, 10, 50 0.34×,
# 0.73×, 0.75× (slower).
SEQUENTIAL_FROM = 128


def _each(f, xs, num_actions):
  """`jax.vmap(f)(xs)`, or `lax.map` for num_actions ≥ `SEQUENTIAL_FROM` (bounded memory)."""
  return jax.vmap(f)(xs) if num_actions < SEQUENTIAL_FROM else jax.lax.map(f, xs)


def truncated_cg(m, b, free, ridge, diag, iterations):
  """Solves (M + ridge·I) x = b, M the matrix of the product `m` (A,) -> (A,), on the `free`
  coordinates by conjugate gradients preconditioned
  by `diag` + ridge (the Laplacian's diagonal, > 0), at most min(A + 2, `iterations`) steps.

  Stops at the first direction of non-positive curvature (Steihaug's truncation), so for an
  indefinite m it still returns an ascent direction (or 0); stopped early it is an inexact
  Newton direction, still one of ascent. Pure array ops: unlike a batched LAPACK solve it
  vectorises over any number of seeds and starts, and runs on several CPU devices at once.
  """
  mask = free.astype(b.dtype)
  matvec = lambda p: mask * m(mask * p) + ridge * p
  inv_diag = 1.0 / (diag + ridge)
  tiny = 1e-20 * (1.0 + jnp.dot(b, b))

  def body(_, carry):
    x, res, p, rz, done = carry
    mp = matvec(p)
    curv = jnp.dot(p, mp)
    done = done | (curv <= 0)
    step = jnp.where(done, 0.0, rz / jnp.where(curv > 0, curv, 1.0))
    x, res = x + step * p, res - step * mp
    z = inv_diag * res
    rz_new = jnp.dot(res, z)
    done = done | (jnp.dot(res, res) <= tiny)
    p = z + jnp.where(done, 0.0, rz_new / jnp.where(rz > 0, rz, 1.0)) * p
    return x, res, p, rz_new, done

  z = inv_diag * b
  init = (jnp.zeros_like(b), b, z, jnp.dot(b, z), jnp.dot(b, b) <= tiny)
  steps = min(b.shape[0] + 2, iterations)     # unrolled when short (as the defaults are)
  return jax.lax.fori_loop(0, steps, body, init, unroll=steps <= 8)[0]


def _vertices(A: int) -> np.ndarray:
  """The 2^A − 2 non-constant vertices of {0, 1}^A, shape (2^A − 2, A)."""
  v = np.array(list(itertools.product([0.0, 1.0], repeat=A)), np.float32)
  return v[1:-1]


def _threshold_vertices(score: chex.Array) -> chex.Array:
  """Vertices 1{score ≥ k-th largest} for k = 1..A−1, shape (A−1, A)."""
  A = score.shape[0]
  rank = jnp.argsort(jnp.argsort(-score))          # 0 for the largest score
  return (rank[None, :] < jnp.arange(1, A)[:, None]).astype(jnp.float32)
