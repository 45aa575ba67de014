"""The practical policy class: the exploration schemes as DPO-form losses on a parametric
policy ("practical/<scheme>").

Practitioners run online RLHF as losses on a policy (TRL's OnlineDPO and XPO trainers, SELM,
oat): no reward model is solved to optimality, there is no box [0, r_max], and expectations
are estimated from samples. In the bandit model the Bradley–Terry oracle and J(π*, r*) are
exact, so these agents can be checked against the exact-solver agents of
`rbx.rlhf.learners.tabular`.

**The loss form.** Let π_θ(a|x) be a parametric policy (`rbx.rlhf.learners.policies`) and

    r_θ(x, a) = β log π_θ(a|x)/π_ref(a|x)

its implicit reward (DPO's; defined up to a per-prompt constant, which neither ℓ nor J*
sees). Since π_θ(·|x) sums to one, Z_{r_θ}(x) = Σ_a π_ref(a|x) e^{r_θ(x,a)/β} = Σ_a π_θ(a|x) = 1,
so by (2.4) π_{r_θ} = π_θ: the policy step (3.1b)/(3.2b) for the reward r_θ is π_θ itself.
The paper's objects become

* ℓ(r_θ, D) of (2.2) = Σ_{(x, a+, a−) ∈ D} log σ(r_θ(x, a+) − r_θ(x, a−)), minus the DPO loss
  (sigmoid form, summed over D);
* J*(r_θ; π_cal) of (2.7) = β E_ρ log Z_{r_θ} − E_ρ E_{π_cal}[r_θ]
                          = −β E_{x∼ρ} E_{a∼π_cal(·|x)}[log π_θ(a|x)/π_ref(a|x)]
  (`implicit_J_star`);

so the optimistic step (3.1a)/(3.2a), max_r ℓ(r, D) + α_t J*(r; π_cal), becomes one loss on θ,

    L(θ) = DPO(θ; D) + α_t β Ê_{x, a∼π_cal}[log π_θ(a|x)/π_ref(a|x)]          (`loss`),

and the agents minimise L(θ) + (λ/2)‖θ − θ_ref‖² (`l2` = λ, default 1; θ_ref: π_θ = π_ref)
by a fixed number of optax steps per round, warm-started from the previous round's θ (and
optimiser state). π_cal is held fixed (not differentiated). The expectation Ê is exact
(`cal_samples=None`: Σ_x ρ(x) Σ_a π_cal(a|x) ·, which with the tabular policy is the exact
agents' objective), or estimated at the round's prompt x_t from the round's own answer drawn
from π_cal (`cal_samples=0`, what TRL and SELM do) or from k fresh draws (`cal_samples=k`,
with a key of their own: `act` and `update` receive the same key and split it the same way,
`_keys`). In expectation over x_t ∼ ρ the sampled bonus is α_t J*: one unit of J* against
ℓ summed over all of D^(t), as in (3.2a).

**What the relaxation solves.** With λ = 0 and no box, L has no minimiser for α > 0: the
bonus −α J*(r_θ) = α β Σ π_cal log π_θ/π_ref decreases without bound as a reward gap that the
data do not pin down grows (raising an answer that never lost costs DPO nothing), so the
result is set by learning rate × steps (3,000 Adam steps at t = 1 drive the gap past 100;
`tests/rlhf/test_practical.py`). It is not "the exact step without the box": that problem
has no solution. The ℓ2 term makes L coercive (|J*(r_θ)| grows at most linearly in θ, the
penalty quadratically), so a minimiser exists: the step is the maximum a posteriori one
under a Gaussian prior θ ∼ N(θ_ref, I/λ),

    max_θ ℓ(r_θ, D) + α_t J*(r_θ; π_cal) − (λ/2)‖θ − θ_ref‖²,

the practical counterpart of the paper's box (the prior's weight is fixed while ℓ grows with
t, so its pull fades as the data grow). `clip=True` bounds the implicit reward to the box
instead (or as well): per prompt r̄_θ = h tanh((r_θ − mean_a r_θ)/h) with h = r_max/2, a
smooth increasing map onto rewards of range < r_max (the box [0, r_max]^A up to the shift
that nothing sees), deployed as π_{r̄_θ} ∝ π_ref e^{r̄_θ/β} (`clip_to_box`; the identities above
hold for it unchanged). It keeps every gradient, unlike a floor max(r, max r − r_max), which
zeroes the clipped entries' and stalls; but the box is open, so with λ = 0 an optimum on its
boundary (where the exact step's usually lies) is reached only as θ → ∞.

**Why λ > 0 by default.** With λ = 0 a single comparison is separable data: its DPO loss has
no minimiser, so a fixed number of optimiser steps moves θ by learning rate × steps in a
direction the data do not set; on-policy pairs then become ties (a1 = a2, no information) and
the data stay separable, so online DPO, VPO and Algorithm 1 can drift away from π* while XPO
(a2 ∼ π_ref keeps the pairs distinct) learns. λ = 1 is the prior of `random_contextual`'s
θ* ∼ N(0, I). The term also makes a stationary start a strict minimum: the bonus is stationary
at θ^(t) (∇_r J*(r; π^(t)) = π_r − π^(t) = 0 at r = r^(t)), and with λ above the bonus's
curvature there — α_t β λ_max(diag π^(t) − π^(t)π^(t)ᵀ) ≤ α_t β/2 for the tabular policy,
(α_t/β) λ_max(E_w Cov_{π^(t)} φ) for the log-linear one — π^(2) = π^(1) after a tie at t = 1
(larger α_t, e.g. Proposition 3's schedule, make it a saddle again). The measured effect of
λ, seed by seed: docs/practical_rlhf.md.

**The schemes** (`rbx.rlhf.schemes`, with what each is in practice):

====================  ===========  ===========  ===================  ========================
agent                 a1 ~         a2 ~         π_cal                = in practice
====================  ===========  ===========  ===================  ========================
`practical/greedy`    π^(t)        π^(t)        — (α = 0)            TRL OnlineDPO, oat
`practical/xpo`       π^(t)        π_ref        π_ref (sample a2)    TRL XPO, SELM
`practical/vpo`       π^(t)        π^(t)        fixed (k draws)      VPO
`practical/modified`  π^(t)        π_cal        fixed (sample a2)    —
`practical/algorithm1`  π^(t−1)    π^(t)        π^(t) (sample a2)    Algorithm 1
====================  ===========  ===========  ===================  ========================

With π_cal = π_ref and one comparison, L is TRL's XPO loss −log σ(β Δ) + α_XPO log π_θ(y_ref)
with α_XPO = α β, up to the constant −α β log π_ref(y_ref) (so the same gradient), and it is
SELM's `optimistic_dpo_loss` −log σ(β Δ) + α β log π_θ(y_ref)/π_ref(y_ref) exactly (SELM's
α is this α).

**Cost** (`data`, `cal_prompts`). The DPO term is over the whole D^(t), as (3.2a).
`data="counts"` keeps the win counts `wins[x, a, b]`, its sufficient statistics, so an
optimiser step reads all |X| A² counts and every prompt's log π_θ, whatever t is.
`data="buffer"` keeps the comparisons one by one (`Comparisons`: x_t, a+, a−; capacity the
horizon `init` receives) and computes log π_θ(·|x) at the buffer's prompts only
(`Policy.log_probs_at`): O(T A d) a step for the log-linear policy at horizon T, whatever |X|
is, and the same loss and gradient to float32 rounding. The bonus then costs O(|X| A d) a step
only where it is exact over all prompts (`cal_samples=None`); the sampled estimates at x_t and
`cal_prompts=k` — the exact E_{a∼π_cal} at k prompts drawn from ρ with the round's calibration
key, weight 1/k each, the bonus on a batch's prompts as practitioners compute it, unbiased for
E_{x∼ρ} — cost O(k A d). The deployed π^(t) is computed at every prompt once a round. The
default, `data="auto"`, takes the counts where the horizon T is at least |X| and the buffer
where it is below (more prompts than comparisons: most count rows stay empty), chosen at
`init` from the task's |X| and the horizon; at |X| = 10⁴, T = 1,000 the buffer is 20–100×
faster (`python -m benchmarks.throughput.practical_throughput --prompts 10000 --horizon 1000`).

**Contexts from a generator** (`rbx.rlhf.generated`; policy "loglinear" only, no `clip`). The
log-linear implicit reward is θᵀφ(s, a) − β log Z_θ(s), so a comparison's DPO margin is θᵀz
with z = φ(s, a+) − φ(s, a−): the data are the z's (`rbx.rlhf.linear.LinearData`, capacity
the horizon), O(T d) a step, and no context is stored. The bonus is over the task's prompts —
the environment's evaluation pool — exactly (`cal_samples=None`) or at `cal_prompts` of them,
or at the round's own context (`cal_samples` ≥ 0: its one-prompt task, `generated.local`); the
answers are drawn at the context from θ^(t−1), θ^(t) (kept in `params_prev`), π_ref or π_cal
(A,), and the deployed policy is `generated.LogLinear(θ)`.

**Preferences that drift** (`rbx.rlhf.drift`). `discount` γ and `window` w make the DPO term
the forgetting likelihood −Σ_s γ^{t−s} 1[t − s < w] log σ(·) (`rbx.rlhf.forgetting`): γ < 1 is
NS-DPO, w is SW-DPO, under every scheme. The win counts decay, wins ← γ·wins + the round's
comparison (the discounted sum exactly); the buffer and the generated contexts' z weigh each
row by its age (`Comparisons.weights`); a window needs the buffer.

**One program for several schemes.** Like the tabular and linear agents, an agent whose
policy does not sample itself carries its row of the table as data (`PracticalState.scheme`):
a1 and a2 are drawn from the row's entries of the four policies' rows at x_t, π_cal is the
row's entry of the three tables. Agents of one setting (α, `cal_samples`, policy, data) then
lower to the same step program, which a sweep compiles once: `algorithm1`, `modified`, `xpo`
and `selm` at their defaults (`vpo` draws `cal_samples = 1` and `greedy` has no bonus: one
program each). A policy with its own sampler (the sequence class) draws from the two policies
the row names only, an ancestral pass each, so its rows stay a program each.

**Other policies.** `build` makes any scheme's agent on any `rbx.rlhf.learners.policies.Policy`.
The autoregressive policies of `rbx.rlhf.learners.sequence` (answers as token sequences) sample themselves
(`Policy.sample`: the answers, and the bonus's draws from π^(t) or π_ref, by ancestral
sampling; the state then keeps θ^(t−1) for Algorithm 1's a1) and give log π_θ of given answers
(`Policy.log_probs_of`: the buffer's DPO term reads only the compared answers).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from rbx import _checks, schedules
from rbx.core import registry as reg
from rbx.core.protocol import Agent
from rbx.rlhf import generated, objectives, schemes
from rbx.rlhf.env import Prompt, Query
from rbx.rlhf.forgetting import FORGETTING, Forgetting, forgetting
from rbx.rlhf.learners import policies
from rbx.rlhf.learners.base import PolicyClass, agent_name, positive_beta
from rbx.rlhf.linear import LinearData

OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd}
L2 = 1.0
"""The default λ of the ℓ2 penalty toward θ_ref (module docstring)."""


def _keys(key: chex.PRNGKey, batched: bool = False) -> chex.Array:
  """The round's keys: a1's, a2's and the calibration draws', and with minibatches
  (`batch_size`) the optimiser steps' draws of rows. `act` and `update` receive the same key
  (`rbx.core.protocol.pair`), so both split it here and each uses its own."""
  return jax.random.split(key, 4 if batched else 3)


class PracticalState(NamedTuple):
  """State carried between rounds. Shapes: X prompts, A actions.

  Attributes:
    params: the policy's parameters θ (`rbx.rlhf.learners.policies`).
    opt_state: the optax state of the optimiser over θ.
    data: the comparisons D^(t): win counts `wins[x, a, b]` = times a was preferred over b at
      prompt x, (X, A, A) (`data="counts"`), or a `Comparisons` buffer (`data="buffer"`; "auto"
      takes one of them at `init`); on generated contexts the feature differences z
      (`rbx.rlhf.linear.LinearData`).
    log_pi: log π^(t), the deployed policy, (X, A).
    log_pi_prev: log π^(t-1), (X, A) (Algorithm 1 samples a1 from it).
    t: the round t about to run, starting at 1; int32 scalar.
    params_prev: θ^(t−1) where the policy samples itself (`Policy.sample`: Algorithm 1 draws
      a1 from it) or on generated contexts (π^(t−1) at the round's context), else None.
    scheme: the agent's row of the scheme table as data, (3,) int32
      (`rbx.rlhf.schemes.Scheme.indices`), so that the rows of one setting share a program; None
      where the policy samples itself (its samplers are picked by name: module docstring).
  """
  params: Any
  opt_state: Any
  data: Any
  log_pi: chex.Array
  log_pi_prev: chex.Array
  t: chex.Array
  params_prev: Any = None
  scheme: chex.Array | None = None


def implicit_reward(log_pi: chex.Array, log_ref: chex.Array, beta) -> chex.Array:
  """r_θ = β (log π_θ − log π_ref), DPO's implicit reward; same shape as `log_pi`."""
  return beta * (log_pi - log_ref)


def implicit_J_star(log_pi: chex.Array, log_ref: chex.Array, pi_cal: chex.Array, beta):
  """J*(r_θ; π_cal) of (2.7) for normalised π_θ: −β Σ_a π_cal(a) log π_θ(a)/π_ref(a).

  Equal to `rbx.rlhf.J_star(implicit_reward(log_pi, log_ref, beta), π_ref, π_cal, β)`
  (module docstring), with no partition function. Shapes: (..., A) -> (...).
  """
  return -jnp.sum(pi_cal * implicit_reward(log_pi, log_ref, beta), axis=-1)


def clip_to_box(log_pi: chex.Array, log_ref: chex.Array, beta, r_max) -> chex.Array:
  """log π_{r̄} with r̄ = h tanh((r_θ − c)/h), h = r_max/2, c = mean_a r_θ per prompt; (X, A).

  A smooth increasing map of the implicit reward onto rewards of range < r_max — the paper's
  box [0, r_max]^A up to the per-prompt shift nothing sees (every such r̄ is reached) —
  renormalised by (2.4). Its derivative is positive everywhere, so no entry loses its
  gradient (a floor max(r, max r − r_max) zeroes the clipped entries' gradients and stalls
  descent at points that are not KKT points of the boxed problem).
  """
  r = implicit_reward(log_pi, log_ref, beta)
  h = 0.5 * r_max
  r = h * jnp.tanh((r - jnp.mean(r, axis=-1, keepdims=True)) / h)
  return jax.nn.log_softmax(log_ref + r / beta, axis=-1)


def dpo_loss(log_pi: chex.Array, log_ref: chex.Array, wins: chex.Array, beta) -> chex.Array:
  """DPO(θ; D) = −ℓ(r_θ, D) of (2.2), summed over the comparisons D given as win counts.

  Args:
    log_pi, log_ref: log π_θ and log π_ref, (X, A).
    wins: `wins[x, a, b]`, (X, A, A).
  Returns:
    scalar ≥ 0: Σ −log σ(β (log π_θ/π_ref (x, a+) − log π_θ/π_ref (x, a−))) over D.
  """
  r = implicit_reward(log_pi, log_ref, beta)
  return -jnp.sum(jax.vmap(objectives.log_likelihood)(r, wins))


class Comparisons(NamedTuple):
  """The comparisons D^(t) one by one: prompt x_i, winner a+_i and loser a−_i, each (T,) int32
  (answers as tokens: (T, L)), of which the first `count` are filled (the rest are masked).

  The capacity T is the horizon the agent's `init` receives, so a run of that many rounds
  never overflows; past it `add` drops the comparison (an out-of-bounds write) but `count`
  keeps counting, so `dropped` reports the loss under jit and vmap (as `LinearData`). `forget`:
  the likelihood's forgetting (`rbx.rlhf.forgetting`), None for (2.2).
  """
  x: chex.Array
  winner: chex.Array
  loser: chex.Array
  count: chex.Array
  forget: Forgetting | None = None

  @classmethod
  def empty(cls, capacity: int, length: int | None = None) -> Comparisons:
    """An empty buffer of `capacity` rows; answers as indices, or as `length` tokens each
    (winner and loser (T, length), `rbx.rlhf.tokens`)."""
    zeros = jnp.zeros(capacity, jnp.int32)
    answers = zeros if length is None else jnp.zeros((capacity, length), jnp.int32)
    return cls(zeros, answers, answers, jnp.zeros((), jnp.int32))

  def add(self, x, winner, loser) -> Comparisons:
    """The buffer with (x, a+, a−) written at row `count`."""
    put = lambda rows, v: rows.at[self.count].set(v, mode="drop")
    return self._replace(x=put(self.x, x), winner=put(self.winner, winner),
                         loser=put(self.loser, loser), count=self.count + 1)

  def mask(self) -> chex.Array:
    """True for the filled rows, (T,)."""
    return jnp.arange(self.x.shape[0]) < self.count

  def weights(self) -> chex.Array:
    """The rows in the likelihood: `mask`, or with a forgetting likelihood their weights
    γ^{(t−1)−i} 1[t − i ≤ w] (float32; `rbx.rlhf.forgetting`), (T,)."""
    return self.mask() if self.forget is None else self.forget.weights(self.count,
                                                                      self.x.shape[0])

  @property
  def dropped(self) -> chex.Array:
    """How many comparisons were added past the capacity and lost: 0 while none were."""
    return jnp.maximum(self.count - self.x.shape[0], 0)

  def minibatch(self, key: chex.PRNGKey, size: int) -> Batch:
    """`size` rows drawn uniformly with replacement from the m rows the likelihood can weigh
    (the filled ones, within the window of a windowed one), each weighted by its `weights` ×
    m/size: Σ_i w_i f(row_i) over the batch is an unbiased estimate of the sum over the buffer."""
    n = jnp.minimum(self.count, self.x.shape[0])
    window = None if self.forget is None else self.forget.window
    low = 0 if window is None else jnp.clip(self.count - window, 0, n)
    m = n - low
    rows = low + jax.random.randint(key, (size,), 0, jnp.maximum(m, 1))
    kept = (jnp.ones(size) if self.forget is None        # every drawn row is filled
            else self.forget.weights_at(self.count, rows))
    weights = kept * (m.astype(jnp.float32) / size)
    return Batch(self.x[rows], self.winner[rows], self.loser[rows], weights)


class Batch(NamedTuple):
  """Rows of a `Comparisons` buffer drawn for one optimiser step (`Comparisons.minibatch`):
  prompts, winners and losers as the buffer holds them, and each row's weight in the estimate
  `w`, (B,) float32."""
  x: chex.Array
  winner: chex.Array
  loser: chex.Array
  w: chex.Array

  def weights(self) -> chex.Array:
    """The rows' weights, (B,) (as `Comparisons.weights`)."""
    return self.w


def dpo_loss_buffer(log_pi: chex.Array, log_ref: chex.Array, data: Comparisons | Batch,
                    beta) -> chex.Array:
  """DPO(θ; D) of `dpo_loss` from the comparisons one by one: O(T) given the rows.

  Args:
    log_pi, log_ref: log π_θ and log π_ref at the buffer's prompts `data.x`, (T, A).
    data: the comparisons (`Comparisons`, capacity T; unfilled rows are masked, and with a
      forgetting likelihood each row weighs its `Comparisons.weights`), or a `Batch` of them.
  Returns:
    scalar ≥ 0: Σ_i −log σ(r_θ(x_i, a+_i) − r_θ(x_i, a−_i)) over the filled rows.
  """
  rows = jnp.arange(log_pi.shape[0])
  return dpo_loss_pairs(log_pi[rows, data.winner], log_ref[rows, data.winner],
                        log_pi[rows, data.loser], log_ref[rows, data.loser], data.weights(),
                        beta)


def dpo_loss_pairs(log_pi_winner: chex.Array, log_ref_winner: chex.Array,
                   log_pi_loser: chex.Array, log_ref_loser: chex.Array, weights: chex.Array,
                   beta) -> chex.Array:
  """DPO(θ; D) from the compared answers' log-probabilities alone, each (T,): Σ_i over the
  rows where `weights` (bool, `Comparisons.mask`) is True of −log σ(r_θ(x_i, a+_i) −
  r_θ(x_i, a−_i)), or with float `weights` w_i (a forgetting likelihood,
  `Comparisons.weights`) the w_i-weighted sum (`dpo_loss_buffer`; a policy with
  `Policy.log_probs_of` computes only these, as a language-model trainer does)."""
  margin = (implicit_reward(log_pi_winner, log_ref_winner, beta)
            - implicit_reward(log_pi_loser, log_ref_loser, beta))
  return dpo_loss_margins(margin, weights)


def dpo_loss_margins(margin: chex.Array, weights: chex.Array) -> chex.Array:
  """Σ_i −log σ(margin_i) over the rows where `weights` (bool) is True, or the w_i-weighted
  sum for float `weights`; margin_i = r_θ(x_i, a+_i) − r_θ(x_i, a−_i), both (T,)."""
  if weights.dtype == jnp.bool_:
    return -jnp.sum(jnp.where(weights, jax.nn.log_sigmoid(margin), 0.0))
  return -jnp.sum(weights * jax.nn.log_sigmoid(margin))


def loss(dpo, log_pi: chex.Array, log_ref: chex.Array, beta, alpha, pi_cal: chex.Array,
         weights: chex.Array) -> chex.Array:
  """L(θ) = DPO(θ; D) − α Σ_i w_i J*(r_θ(x_i); π_cal(x_i))
          = DPO(θ; D) + α β Σ_i w_i Σ_a π_cal(a|x_i) log π_θ(a|x_i)/π_ref(a|x_i),
  minus the objective (3.1a)/(3.2a) at r = r_θ (module docstring; the agents add the ℓ2 term).

  Args:
    dpo: DPO(θ; D), the scalar of `dpo_loss` or `dpo_loss_buffer`.
    log_pi, log_ref: log π_θ and log π_ref at the bonus's prompts x_i, (m, A): every prompt
      (m = X), the round's (m = 1) or m drawn from ρ.
    beta, alpha: β and the bonus weight α_t, scalars.
    pi_cal: π_cal at those prompts, (m, A), exact or the empirical distribution of samples.
    weights: w_i, the estimate of E_{x∼ρ}: ρ itself (m = X), 1, or 1/m each, (m,).
  Returns:
    the scalar loss.
  """
  return dpo - alpha * jnp.dot(weights, implicit_J_star(log_pi, log_ref, pi_cal, beta))


def make(scheme: str, alpha: schedules.Schedule | float = 1.0, policy: str = "tabular",
         optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
         cal_samples: int | None = 0, clip: bool = False, pi_init=None, pi_prev_init=None,
         pi_cal=None, l2=L2, data: str = "auto", cal_prompts: int | None = None, discount=1.0,
         window: int | None = None, batch_size: int | None = None) -> Agent:
  """The DPO-form agent of the scheme table's row `scheme` ("practical/<scheme>"): a1 and a2
  from the row's policies, `train_steps` optax steps on L(θ) of the row's π_cal and α_t per
  round (`greedy`: online DPO, TRL's OnlineDPO; `xpo`: TRL's XPOTrainer, whose `alpha` is
  α β here, and SELM's `optimistic_dpo_loss`, whose α is this α).

  Args:
    scheme: a name in `rbx.rlhf.schemes.SCHEMES`.
    alpha: the schedule t -> α_t (`rbx.schedules`) or a constant (ignored without a bonus).
    policy: "tabular" or "loglinear" (`rbx.rlhf.learners.policies`).
    optimizer: "adam" or "sgd" (optax), with `learning_rate` (traced: it can be swept).
    train_steps: optimiser steps per round.
    cal_samples: the bonus's E_{π_cal}: 0 estimates it by the round's a2 (rows whose a2 is
      drawn from π_cal: `Scheme.draws_calibration`; the registry's default there, else 1),
      k ≥ 1 by k fresh draws at x_t, None exactly (module docstring).
    clip: bound the implicit reward to the box, smoothly (`clip_to_box`).
    pi_init: π^(1) of the tabular policy, (A,) or (X, A); default π_ref.
    pi_prev_init: π^(0) (rows with a1 ~ π^(t−1)), default π^(1).
    pi_cal: the fixed calibration policy (rows with one), default the task's.
    l2: λ ≥ 0 of the penalty (λ/2)‖θ − θ_ref‖² (module docstring: why it is on by default).
    data: the DPO term's form (module docstring, "Cost"): "counts" (win counts, O(|X| A²) a
      step), "buffer" (the comparisons one by one, O(T A d) for the log-linear policy at
      horizon T; the same loss to float32 rounding) or "auto" (the default: the counts where
      T ≥ |X|, else the buffer).
    cal_prompts: with `cal_samples=None`, the exact E_{π_cal} at k prompts drawn from ρ instead
      of all of them.
    discount, window: the DPO term's γ ∈ (0, 1] and window w ≥ 1 (None: ∞) for preferences
      that drift (`rbx.rlhf.forgetting`): NS-DPO and SW-DPO, with any scheme's bonus. The win
      counts decay by γ each round; a window needs the buffer ("counts" is refused, "auto"
      takes the buffer).
    batch_size: None (the default) for the DPO term over the whole D^(t), as (3.2a); B ≥ 1
      for minibatch steps: each optimiser step's DPO term is an unbiased estimate of it from
      B comparisons drawn uniformly with replacement (`Comparisons.minibatch`), O(B) a step
      instead of O(T) (needs the buffer: "counts" is refused, "auto" takes the buffer).
  """
  make_policy = policies.POLICIES[_checks.choice("policy", policy, policies.POLICIES)]
  if policy == "loglinear" and pi_init is not None:
    raise ValueError("pi_init is for policy='tabular'; the log-linear policy starts at π_ref")
  pol = make_policy(pi_init) if policy == "tabular" else make_policy()
  return build(agent_name(CLASS_NAME, scheme), scheme, pol, alpha, cal_samples, optimizer,
               learning_rate, train_steps, clip, pi_prev_init, pi_cal, l2, data, cal_prompts,
               discount, window, batch_size)


def check_batch_size(batch_size, data) -> bool:
  """Whether the DPO term is estimated on minibatches; ValueError naming batch_size (not an
  integer ≥ 1) or data ("counts": win counts have no rows to draw)."""
  if batch_size is None:
    return False
  _checks.positive_int("batch_size", batch_size)
  if data == "counts":
    raise ValueError(f"batch_size={batch_size} draws comparisons from the buffer; win counts "
                     "(data='counts') have no rows to draw: use data='buffer' or 'auto'")
  return True


def row_keys(key: chex.PRNGKey, batch_size, train_steps: int) -> chex.Array | None:
  """The optimiser steps' keys for their minibatches, (train_steps,), from the round's own
  (`_keys`); None without minibatches."""
  if batch_size is None:
    return None
  return jax.random.split(_keys(key, True)[3], train_steps)


DATA = ("auto", "counts", "buffer")
"""The DPO term's forms: win counts (X, A, A), a buffer of the comparisons (`Comparisons`), or
"auto": the counts where the horizon T ≥ |X|, else the buffer (chosen at `init`)."""


def build(name: str, scheme_name: str, pol: policies.Policy, alpha, cal_samples, optimizer,
          learning_rate, train_steps, clip, pi_prev_init, pi_cal, l2, data,
          cal_prompts, discount=1.0, window=None, batch_size=None) -> Agent:
  """The agent `name` of the row `scheme_name` on the policy `pol`; the other arguments as `make`.
  A policy with its own sampler (`Policy.sample`: the autoregressive policies of
  `rbx.rlhf.learners.sequence`, by ancestral sampling) draws the answers, and the bonus's draws
  from π^(t) or π_ref, with it from θ (those from a fixed π_cal by `jax.random.categorical`
  over its rows); the others by `jax.random.categorical` over their rows log π^(t)(·|x_t).
  """
  scheme = schemes.get(scheme_name)
  schedule = schemes.alpha_schedule(scheme, alpha)
  own = pol.sample is not None
  if scheme.bonus and not scheme.draws_calibration and cal_samples == 0:
    raise ValueError(f"cal_samples=0 estimates E_{{π_cal}} by the round's answer drawn from "
                     f"π_cal, and {scheme_name} draws none from it: use cal_samples >= 1 or None "
                     f"(exact)")
  if own and (clip or pi_prev_init is not None):
    raise ValueError(f"policy={pol.name!r} samples π_θ itself: clip (a whole-answer reweighting) "
                     "and pi_prev_init are for the policies over enumerated answers")
  opt = OPTIMIZERS[_checks.choice("optimizer", optimizer, OPTIMIZERS)](learning_rate)
  _checks.positive("learning_rate", learning_rate)
  _checks.positive_int("train_steps", train_steps)
  _checks.positive("l2", l2, strict=False)
  if cal_samples is not None and (isinstance(cal_samples, bool) or not isinstance(cal_samples, int)
                                  or cal_samples < 0):
    raise ValueError(f"cal_samples must be None or an integer >= 0, got {cal_samples!r}")
  _checks.choice("data", data, DATA)
  forget = forgetting(discount, window)
  if window is not None and data == "counts":
    raise ValueError(f"window={window} needs the comparisons one by one: win counts cannot "
                     f"forget the oldest comparison in the window (use data='buffer' or 'auto'; "
                     f"a discount alone decays the counts)")
  batched = check_batch_size(batch_size, data)
  if cal_prompts is not None:
    _checks.positive_int("cal_prompts", cal_prompts)
    if cal_samples is not None:
      raise ValueError(f"cal_prompts={cal_prompts} takes the exact E_{{a∼π_cal}} at each drawn "
                       f"prompt: set cal_samples=None with it (got cal_samples={cal_samples!r})")
  for field, value in (("pi_prev_init", pi_prev_init), ("pi_cal", pi_cal)):
    if value is not None:
      _checks.probability(field, value)

  def deployed(params, task, xs=None):
    """log π^(t) of θ: every prompt's (X, A), or at prompts xs (n,) only, (n, A)."""
    if xs is None:
      log_pi, log_ref = pol.log_probs(params, task), jnp.log(task.pi_ref)
    else:
      log_pi, log_ref = pol.log_probs_at(params, task, xs), jnp.log(task.pi_ref[xs])
    return clip_to_box(log_pi, log_ref, task.beta, task.r_max) if clip else log_pi

  def init(key, task, horizon: int) -> PracticalState:
    del key
    positive_beta(name, task.beta, "the DPO form's reward is r_θ = β log π_θ/π_ref")
    drawn = isinstance(task, generated.GeneratedTask)
    if drawn:
      on_generated(task)
    params = pol.init(task)
    log_pi = deployed(params, task)
    log_prev = log_pi if pi_prev_init is None else jnp.log(
        jnp.broadcast_to(jnp.asarray(pi_prev_init, jnp.float32), task.pi_ref.shape))
    X, A = task.pi_ref.shape
    counts = data == "counts" or (data == "auto" and horizon >= X and window is None
                                  and not batched)
    if drawn:                       # the comparisons' feature differences (module docstring)
      comparisons = LinearData(jnp.zeros((horizon, params.shape[0])), jnp.zeros((), jnp.int32),
                               forget)
    else:
      comparisons = (jnp.zeros((X, A, A)) if counts
                     else Comparisons.empty(horizon)._replace(forget=forget))
    return PracticalState(params=params, opt_state=opt.init(params), data=comparisons,
                          log_pi=log_pi, log_pi_prev=log_prev, t=jnp.ones((), jnp.int32),
                          params_prev=params if own or drawn else None,
                          scheme=None if own else jnp.array(scheme.indices(), jnp.int32))

  def on_generated(task):
    """ValueError naming the option that cannot run on generated contexts (module docstring)."""
    if pol.name != "loglinear":
      raise ValueError(f"{name} on generated contexts needs policy='loglinear' (π_θ over φ(s, a), "
                       f"which the environment evaluates at any context), got policy={pol.name!r}")
    for field, value, ok in (("clip", clip, False), ("data", data, "auto"),
                             ("pi_prev_init", pi_prev_init, None), ("batch_size", batch_size, None)):
      if value != ok and not (field == "data" and value == "buffer"):
        raise ValueError(f"{field}={value!r} is for a finite prompt set: on generated contexts "
                         f"{name} keeps the comparisons' feature differences and π^(0) = π_ref "
                         f"(leave {field} at its default)")
    generated.check_learner(name, pi_cal)

  def log_fixed_cal(task, xs=None):
    """log π_cal of the rows with a fixed one, (X, A), or at the prompts xs only."""
    cal = schemes.fixed_policy(pi_cal, task)
    return jnp.log(cal if xs is None else cal[xs])

  def samplers(state, obs, task):
    """key -> an answer at x_t drawn by the policy itself from θ^(t−1), θ^(t) and θ_ref (and
    from the fixed π_cal's row by a categorical draw)."""
    draw = lambda params: lambda key: pol.sample(key, params, task, obs.x)
    return {"previous": draw(state.params_prev), "current": draw(state.params),
            "reference": draw(pol.reference(task)),
            "calibration": lambda key: jax.random.categorical(key, log_fixed_cal(task, obs.x))}

  def at_round(state, obs, task):
    """(state, obs, task) as the per-prompt code reads them: themselves at a prompt; at a
    generated context its one-prompt task (`generated.local`), the prompt 0 and the state's
    π^(t−1), π^(t) there (from θ^(t−1), θ^(t))."""
    at, x = generated.local(task, obs)
    if at is task:
      return state, obs, task
    return (state._replace(log_pi=deployed(state.params, at),
                           log_pi_prev=deployed(state.params_prev, at)), Prompt(x), at)

  def act(key, state: PracticalState, obs: Prompt | generated.Context, task):
    if own:
      a1, a2 = schemes.draw(_keys(key, batched)[:2], scheme, samplers(state, obs, task))
    else:
      local, obs_, at = at_round(state, obs, task)
      a1, a2 = schemes.answers_of_row(_keys(key, batched)[:2], state.scheme, {
          "previous": local.log_pi_prev[obs_.x], "current": local.log_pi[obs_.x],
          "reference": jnp.log(at.pi_ref[obs_.x]), "calibration": log_fixed_cal(at, obs_.x)})
    drawn = isinstance(obs, generated.Context)
    return state, Query(a1, a2, generated.LogLinear(state.params) if drawn else state.log_pi)

  def calibration_estimate(key, state, obs, query, task):
    """(xs, π̂_cal, w): the estimate Σ_i w_i E_{a∼π̂_cal(·|x_i)} of E_{x∼ρ} E_{a∼π_cal} at the
    prompts xs (m,) (None: every prompt), with π̂_cal (m, A) and w (m,)."""
    X, A = task.pi_ref.shape

    def log_cal(xs=None):
      """log π_cal at the prompts xs (every prompt: None): the row's entry of the three, by
      name where the policy samples itself, else by the state's row (only xs's rows of each)."""
      at = (lambda table: table) if xs is None else (lambda table: table[xs])
      policies = {"current": lambda: at(state.log_pi),
                  "reference": lambda: jnp.log(at(task.pi_ref)),
                  "fixed": lambda: log_fixed_cal(task, xs)}
      if own:
        return schemes.calibration_policy(scheme, policies)
      return schemes.calibration_of_row(state.scheme[2], {k: f() for k, f in policies.items()})

    if not scheme.bonus:                           # α ≡ 0: the bonus at no prompt
      return jnp.zeros(0, jnp.int32), jnp.zeros((0, A)), jnp.zeros(0)
    if cal_prompts is not None:                    # k prompts from ρ, exact over the answers
      xs = jax.random.categorical(_keys(key, batched)[2], jnp.log(task.rho), shape=(cal_prompts,))
      return xs, jnp.exp(log_cal(xs)), jnp.full(cal_prompts, 1.0 / cal_prompts)
    if cal_samples is None:
      return None, jnp.exp(log_cal()), task.rho
    if cal_samples == 0:
      draws = query.a2[None]                       # the round's answer drawn from π_cal
    elif own and scheme.calibration != "fixed":    # π^(t) or π_ref, sampled by the policy
      draws = jax.vmap(samplers(state, obs, task)[scheme.calibration])(
          jax.random.split(_keys(key, batched)[2], cal_samples))
    else:
      draws = jax.random.categorical(_keys(key, batched)[2], log_cal(obs.x), shape=(cal_samples,))
    return obs.x[None], jnp.mean(jax.nn.one_hot(draws, A), axis=0)[None], jnp.ones(1)

  def update(key, state: PracticalState, obs: Prompt | generated.Context, query: Query, a1_wins,
             task):
    winner = jnp.where(a1_wins, query.a1, query.a2)
    loser = jnp.where(a1_wins, query.a2, query.a1)
    drawn = isinstance(state.data, LinearData)            # the form `init` took
    counts = not drawn and not isinstance(state.data, Comparisons)
    if drawn:
      phi = obs.features
      comparisons = state.data.add(phi[winner] - phi[loser])
    elif counts:                                   # γ·wins + the round's (forgetting.decay)
      wins = state.data if forget is None else forget.decay(state.data)
      comparisons = wins.at[obs.x, winner, loser].add(1.0)
    else:
      comparisons = state.data.add(obs.x, winner, loser)
    log_ref = jnp.log(task.pi_ref)
    alpha_t = schedule(state.t)
    # the bonus's prompts: the task's (all, or cal_prompts of them), or the round's own (at a
    # generated context, its one-prompt task: `at_round`)
    on_task = cal_samples is None or cal_prompts is not None
    cal_state, cal_obs, bonus_task = (state, obs, task) if on_task else at_round(state, obs, task)
    xs, cal, weights = calibration_estimate(key, cal_state, cal_obs, query, bonus_task)
    bonus_ref = jnp.log(bonus_task.pi_ref)
    bonus_ref = bonus_ref if xs is None else bonus_ref[xs]
    theta_ref = pol.reference(task)

    def objective(params, rows_key):
      prior = 0.5 * l2 * jnp.sum(jnp.square(params - theta_ref))
      if drawn:           # log-linear: r_θ(s, a+) − r_θ(s, a−) = θᵀz, z the features' difference
        dpo = -comparisons.log_likelihood(params)
        bonus_pi = deployed(params, bonus_task, xs)
      elif counts:                                 # every prompt's log π_θ, once
        log_pi = deployed(params, task)
        dpo = dpo_loss(log_pi, log_ref, comparisons, task.beta)
        bonus_pi = log_pi if xs is None else log_pi[xs]
      else:                                        # only the prompts the terms read
        rows = comparisons if rows_key is None else comparisons.minibatch(rows_key, batch_size)
        if pol.log_probs_of is not None and not clip:   # and only the answers compared
          x, (w, l) = rows.x, (rows.winner, rows.loser)
          dpo = dpo_loss_pairs(pol.log_probs_of(params, task, x, w), log_ref[x, w],
                               pol.log_probs_of(params, task, x, l), log_ref[x, l],
                               rows.weights(), task.beta)
        else:
          dpo = dpo_loss_buffer(deployed(params, task, rows.x), log_ref[rows.x], rows,
                                task.beta)
        bonus_pi = deployed(params, task, xs)
      return loss(dpo, bonus_pi, bonus_ref, task.beta, alpha_t, cal, weights) + prior

    def step(carry, rows_key):
      params, opt_state = carry
      grads = jax.grad(objective)(params, rows_key)
      updates, opt_state = opt.update(grads, opt_state, params)
      return (optax.apply_updates(params, updates), opt_state), None

    (params, opt_state), _ = jax.lax.scan(step, (state.params, state.opt_state),
                                          row_keys(key, batch_size, train_steps),
                                          length=train_steps)
    return PracticalState(params=params, opt_state=opt_state, data=comparisons,
                          log_pi=deployed(params, task), log_pi_prev=state.log_pi, t=state.t + 1,
                          params_prev=state.params if own or drawn else None, scheme=state.scheme)

  return Agent(name, init, act, update)


CLASS_NAME = "practical"
PARAMS = {
    "policy": reg.string(policies.POLICIES, doc="the parametric policy (rbx.rlhf.learners.policies)"),
    "optimizer": reg.string(OPTIMIZERS, doc="the optax optimiser over θ"),
    "learning_rate": reg.real(low=0.0, doc="the optimiser's learning rate"),
    "train_steps": reg.integer(1, doc="optimiser steps per round"),
    "clip": reg.boolean(doc="bound the implicit reward to the box [0, r_max], smoothly"),
    "l2": reg.real(low=0.0, doc="λ of the penalty (λ/2)‖θ − θ_ref‖²"),
    "pi_init": schemes.POLICY,
    "data": reg.string(DATA, doc="the DPO term: win counts (|X| A² a step) or a buffer "
                       "of the comparisons (the horizon's, at their prompts only); auto: the "
                       "counts where the horizon T >= |X| (and no window), else the buffer"),
    "batch_size": reg.integer(1, optional=True, doc="the DPO term on B comparisons drawn from "
                              "the buffer each optimiser step (default: all of them)"),
    **FORGETTING}
CAL_SAMPLES = {"cal_samples": reg.integer(0, optional=True,
                                          doc="draws estimating E_{π_cal} (0: the round's)"),
               "cal_prompts": reg.integer(1, optional=True,
                                          doc="the bonus at k prompts drawn from ρ, exact over "
                                          "the answers (with cal_samples unset; default: all)")}


def params(scheme: schemes.Scheme) -> dict[str, reg.Param]:
  """The options a config sets for the row: α's and the bonus estimate's with a bonus, π_cal
  with a fixed one, π^(0) where a1 ~ π^(t−1)."""
  return {**schemes.params(scheme), **PARAMS, **(CAL_SAMPLES if scheme.bonus else {}),
          **({"pi_prev_init": schemes.POLICY} if scheme.first == "previous" else {})}


def defaults(scheme: schemes.Scheme) -> dict:
  """`cal_samples`: the round's a2 (0) where a2 ~ π_cal, else one fresh draw."""
  return {"cal_samples": 0 if scheme.draws_calibration else 1} if scheme.bonus else {}


CLASS = PolicyClass(CLASS_NAME, make, params, defaults,
                    doc="a parametric π_θ (tabular, log-linear), the optimistic step as optax "
                        "steps on a DPO-form loss; every environment (log-linear: features)")
