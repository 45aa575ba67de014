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

**Method** (the exact solver's, `rbx.rlhf.solver`, with its `SolverConfig`, start selection
and conjugate gradients). Candidate starts: the centre θ = 0, the warm start, and the
boundary points u/h(u) on the rays u ∈ {−1, 0, 1}^d \\ 0 for d ≤ `max_vertex_actions` (with
one-hot φ, all the box's non-constant vertices), else u = ±e_i (2d); `starts` of them are
refined, the centre and the warm start always, the others by F. Each refinement takes `dc_iterations` DC steps (ascend the concave minorant
M(θ) = ℓ(θ) + α ∇J*(θ₀)ᵀθ of the start θ₀, ranked by M) and then steps on F. A step tries
the Newton direction of ℓ plus the linear term (CG on −∇²ℓ, d × d) and, on F, the gradient
scaled so that its rewards span r_max, each at `line_search` step sizes; on the boundary of K
the active face's outward normal is removed from them; trial points outside K are pulled back
by the radial retraction θ/max(1, h(θ)) (onto K); the best trial point is kept, so the
ranked function never decreases. The best refined point by F is returned.

**Cost.** A point carries r = φθ (X, A) and s = Zθ (n,) with it; both are linear in θ, so a
direction's trial points at every step size cost one product φΔ (|X|·A·d) and ZΔ (n·d),
the retraction O(|X|·A), and F at a trial point O(|X|·A) transcendentals. A step costs
1 + (directions) products with φ, one with φᵀ (∇J*), and the d × d Laplacian Zᵀ diag(σσ′) Z
(n·d²): O(starts × iterations × (|X|·A·d + n·d²)). The rays' rewards, gauges and
log-sum-exps depend on the task alone (φ, π_ref, ρ, β, r_max), so a vmapped batch of seeds
sharing the task computes them once (at compile time when the task is a constant); only
their ℓ and linear terms are per seed. The data enter through their feature
differences z (a buffer of fixed capacity, `LinearData`): ℓ with linear rewards has no exact
fixed-size statistic (counts per (x, a, b) are |X|·A² ≫ T at |X| = 10,000, and a quadratic
(Laplace) summary is exact only for Gaussian likelihoods), so ℓ here is exact and n = T, the
run's horizon, known at `init`; its cost is O(T·d) ≤ O(|X|·A·d) whenever T ≤ |X|·A, and
does not grow with t (unused slots are masked).

β > 0 (the contextual environments' β); at β = 0 use the tabular agents.
"""
from __future__ import annotations

from typing import NamedTuple

import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx.rlhf.solver import SolverConfig, select_starts, truncated_cg

# The linear agents' default settings: `python benchmarks/linear_throughput.py` measures
# their speed, tests/rlhf/test_linear.py their accuracy against brute force.
LINEAR_SOLVER = SolverConfig(iterations=6, dc_iterations=3, starts=4, line_search=2,
                             cg_iterations=4)


class LinearData(NamedTuple):
  """The comparisons D^(t): feature differences z = φ(x, a+) − φ(x, a−), (n, d), of which
  the first `count` are filled (the rest are zero and masked)."""
  z: chex.Array
  count: chex.Array

  def mask(self) -> chex.Array:
    """1 for the filled rows, 0 for the others, (n,)."""
    return (jnp.arange(self.z.shape[0]) < self.count).astype(self.z.dtype)


class Point(NamedTuple):
  """θ (d,) with its rewards r = φθ (X, A) and comparison margins s = Zθ (n,)."""
  theta: chex.Array
  r: chex.Array
  s: chex.Array

  def plus(self, size, other: Point) -> Point:
    """self + size · other (all three are linear in θ)."""
    return jax.tree.map(lambda a, b: a + size * b, self, other)

  def scaled(self, c) -> Point:
    """c · self."""
    return jax.tree.map(lambda a: c * a, self)


class LinearProblem(NamedTuple):
  """One instance of the step: the features, the task, the data and the bonus.

  Attributes:
    features: φ, (X, A, d). log_ref: log π_ref, (X, A). rho: ρ, (X,).
    beta (> 0), alpha, r_max: scalars.
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
    """ℓ(θ; D) = Σ_D log σ(θᵀz) of (2.2), scalar."""
    return jnp.sum(self.data.mask() * jax.nn.log_sigmoid(p.s))

  def log_partition(self, r):
    """β Σ_x ρ(x) log Σ_a π_ref(a|x) e^{r(x, a)/β}, J*'s convex part; scalar."""
    lse = jax.scipy.special.logsumexp(self.log_ref + r / self.beta, axis=-1)
    return self.beta * jnp.dot(self.rho, lse)

  def j_star(self, p: Point):
    """J*(r_θ; π_cal) of (2.7), ρ-averaged over prompts, scalar."""
    return self.log_partition(p.r) - jnp.dot(self.cal_mean, p.theta)

  def value(self, p: Point):
    """F(θ) = ℓ + α J*, scalar."""
    return self.log_likelihood(p) + self.alpha * self.j_star(p)

  def gauge(self, r):
    """h(θ) = max_x (max_a r − min_a r)/r_max: θ ∈ K iff h ≤ 1; scalar."""
    return jnp.max(jnp.max(r, axis=-1) - jnp.min(r, axis=-1)) / self.r_max

  def retract(self, p: Point) -> Point:
    """p/max(1, h(p)): p itself inside K, the boundary point on its ray outside."""
    return p.scaled(1.0 / jnp.maximum(1.0, self.gauge(p.r)))

  def slope(self, p: Point):
    """α ∇J*(θ) = α (Σ_x ρ(x) φ(x)ᵀ π_θ(x) − cal_mean), (d,); one product with φᵀ."""
    pi = jax.nn.softmax(self.log_ref + p.r / self.beta, axis=-1)
    return self.alpha * (feature_mean(self.rho[:, None] * pi, self.features) - self.cal_mean)

  def face(self, p: Point):
    """The outward normal of K's face that is active at p, φ(x*, a_hi) − φ(x*, a_lo) at the
    prompt x* of the widest reward range, (d,), and h(p) (`gauge`), from one pass over r."""
    width = jnp.max(p.r, axis=-1) - jnp.min(p.r, axis=-1)
    x = jnp.argmax(width)
    normal = self.features[x, jnp.argmax(p.r[x])] - self.features[x, jnp.argmin(p.r[x])]
    return normal, width[x] / self.r_max


def rewards(theta, features):
  """r_θ = φθ, features' shape without its last axis (d), computed with θ on the left: vmapped
  over θ it is one (k, d) × (d, X·A) matmul whose result has the batch axis first (contiguous
  (X, A) blocks for the passes over r that follow; φ's axes first would make them strided)."""
  return jax.lax.dot_general(theta, features, (((0,), (features.ndim - 1,)), ((), ())))


def feature_mean(weights, features):
  """Σ_{x,a} w(x, a) φ(x, a), (d,); weights (X, A) on the left, as in `rewards`."""
  return jax.lax.dot_general(weights, features, (((0, 1), (0, 1)), ((), ())))


def solve_linear(problem: LinearProblem, theta_init: chex.Array,
                 config: SolverConfig = LINEAR_SOLVER) -> chex.Array:
  """argmax over θ ∈ K of ℓ(θ; D) + α J*(r_θ; π_cal) (module docstring); shape (d,).

  Args:
    problem: the instance. theta_init: the warm start, (d,) (e.g. the previous θ).
    config: the exact solver's settings (`starts`, `iterations`, `dc_iterations`,
      `line_search`, `shrink`, `cg_iterations`, `dc_gradient`; the others are the tabular
      solver's own).
  """
  chex.assert_rank([problem.features, theta_init], [3, 1])
  thetas, values = _candidates(problem, theta_init, config)
  if values.shape[0] > config.starts:
    forced = jnp.arange(values.shape[0]) < 2              # the centre and the warm start
    thetas = thetas[select_starts(values, jnp.where(forced, jnp.inf, values), config.starts)]
  starts = jax.vmap(lambda t: problem.retract(problem.embed(t)))(thetas)
  ends, values = jax.vmap(lambda p: _refine(problem, p, config))(starts)
  return ends.theta[jnp.argmax(values)]


def _candidates(problem: LinearProblem, theta_init, config: SolverConfig):
  """The centre θ = 0, the warm start (retracted onto K), and the boundary points u/h(u) on
  the rays u: every nonzero u ∈ {−1, 0, 1}^d for d ≤ `config.max_vertex_actions` (3^d − 1;
  with one-hot φ, all the box's non-constant vertices), else ±e_i (2d); their θ (k, d) and
  F (k,). The rays' rewards φu/h(u) and log-sum-exps depend on φ, π_ref, ρ, β and r_max
  alone, so a batch of seeds sharing the task computes them once."""
  d = problem.features.shape[-1]
  if d <= config.max_vertex_actions:
    u = np.array(list(itertools.product([0.0, 1.0, -1.0], repeat=d)), np.float32)[1:]
  else:
    u = np.concatenate([np.eye(d), -np.eye(d)]).astype(np.float32)
  r = jnp.einsum("xad,kd->kxa", problem.features, jnp.asarray(u))
  h = jax.vmap(problem.gauge)(r)
  scale = jnp.where(h > 0, 1.0 / jnp.where(h > 0, h, 1.0), 0.0)
  lse = jax.vmap(problem.log_partition)(r * scale[:, None, None])
  rays = jnp.asarray(u) * scale[:, None]
  start = problem.retract(problem.embed(theta_init))
  first = jax.tree.map(lambda a: jnp.stack([jnp.zeros_like(a), a]), start)
  thetas = jnp.concatenate([first.theta, rays])
  values = jnp.concatenate([
      jax.vmap(problem.value)(first),
      jax.vmap(problem.log_likelihood)(Point(rays, None, rays @ problem.data.z.T))
      + problem.alpha * (lse - rays @ problem.cal_mean)])
  return thetas, values


def _refine(problem: LinearProblem, p: Point, config: SolverConfig):
  """`dc_iterations` DC steps with the slope α ∇J*(θ₀) of the start, then steps on F; the
  end point and its F."""
  slope = problem.slope(p)
  value = None
  for dc, n in ((True, min(config.dc_iterations, config.iterations)),
                (False, config.iterations - config.dc_iterations)):
    if n > 0:
      s = slope if dc else None
      ranked = _ranked(problem, s)
      step = lambda c, _, s=s, ranked=ranked: (_ascent_step(problem, *c, config, s, ranked),
                                               None)
      p, value = jax.lax.scan(step, (p, ranked(p)), None, length=n)[0]
  return p, (problem.value(p) if config.iterations <= config.dc_iterations else value)


def _ranked(problem: LinearProblem, slope=None):
  """F, or the DC minorant M(θ) = ℓ(θ) + slopeᵀθ (up to a constant)."""
  if slope is None:
    return problem.value
  return lambda p: problem.log_likelihood(p) + jnp.dot(slope, p.theta)


def _ascent_step(problem: LinearProblem, p: Point, value, config: SolverConfig, slope, ranked):
  """One safeguarded Newton step (module docstring) from p, whose ranked value is `value`;
  returns the next point and its value. The trial points are not stored: the best one's
  (direction, step size, retraction factor) is kept and the point built once."""
  mask = problem.data.mask()
  sig = jax.nn.sigmoid(-p.s)                                   # σ(−θᵀz)
  z = problem.data.z
  g = z.T @ (mask * sig) + (problem.slope(p) if slope is None else slope)
  w = mask * sig * (1.0 - sig)
  lap = (z * w[:, None]).T @ z                                 # −∇²ℓ, (d, d)
  diag = jnp.diag(lap)
  ridge = 1e-6 * (1.0 + jnp.max(diag))
  free = jnp.ones_like(g, dtype=bool)
  directions = [truncated_cg(lambda v: lap @ v, g, free, ridge, diag, config.cg_iterations)]
  if slope is None or config.dc_gradient:
    directions.append(g)
  normal, h = problem.face(p)
  on_boundary = h >= 1.0 - 1e-4
  best = (value, jnp.zeros((), jnp.int32), jnp.zeros(()), jnp.ones(()))
  steps = []
  for k, delta in enumerate(directions):
    out = jnp.maximum(jnp.dot(delta, normal), 0.0) / jnp.maximum(jnp.dot(normal, normal), 1e-30)
    delta = jnp.where(on_boundary, delta - out * normal, delta)
    e = problem.embed(delta)
    if k > 0:                      # the gradient, scaled so that its rewards span r_max
      h = problem.gauge(e.r)
      e = e.scaled(jnp.where(h > 0, 1.0 / jnp.where(h > 0, h, 1.0), 0.0))
    steps.append(e)
    for i in range(config.line_search):
      size = config.shrink ** i
      c = 1.0 / jnp.maximum(1.0, problem.gauge(p.r + size * e.r))
      v = ranked(p.plus(size, e).scaled(c))
      better = jnp.isfinite(v) & (v > best[0])
      best = jax.tree.map(lambda new, old: jnp.where(better, new, old), (v, k, size, c), best)
  v, k, size, c = best
  e = steps[0] if len(steps) == 1 else jax.tree.map(lambda *a: jnp.where(k == 0, *a), *steps)
  return p.plus(size, e).scaled(c), v
