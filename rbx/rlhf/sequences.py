"""Online RLHF over token sequences, with exact ground truth by enumerating the answers.

A prompt x ~ ρ (|X| of them) is answered by a sequence y = (y_1, …, y_L) of L tokens from a
vocabulary of V; the V^L answers are enumerated in a fixed order (`answers`: answer i is i
written in base V, y_1 the most significant digit), so that every object of the paper is exact:

* features φ(x, y) = Σ_l ψ(x, l, y_{l−1}, y_l) ∈ R^d, a sum over positions of token features
  ψ of (prompt, position, previous token, token), y_0 = BOS (token id V);
* the true reward r*(x, y) = θ*ᵀφ(x, y) scaled into [0, r_max] (as
  `rbx.rlhf.make_contextual`): a sum of per-token rewards up to a constant;
* π_ref autoregressive, π_ref(y|x) = Π_l π_ref(y_l | x, l, y_{l−1}), given by its per-token
  log-probabilities (X, L, V+1, V) (`SequenceEnv.ref_log_probs`);
* the Bradley–Terry oracle (2.1) on whole answers, J(π) of (2.5), π* ∝ π_ref e^{r*/β} (2.4)
  and the regret (2.6), over the V^L answers of each prompt.

A `SequenceEnv` is a `rbx.rlhf.ContextualPreferenceEnv` over the enumerated answers (A = V^L
actions, features φ (X, V^L, d)) with the token structure beside it: its oracle and regret are
that environment's, and the linear and tabular policy classes (`rbx.rlhf.learners`) run on it
unchanged; the sequence class (`rbx.rlhf.learners.sequence`) holds autoregressive policies.

**By recursion.** r* is a sum of per-token rewards (`SequenceEnv.token_rewards`) and π_ref is
Markov, so J(π*, r*), π*'s conditionals, a Markov policy's J and its regret are passes over the
positions, O(|X|·L·V²) (`rbx.rlhf.markov`, exported here: `optimal_value`, `value`,
`markov_regret`, `reward_range`); `SequenceEnv.feedback` scores a deployed policy given as
conditionals (X, L, V+1, V) that way.

**Size.** The enumeration holds φ, |X|·V^L·d float32s (64 prompts, V^L = 65,536 and d = 16:
268 MB), and every policy evaluation |X|·V^L log-probabilities; V^L ≤ `MAX_ANSWERS`. Beyond it
(or with `enumerate=False`) the constructors build a `rbx.rlhf.tokens.TokenEnv` of the same
model: answers as token arrays, the truth and the regret by the recursions only.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.core import protocol
from rbx.rlhf import contextual, env as env_lib, markov, tokens as tokens_lib
from rbx.rlhf.markov import TokenTruth, markov_regret, optimal_value, reward_range, value

MAX_ANSWERS = 65_536
"""The largest V^L: the enumeration holds |X|·V^L·d features (module docstring)."""


def answers(vocab: int, length: int) -> chex.Array:
  """Every answer, (V^L, L) int32: row i is i in base V, y_1 the most significant digit, so
  the prefix (y_1, …, y_l) of answer i is number i // V^(L−l) among the V^l prefixes.

  Raises:
    ValueError naming vocab or length: V ≥ 2, L ≥ 1, V^L ≤ `MAX_ANSWERS`.
  """
  tokens_lib.check_sizes(vocab, length)
  if vocab ** length > MAX_ANSWERS:
    raise ValueError(f"vocab ** length must be <= {MAX_ANSWERS:,} (the answers are enumerated), "
                     f"got vocab={vocab}, length={length}: {vocab ** length:,} answers; "
                     "enumerate=False builds the environment over token arrays "
                     "(rbx.rlhf.tokens)")
  digits = np.arange(vocab ** length)[:, None] // vocab ** np.arange(length - 1, -1, -1)
  return jnp.asarray(digits % vocab, jnp.int32)


def along_answers(table: chex.Array, tokens: chex.Array) -> chex.Array:
  """Σ_l table[:, l, y_{l−1}, y_l] for every answer y (y_0 = BOS = V).

  Args:
    table: per-token values, (X, L, V+1, V, ...): token features ψ or log-probabilities.
    tokens: the answers, (A, L) (`answers`).
  Returns:
    (X, A, ...): φ(x, y) from ψ, or log π(y|x) from per-token log-probabilities.
  """
  V = table.shape[3]
  prev = jnp.concatenate([jnp.full((tokens.shape[0], 1), V, tokens.dtype), tokens[:, :-1]], 1)
  return sum(table[:, l, prev[:, l], tokens[:, l]] for l in range(tokens.shape[1]))


class SequenceTask(NamedTuple):
  """What the learner is told: `rbx.rlhf.ContextualTask`'s fields and the token structure.

  Attributes:
    pi_ref: π_ref(y|x) of the enumerated answers, (X, A), A = V^L. rho: ρ, (X,). beta: β.
    r_max: the learner's reward bound. pi_cal: the fixed calibration policy (π_ref), (X, A).
    features: φ(x, y), (X, A, d).
    tokens: the answers, (A, L) (`answers`).
    ref_log_probs: log π_ref(y_l | x, l, y_{l−1}), (X, L, V+1, V) (previous token V: BOS).
    token_features: ψ(x, l, y_{l−1}, y_l), (X, L, V+1, V, d).
  """
  pi_ref: chex.Array
  rho: chex.Array
  beta: chex.Array
  r_max: chex.Array
  pi_cal: chex.Array
  features: chex.Array
  tokens: chex.Array
  ref_log_probs: chex.Array
  token_features: chex.Array


class SequenceEnv(NamedTuple):
  """A contextual preference environment over the V^L enumerated answers, with their tokens.

  Attributes:
    context: the environment over the answers (r*, π_ref, ρ, β, r_max, φ, θ*), (X, A = V^L).
    tokens: the answers, (A, L) int32 (`answers`).
    ref_log_probs: log π_ref(y_l | x, l, y_{l−1}), (X, L, V+1, V), each row normalised.
    token_features: ψ(x, l, y_{l−1}, y_l), (X, L, V+1, V, d).
  """
  context: contextual.ContextualPreferenceEnv
  tokens: chex.Array
  ref_log_probs: chex.Array
  token_features: chex.Array

  @property
  def num_prompts(self) -> int:
    """|X|."""
    return self.context.num_prompts

  @property
  def num_actions(self) -> int:
    """A = V^L, the answers per prompt."""
    return self.context.num_actions

  @property
  def vocab(self) -> int:
    """V."""
    return self.ref_log_probs.shape[-1]

  @property
  def length(self) -> int:
    """L."""
    return self.tokens.shape[1]

  @property
  def dim(self) -> int:
    """d."""
    return self.context.dim

  @property
  def base(self):
    """The `rbx.rlhf.PreferenceEnv` over the answers (r*, π_ref, ρ, β, r_max, π_cal)."""
    return self.context.base

  @property
  def beta(self) -> chex.Array:
    """β."""
    return self.context.beta

  @property
  def rho(self) -> chex.Array:
    """ρ, (X,)."""
    return self.base.rho

  @property
  def token_rewards(self) -> chex.Array:
    """The true reward per token, R (X, L, V+1, V): r*(x, y) = Σ_l R[x, l, y_{l−1}, y_l]
    (y_0 = BOS = V) to float32 rounding (the enumerated `base.r_star` is clipped into
    [0, r_max] and summed in another order).

    R = θ̃ᵀψ with θ̃ = `context.theta_star` (θ* scaled), plus the scaling's offset
    −min_{x,y} θ̃ᵀφ(x, y) (a min-plus pass, `markov.reward_range`) on position 1 (l = 0, every
    previous-token row; only BOS's is read); r_max/2 there when r* is constant (θ̃ = 0).
    O(|X|·L·V²·d), nothing over the answers.
    """
    return markov.scaled_rewards(self.token_features, self.context.theta_star, self.r_max)

  @property
  def theta_star(self) -> chex.Array:
    """θ* scaled as r* is, (d,)."""
    return self.context.theta_star

  @property
  def r_max(self) -> chex.Array:
    """r_max, the truth's bound."""
    return self.context.r_max

  @property
  def learner_r_max(self) -> chex.Array:
    """The learner's bound (≥ r_max)."""
    return self.context.learner_r_max

  @property
  def spec(self) -> SequenceTask:
    """What the learner is told (not r* or θ*)."""
    return SequenceTask(*self.context.spec, self.tokens, self.ref_log_probs, self.token_features)

  def reset(self, key: chex.PRNGKey) -> tuple:
    """No per-seed environment state: ()."""
    return self.context.reset(key)

  def observe(self, key: chex.PRNGKey, state: tuple):
    """The step's prompt x ~ ρ."""
    return self.context.observe(key, state)

  def feedback(self, key: chex.PRNGKey, state: tuple, obs, query):
    """(the oracle's comparison (2.1) of answers a1, a2, the ρ-weighted regret term (2.6)).

    `query.log_pi` is the deployed policy over the enumerated answers, (X, V^L) (the regret
    over them, `rbx.rlhf.PreferenceEnv.feedback`), or a Markov policy's conditionals
    log π(y_l | x, l, y_{l−1}), (X, L, V+1, V): then the regret is `markov.markov_regret`'s,
    O(|X|·L·V²), and the oracle's draw the same.
    """
    if query.log_pi.ndim != 4:
      return self.context.feedback(key, state, obs, query)
    a1_wins = env_lib.preference(jax.random.split(key)[1], self.base, obs.x, query.a1, query.a2)
    return a1_wins, markov_regret(self, query.log_pi)


def enumerates(vocab: int, length: int, enumerate: bool | None) -> bool:
  """Whether the environment enumerates its V^L answers: `enumerate`, or where None (the
  default) V^L ≤ `MAX_ANSWERS`. ValueError naming vocab, length or enumerate."""
  tokens_lib.check_sizes(vocab, length)
  if enumerate is None:
    return vocab ** length <= MAX_ANSWERS
  if not isinstance(enumerate, bool):
    raise ValueError(f"enumerate must be True, False or None, got {enumerate!r}")
  return enumerate


def with_reference(env, ref_logits):
  """`env` with π_ref(y_l | x, l, y_{l−1}) = softmax(ref_logits[x, l, y_{l−1}])(y_l) (a
  `TokenEnv`: `rbx.rlhf.tokens.with_reference`).

  Args:
    ref_logits: per-token logits, (X, L, V+1, V), finite.
  Raises:
    ValueError naming ref_logits (shape, non-finite) or pi_ref (an answer's probability
    underflows to 0 in float32).
  """
  if isinstance(env, tokens_lib.TokenEnv):
    return tokens_lib.with_reference(env, ref_logits)
  log_ref = tokens_lib.reference_log_probs(ref_logits, env.ref_log_probs.shape)
  pi_ref = jax.nn.softmax(along_answers(log_ref, env.tokens), axis=-1)   # normalised to rounding
  _checks.probability("pi_ref", pi_ref, strict=True)
  base = env.base._replace(pi_ref=pi_ref, pi_cal=pi_ref)
  return env._replace(context=env.context._replace(base=base), ref_log_probs=log_ref)


def make_sequences(token_features, theta_star, beta, r_max, ref_logits=None, rho=None,
                   learner_r_max=None, enumerate: bool | None = None):
  """Builds and validates a sequence environment from token features and θ*: a `SequenceEnv`
  over the enumerated answers, or with `enumerate=False` (default: beyond `MAX_ANSWERS`) a
  `rbx.rlhf.tokens.TokenEnv` over token arrays (`tokens.make_tokens`, the same r* and π_ref).

  φ(x, y) = Σ_l ψ(x, l, y_{l−1}, y_l) over the enumerated answers, and r* from φ and θ* as
  `rbx.rlhf.make_contextual` scales it (r* = r_max (θ*ᵀφ − m)/(M − m)). ψ[:, 0] is read at
  y_0 = BOS only and ψ[:, l ≥ 1] never at BOS.

  The scale's m and M are still taken over the enumerated answers (`make_contextual`), which
  keeps r* and every recorded regret bit for bit; `SequenceEnv.token_rewards` gives the same
  r* per token from a min-plus pass (`markov.reward_range`), to float32 rounding.

  Args:
    token_features: ψ, shape (X, L, V+1, V, d) with X ≥ 1, L ≥ 1, V ≥ 2, V^L ≤ `MAX_ANSWERS`.
    theta_star: θ*, (d,).
    beta, r_max: β > 0, r_max > 0.
    ref_logits: π_ref's per-token logits (X, L, V+1, V) (`with_reference`); default uniform.
    rho: the prompt distribution, (X,); default uniform.
    learner_r_max: the learner's bound ≥ r_max (default r_max).
    enumerate: True, False, or None (the default): enumerate where V^L ≤ `MAX_ANSWERS`.
  Raises:
    ValueError naming the field, for any bad input (before anything compiles).
  """
  _checks.positive("beta", beta)
  _checks.positive("r_max", r_max)
  psi = jnp.asarray(token_features, jnp.float32)
  if psi.ndim != 5 or psi.shape[2] != psi.shape[3] + 1:
    raise ValueError(f"token_features must have shape (X, L, V+1, V, d), got {psi.shape}")
  X, L, _, V, d = psi.shape
  if not enumerates(V, L, enumerate):
    return tokens_lib.make_tokens(psi, theta_star, beta, r_max, ref_logits, rho, learner_r_max)
  if X < 1 or d < 1:
    raise ValueError(f"token_features must have X >= 1 prompts and d >= 1, got {psi.shape}")
  tokens = answers(V, L)
  ctx = contextual.make_contextual(along_answers(psi, tokens), theta_star, beta, r_max, 1.0, rho,
                                   learner_r_max)
  env = SequenceEnv(ctx, tokens, jnp.full((X, L, V + 1, V), -np.log(V), jnp.float32), psi)
  return env if ref_logits is None else with_reference(env, ref_logits)


def _random_tokens(key, num_prompts, vocab, length, dim, beta, r_max, enumerate):
  """(ψ ~ N(0, I_d/d) of shape (X, L, V+1, V, d), θ* ~ N(0, I_d)), after validating the sizes
  and β, r_max (before anything is drawn)."""
  _checks.positive("beta", beta)
  _checks.positive("r_max", r_max)
  _checks.positive_int("num_prompts", num_prompts)
  _checks.positive_int("dim", dim)
  if enumerates(vocab, length, enumerate):
    answers(vocab, length)                                          # the cap
  tokens_lib.check_memory(num_prompts, vocab, length, dim)
  k1, k2 = jax.random.split(key)
  psi = jax.random.normal(k1, (num_prompts, length, vocab + 1, vocab, dim)) / np.sqrt(dim)
  return psi, jax.random.normal(k2, (dim,))


def random_sequences(key: chex.PRNGKey, num_prompts: int, vocab: int, length: int, dim: int,
                     beta, r_max, deviation=1.0, learner_r_max=None, enumerate=None):
  """A random sequence environment: ψ ~ N(0, I_d/d), θ* ~ N(0, I_d), uniform ρ.

  π_ref(y_l | x, l, y_{l−1}) ∝ exp((1 − deviation) θ̃ᵀψ(x, l, y_{l−1}, y_l)) with θ̃ the scaled
  θ* (r* = θ̃ᵀφ + c): per token, `make_contextual`'s π_ref ∝ exp((1 − d) r*) (d = 1 uniform,
  d = 0 each token tilted by its share of r*, d = 2 against it; not π_HF itself, which is
  not autoregressive in this form).

  Args:
    key: the instance's key.
    num_prompts, vocab, length, dim: |X| ≥ 1, V ≥ 2, L ≥ 1, d ≥ 1.
    beta, r_max, learner_r_max, enumerate: as `make_sequences`. deviation: in [0, 2].
  """
  _checks.in_range("deviation", deviation, 0.0, 2.0)
  psi, theta = _random_tokens(key, num_prompts, vocab, length, dim, beta, r_max, enumerate)
  env = make_sequences(psi, theta, beta, r_max, learner_r_max=learner_r_max,
                       enumerate=enumerate)
  if _checks.is_concrete(deviation) and float(deviation) == 1.0:
    return env
  return with_reference(env, (1.0 - deviation) * (psi @ env.theta_star))


def best_answers(env: SequenceEnv) -> chex.Array:
  """y*(x) = argmax_y r*(x, y), the best answer's index per prompt, (X,)."""
  return jnp.argmax(env.base.r_star, axis=-1)


def metrics(env: SequenceEnv, state, obs, query) -> dict:
  """`rbx.rlhf.tokens.METRICS` of a step on the enumerated answers (as the token environment
  records them): the dueling regrets of a1, a2 against y*(x_t) and the deployed policy's
  Σ_x ρ(x) π(y*(x)|x), from log π over the answers (X, V^L) or its conditionals."""
  del state
  r, best = env.base.r_star, best_answers(env)
  regrets = tokens_lib.dueling_regrets(r[obs.x, best[obs.x]], r[obs.x, query.a1],
                                       r[obs.x, query.a2])
  if query.log_pi.ndim == 4:
    found = tokens_lib.p_best(query.log_pi, env.rho, env.tokens[best])
  else:
    found = jnp.dot(env.rho, jnp.exp(query.log_pi[jnp.arange(env.num_prompts), best]))
  return {**regrets, "p_best": found}


def hard_sequences(key: chex.PRNGKey, num_prompts: int, vocab: int, length: int, dim: int,
                   beta, r_max, epsilon, learner_r_max=None, enumerate=None):
  """Example 2 over sequences: a best answer y*(x) per prompt that π_ref all but hides.

  y*(x) is drawn uniformly; the first token feature is the indicator ψ₀(x, l, ·, y_l) =
  1{y_l = y*_l(x)}, the other d − 1 are `random_sequences`' N(0, 1/d) distractors, and
  θ* = e₀, so r*(x, y) = (r_max/L)·#{l : y_l = y*_l(x)}: y* is the one answer at r_max. π_ref
  gives y*_l mass ε at position l (whatever the previous token) and every other token
  (1 − ε)/(V − 1), so π_ref(y*|x) = ε^L — Example 2's 1/κ with κ = ε^−L, exponential in L.
  Per token π* ∝ π_ref e^{r*/β} raises y*_l by the odds ε(V − 1)/(1 − ε)·e^{r_max/(Lβ)}, so
  π* is near y* when r_max/(Lβ) ≫ log((1 − ε)/(ε(V − 1))) (Example 2's κ ≤ e^{r_max/β}).

  A scheme that draws a2 from π_ref (XPO, SELM) compares y* with probability ε^L a round, and
  online DPO, sampling only its own policy from π^(1) = π_ref, as rarely at first; with a
  policy of one logit per prefix neither can raise y* before it is compared. A policy sharing
  the token features learns from any answer holding some of y*'s tokens, 1 − (1 − ε)^L of
  π_ref's (docs/sequences.md). Optimism (Algorithm 1, VPO) raises the answers the data leave
  uncertain, rarely seen ones included.

  Args:
    epsilon: ε in (0, 1) (y*'s tokens are the least likely ones for ε < 1/V).
    the others: as `random_sequences` (y*(x) is the same draw with or without the
      enumeration).
  """
  if _checks.is_concrete(epsilon) and not 0.0 < float(epsilon) < 1.0:
    raise ValueError(f"epsilon must lie in (0, 1), got {epsilon}")
  k1, k2 = jax.random.split(key)
  psi, _ = _random_tokens(k1, num_prompts, vocab, length, dim, beta, r_max, enumerate)
  best = jax.random.randint(k2, (num_prompts, length), 0, vocab)          # y*(x), (X, L)
  on_best = jax.nn.one_hot(best, vocab)[:, :, None, :]                    # (X, L, 1, V)
  psi = psi.at[..., 0].set(jnp.broadcast_to(on_best, psi.shape[:-1]))
  env = make_sequences(psi, jax.nn.one_hot(0, dim), beta, r_max, learner_r_max=learner_r_max,
                       enumerate=enumerate)
  p = jnp.where(on_best > 0, epsilon, (1.0 - epsilon) / (vocab - 1))
  return with_reference(env, jnp.broadcast_to(jnp.log(p), env.ref_log_probs.shape))


protocol.add_metrics(SequenceEnv, metrics, tokens_lib.METRICS)
