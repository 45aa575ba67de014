"""The optimistic step (3.1a)/(3.2a) over a shared linear reward r_θ(x, a) = θᵀφ(x, a).

With features φ(x, a) ∈ R^d (`rbx.rlhf.contextual`) the reward class of (3.1a)/(3.2a) becomes

    F(θ) = ℓ(θ; D) + α J*(r_θ; π_cal),    θ ∈ K = {θ : max_a r_θ(x, a) − min_a r_θ(x, a) ≤ r_max ∀x},

with ℓ(θ; D) = Σ_D log σ(θᵀz), z = φ(x, a+) − φ(x, a−) (2.2), and
J*(r_θ; π_cal) = Σ_x ρ(x) [β log Σ_a π_ref(a|x) e^{r_θ(x, a)/β} − E_{π_cal(·|x)} r_θ(x, ·)] (2.7).
K is the box's exact analogue: with one-hot φ (d = |X|·A, θ = r) it is [0, r_max]^{X×A} up
to a per-prompt shift, which neither ℓ nor J* sees, so this problem is then the tabular
`rbx.rlhf.solve_optimistic` (`tests/rlhf/test_linear.py` checks it). K is a symmetric
polytope (|X|·A(A − 1) faces) whose gauge h(θ) = max_x range_x(r_θ)/r_max costs one pass over
r_θ, which every evaluation of F computes anyway: so K costs nothing beside F even at
|X| = 10,000, and no ball ‖θ‖ ≤ B is needed. ℓ is concave and J* convex in θ: F is a
difference of convex functions in d dimensions, and its maxima lie on K's boundary wherever
the data leave θ free.

**Method**: an active-set method on K with the exact solver's safeguards (`SolverConfig`).
Candidate starts: the warm starts (`search_linear`'s `basins`; the agents pass the previous
step's end points, `solve_linear` one θ), each refined, and then by F the centre θ = 0 and the
boundary points u/h(u) on the rays u ∈ {−1, 0, 1}^d for d ≤ `max_vertex_actions` (with
one-hot φ, all the box's non-constant vertices), else u = ±e_i (2d), until `starts` are
refined (a candidate within 1e-4 of an earlier one is skipped). Each refinement takes
`dc_iterations` DC steps (ascend the concave minorant M(θ) = ℓ(θ) + α ∇J*(θ₀)ᵀθ of the start
θ₀, ranked by M) and then steps on F. A step models F by gᵀΔ − ½ΔᵀHΔ (g: ∇ℓ plus the linear
term; H: −∇²ℓ, d × d) and takes the faces of K active at the point — the answer pairs (a, b)
of the widest prompts whose reward gap is within 1e-3 of r_max; at a vertex several answers of
one prompt tie — as a working set: the Newton step on their intersection gives each face's
multiplier, the faces with a negative one are released (the classic rule, one face, where
releasing all would leave one outward), and the step is re-solved (`_cone_step`; a d × d and
k × k elimination, k ≤ d). It tries that direction and the gradient projected the same way
(scaled so that its rewards span r_max) at sizes τ·shrink^i, each capped at the largest step
that stays in K (the ratio test over the inactive faces, `_max_step`: every answer pair at the
d widest prompts, a few Newton steps on each other prompt's range), where τ starts at 1 and
follows the sizes tried; the best trial point is kept, so the ranked function never
decreases, and a blocking face becomes active at the next step. The end points are returned
best first by F, distinct ones first. (A radial retraction θ/max(1, h(θ)) absorbs rounding.)

A vertex of K in d dimensions has d active faces, and a step adds at most one, so a start far
from the optimum needs about d steps; a tracked start is near one. The agents' default
`LINEAR_SOLVER` (4 starts, 6 steps on F, no DC steps) refines the previous round's 3
distinct end points and one new candidate each round. With `tolerance` > 0, `iterations` is a
cap and the steps stop at a certificate (`_refine`): a start stops where its model predicts a
gain ≤ `tolerance` (a KKT point of the model on its working set, to that tolerance) or where
its step size has shrunk below `_SMALLEST_STEP`, and the round once every warm start has stopped,
so a round costs what its starts need. Against SciPy's SLSQP from many starts
on the same problems along the agents' runs (`benchmarks/accuracy/linear_global.py`,
docs/linear_rlhf.md) it reaches SciPy's optimum to 1e-3 at d = 4, and at d = 16 once the
tracked starts have settled (early rounds can end below it); the certificate
(`iterations = 48, tolerance = 1e-4`) brings the early rounds closer to it, to 1e-2 on the
test's instance, not to 1e-3 at every step; tests/rlhf/test_linear.py checks all three.

**What is guaranteed and what is measured.** By construction: the returned θ lies in K (the
retraction), and its F is at least F at each warm start (retracted onto K) and at the best new
candidate, since every refinement keeps its best trial point; the ratio test stops a step at
the first inactive face it meets, to float32 rounding, or short of it (`_max_step` says
when). Not guaranteed: the
global maximum (maximising the convex J* over a polytope is NP-hard in general). Measured, not
guaranteed: brute force on a grid at d = 2, 3 (to 1e-2), the tabular solver with one-hot φ
(to 1e-3), SciPy's multi-start SLSQP along linear_algorithm1's run on a trap instance (to 1e-3
at d = 4, t = 20 and 40; to 1e-2 at d = 16, t = 60) — tests/rlhf/test_linear.py; and
`benchmarks/accuracy/linear_global.py`, where at d = 16 the first rounds (t ≤ 30) end 0.01–0.8
below SciPy's optimum (figures: benchmarks/README.md, docs/linear_rlhf.md). Those misses are
the steps a round: with 24 instead of 6 (`linear_global --solver iterations=24`, about 4× the
time, which grows with the iterations) the largest gap at t ≤ 10 falls from 0.98 to 0.05 on
the test's trap instance, and trimming a step's trial points (`line_search = 1`) loses optima
(`linear_same --solver line_search=1`; benchmarks/README.md, "Where exactness and speed pull
apart").

**Cost.** The search keeps φ with the actions first, (A, X, d), so that every reduction over a
prompt's A rewards is over the leading axis, vectorised over the prompts. A point carries
r = φθ (A, X), s = Zθ (n,), r's largest and smallest entry at each prompt (X,) — the
retraction and the log-sum-exp's shift — and the log-sum-exp's sum Σ_a π_ref e^{(r − max)/β}
(X,). r and s are linear in θ, so a direction's trial points cost one product φΔ (|X|·A·d)
and ZΔ (n·d), and a trial point one pass over r + size·φΔ (its max and min, one variadic
reduction) and, on F, one of |X|·A exponentials, whose sum the point keeps if it is taken: the
slope ∇J* at a point is then one pass of exponentials and one product with φᵀ, and F needs no
pass. A step on F costs 4 products with φ or φᵀ (the slope, the two directions, and the kept
point's r = φθ, recomputed: one product reads φ once for all the points of a batch, where
selecting and adding the kept direction reads three (A, X) arrays per point),
1 + 2·`line_search` exponential passes, the d × d Laplacian Zᵀ diag(σσ′) Z (n·d²), the
active faces (the d widest prompts' A² pairs), the ratio test (the d widest prompts' A² pairs
and 6 passes over |X|·A a direction: `_max_step`) and the working-set eliminations (O(d³), the
two directions' in one batched Gauss–Jordan loop, `_solve_spd`):
O(starts × iterations × (|X|·A·d + n·d² + d³)). Sums over a prompt's A actions are written as A
elementwise sums, not a reduction: on CPU, XLA fuses the sums with the exponentials into one
loop, where it hands a reduction to YNNPACK, about 2× slower (`benchmarks/profiles/linear_profile.py`,
benchmarks/README.md). The rays' rewards, gauges and log-sum-exps depend on the task alone
(φ, π_ref, ρ, β, r_max), so a vmapped batch of seeds sharing the task computes them once (at
compile time when the task is a constant); only their ℓ and linear terms are per seed. The data
enter through their feature differences z (a buffer of fixed capacity, `LinearData`): ℓ with
linear rewards has no exact fixed-size statistic (counts per (x, a, b) are |X|·A² ≫ T at
|X| = 10,000, and a quadratic (Laplace) summary is exact only for Gaussian likelihoods), so ℓ
here is exact and n = T, the run's horizon, known at `init`; its cost is O(T·d) ≤ O(|X|·A·d)
whenever T ≤ |X|·A, and does not grow with t (unused slots are masked).

*β = 0* (the unregularised problem, as for the tabular solver): J*'s convex part is its
limit Σ_x ρ(x) max_a r_θ(x, a), piecewise linear, and the search steps along a subgradient
(`_Search.slope`: π_θ(x) becomes π_ref restricted to the argmax); F is still a difference of
convex functions and the method is unchanged.
"""
from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx.rlhf.objectives import when_beta
from rbx.rlhf.forgetting import Forgetting
from rbx.rlhf.solver import SolverConfig

# The linear agents' default settings (module docstring): `python -m benchmarks.throughput.linear_throughput`
# measures their speed, `python -m benchmarks.accuracy.linear_accuracy` their accuracy along the agents'
# trajectories, tests/rlhf/test_linear.py the search's against brute force.
# 1/β's stand-in at β = 0 (`_Search.over_beta`): any gap of rewards above float32's
# resolution times it underflows e^{gap/β} to 0, and 0 times it is 0, not NaN as with ∞.
_COLD = 1e30

LINEAR_SOLVER = SolverConfig(iterations=6, dc_iterations=0, starts=4, line_search=2)


class LinearData(NamedTuple):
  """The comparisons D^(t): feature differences z = φ(x, a+) − φ(x, a−), (n, d), of which
  the first `count` are filled (the rest are zero and masked), and the likelihood's forgetting
  (`rbx.rlhf.forgetting`: None, or γ and w weighing the rows by their age)."""
  z: chex.Array
  count: chex.Array
  forget: Forgetting | None = None

  def mask(self) -> chex.Array:
    """1 for the filled rows, 0 for the others, (n,)."""
    return (jnp.arange(self.z.shape[0]) < self.count).astype(self.z.dtype)

  def weights(self) -> chex.Array:
    """The rows' weights in the likelihood, (n,): the mask, or with a forgetting likelihood
    γ^{(t−1)−i} 1[t − i ≤ w] of row i after t = `count` comparisons (`rbx.rlhf.forgetting`)."""
    return self.mask() if self.forget is None else self.forget.weights(self.count,
                                                                      self.z.shape[0])

  def add(self, z: chex.Array) -> LinearData:
    """The data with one more comparison z (d,), written at row `count`.

    The capacity is z's rows, n: the horizon the agent's `init` receives, so a run of that
    many rounds never overflows. Past it the row is dropped (an out-of-bounds write) but
    `count` keeps counting, so `dropped` reports the loss under jit and vmap, with no host
    callback; the fit then uses the first n comparisons.
    """
    return self._replace(z=self.z.at[self.count].set(z, mode="drop"), count=self.count + 1)

  @property
  def dropped(self) -> chex.Array:
    """How many comparisons were added past the capacity and lost: 0 while none were."""
    return jnp.maximum(self.count - self.z.shape[0], 0)

  def log_likelihood(self, theta: chex.Array) -> chex.Array:
    """ℓ(θ; D) = Σ_D log σ(θᵀz) of (2.2) for the linear reward θᵀφ (each row by its
    `weights`), scalar."""
    return jnp.sum(self.weights() * jax.nn.log_sigmoid(self.z @ theta))


class Point(NamedTuple):
  """θ (d,) with its rewards r = φθ (X, A) and comparison margins s = Zθ (n,)."""
  theta: chex.Array
  r: chex.Array
  s: chex.Array


class LinearProblem(NamedTuple):
  """One instance of the step: the features, the task, the data and the bonus.

  Attributes:
    features: φ, (X, A, d). log_ref: log π_ref, (X, A). rho: ρ, (X,).
    beta (≥ 0; 0: J* is Σ_x ρ(x) max_a r_θ(x, a)), alpha, r_max: scalars.
    data: the comparisons (`LinearData`).
    cal_mean: Σ_x ρ(x) φ(x)ᵀ π_cal(x), (d,), so that E_ρ E_{π_cal} r_θ = cal_meanᵀθ.
  """
  features: chex.Array
  log_ref: chex.Array
  rho: chex.Array
  beta: chex.Array
  alpha: chex.Array
  r_max: chex.Array
  data: LinearData
  cal_mean: chex.Array

  def embed(self, theta) -> Point:
    """θ (d,) as a `Point`: one product with φ and one with Z."""
    return Point(theta, rewards(theta, self.features), self.data.z @ theta)

  def log_likelihood(self, p: Point):
    """ℓ(θ; D) = Σ_D log σ(θᵀz) of (2.2) (each row by its `LinearData.weights`), scalar."""
    return jnp.sum(self.data.weights() * jax.nn.log_sigmoid(p.s))

  def log_partition(self, r):
    """β Σ_x ρ(x) log Σ_a π_ref(a|x) e^{r(x, a)/β}, J*'s convex part (at β = 0 its limit
    Σ_x ρ(x) max_a r(x, a)); scalar."""
    return when_beta(
        self.beta,
        lambda b: b * jnp.dot(self.rho, jax.scipy.special.logsumexp(self.log_ref + r / b, -1)),
        lambda: jnp.dot(self.rho, jnp.max(r, axis=-1)))

  def j_star(self, p: Point):
    """J*(r_θ; π_cal) of (2.7), ρ-averaged over prompts, scalar."""
    return self.log_partition(p.r) - jnp.dot(self.cal_mean, p.theta)

  def value(self, p: Point):
    """F(θ) = ℓ + α J*, scalar."""
    return self.log_likelihood(p) + self.alpha * self.j_star(p)

  def gauge(self, r):
    """h(θ) = max_x (max_a r − min_a r)/r_max: θ ∈ K iff h ≤ 1; scalar."""
    return jnp.max(jnp.max(r, axis=-1) - jnp.min(r, axis=-1)) / self.r_max


def rewards(theta, features):
  """r_θ = φθ, features' shape without its last axis (d), computed with θ on the left: vmapped
  over θ it is one (k, d) × (d, X·A) matmul whose result has the batch axis first."""
  return jax.lax.dot_general(theta, features, (((0,), (features.ndim - 1,)), ((), ())))


def feature_mean(weights, features):
  """Σ_{x,a} w(x, a) φ(x, a), (d,); weights (X, A) (or (A, X) with φ (A, X, d)) on the left."""
  return jax.lax.dot_general(weights, features, (((0, 1), (0, 1)), ((), ())))


def solve_linear(problem: LinearProblem, theta_init: chex.Array,
                 config: SolverConfig = LINEAR_SOLVER) -> chex.Array:
  """The best θ ∈ K the multi-start search reaches for ℓ(θ; D) + α J*(r_θ; π_cal), shape (d,):
  feasible, after fixed iteration counts, so not certified a maximum, local or global (the
  module docstring says what is guaranteed and what `benchmarks/accuracy/linear_global.py`
  measures against SciPy).

  Args:
    problem: the instance. theta_init: the warm start, (d,) (e.g. the previous θ).
    config: the exact solver's settings (`starts`, `iterations`, `dc_iterations`,
      `line_search`, `shrink`, `dc_gradient`, `max_vertex_actions`; the
      others are the tabular solver's own).
  """
  chex.assert_rank([problem.features, theta_init], [3, 1])
  return search_linear(problem, theta_init[None], config)[0]


def search_linear(problem: LinearProblem, basins: chex.Array,
                  config: SolverConfig = LINEAR_SOLVER) -> chex.Array:
  """The refined end points of the search (module docstring), best first by F, distinct ones
  before repeats; shape (starts, d).

  Args:
    problem: the instance. basins: warm starts (m, d), m ≤ `config.starts`, each refined
      (retracted onto K first); a row that repeats an earlier one gives its start to the
      next candidate (the agents pass the previous round's end points).
    config: as `solve_linear`.
  """
  chex.assert_rank([problem.features, basins], [3, 2])
  if basins.shape[0] > config.starts:
    raise ValueError(f"SolverConfig.starts must be >= the {basins.shape[0]} warm starts, "
                     f"got {config.starts}")
  thetas, values = _candidates(problem, config)
  thetas = jnp.concatenate([basins.astype(thetas.dtype), thetas])
  scores = jnp.concatenate([jnp.full(basins.shape[0], jnp.inf), values])
  scores = jnp.where(_repeats(thetas), -jnp.inf, scores)
  scores, order = jax.lax.top_k(scores, min(config.starts, scores.shape[0]))
  search = _Search.of(problem)
  ends, values = _refine(search, thetas[order], scores == jnp.inf, config)
  values = jnp.where(jnp.isfinite(values), values, -jnp.inf)
  ends = ends[jnp.argsort(-values)]
  return ends[jnp.argsort(_repeats(ends), stable=True)]


def _repeats(thetas):
  """Whether each row of thetas (k, d) is within 1e-4 (relative) of an earlier row; (k,)."""
  gap = jnp.max(jnp.abs(thetas[:, None] - thetas[None]), axis=-1)
  scale = 1.0 + jnp.max(jnp.abs(thetas), axis=-1)
  close = gap <= 1e-4 * jnp.maximum(scale[:, None], scale[None])
  return jnp.any(jnp.tril(close, -1), axis=1)


def _candidates(problem: LinearProblem, config: SolverConfig):
  """The centre θ = 0 and the boundary points u/h(u) on the rays u: every nonzero
  u ∈ {−1, 0, 1}^d for d ≤ `config.max_vertex_actions` (3^d − 1; with one-hot φ, all the
  box's non-constant vertices), else ±e_i (2d); their θ (k, d) and F (k,). The rays' rewards
  φu/h(u) and log-sum-exps depend on φ, π_ref, ρ, β and r_max alone, so a batch of seeds
  sharing the task computes them once; J* is 0 at the centre."""
  d = problem.features.shape[-1]
  if d <= config.max_vertex_actions:
    u = np.array(list(itertools.product([0.0, 1.0, -1.0], repeat=d)), np.float32)
  else:
    u = np.concatenate([np.zeros((1, d)), np.eye(d), -np.eye(d)]).astype(np.float32)
  r = jnp.einsum("xad,kd->kxa", problem.features, jnp.asarray(u))
  h = jax.vmap(problem.gauge)(r)
  scale = jnp.where(h > 0, 1.0 / jnp.where(h > 0, h, 1.0), 0.0)
  lse = jax.vmap(problem.log_partition)(r * scale[:, None, None])
  thetas = jnp.asarray(u) * scale[:, None]
  values = (jax.vmap(problem.log_likelihood)(Point(thetas, None, thetas @ problem.data.z.T))
            + problem.alpha * (lse - thetas @ problem.cal_mean))
  return thetas, values


class _Search(NamedTuple):
  """The instance in the search's layout: actions first (φ (A, X, d), log π_ref (A, X)), so
  that a reduction over a prompt's A rewards runs over the leading axis, vectorised over the
  prompts (XLA on CPU does not vectorise a reduction over a short minor axis)."""
  phi: chex.Array
  log_ref: chex.Array
  rho: chex.Array
  beta: chex.Array
  alpha: chex.Array
  r_max: chex.Array
  z: chex.Array
  mask: chex.Array
  cal_mean: chex.Array

  @classmethod
  def of(cls, p: LinearProblem) -> _Search:
    return cls(jnp.swapaxes(p.features, 0, 1), p.log_ref.T, p.rho, p.beta, p.alpha, p.r_max,
               p.data.z, p.data.weights(), p.cal_mean)

  def embed(self, theta) -> _Point:
    """θ as a `_Point` (one product with φ, one with Z, one pass over r for its extremes, one
    of exponentials), retracted onto K."""
    r = rewards(theta, self.phi)
    hi, lo = _extremes(r)
    c = 1.0 / jnp.maximum(1.0, jnp.max(hi - lo) / self.r_max)
    r, hi = c * r, c * hi
    return _Point(c * theta, r, c * (self.z @ theta), hi, c * lo, self.total(r, hi))

  def over_beta(self, gap):
    """gap/β for reward gaps ≤ 0, and at β = 0 gap times a finite stand-in for ∞ (`_COLD`):
    e^{gap/β} is then 1 at a prompt's largest rewards and 0 elsewhere, the β → 0 limit."""
    return when_beta(self.beta, lambda b: gap / b, lambda: gap * _COLD)

  def total(self, r, hi, c=1.0):
    """Σ_a π_ref(a|x) e^{c (r(x, a) − hi(x))/β}, (X,), the log-sum-exp's sum at c·r (c: a
    retraction's factor): one pass of |X|·A exponentials. Written as a sum of A rows, which
    XLA on CPU fuses with the exponentials into one loop; as a reduction over the leading axis
    it would go to YNNPACK, about 2× slower (module docstring). At β = 0, π_ref's mass on the
    prompt's largest rewards."""
    return functools.reduce(jnp.add, [jnp.exp(self.log_ref[a] + self.over_beta(c * (r[a] - hi)))
                                      for a in range(r.shape[0])])

  def slope(self, p: _Point):
    """∇L at p, L(θ) = Σ_x ρ(x) β log Σ_a π_ref(a|x) e^{r(x, a)/β} (J*'s convex part):
    Σ_x ρ(x) φ(x)ᵀ π_θ(x), (d,), with p's `total`: one pass of exponentials, one product. At
    β = 0 (L = Σ_x ρ(x) max_a r) a subgradient: π_θ(x) is π_ref restricted to the argmax."""
    w = jnp.exp(self.log_ref + self.over_beta(p.r - p.hi)) * (self.rho / p.total)
    return feature_mean(w, self.phi)

  def log_likelihood(self, s):
    return jnp.sum(self.mask * jax.nn.log_sigmoid(s))

  def value(self, theta, s, hi, total):
    """F = ℓ + α (L − cal_meanᵀθ), L = Σ_x ρ(x) (hi(x) + β log total(x))."""
    # a sum, not jnp.dot: vmapped, XLA transposed the dot's (points, X) operand (a step 1.8×
    # slower)
    lse = jnp.sum(self.rho * (hi + when_beta(self.beta, lambda b: b * jnp.log(total),
                                              lambda: jnp.zeros_like(total))))
    return self.log_likelihood(s) + self.alpha * (lse - jnp.dot(self.cal_mean, theta))


class _Point(NamedTuple):
  """A point of the search: θ (d,), r = φθ (A, X), s = Zθ (n,), r's largest and smallest
  entry at each prompt, hi and lo (X,), and Σ_a π_ref(a|x) e^{(r(x, a) − hi(x))/β}, total (X,)
  (the log-sum-exp's sum)."""
  theta: chex.Array
  r: chex.Array
  s: chex.Array
  hi: chex.Array
  lo: chex.Array
  total: chex.Array


def _extremes(r):
  """(max, min) over the leading (actions) axis of r (A, X): one (variadic) reduction, one
  pass over r. Computed once: without the barrier XLA fuses them into each of their consumers,
  recomputing them there (several passes)."""
  return jax.lax.optimization_barrier(jax.lax.reduce(
      (r, r), (jnp.array(-jnp.inf, r.dtype), jnp.array(jnp.inf, r.dtype)),
      lambda a, b: (jnp.maximum(a[0], b[0]), jnp.minimum(a[1], b[1])), (0,)))


_SMALLEST_STEP = 1e-6
"""With a tolerance, a start also stops once its step size τ falls below this (τ shrinks by
shrink^line_search at each step that finds no better point: 5 such steps from τ = 1 at the
defaults), where no trial point moves it beyond float32 rounding."""


def _refine(search: _Search, thetas, warm, config: SolverConfig):
  """Refine the starts θ (k, d) (each retracted onto K): `dc_iterations` DC steps with the
  slope α ∇J*(θ₀) of the start θ₀, then steps on F, each with the slope at its point. With
  `config.tolerance` > 0 a start stops once its model's predicted gain (`_ascent_step`) is
  ≤ the tolerance, or once its step size falls below `_SMALLEST_STEP` (no step size improves
  F to float32 rounding, as where a face outside the working set blocks the model's step), and
  the steps end once every `warm` (k,) start has stopped (at least one step, at most
  `iterations`); the others step as long as the loop runs. With 0, exactly `iterations`
  steps, no stopping test in the loop. The end points θ (k, d) and their F (k,)."""
  points = jax.vmap(search.embed)(thetas)
  taus = jnp.ones(thetas.shape[:1])
  dc = min(config.dc_iterations, config.iterations)
  if dc > 0:
    slopes = search.alpha * (jax.vmap(search.slope)(points) - search.cal_mean)
    dc_step = jax.vmap(lambda p, slope, tau: _ascent_step(search, p, slope, tau, config)[:3])
    for _ in range(dc):
      points, _, taus = dc_step(points, slopes, taus)
    points = points._replace(total=jax.vmap(search.total)(points.r, points.hi))
  values = jax.vmap(lambda p: search.value(p.theta, p.s, p.hi, p.total))(points)

  def on_f(points, values, taus):      # one step of every start
    return jax.vmap(lambda p, value, tau: _ascent_step(
        search, p, search.alpha * (search.slope(p) - search.cal_mean), tau, config, value))(
            points, values, taus)

  # loops, not unrolled: the program holds one step (compile)
  if config.tolerance == 0:
    points, values, _ = jax.lax.fori_loop(0, config.iterations - dc,
                                          lambda _, c: on_f(*c)[:3], (points, values, taus))
    return points.theta, values

  def step(carry):
    i, points, values, taus, done = carry
    new, new_values, new_taus, gains = on_f(points, values, taus)
    done = done | (gains <= config.tolerance) | (new_taus < _SMALLEST_STEP)
    keep = lambda a, b: jnp.where(done.reshape(done.shape + (1,) * (a.ndim - 1)), b, a)
    return (i + 1, jax.tree.map(keep, new, points), keep(new_values, values),
            keep(new_taus, taus), done)

  def more(carry):
    i, done = carry[0], carry[-1]
    return (i < config.iterations - dc) & ((i == 0) | ~jnp.all(done | ~warm))

  carry = (jnp.zeros((), jnp.int32), points, values, taus, jnp.zeros(warm.shape, bool))
  _, points, values, _, _ = jax.lax.while_loop(more, step, carry)
  return points.theta, values


def _ascent_step(search: _Search, p: _Point, slope, tau, config: SolverConfig, value=None):
  """One safeguarded active-set Newton step (module docstring) from p with the linear term
  `slope`; `value` is F at p for a step on F (trial points ranked by F), None for a DC step
  (ranked by M = ℓ + slopeᵀθ). The step sizes tried are τ·shrink^i, i < `line_search`, each
  capped at the largest step that stays in K (`_max_step`). Returns the next point, its ranked
  value, the next τ (one `shrink` above the size tried, at most 1, or shrink^line_search
  below τ when no trial improved) and the model's predicted gain gᵀΔ − ½ΔᵀHΔ ≥ 0 at p of
  its Newton direction Δ (0 where p is a KKT point of the model on its working set). A trial point costs one pass over r + size·φΔ for its
  hi/lo (the retraction, which only absorbs rounding here) and, on F, one of |X|·A
  exponentials (whose sum the kept point carries: the next slope needs it). After a DC step
  the point's `total` is stale (the caller recomputes it)."""
  dc = value is None
  z, mask = search.z, search.mask
  sig = jax.nn.sigmoid(-p.s)                                   # σ(−θᵀz)
  g = z.T @ (mask * sig) + slope
  w = mask * sig * (1.0 - sig)
  lap = (z * w[:, None]).T @ z                                 # −∇²ℓ, (d, d)
  ridge = 1e-6 * (1.0 + jnp.max(jnp.diag(lap)))
  normals, active, widest = _active_faces(search, p)
  normals = normals * active[:, None]
  eye = jnp.eye(g.shape[0], dtype=g.dtype)
  hessians = [lap + ridge * eye]
  if not dc or config.dc_gradient:
    hessians.append(eye)
  # both directions' solves in one batch: the eliminations' loops run once for the two
  directions = list(jax.vmap(_cone_step, (0, None, None))(jnp.stack(hessians), normals, g))
  newton = directions[0]
  gain = jnp.dot(g, newton) - 0.5 * newton @ (hessians[0] @ newton)
  if dc:
    value = search.log_likelihood(p.s) + jnp.dot(slope, p.theta)
  steps = []
  trials = [(value, 0, jnp.zeros(()), jnp.ones(()), p.hi, p.lo, p.total,
             tau * config.shrink ** config.line_search)]
  for k, delta in enumerate(directions):
    e = (delta, rewards(delta, search.phi), z @ delta)
    if k > 0:                      # the gradient, scaled so that its rewards span r_max
      h = jnp.max(jnp.subtract(*_extremes(e[1])))
      e = tuple(jnp.where(h > 0, search.r_max / jnp.where(h > 0, h, 1.0), 0.0) * a for a in e)
    steps.append(e)
    limit = _max_step(search, p, e[1], widest)
    for i in range(config.line_search):
      nominal = tau * config.shrink ** i
      size = jnp.minimum(nominal, limit)
      r = p.r + size * e[1]
      hi, lo = _extremes(r)
      c = 1.0 / jnp.maximum(1.0, jnp.max(hi - lo) / search.r_max)
      theta, s = c * (p.theta + size * e[0]), c * (p.s + size * e[2])
      if dc:
        v, total = search.log_likelihood(s) + jnp.dot(slope, theta), p.total
      else:
        total = search.total(r, hi, c)
        v = search.value(theta, s, c * hi, total)
      trials.append((jnp.where(jnp.isfinite(v), v, -jnp.inf), k, size, c, hi, lo, total,
                     jnp.minimum(1.0, nominal / config.shrink)))
  v, k, size, c, hi, lo, total, taus = (jnp.stack([jnp.asarray(t[i]) for t in trials])
                                        for i in range(8))
  j = jnp.argmax(v)
  e = steps[0] if len(steps) == 1 else tuple(
      jnp.where(k[j] == 0, a, b) for a, b in zip(*steps))
  size, c = size[j], c[j]
  theta = c * (p.theta + size * e[0])
  return _Point(theta, rewards(theta, search.phi), c * (p.s + size * e[2]),
                c * hi[j], c * lo[j], total[j]), v[j], taus[j], gain


_ACTIVE = 1e-3
"""A prompt's face is active where its reward range is within this share of r_max."""


def _active_faces(search: _Search, p: _Point):
  """The outward normals φ(x, a) − φ(x, b) of the k = min(d, d·A²) widest faces of K at p,
  (k, d), and whether each is active (r(x, a) − r(x, b) within `_ACTIVE` of r_max), (k,).
  The candidates are every answer pair of the min(d, |X|) widest prompts: at a vertex of K
  several answers of one prompt tie at its best or worst reward, each pair a face of its own.
  A step keeps the active faces that hold it back and leaves the others (`_cone_step`)."""
  d = search.phi.shape[-1]
  A = p.r.shape[0]
  _, xs = jax.lax.top_k(p.hi - p.lo, min(d, p.hi.shape[0]))
  cols = p.r[:, xs]                                            # (A, m)
  width = (cols[:, None] - cols[None]).reshape(-1)             # pairs (a, b, x), (A·A·m,)
  widest, faces = jax.lax.top_k(width, min(d, width.shape[0]))
  a, rest = jnp.divmod(faces, A * xs.shape[0])
  b, x = jnp.divmod(rest, xs.shape[0])
  normals = search.phi[a, xs[x]] - search.phi[b, xs[x]]        # (k, d)
  return normals, widest >= (1.0 - _ACTIVE) * search.r_max, xs


def _cone_step(hessian, normals, g):
  """A step of the active-set method on the model gᵀΔ − ½ΔᵀHΔ with the active faces' rows
  `normals` (k, d) (zero rows: inactive), (d,). The Newton step on all of them (n_iᵀΔ = 0)
  gives their multipliers μ; the faces with μ < 0 are released (leaving them ascends) and the
  step re-solved on the others. Where that step leaves a released face outward, only the face
  with the most negative μ is released, the classic rule, whose step moves inward on it. A
  face with μ > 0 holds the step on it. On a working set W the step is Δ = H⁻¹(g − N_Wᵀμ_W)
  with (N_W H⁻¹ N_Wᵀ) μ_W = N_W H⁻¹ g, so H is factored once for the three sets (the second
  and third, which depend on the first's μ only, solved in one batch)."""
  k = normals.shape[0]
  solved = _solve_spd(hessian, jnp.concatenate([g[:, None], normals.T], axis=1))
  h_g, h_n = solved[:, 0], solved[:, 1:]                       # H⁻¹g (d,), H⁻¹Nᵀ (d, k)
  schur, c = normals @ h_n, normals @ h_g                      # (k, k), (k,)
  eps = 1e-5 * (1.0 + jnp.max(jnp.diag(schur)))   # dependent faces: a least-norm μ (float32)

  def on(rows):
    """(Δ, μ) on the faces `rows` (k,) bool (a zero normal is never held)."""
    m = rows.astype(g.dtype)
    mu = _solve_spd(schur * m[:, None] * m[None] + jnp.diag(1.0 - m + eps), m * c)
    return h_g - h_n @ mu, mu

  held = jnp.sum(normals * normals, axis=1) > 0
  _, mu = on(held)
  release = held & (mu < 0)
  worst = release & (jnp.arange(k) == jnp.argmin(jnp.where(release, mu, 0.0)))
  (every, one), _ = jax.vmap(on)(jnp.stack([held & ~release, held & ~worst]))   # one batch
  outward = jnp.any(release & (normals @ every > 1e-6 * (1.0 + jnp.max(jnp.abs(every)))))
  step = jnp.where(outward, one, every)
  return jnp.where(jnp.all(jnp.isfinite(step)), step, 0.0)     # no step rather than NaN


def _solve_spd(m, b):
  """x with m x = b for a symmetric positive definite m (n, n), b (n,) or (n, r): Gauss–Jordan
  elimination without pivoting (which such a matrix admits) on [m | b], pure array ops in one
  loop of n steps (a `fori_loop`: the program holds one step); vmapped over seeds, starts and
  directions it is one batched loop, where a batch of LAPACK solves inside the search's vmap
  stalled XLA's CPU runtime (a Cholesky solve there made the whole step 3× slower)."""
  n = m.shape[0]
  index = jnp.arange(n)
  a = jnp.concatenate([m, b.reshape(n, -1)], axis=1)            # (n, n + r)

  def eliminate(j, a):
    row = a[j] / a[j, j]
    a = a - a[:, j][:, None] * row[None, :]
    return jnp.where((index == j)[:, None], row[None, :], a)

  return jax.lax.fori_loop(0, n, eliminate, a)[:, n:].reshape(b.shape)


def _max_step(search: _Search, p: _Point, e, xs, newton: int = 4):
  """The largest s with p.r + s·e in K over the faces not active at p (the cone step keeps
  to those, up to the retraction): min over (x, a, b) with rate e_a − e_b > 0 and slack
  r_max − r_a + r_b above `_ACTIVE`·r_max of slack/rate; ∞ where no face blocks. e: the
  direction's rewards (A, X); xs: the min(d, |X|) widest prompts (`_active_faces`).

  Every answer pair (A² of them) is checked only at the widest prompts xs, where faces can be
  active. At every other prompt x no face is active, and its blocking step is the root s_x of
  g_x(s) = max_a (r_a + s e_a) − min_b (r_b + s e_b) − r_max, a convex piecewise-linear
  function with g_x(0) < 0: `newton` Newton steps from the steepest pair's own ratio (where
  g_x ≥ 0) descend monotonically to it, each one pass over the A answers (the whole test is
  O(|X|·A·newton + d·A²), where the pairwise test was O(|X|·A²), a third of a step's time at
  A = 10, `benchmarks/profiles/linear_profile.py`). A prompt whose steps have not reached the
  root (g_x > 1e-5·r_max) counts with the lower bound (r_max − range_x r)/range_x e instead, so
  the step never crosses a face on that account (it stops short). Two departures from the
  pairwise test, both measured to be rare: the Newton root is the pairwise ratio to float32
  rounding (≤ 2e-5 relative on end points of searches at |X| = 1,000, d = 16), and a prompt
  within `_ACTIVE` of r_max outside xs (more active prompts than d) does not block (the
  retraction absorbs it)."""
  A = e.shape[0]
  tol = 1e-6 * (1.0 + jnp.max(jnp.abs(e)))
  floor = _ACTIVE * search.r_max
  # the widest prompts (where faces can be active): every answer pair, as before
  ec, rc = e[:, xs], p.r[:, xs]
  rate = ec[:, None] - ec[None]                                  # (A, A, m)
  slack = search.r_max - (rc[:, None] - rc[None])
  blocks = (rate > tol) & (slack > floor)
  exact = jnp.min(jnp.where(blocks, slack / jnp.where(blocks, rate, 1.0), jnp.inf))
  # the others: the root of g(s) = max_a (r_a + s e_a) − min_b (r_b + s e_b) − r_max
  width = p.hi - p.lo
  others = (width < jnp.min(width[xs])) & (width < search.r_max - floor)
  ehi, elo = _extremes(e)
  spread = ehi - elo
  steep = spread > tol
  s0 = jnp.where(steep, (search.r_max - width) / jnp.where(steep, spread, 1.0), jnp.inf)
  # the steepest pair's own ratio: g ≥ 0 there, so Newton's steps from it descend to the root
  top = functools.reduce(lambda c, a: jnp.where(e[a] == ehi, p.r[a], c), range(A), p.r[0])
  bottom = functools.reduce(lambda c, a: jnp.where(e[a] == elo, p.r[a], c), range(A), p.r[0])
  s = jnp.where(steep, (search.r_max - (top - bottom)) / jnp.where(steep, spread, 1.0), jnp.inf)
  for _ in range(newton):
    v = [p.r[a] + s * e[a] for a in range(A)]
    hi, up = v[0], e[0]
    lo, down = v[0], e[0]
    for a in range(1, A):
      up = jnp.where(v[a] > hi, e[a], up)
      hi = jnp.maximum(hi, v[a])
      down = jnp.where(v[a] < lo, e[a], down)
      lo = jnp.minimum(lo, v[a])
    g = hi - lo - search.r_max
    slope = up - down
    s = jnp.where(jnp.isfinite(s) & (slope > tol), s - g / jnp.where(slope > tol, slope, 1.0), s)
  v = [p.r[a] + s * e[a] for a in range(A)]
  g = functools.reduce(jnp.maximum, v) - functools.reduce(jnp.minimum, v) - search.r_max
  s = jnp.where(g <= 1e-5 * search.r_max, s, s0)
  return jnp.minimum(exact, jnp.min(jnp.where(others, s, jnp.inf)))
