"""The classic K-armed dueling-bandit algorithms as `rbx.core.Agent`s on the RLHF preference
environments: RUCB, RMED1, Double Thompson Sampling and Relative Confidence Sampling.

Each runs per prompt: its statistics are win counts `wins[x, i, j]` (the times answer i beat
answer j at prompt x) and the number of comparisons made at x, and at the observed prompt x_t it
acts as its paper's algorithm acts on a K-armed dueling bandit with K = A arms and time t = the
comparisons made at x_t so far plus one. x_t ~ ρ, so a prompt's problem is sampled with
probability ρ(x). They ignore π_ref, β and the reward bound (the `Task`), as the classic
algorithms do.

*Notation* (all four papers'): N = W + Wᵀ the comparison counts, μ̂_ij = w_ij / n_ij the
empirical preference of i over j (1/2 where n_ij = 0), the confidence bounds

    u_ij = μ̂_ij + √(α ln t / n_ij),   l_ij = μ̂_ij − √(α ln t / n_ij)
    (u = 1, l = 0 where n_ij = 0; u_ii = l_ii = 1/2),

the Copeland score of a matrix P, #{j ≠ i : p_ij > 1/2}, and θ ~ Beta(W + 1, Wᵀ + 1) a posterior
sample: θ_ij ~ Beta(w_ij + 1, w_ji + 1) for i < j, θ_ji = 1 − θ_ij, θ_ii = 1/2. α is duelpy's
`exploratory_constant` (not the RLHF agents' `alpha`). A comparison of an answer with itself
(RUCB, RMED1, Double TS may choose one) carries no information and is not counted.

*The deployed policy.* The regret (2.6) scores a policy π^(t) each step (`Query.log_pi`). A
dueling agent deploys, at every prompt, the answer its own estimates recommend, uniform over
ties: RUCB, Double TS and RCS the empirical Copeland winners argmax_i #{j : μ̂_ij > 1/2} (the
arm RUCB's paper returns), RMED1 the minimisers of the empirical divergence I_i (its estimated
Condorcet winner î*). This is what the algorithm would answer with if asked now — not the pair
it explores with, which (2.6) would charge for exploration twice — and, being a point mass
where estimates agree, it is the classic algorithms' policy class: with β > 0 the optimum π*
is not a point mass, so a dueling agent's (2.6) regret keeps growing at least at the rate
J(π*) − J(δ_{a*}) = −β ln π*(a* | x) per step even once it has found the Condorcet winner
a*(x). That is the price of ignoring π_ref and β, which `docs/algorithms.md` measures.

Each agent requires a Condorcet winner at every prompt (a unique maximum of r*(x, ·):
`rbx.rlhf.dueling.require_condorcet`, checked before anything compiles).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import xlogy

from rbx import _checks
from rbx.core import registry as reg
from rbx.core.protocol import Agent
from rbx.rlhf import dueling, objectives
from rbx.rlhf.env import Query


class DuelingState(NamedTuple):
  """State of a dueling agent. Shapes: X prompts, A answers.

  Attributes:
    wins: `wins[x, i, j]`, the comparisons at prompt x in which i beat j, (X, A, A) float32.
    steps: the comparisons made at each prompt so far, (X,) int32.
    memory: what the algorithm carries beside them (each agent's docstring), a pytree of
      per-prompt arrays.
  """
  wins: chex.Array
  steps: chex.Array
  memory: Any


# ---- shared pieces --------------------------------------------------------------------------

def _sizes(spec) -> tuple[int, int]:
  """(X, A) of the task."""
  return spec.pi_ref.shape


def _empty(spec, memory) -> DuelingState:
  X, A = _sizes(spec)
  return DuelingState(jnp.zeros((X, A, A), jnp.float32), jnp.zeros((X,), jnp.int32), memory)


def _means(W: chex.Array) -> chex.Array:
  """μ̂ = W / (W + Wᵀ), 1/2 where no comparison was made; (..., A, A)."""
  N = W + jnp.swapaxes(W, -1, -2)
  return jnp.where(N > 0, W / jnp.maximum(N, 1.0), 0.5)


def _bounds(W: chex.Array, t, alpha) -> tuple[chex.Array, chex.Array]:
  """(U, L), the confidence bounds u_ij and l_ij of the module docstring at time t; (A, A)."""
  N = W + W.T
  radius = jnp.sqrt(alpha * jnp.log(t.astype(jnp.float32)) / jnp.maximum(N, 1.0))
  mean, eye = _means(W), jnp.eye(W.shape[0], dtype=bool)
  upper = jnp.where(eye, 0.5, jnp.where(N > 0, mean + radius, 1.0))
  lower = jnp.where(eye, 0.5, jnp.where(N > 0, mean - radius, 0.0))
  return upper, lower


def _copeland(P: chex.Array) -> chex.Array:
  """#{j : p_ij > 1/2} per row ((..., A, A) -> (..., A)); the diagonal's 1/2 never counts."""
  return jnp.sum(P > 0.5, axis=-1)


POOL = 4       # fresh proposals a round of `_gamma` gives to the elements still waiting


def _gamma(key: chex.PRNGKey, shape: chex.Array) -> chex.Array:
  """Gamma(shape, 1) draws for shapes ≥ 1 by Marsaglia and Tsang's rejection method ("A
  simple method for generating gamma variables", ACM TOMS 2000): d = shape − 1/3,
  c = 1/√(9d); x ~ N(0, 1), v = (1 + c x)³, accept d·v when v > 0 and
  ln u < x²/2 + d − d v + d ln v (u ~ U[0, 1)); acceptance ≥ 0.95 at every shape ≥ 1.

  Round 0 gives every element its own proposal (x, u), from `fold_in(key, 0)`. Each later
  round i draws `POOL` fresh proposals from `fold_in(key, i)` and gives them to the first
  `POOL` elements (in index order) still waiting; the loop ends when every element has
  accepted. Which element gets which fresh proposal depends only on earlier rounds'
  outcomes, so each element still sees i.i.d. proposals, independent of the others', and
  its draw is exact. Under vmap a loop runs until every lane has accepted (~4 rounds for
  10^4 draws); a round after the first computes `POOL` proposals, not one per element: with
  Double TS's θ⁽²⁾ drawn for i ≠ a1 only, its sweep ran 1.54× and RCS's 1.48× as fast as with
  a full round per element (docs/algorithms.md, "Checked against duelpy").
  `jax.random.gamma` draws the same law ~3× slower on a CPU (one loop per element)."""
  flat = shape.reshape(-1)
  n = flat.size
  d = flat - 1.0 / 3.0
  c = 1.0 / jnp.sqrt(9.0 * d)

  def propose(round_key, size, d, c):
    k_x, k_u = jax.random.split(round_key)
    x = jax.random.normal(k_x, (size,))
    v = (1.0 + c * x) ** 3
    log_u = jnp.log(jax.random.uniform(k_u, (size,)))
    ok = (v > 0) & (log_u < 0.5 * x * x + d - d * v + d * jnp.log(jnp.where(v > 0, v, 1.0)))
    return ok, jnp.where(ok, d * v, 0.0)

  done, value = propose(jax.random.fold_in(key, 0), n, d, c)
  d_pad, c_pad = jnp.append(d, 1.0), jnp.append(c, 1.0)      # index n: no element

  def again(carry):
    i, done, value = carry
    waiting = jnp.nonzero(~done, size=POOL, fill_value=n)[0]
    ok, v = propose(jax.random.fold_in(key, i), POOL, d_pad[waiting], c_pad[waiting])
    ok = ok & (waiting < n)
    return (i + 1, done.at[waiting].max(ok, mode="drop"),
            value.at[waiting].add(v * ok, mode="drop"))

  start = (jnp.int32(1), done, value)
  out = jax.lax.while_loop(lambda carry: ~jnp.all(carry[1]), again, start)[2]
  return out.reshape(shape.shape)


def _beta(key: chex.PRNGKey, a: chex.Array, b: chex.Array) -> chex.Array:
  """Beta(a, b) draws (a, b ≥ 1, shape (n,)) as X / (X + Y), X ~ Gamma(a), Y ~ Gamma(b),
  the 2n Gamma draws in one `_gamma` loop."""
  g = _gamma(key, jnp.concatenate([a, b]))
  x, y = g[:a.size], g[a.size:]
  return x / (x + y)


def _posterior_sample(key: chex.PRNGKey, W: chex.Array) -> chex.Array:
  """θ ~ Beta(W + 1, Wᵀ + 1) as in the module docstring, (A, A): one draw per pair i < j."""
  A = W.shape[0]
  i, j = (jnp.asarray(v) for v in np.triu_indices(A, 1))
  draw = _beta(key, W[i, j] + 1.0, W[j, i] + 1.0)
  upper = jnp.full((A, A), 0.5).at[i, j].set(draw)
  return jnp.where(jnp.arange(A)[:, None] > jnp.arange(A)[None, :], 1.0 - upper.T, upper)


def _pick_max(key: chex.PRNGKey, scores: chex.Array, allowed: chex.Array | None = None):
  """An index of the maximum of `scores` over `allowed` (default all), uniform over ties."""
  allowed = jnp.ones(scores.shape, bool) if allowed is None else allowed
  masked = jnp.where(allowed, scores, -jnp.inf)
  top = allowed & (masked == jnp.max(masked))
  return jax.random.categorical(key, jnp.where(top, 0.0, -jnp.inf))


def _deployed(scores: chex.Array) -> chex.Array:
  """log π^(t) (X, A): uniform over each prompt's maximisers of `scores` (X, A)."""
  return jax.vmap(objectives.greedy_log_policy)(scores.astype(jnp.float32))


def _copeland_policy(wins: chex.Array) -> chex.Array:
  """The deployed policy of RUCB, Double TS and RCS: the empirical Copeland winners."""
  return _deployed(_copeland(_means(wins)))


def _recorded(state: DuelingState, x, a1, a2, a1_wins) -> DuelingState:
  """`state` with the comparison of a1 and a2 at prompt x counted (not when a1 = a2)."""
  informative = (a1 != a2).astype(jnp.float32)
  won = a1_wins.astype(jnp.float32)
  wins = (state.wins.at[x, a1, a2].add(informative * won)
          .at[x, a2, a1].add(informative * (1.0 - won)))
  return state._replace(wins=wins, steps=state.steps.at[x].add(1))


def _update(key, state, obs, query, feedback, spec):
  """The update of RUCB, Double TS and RCS: count the comparison."""
  del key, spec
  return _recorded(state, obs.x, query.a1, query.a2, feedback)


def _exploratory_constant(value, agent: str):
  """α, checked: > 1/2 (the papers' condition for their confidence bounds) where concrete."""
  if callable(value) or (_checks.is_concrete(value) and not np.all(np.asarray(value) > 0.5)):
    raise ValueError(f"exploratory_constant of {agent} must be a number > 0.5 (α of its "
                     f"paper's confidence bound √(α ln t / n)), got {value!r}")
  return value


# ---- RUCB -----------------------------------------------------------------------------------

def rucb(exploratory_constant=0.51) -> Agent:
  """Relative Upper Confidence Bound, Algorithm 1 of Zoghi, Whiteson, Munos and de Rijke,
  "Relative Upper Confidence Bound for the K-Armed Dueling Bandit Problem", ICML 2014.

  At prompt x, time t (module docstring's notation; line numbers are the paper's):

  * lines 4–5: U = [u_ij] with α = `exploratory_constant` (x/0 := 1, u_ii = 1/2);
  * line 6: the candidates C = {c : u_cj ≥ 1/2 for all j}; line 7: if C = ∅, c is uniform
    over all arms;
  * lines 8–12: the hypothesised best arm B ← B ∩ C; if |C| = 1, B ← C and c is its arm;
    if |C| > 1, c ~ p with p(c) = 1/2 for c ∈ B and 1/(2^|B| |C ∖ B|) for the others of C;
  * line 13: d = argmax_j u_jc, ties broken uniformly, and c is not allowed to win a tie;
  * line 14: compare c and d.

  `DuelingState.memory` is B per prompt, (X,) int32 (−1: B = ∅). α > 1/2 (Theorem 1's
  condition); duelpy's default 0.51 is the paper's experiments' α.
  """
  alpha = _exploratory_constant(exploratory_constant, "rucb")

  def init(key, spec, horizon):
    del key, horizon
    return _empty(spec, jnp.full((_sizes(spec)[0],), -1, jnp.int32))

  def act(key, state, obs, spec):
    del spec
    x, A = obs.x, state.wins.shape[-1]
    k_c, k_d = jax.random.split(key)
    W = state.wins[x]
    U, _ = _bounds(W, state.steps[x] + 1, alpha)
    C = jnp.all(U >= 0.5, axis=1)
    size = jnp.sum(C)
    arms = jnp.arange(A)
    B = state.memory[x]
    B = jnp.where((B >= 0) & C[jnp.maximum(B, 0)], B, -1)             # B ← B ∩ C
    is_B = (arms == B) & (B >= 0)
    p = jnp.where(B >= 0, jnp.where(is_B, 0.5, C * 0.5 / jnp.maximum(size - 1, 1)),
                  C / jnp.maximum(size, 1))
    p = jnp.where(size == 0, 1.0 / A, p)                                 # C = ∅: uniform
    c = jax.random.categorical(k_c, jnp.log(p))
    B = jnp.where(size == 1, c, B)                                       # |C| = 1: B ← C
    u = U[:, c]
    top = u == jnp.max(u)
    top = top & ~((arms == c) & (jnp.sum(top) > 1))                      # c loses ties
    d = _pick_max(k_d, u, top)
    state = state._replace(memory=state.memory.at[x].set(B))
    return state, Query(c, d, _copeland_policy(state.wins))

  return Agent("rucb", init, act, _update, dueling.require_condorcet("rucb"),
               cpu_seed_batch)


# ---- RMED1 ----------------------------------------------------------------------------------

class LoopSets(NamedTuple):
  """RMED's loop (Algorithm 1 of its paper), per prompt, shapes (X, A).

  Attributes:
    order: the rank of each arm in the loop's fixed order (a uniform permutation drawn at
      `init`), int32.
    remaining: L_R, the arms of the current loop not drawn yet as l(t), bool.
    candidates: L_N, the arms that will form the next loop, bool.
  """
  order: chex.Array
  remaining: chex.Array
  candidates: chex.Array


def _divergence(W: chex.Array) -> chex.Array:
  """The empirical divergence I_i = Σ_{j ≠ i : μ̂_ij ≤ 1/2} n_ij d(μ̂_ij, 1/2) of every arm,
  with d(p, 1/2) = p ln 2p + (1 − p) ln 2(1 − p) the Bernoulli KL divergence; (A,)."""
  N = W + W.T
  mu = _means(W)
  kl = xlogy(mu, 2.0 * mu) + xlogy(1.0 - mu, 2.0 * (1.0 - mu))
  counted = (mu <= 0.5) & ~jnp.eye(W.shape[0], dtype=bool)
  return jnp.sum(jnp.where(counted, N * kl, 0.0), axis=-1)


def rmed1(divergence_tolerance=None) -> Agent:
  """Relative Minimum Empirical Divergence (RMED1), Algorithms 1 and 2 of Komiyama, Honda,
  Kashima and Nakagawa, "Regret Lower Bound and Optimal Algorithm in Dueling Bandit
  Problem", COLT 2015.

  At prompt x, time t (the comparisons made at x, this one included):

  * initial phase (Algorithm 1, line 1; L = 1): the first A(A − 1)/2 comparisons at x draw
    every pair (i < j) once, in order;
  * the empirical divergence I_i(t) (`_divergence`, eq. (3)) and î*(t) = argmin_i I_i(t), the
    estimated Condorcet winner, ties broken uniformly;
  * loop (Algorithm 1, lines 4–11): l(t) is the first arm of L_R in a fixed order (drawn once,
    uniformly, at `init`); after the draw, L_R ← L_R ∖ {l(t)} and every arm j ∉ L_R with
    I_j(t) − I_î*(t) ≤ ln t + f(K) (eq. (4)) joins L_N; when L_R is empty, L_C = L_R ← L_N
    and L_N ← ∅ (L_R starts as every arm);
  * m(t) (Algorithm 2): with Ô = {j ≠ l(t) : μ̂_{l(t) j} ≤ 1/2}, m(t) = î*(t) if Ô = ∅ or
    î*(t) ∈ Ô, else argmin_{j ≠ l(t)} μ̂_{l(t) j} (ties uniform); (l(t), m(t)) is compared.

  `divergence_tolerance` is f(K) (duelpy's name; there a function of K, here its value),
  default the paper's experiments' 0.3 K^1.01, ≥ 0. `DuelingState.memory` is `LoopSets`.
  """
  if divergence_tolerance is not None and _checks.is_concrete(divergence_tolerance):
    if callable(divergence_tolerance) or not float(divergence_tolerance) >= 0.0:
      raise ValueError("divergence_tolerance must be a number >= 0 (f(K) of RMED's eq. (4)), "
                       f"got {divergence_tolerance!r}")

  def tolerance(A: int):
    return 0.3 * A ** 1.01 if divergence_tolerance is None else divergence_tolerance

  def init(key, spec, horizon):
    del horizon
    X, A = _sizes(spec)
    order = jax.vmap(lambda k: jnp.argsort(jax.random.permutation(k, A)))(
        jax.random.split(key, X)).astype(jnp.int32)
    return _empty(spec, LoopSets(order, jnp.ones((X, A), bool), jnp.zeros((X, A), bool)))

  def act(key, state, obs, spec):
    del spec
    x, A = obs.x, state.wins.shape[-1]
    first, second = (jnp.asarray(v, jnp.int32) for v in np.triu_indices(A, 1))
    s = state.steps[x]
    initial = s < first.size
    k_star, k_m = jax.random.split(key)
    W, arms, loop = state.wins[x], jnp.arange(A), state.memory
    star = _pick_max(k_star, -_divergence(W))
    l = jnp.argmin(jnp.where(loop.remaining[x], loop.order[x], A))
    mu = _means(W)[l]
    others = arms != l
    opponents = (mu <= 0.5) & others
    m = jnp.where(~jnp.any(opponents) | opponents[star], star, _pick_max(k_m, -mu, others))
    pair = jnp.minimum(s, first.size - 1)
    a1 = jnp.where(initial, first[pair], l)
    a2 = jnp.where(initial, second[pair], m)
    return state, Query(a1, a2, _deployed(-jax.vmap(_divergence)(state.wins)))

  def update(key, state, obs, query, feedback, spec):
    del key, spec
    x, A = obs.x, state.wins.shape[-1]
    initial = state.steps[x] < A * (A - 1) // 2
    state = _recorded(state, obs.x, query.a1, query.a2, feedback)
    loop = state.memory
    I = _divergence(state.wins[x])
    close = I - jnp.min(I) <= jnp.log(state.steps[x].astype(jnp.float32)) + tolerance(A)
    remaining = loop.remaining[x].at[query.a1].set(False)
    candidates = loop.candidates[x] | (~remaining & close)
    done = ~jnp.any(remaining)
    remaining, candidates = (jnp.where(done, candidates, remaining),
                             jnp.where(done, False, candidates))
    keep = lambda old, new: old.at[x].set(jnp.where(initial, old[x], new))
    return state._replace(memory=loop._replace(remaining=keep(loop.remaining, remaining),
                                               candidates=keep(loop.candidates, candidates)))

  return Agent("rmed1", init, act, update, dueling.require_condorcet("rmed1"),
               cpu_seed_batch)


# ---- Double Thompson Sampling ---------------------------------------------------------------

def double_ts(exploratory_constant=0.51) -> Agent:
  """Double Thompson Sampling, Algorithm 1 of Wu and Liu, "Double Thompson Sampling for
  Dueling Bandits", NeurIPS 2016.

  At prompt x, time t:

  * first candidate (lines 4–9): U and L with α = `exploratory_constant`; the arms of
    largest upper Copeland score Ĉ = argmax_i #{j ≠ i : u_ij > 1/2}; θ⁽¹⁾ ~ Beta(W + 1,
    Wᵀ + 1); a1 = argmax_{i ∈ Ĉ} #{j ≠ i : θ⁽¹⁾_ij > 1/2}, ties broken uniformly;
  * second candidate (lines 10–13): θ⁽²⁾_{i a1} ~ Beta(w_{i a1} + 1, w_{a1 i} + 1) for i ≠ a1,
    θ⁽²⁾_{a1 a1} = 1/2; a2 = argmax over {i : l_{i a1} ≤ 1/2} of θ⁽²⁾_{i a1} — the arm most
    likely, in the sample, to beat a1 among those not known to lose to it (a1 itself
    included, l_{a1 a1} = 1/2).

  `DuelingState.memory` is (). α > 1/2; duelpy's default 0.51.
  """
  alpha = _exploratory_constant(exploratory_constant, "double_ts")

  def init(key, spec, horizon):
    del key, horizon
    return _empty(spec, ())

  def act(key, state, obs, spec):
    del spec
    x, A = obs.x, state.wins.shape[-1]
    k_theta1, k_a1, k_theta2, k_a2 = jax.random.split(key, 4)
    W = state.wins[x]
    U, L = _bounds(W, state.steps[x] + 1, alpha)
    upper = _copeland(U)
    a1 = _pick_max(k_a1, _copeland(_posterior_sample(k_theta1, W)), upper == jnp.max(upper))
    others = jnp.arange(A - 1) + (jnp.arange(A - 1) >= a1)           # every i ≠ a1
    theta2 = jnp.full((A,), 0.5).at[others].set(
        _beta(k_theta2, W[others, a1] + 1.0, W[a1, others] + 1.0))
    a2 = _pick_max(k_a2, theta2, L[:, a1] <= 0.5)
    return state, Query(a1, a2, _copeland_policy(state.wins))

  return Agent("double_ts", init, act, _update, dueling.require_condorcet("double_ts"),
               cpu_seed_batch)


# ---- Relative Confidence Sampling -----------------------------------------------------------

def rcs(exploratory_constant=0.501) -> Agent:
  """Relative Confidence Sampling, Algorithm 1 of Zoghi, Whiteson, de Rijke and Munos,
  "Relative Confidence Sampling for Efficient On-line Ranker Evaluation", WSDM 2014.

  At prompt x, time t:

  * the simulated tournament: θ ~ Beta(W + 1, Wᵀ + 1); the champion c is the arm with
    θ_cj > 1/2 for every j ≠ c if there is one, else the arm chosen as champion least often
    so far (ties broken uniformly); c's count goes up by one;
  * the challenger: U with α = `exploratory_constant` (x/0 := 1, u_cc = 1/2); d = argmax_j
    u_jc, ties broken uniformly (c included: once every arm is known to lose to c, c duels
    itself);
  * compare c and d.

  `DuelingState.memory` is the times each arm was champion, (X, A) int32. α > 1/2;
  duelpy's default 0.501.
  """
  alpha = _exploratory_constant(exploratory_constant, "rcs")

  def init(key, spec, horizon):
    del key, horizon
    return _empty(spec, jnp.zeros(_sizes(spec), jnp.int32))

  def act(key, state, obs, spec):
    del spec
    x, A = obs.x, state.wins.shape[-1]
    k_theta, k_least, k_d = jax.random.split(key, 3)
    W = state.wins[x]
    theta = _posterior_sample(k_theta, W)
    winner = _copeland(theta) == A - 1
    counts = state.memory[x]
    least = _pick_max(k_least, -counts)
    c = jnp.where(jnp.any(winner), jnp.argmax(winner), least)
    U, _ = _bounds(W, state.steps[x] + 1, alpha)
    d = _pick_max(k_d, U[:, c])
    state = state._replace(memory=state.memory.at[x, c].add(1))
    return state, Query(c, d, _copeland_policy(state.wins))

  return Agent("rcs", init, act, _update, dueling.require_condorcet("rcs"),
               cpu_seed_batch)


# ---- the seed batch on a CPU ------------------------------------------------------------------

CPU_CAP = 128            # seeds a CPU batch at most: the padding a small run pays beyond it
CPU_ENTRIES = 2 ** 20    # seeds × |X| × A² floats of win counts a CPU batch holds at most


def cpu_seed_batch(env) -> int:
  """`Agent.cpu_seed_batch` of the four agents: the largest power of two ≤ `CPU_CAP` with
  seeds × |X| × A² ≤ `CPU_ENTRIES`, at least 1 — 128 at |X| · A² ≤ 8,192 (one prompt up to
  A = 90), 64 at |X| = 100, A = 10. The RLHF family's rule (≤ 16 seeds, `rlhf.registry.
  cpu_seed_batch`) is sized for the exact solver's 16 starts × 8 points of (|X|, A, A) a seed;
  a dueling step reads one prompt's (A, A) counts, so a batch of the same bytes holds 128×
  the seeds. Measured side by side on a 2-core CPU, 1,024 seeds, K = 5
  (`python -m benchmarks.reference.duelpy_dueling --speed-only --seeds 4 --speed-seeds 1024
  --seed-batches default 16`): at T = 2,000 against 16 seeds a batch, 128 ran RUCB 2.07×,
  RMED1 1.36×, Double TS 1.74× and RCS 1.90× as fast; at T = 500 (`--seed-batches 16 64 128
  256 512`) 256 and 512 were within the noise of 128, and pad a small run to 2–4× the seeds."""
  per_seed = env.num_prompts * env.num_actions ** 2
  return 1 << max(0, (min(CPU_CAP, CPU_ENTRIES // per_seed)).bit_length() - 1)


# ---- the registry's declarations ------------------------------------------------------------

_ALPHA = reg.real(0.5, doc="α of the confidence bound √(α ln t / n), > 1/2 "
                  "(duelpy's name; not the RLHF agents' alpha)")
AGENTS = {
    "rucb": (rucb, {"exploratory_constant": _ALPHA},
             "Relative Upper Confidence Bound (Zoghi et al. 2014), per prompt"),
    "rmed1": (rmed1, {"divergence_tolerance": reg.real(
        0.0, doc="f(K) of eq. (4), default 0.3 K^1.01 (duelpy's name)")},
              "Relative Minimum Empirical Divergence 1 (Komiyama et al. 2015), per prompt"),
    "double_ts": (double_ts, {"exploratory_constant": _ALPHA},
                  "Double Thompson Sampling (Wu & Liu 2016), per prompt"),
    "rcs": (rcs, {"exploratory_constant": _ALPHA},
            "Relative Confidence Sampling (Zoghi et al. 2014b), per prompt"),
}
"""name -> (constructor, declared parameters, one line): registered by `rbx.rlhf.registry`."""
