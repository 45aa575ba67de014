"""Online RLHF over token sequences at any V^L: answers as token arrays, the truth by recursion.

The model is `rbx.rlhf.sequences`' — r*(x, y) = Σ_l R(x, l, y_{l−1}, y_l) from token features
ψ and θ*, π_ref first-order Markov, the Bradley–Terry oracle (2.1) on whole answers — without
the enumeration of the V^L answers, so V and L are limited by the per-token tables
(X, L, V+1, V) only:

* an answer is its tokens, (L,) int32 (`Query.a1`, `Query.a2`), its reward one gather
  (`markov.along`);
* r* is scaled into [0, r_max] by a min-plus and a max-plus pass (`markov.reward_range`), as
  `rbx.rlhf.make_contextual` scales it over the enumerated answers;
* π*'s conditionals come from one backward soft-Bellman pass when the environment is built
  (`markov.optimal_value`), and a deployed Markov policy, given as its conditionals
  log π(y_l | x, l, y_{l−1}) (X, L, V+1, V) in `Query.log_pi`, is scored by the regret (2.6)
  = Σ_x ρ(x) β KL(π ‖ π*) in one forward pass (`markov.regret_to`): O(|X|·L·V²) a step.

A `TokenEnv` is what `sequences.make_sequences`, `random_sequences` and `hard_sequences` build
with `enumerate=False`, and by default beyond `sequences.MAX_ANSWERS` answers. The sequence
agents (`rbx.rlhf.learners.sequence`) run on it with their Markov policies (log-linear, neural);
the prefix-table policy and the tabular and linear classes need the enumeration.

**Size.** ψ holds |X|·L·(V+1)·V·d float32s (|X| = 64, V = L = 32, d = 8: 69 MB), the three
per-token tables |X|·L·(V+1)·V each (8.7 MB there).
"""
from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.core import protocol
from rbx.rlhf import env as env_lib, markov
from rbx.rlhf.env import Prompt


class TokenTask(NamedTuple):
  """What the learner is told about a `TokenEnv`.

  Attributes:
    rho: ρ, (X,). beta: β. r_max: the learner's reward bound.
    ref_log_probs: log π_ref(y_l | x, l, y_{l−1}), (X, L, V+1, V) (previous token V: BOS).
    token_features: ψ(x, l, y_{l−1}, y_l), (X, L, V+1, V, d).
  """
  rho: chex.Array
  beta: chex.Array
  r_max: chex.Array
  ref_log_probs: chex.Array
  token_features: chex.Array

  def __getattr__(self, name):
    """What an agent over enumerated answers reads (π_ref (X, A), φ, the answers) is not here:
    an AttributeError that says why and what runs instead."""
    if name in ENUMERATED:
      raise AttributeError(
          f"{name} is a table over the enumerated answers, and this task's answers are token "
          f"arrays (rbx.rlhf.tokens.TokenEnv: V = {self.ref_log_probs.shape[-1]}, L = "
          f"{self.ref_log_probs.shape[1]}): the sequence agents run here with policy="
          "'loglinear' or 'neural'; the tabular, linear and practical classes and the "
          "prefix-table policy need the enumeration (enumerate=True, V^L <= 65,536)")
    raise AttributeError(f"'TokenTask' object has no attribute {name!r}")


ENUMERATED = ("pi_ref", "pi_cal", "features", "tokens")
"""`rbx.rlhf.sequences.SequenceTask`'s fields over the enumerated answers."""


class TokenEnv(NamedTuple):
  """A preference environment over token sequences, nothing of size V^L (module docstring).

  Attributes:
    token_rewards: R, (X, L, V+1, V): r*(x, y) = Σ_l R[x, l, y_{l−1}, y_l] ∈ [0, r_max].
    ref_log_probs: log π_ref(y_l | x, l, y_{l−1}), (X, L, V+1, V), rows normalised.
    star_log_probs: log π*(y_l | x, l, y_{l−1}), (X, L, V+1, V), π* ∝ π_ref e^{r*/β} (2.4).
    token_features: ψ, (X, L, V+1, V, d).
    theta_star: θ* scaled as r* is (R = θ̃ᵀψ plus the offset on position 1), (d,).
    best_tokens: y*(x) = argmax_y r*(x, y), (X, L) int32 (`markov.best_answers`).
    rho: ρ, (X,). beta: β > 0. r_max: the truth's bound. learner_r_max: the learner's (≥ r_max).
  """
  token_rewards: chex.Array
  ref_log_probs: chex.Array
  star_log_probs: chex.Array
  token_features: chex.Array
  theta_star: chex.Array
  best_tokens: chex.Array
  rho: chex.Array
  beta: chex.Array
  r_max: chex.Array
  learner_r_max: chex.Array

  @property
  def num_prompts(self) -> int:
    """|X|."""
    return self.ref_log_probs.shape[0]

  @property
  def length(self) -> int:
    """L."""
    return self.ref_log_probs.shape[1]

  @property
  def vocab(self) -> int:
    """V."""
    return self.ref_log_probs.shape[-1]

  @property
  def dim(self) -> int:
    """d."""
    return self.token_features.shape[-1]

  @property
  def num_actions(self) -> int:
    """A = V^L, the answers per prompt (a Python int: exact at any size)."""
    return self.vocab ** self.length

  @property
  def spec(self) -> TokenTask:
    """What the learner is told (not r*, θ* or π*)."""
    return TokenTask(self.rho, self.beta, self.learner_r_max, self.ref_log_probs,
                     self.token_features)

  def reset(self, key: chex.PRNGKey) -> tuple:
    """No per-seed environment state: ()."""
    del key
    return ()

  def observe(self, key: chex.PRNGKey, state: tuple) -> tuple[tuple, Prompt]:
    """The step's prompt x ~ ρ (drawn as `rbx.rlhf.PreferenceEnv.observe` draws it)."""
    return state, Prompt(jax.random.categorical(jax.random.split(key)[0], jnp.log(self.rho)))

  def reward(self, xs: chex.Array, tokens: chex.Array) -> chex.Array:
    """r*(x_i, y_i) of answers given as tokens (n, L) at prompts xs (n,), (n,)."""
    return markov.along(self.token_rewards, xs, tokens)

  def feedback(self, key: chex.PRNGKey, state: tuple, obs: Prompt, query):
    """(a1 preferred to a2 by the oracle (2.1), the regret term (2.6) of the deployed Markov
    policy, `query.log_pi` its conditionals (X, L, V+1, V)). a1, a2: tokens, (L,)."""
    del state
    _checks.shape("query.log_pi", query.log_pi, self.ref_log_probs.shape)
    r = self.reward(jnp.stack([obs.x, obs.x]), jnp.stack([query.a1, query.a2]))
    a1_wins = jax.random.bernoulli(jax.random.split(key)[1], jax.nn.sigmoid(r[0] - r[1]))
    return a1_wins, markov.regret_to(query.log_pi, self.star_log_probs, self.rho, self.beta)


METRICS = ("weak_regret", "strong_regret", "p_best")
"""The per-step metrics recorded beside the regret on the sequence environments
(`rbx.core.protocol.add_metrics`): the classic dueling regrets of the compared answers and the
deployed policy's mass on the best answers."""


def dueling_regrets(top: chex.Array, r1: chex.Array, r2: chex.Array) -> dict:
  """{"weak_regret", "strong_regret"}: min and max of Δ(a) = σ(max_b r*(x, b) − r*(x, a)) − 1/2
  over the compared answers, from the best reward `top` and theirs (`rbx.rlhf.dueling`)."""
  gap = jax.nn.sigmoid(top - jnp.stack([r1, r2])) - 0.5
  return {"weak_regret": jnp.min(gap), "strong_regret": jnp.max(gap)}


def p_best(log_pi: chex.Array, rho: chex.Array, best_tokens: chex.Array) -> chex.Array:
  """Σ_x ρ(x) π(y*(x) | x) of a Markov policy given by its conditionals (X, L, V+1, V), the
  best answers y* as tokens (X, L): a seed has found y* where π(y*|x) ≥ 1/2."""
  xs = jnp.arange(rho.shape[0])
  return jnp.dot(rho, jnp.exp(markov.along(log_pi, xs, best_tokens)))


def metrics(env: TokenEnv, state, obs: Prompt, query) -> dict:
  """`METRICS` of a step (`rbx.core.protocol.add_metrics`): the dueling regrets of a1, a2 at
  the prompt x_t against y*(x_t), and the deployed policy's p_best; float32 scalars."""
  del state
  top = env.reward(obs.x[None], env.best_tokens[obs.x][None])[0]
  r = env.reward(jnp.stack([obs.x, obs.x]), jnp.stack([query.a1, query.a2]))
  return {**dueling_regrets(top, r[0], r[1]), "p_best": p_best(query.log_pi, env.rho,
                                                               env.best_tokens)}


def check_sizes(vocab: int, length: int) -> None:
  """ValueError naming vocab or length: V ≥ 2, L ≥ 1."""
  _checks.positive_int("vocab", vocab, low=2)
  _checks.positive_int("length", length)


def check_memory(num_prompts: int, vocab: int, length: int, dim: int) -> int:
  """The bytes of an environment's per-token arrays — ψ (X, L, V+1, V, d) and three (X, L,
  V+1, V) tables, float32 — returned after checking that they fit in the host's available
  memory (`rbx.core.memory`), before anything is drawn; ValueError stating both and the sizes
  to shrink otherwise."""
  from rbx.core import memory
  rows = num_prompts * length * (vocab + 1) * vocab
  need = 4 * rows * (dim + 3)
  free, source = memory.host_available()
  if free is not None and need > free:
    raise ValueError(
        f"the token features ψ (num_prompts={num_prompts}, length={length}, vocab + 1 = "
        f"{vocab + 1}, vocab={vocab}, dim={dim}) and the per-token tables need "
        f"{memory.show(need)} but {memory.show(free)} is available ({source}): use fewer "
        "prompts, a smaller dim, vocab or length")
  return need


def make_tokens(token_features, theta_star, beta, r_max, ref_logits=None, rho=None,
                learner_r_max=None) -> TokenEnv:
  """A `TokenEnv` from token features ψ and θ*: r* = r_max (θ*ᵀφ − m)/(M − m) with m, M the
  least and largest θ*ᵀφ(x, y) over every prompt and answer (a min-plus and a max-plus pass;
  r* = r_max/2 where they are equal), π_ref = softmax(ref_logits) per token (default uniform).

  Args:
    token_features: ψ, (X, L, V+1, V, d), finite; ψ[:, 0] is read at y_0 = BOS only.
    theta_star: θ*, (d,). beta, r_max: > 0. ref_logits: (X, L, V+1, V), finite, or None.
    rho: (X,), default uniform. learner_r_max: ≥ r_max, default r_max.
  Raises:
    ValueError naming the field, before anything compiles.
  """
  _checks.positive("beta", beta)
  _checks.positive("r_max", r_max)
  env_lib.learner_bound(learner_r_max, r_max)
  psi = jnp.asarray(token_features, jnp.float32)
  if psi.ndim != 5 or psi.shape[2] != psi.shape[3] + 1:
    raise ValueError(f"token_features must have shape (X, L, V+1, V, d), got {psi.shape}")
  X, L, _, V, d = psi.shape
  check_sizes(V, L)
  if X < 1 or d < 1:
    raise ValueError(f"token_features must have X >= 1 prompts and d >= 1, got {psi.shape}")
  theta = jnp.asarray(theta_star, jnp.float32)
  _checks.shape("theta_star", theta, (d,))
  rho = jnp.full(X, 1.0 / X) if rho is None else jnp.asarray(rho, jnp.float32)
  _checks.shape("rho", rho, (X,))
  _checks.probability("rho", rho)
  log_ref = reference_log_probs(jnp.zeros((X, L, V + 1, V)) if ref_logits is None
                                else ref_logits, (X, L, V + 1, V))
  for field, value in (("token_features", psi), ("theta_star", theta)):
    if _checks.is_concrete(value) and not np.isfinite(np.asarray(value)).all():
      raise ValueError(f"{field} must be finite")
  low, high = markov.reward_range(psi @ theta)
  span = jnp.max(high) - jnp.min(low)
  theta = theta * jnp.where(span > 0, r_max / jnp.where(span > 0, span, 1.0), 0.0)
  rewards = markov.scaled_rewards(psi, theta, r_max)
  truth = markov.TokenTruth(rewards, log_ref, jnp.float32(beta), rho)
  _, log_star = markov.optimal_value(truth)
  learner = r_max if learner_r_max is None else learner_r_max
  return TokenEnv(rewards, log_ref, log_star, psi, theta, markov.best_answers(rewards), rho,
                  jnp.float32(beta), jnp.float32(r_max), jnp.float32(learner))


def reference_log_probs(ref_logits, shape: tuple) -> chex.Array:
  """log π_ref(y_l | x, l, y_{l−1}) = log_softmax(ref_logits) per token, (X, L, V+1, V);
  ValueError naming ref_logits for another shape or a non-finite entry."""
  logits = jnp.asarray(ref_logits, jnp.float32)
  _checks.shape("ref_logits", logits, shape)
  if _checks.is_concrete(logits) and not np.isfinite(np.asarray(logits)).all():
    raise ValueError("ref_logits must be finite")
  return jax.nn.log_softmax(logits, axis=-1)


def with_reference(env: TokenEnv, ref_logits) -> TokenEnv:
  """`env` with π_ref(y_l | x, l, y_{l−1}) = softmax(ref_logits[x, l, y_{l−1}])(y_l), π*
  recomputed. ValueError naming ref_logits (shape, non-finite)."""
  log_ref = reference_log_probs(ref_logits, env.ref_log_probs.shape)
  _, log_star = markov.optimal_value(
      markov.TokenTruth(env.token_rewards, log_ref, env.beta, env.rho))
  return env._replace(ref_log_probs=log_ref, star_log_probs=log_star)


protocol.add_metrics(TokenEnv, metrics, METRICS)
