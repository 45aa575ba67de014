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
that environment's, and the agents of `rbx.rlhf.linear_agents` (and the exact tabular ones,
at small V^L) run on it unchanged. The autoregressive policies (`tabular`, `loglinear`,
`neural`) give log π_θ(y|x) of every enumerated answer and sample answers token by token
(ancestral sampling, inside the jitted step); the DPO-form agents of `rbx.rlhf.practical` run
on them unchanged (`online_dpo`, `xpo`, `selm`, `vpo`, `algorithm1` here: the implicit reward
β log π_θ(y|x)/π_ref(y|x) of whole answers).

**Size.** The enumeration holds φ, |X|·V^L·d float32s (64 prompts, V^L = 65,536 and d = 16:
268 MB), and every policy evaluation |X|·V^L log-probabilities; V^L ≤ `MAX_ANSWERS`.
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks, schedules
from rbx.core.protocol import Agent
from rbx.rlhf import contextual, practical
from rbx.rlhf.policies import Policy

MAX_ANSWERS = 65_536
"""The largest V^L: the enumeration holds |X|·V^L·d features (module docstring)."""


def answers(vocab: int, length: int) -> chex.Array:
  """Every answer, (V^L, L) int32: row i is i in base V, y_1 the most significant digit, so
  the prefix (y_1, …, y_l) of answer i is number i // V^(L−l) among the V^l prefixes.

  Raises:
    ValueError naming vocab or length: V ≥ 2, L ≥ 1, V^L ≤ `MAX_ANSWERS`.
  """
  _checks.positive_int("vocab", vocab, low=2)
  _checks.positive_int("length", length)
  if vocab ** length > MAX_ANSWERS:
    raise ValueError(f"vocab ** length must be <= {MAX_ANSWERS:,} (the answers are enumerated), "
                     f"got vocab={vocab}, length={length}: {vocab ** length:,} answers")
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
    """(the oracle's comparison (2.1) of answers a1, a2, the ρ-weighted regret term (2.6))."""
    return self.context.feedback(key, state, obs, query)


def with_reference(env: SequenceEnv, ref_logits) -> SequenceEnv:
  """`env` with π_ref(y_l | x, l, y_{l−1}) = softmax(ref_logits[x, l, y_{l−1}])(y_l).

  Args:
    ref_logits: per-token logits, (X, L, V+1, V), finite.
  Raises:
    ValueError naming ref_logits (shape, non-finite) or pi_ref (an answer's probability
    underflows to 0 in float32).
  """
  logits = jnp.asarray(ref_logits, jnp.float32)
  _checks.shape("ref_logits", logits, env.ref_log_probs.shape)
  if _checks.is_concrete(logits) and not np.isfinite(np.asarray(logits)).all():
    raise ValueError("ref_logits must be finite")
  log_ref = jax.nn.log_softmax(logits, axis=-1)
  pi_ref = jax.nn.softmax(along_answers(log_ref, env.tokens), axis=-1)   # normalised to rounding
  _checks.probability("pi_ref", pi_ref, strict=True)
  base = env.base._replace(pi_ref=pi_ref, pi_cal=pi_ref)
  return env._replace(context=env.context._replace(base=base), ref_log_probs=log_ref)


def make_sequences(token_features, theta_star, beta, r_max, ref_logits=None, rho=None,
                   learner_r_max=None) -> SequenceEnv:
  """Builds and validates a sequence environment from token features and θ*.

  φ(x, y) = Σ_l ψ(x, l, y_{l−1}, y_l) over the enumerated answers, and r* from φ and θ* as
  `rbx.rlhf.make_contextual` scales it (r* = r_max (θ*ᵀφ − m)/(M − m)). ψ[:, 0] is read at
  y_0 = BOS only and ψ[:, l ≥ 1] never at BOS.

  Args:
    token_features: ψ, shape (X, L, V+1, V, d) with X ≥ 1, L ≥ 1, V ≥ 2, V^L ≤ `MAX_ANSWERS`.
    theta_star: θ*, (d,).
    beta, r_max: β > 0, r_max > 0.
    ref_logits: π_ref's per-token logits (X, L, V+1, V) (`with_reference`); default uniform.
    rho: the prompt distribution, (X,); default uniform.
    learner_r_max: the learner's bound ≥ r_max (default r_max).
  Raises:
    ValueError naming the field, for any bad input (before anything compiles).
  """
  _checks.positive("beta", beta)
  _checks.positive("r_max", r_max)
  psi = jnp.asarray(token_features, jnp.float32)
  if psi.ndim != 5 or psi.shape[2] != psi.shape[3] + 1:
    raise ValueError(f"token_features must have shape (X, L, V+1, V, d), got {psi.shape}")
  X, L, _, V, d = psi.shape
  if X < 1 or d < 1:
    raise ValueError(f"token_features must have X >= 1 prompts and d >= 1, got {psi.shape}")
  tokens = answers(V, L)
  ctx = contextual.make_contextual(along_answers(psi, tokens), theta_star, beta, r_max, 1.0, rho,
                                   learner_r_max)
  env = SequenceEnv(ctx, tokens, jnp.full((X, L, V + 1, V), -np.log(V), jnp.float32), psi)
  return env if ref_logits is None else with_reference(env, ref_logits)


def _random_tokens(key, num_prompts, vocab, length, dim, beta, r_max):
  """(ψ ~ N(0, I_d/d) of shape (X, L, V+1, V, d), θ* ~ N(0, I_d)), after validating the sizes
  and β, r_max (before anything is drawn)."""
  _checks.positive("beta", beta)
  _checks.positive("r_max", r_max)
  _checks.positive_int("num_prompts", num_prompts)
  _checks.positive_int("dim", dim)
  answers(vocab, length)                                            # vocab, length, the cap
  k1, k2 = jax.random.split(key)
  psi = jax.random.normal(k1, (num_prompts, length, vocab + 1, vocab, dim)) / np.sqrt(dim)
  return psi, jax.random.normal(k2, (dim,))


def random_sequences(key: chex.PRNGKey, num_prompts: int, vocab: int, length: int, dim: int,
                     beta, r_max, deviation=1.0, learner_r_max=None) -> SequenceEnv:
  """A random sequence environment: ψ ~ N(0, I_d/d), θ* ~ N(0, I_d), uniform ρ.

  π_ref(y_l | x, l, y_{l−1}) ∝ exp((1 − deviation) θ̃ᵀψ(x, l, y_{l−1}, y_l)) with θ̃ the scaled
  θ* (r* = θ̃ᵀφ + c): per token, `make_contextual`'s π_ref ∝ exp((1 − d) r*) (d = 1 uniform,
  d = 0 each token tilted by its share of r*, d = 2 against it; not π_HF itself, which is
  not autoregressive in this form).

  Args:
    key: the instance's key.
    num_prompts, vocab, length, dim: |X| ≥ 1, V ≥ 2, L ≥ 1 (V^L ≤ `MAX_ANSWERS`), d ≥ 1.
    beta, r_max, learner_r_max: as `make_sequences`. deviation: in [0, 2].
  """
  _checks.in_range("deviation", deviation, 0.0, 2.0)
  psi, theta = _random_tokens(key, num_prompts, vocab, length, dim, beta, r_max)
  env = make_sequences(psi, theta, beta, r_max, learner_r_max=learner_r_max)
  if _checks.is_concrete(deviation) and float(deviation) == 1.0:
    return env
  return with_reference(env, (1.0 - deviation) * (psi @ env.context.theta_star))


def best_answers(env: SequenceEnv) -> chex.Array:
  """y*(x) = argmax_y r*(x, y), the best answer's index per prompt, (X,)."""
  return jnp.argmax(env.base.r_star, axis=-1)


def hard_sequences(key: chex.PRNGKey, num_prompts: int, vocab: int, length: int, dim: int,
                   beta, r_max, epsilon, learner_r_max=None) -> SequenceEnv:
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
    the others: as `random_sequences`.
  """
  if _checks.is_concrete(epsilon) and not 0.0 < float(epsilon) < 1.0:
    raise ValueError(f"epsilon must lie in (0, 1), got {epsilon}")
  k1, k2 = jax.random.split(key)
  psi, _ = _random_tokens(k1, num_prompts, vocab, length, dim, beta, r_max)
  best = jax.random.randint(k2, (num_prompts, length), 0, vocab)          # y*(x), (X, L)
  on_best = jax.nn.one_hot(best, vocab)[:, :, None, :]                    # (X, L, 1, V)
  psi = psi.at[..., 0].set(jnp.broadcast_to(on_best, psi.shape[:-1]))
  env = make_sequences(psi, jax.nn.one_hot(0, dim), beta, r_max, learner_r_max=learner_r_max)
  p = jnp.where(on_best > 0, epsilon, (1.0 - epsilon) / (vocab - 1))
  return with_reference(env, jnp.broadcast_to(jnp.log(p), env.ref_log_probs.shape))


# The autoregressive policies: `rbx.rlhf.policies.Policy`s over the enumerated answers that
# sample themselves.

def _sizes(task) -> tuple[int, int]:
  """(V, L) of a `SequenceTask`; ValueError for a task without tokens."""
  if not hasattr(task, "tokens"):
    raise ValueError("the sequence policies need a sequence environment "
                     "(rbx.rlhf.sequences: name = \"sequences\" or \"hard_sequences\")")
  return task.ref_log_probs.shape[-1], task.tokens.shape[1]


def autoregressive(name: str, init, reference, level, conditionals=None) -> Policy:
  """The `Policy` of next-token log-probabilities `level(θ, task, xs, l, prefixes)`.

  Args:
    name: for messages. init, reference: task -> θ before round 1, and θ_ref (π_θ = π_ref).
    level: log π_θ(y_{l+1} | x, y_1..y_l) for prompts xs (n,) and prefixes (m,) of length l
      (a static int; their numbers among the V^l prefixes, `answers`' order), (n, m, V).
    conditionals: a Markov policy's `conditionals(θ, task, xs, l)` (`markov`), or None. With
      it `log_probs_of` reads n answers from one table of every prompt's conditionals,
      (X, V+1, V) a level, when |X| ≤ n (a buffer longer than the prompts: one table instead
      of n rows of V+1; the same sums to float32 rounding, a test).
  Returns:
    `log_probs_at(θ, task, xs)` = Σ_l log π_θ(y_{l+1} | x, y_1..y_l) for every answer, (n, V^L),
    level by level (the prefixes of length l + 1 are those of length l times the V tokens);
    `log_probs_of(θ, task, xs, ys)`, the same sum for given answers ys (n,) only, (n,); and
    `sample(key, θ, task, x)`, one answer by ancestral sampling: L categorical draws, each
    from the next-token log-probabilities at the prefix drawn so far.
  """
  def log_probs_at(params, task, xs) -> chex.Array:
    V, L = _sizes(task)
    total = jnp.zeros((xs.shape[0], 1))
    for l in range(L):
      total = (total[:, :, None] + level(params, task, xs, l, jnp.arange(V ** l))).reshape(
          xs.shape[0], V ** (l + 1))
    return total

  def log_probs(params, task) -> chex.Array:
    return log_probs_at(params, task, jnp.arange(task.rho.shape[0]))

  def sample(key, params, task, x) -> chex.Array:
    V, L = _sizes(task)
    prefix = jnp.zeros((), jnp.int32)
    for l, k in enumerate(jax.random.split(key, L)):
      row = level(params, task, jnp.asarray(x)[None], l, prefix[None])[0, 0]
      prefix = prefix * V + jax.random.categorical(k, row).astype(jnp.int32)
    return prefix                                  # the answer's index: its length-L prefix

  def log_probs_of(params, task, xs, ys) -> chex.Array:
    V, L = _sizes(task)
    if conditionals is not None and task.rho.shape[0] <= xs.shape[0]:
      prompts = jnp.arange(task.rho.shape[0])
      return sum(conditionals(params, task, prompts, l)[
          xs, V if l == 0 else (ys // V ** (L - l)) % V, (ys // V ** (L - l - 1)) % V]
          for l in range(L))

    def one(x, y):                                 # Σ_l log π_θ(y_{l+1} | x, y_1..y_l)
      return sum(level(params, task, x[None], l, (y // V ** (L - l))[None])[
          0, 0, (y // V ** (L - l - 1)) % V] for l in range(L))
    return jax.vmap(one)(xs, ys)

  return Policy(name, init, log_probs, reference, log_probs_at, sample, log_probs_of)


def markov(conditionals):
  """`level` of a policy whose next token depends on the prefix through its last token only:
  `conditionals(θ, task, xs, l)` -> log π_θ(· | x, l, y_{l}) for every previous token (BOS
  at l = 0), (n, V+1, V)."""
  def level(params, task, xs, l, prefixes):
    V = task.ref_log_probs.shape[-1]
    prev = jnp.full_like(prefixes, V) if l == 0 else prefixes % V
    return conditionals(params, task, xs, l)[:, prev]
  return level


_reference_level = markov(lambda params, task, xs, l: task.ref_log_probs[xs, l])


def tabular() -> Policy:
  """One logit per (prompt, prefix, token): π_θ(y_{l+1} | x, y_1..y_l) = softmax(θ[x, p]) at
  the prefix's row p, θ (X, P, V) with P = Σ_{l<L} V^l (level l's rows from (V^l − 1)/(V − 1),
  in `answers`' order). Every policy over the answers is one; θ_ref holds π_ref's
  conditionals. With L = 1 it is `rbx.rlhf.policies.tabular` with θ of shape (X, 1, V)."""
  def reference(task) -> chex.Array:
    V, L = _sizes(task)
    xs = jnp.arange(task.rho.shape[0])
    return jnp.concatenate([_reference_level(None, task, xs, l, jnp.arange(V ** l))
                            for l in range(L)], axis=1)

  def level(theta, task, xs, l, prefixes):
    V = task.ref_log_probs.shape[-1]
    return jax.nn.log_softmax(theta[xs[:, None], (V ** l - 1) // (V - 1) + prefixes[None]], -1)

  return autoregressive("tabular", reference, reference, level)


def loglinear() -> Policy:
  """π_θ(y_l | x, l, y_{l−1}) ∝ π_ref(y_l | x, l, y_{l−1}) exp(θᵀψ(x, l, y_{l−1}, y_l)/β) with
  the task's token features ψ, θ ∈ R^d, θ = θ_ref = 0 at the start (π_θ = π_ref). Normalised
  per token, so for L ≥ 2 it does not hold π* ∝ π_ref e^{r*/β} (whose conditionals carry the
  value of the rest of the answer); with L = 1 it is `rbx.rlhf.policies.loglinear`."""
  def init(task) -> chex.Array:
    _sizes(task)
    return jnp.zeros(task.token_features.shape[-1], jnp.float32)

  def conditionals(theta, task, xs, l):
    return jax.nn.log_softmax(task.ref_log_probs[xs, l]
                              + task.token_features[xs, l] @ theta / task.beta, axis=-1)

  return autoregressive("loglinear", init, init, markov(conditionals), conditionals)


HIDDEN = 32
"""The neural policy's default width."""


def neural(hidden: int = HIDDEN) -> Policy:
  """A one-hidden-layer MLP added to π_ref's logits:

      π_θ(y_l | x, l, y_{l−1}) = softmax(log π_ref(· | x, l, y_{l−1}) + W₂ h + b₂)(y_l),
      h = tanh(E_x[x] + E_l[l] + E_y[y_{l−1}] + b₁),

  with learned embeddings of the prompt, the position and the previous token (E_x (X, H),
  E_l (L, H), E_y (V+1, H), drawn N(0, 1) from `jax.random.key(0)`), and W₂ = 0, b₂ = 0 at the
  start, so π_θ = π_ref there; θ_ref is that start. θ is the parameters as one flat vector.

  Args:
    hidden: H ≥ 1.
  """
  _checks.positive_int("hidden", hidden)

  def shapes(task):
    V, L = _sizes(task)
    X = task.rho.shape[0]
    return {"prompt": (X, hidden), "position": (L, hidden), "previous": (V + 1, hidden),
            "bias": (hidden,), "out": (hidden, V), "out_bias": (V,)}

  def unflatten(theta, task):
    parts, start = {}, 0
    for name, shape in shapes(task).items():
      size = int(np.prod(shape))
      parts[name] = theta[start:start + size].reshape(shape)
      start += size
    return parts

  def init(task) -> chex.Array:
    keys = iter(jax.random.split(jax.random.key(0), 3))
    return jnp.concatenate([
        (jax.random.normal(next(keys), shape) if name in ("prompt", "position", "previous")
         else jnp.zeros(shape)).ravel() for name, shape in shapes(task).items()])

  def conditionals(theta, task, xs, l):
    p = unflatten(theta, task)
    h = jnp.tanh(p["prompt"][xs][:, None] + p["position"][l] + p["previous"][None] + p["bias"])
    return jax.nn.log_softmax(task.ref_log_probs[xs, l] + h @ p["out"] + p["out_bias"], -1)

  return autoregressive("neural", init, init, markov(conditionals), conditionals)


POLICIES = {"tabular": tabular, "loglinear": loglinear, "neural": neural}


# The agents: `rbx.rlhf.practical`'s, on the autoregressive policies.

def _make(name, policy, hidden, optimizer, learning_rate, train_steps, l2, data, alpha=0.0,
          cal_samples=None, cal_prompts=None, pi_cal=None) -> Agent:
  _checks.choice("policy", policy, POLICIES)
  if hidden is not None and policy != "neural":
    raise ValueError(f"hidden is the neural policy's width: set policy='neural' with it, "
                     f"got policy={policy!r}")
  pol = neural(HIDDEN if hidden is None else hidden) if policy == "neural" else POLICIES[policy]()
  return practical.build(name, pol, alpha, cal_samples, optimizer, learning_rate, train_steps,
                         False, None, pi_cal, l2, data, cal_prompts)


def online_dpo(policy: str = "tabular", optimizer: str = "adam", learning_rate=0.1,
               train_steps: int = 20, l2=practical.L2, data: str = "buffer",
               hidden: int | None = None) -> Agent:
  """Online DPO (α = 0) on an autoregressive policy: a1, a2 ~ π^(t) by ancestral sampling.

  Args:
    policy: "tabular", "loglinear" or "neural" (`POLICIES`).
    optimizer, learning_rate, train_steps, l2: as `rbx.rlhf.practical.online_dpo`.
    data: "buffer" (the default here: win counts hold |X|·V^{2L} floats) or "counts".
    hidden: the neural policy's width (policy="neural" only; default `HIDDEN`).
  """
  return _make("online_dpo", policy, hidden, optimizer, learning_rate, train_steps, l2, data)


def xpo(alpha: schedules.Schedule | float = 1.0, policy: str = "tabular",
        optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
        cal_samples: int | None = 0, l2=practical.L2, data: str = "buffer",
        cal_prompts: int | None = None, hidden: int | None = None) -> Agent:
  """XPO on an autoregressive policy: a1 ~ π^(t), a2 ~ π_ref, π_cal = π_ref.

  The bonus's estimate defaults to the round's a2; arguments as `rbx.rlhf.practical.xpo` and
  `online_dpo`."""
  return _make("xpo", policy, hidden, optimizer, learning_rate, train_steps, l2, data, alpha,
               cal_samples, cal_prompts)


def selm(alpha: schedules.Schedule | float = 1.0, policy: str = "tabular",
         optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
         cal_samples: int | None = 0, l2=practical.L2, data: str = "buffer",
         cal_prompts: int | None = None, hidden: int | None = None) -> Agent:
  """SELM on an autoregressive policy: `xpo` in this model."""
  return xpo(alpha, policy, optimizer, learning_rate, train_steps, cal_samples, l2, data,
             cal_prompts, hidden)._replace(name="selm")


def vpo(alpha: schedules.Schedule | float = 1.0, pi_cal=None, policy: str = "tabular",
        optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
        cal_samples: int | None = 1, l2=practical.L2, data: str = "buffer",
        cal_prompts: int | None = None, hidden: int | None = None) -> Agent:
  """VPO on an autoregressive policy: a1, a2 ~ π^(t), a fixed π_cal.

  π_cal is over the whole answers (default the task's, π_ref), its k draws from the
  enumeration; arguments as `rbx.rlhf.practical.vpo` and `online_dpo`."""
  return _make("vpo", policy, hidden, optimizer, learning_rate, train_steps, l2, data, alpha,
               cal_samples, cal_prompts, pi_cal)


def algorithm1(alpha: schedules.Schedule | float = 1.0, policy: str = "tabular",
               optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
               cal_samples: int | None = 0, l2=practical.L2, data: str = "buffer",
               cal_prompts: int | None = None, hidden: int | None = None) -> Agent:
  """Algorithm 1 on an autoregressive policy: a1 ~ π^(t−1), a2 ~ π^(t), π_cal = π^(t), α_t.

  θ^(t−1) is kept in the state to sample a1 from; arguments as
  `rbx.rlhf.practical.algorithm1` and `online_dpo`."""
  return _make("algorithm1", policy, hidden, optimizer, learning_rate, train_steps, l2, data,
               alpha, cal_samples, cal_prompts)
