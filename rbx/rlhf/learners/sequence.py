"""The sequence policy class: the exploration schemes as DPO-form losses on autoregressive
policies over token sequences ("sequence/<scheme>"), on the environments of
`rbx.rlhf.sequences`.

The policies (`tabular`, `loglinear`, `neural`) give log π_θ(y|x) of every enumerated answer
and sample answers token by token (ancestral sampling, inside the jitted step); the DPO-form
agents of `rbx.rlhf.learners.practical` run on them unchanged (`practical.build`: the implicit
reward β log π_θ(y|x)/π_ref(y|x) of whole answers).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from rbx import _checks, schedules
from rbx.core import registry as reg
from rbx.core.protocol import Agent
from rbx.rlhf import schemes
from rbx.rlhf.env import Query
from rbx.rlhf.markov import along, expectation
from rbx.rlhf.tokens import TokenTask
from rbx.rlhf.learners import practical
from rbx.rlhf.learners.base import PolicyClass, agent_name, positive_beta
from rbx.rlhf.learners.policies import Policy


# The autoregressive policies: `rbx.rlhf.learners.policies.Policy`s over the enumerated answers that
# sample themselves.

def _sizes(task) -> tuple[int, int]:
  """(V, L) of a `SequenceTask` or `rbx.rlhf.tokens.TokenTask`; ValueError for another task."""
  if not hasattr(task, "ref_log_probs"):
    raise ValueError("the sequence policies need a sequence environment "
                     "(rbx.rlhf.sequences: name = \"sequences\" or \"hard_sequences\")")
  return task.ref_log_probs.shape[-1], task.ref_log_probs.shape[1]


def autoregressive(name: str, init, reference, level, table=None, next_token=None) -> Policy:
  """The `Policy` of next-token log-probabilities `level(θ, task, xs, l, prefixes)`.

  `sample` and a Markov policy's `log_probs_of` loop over the positions by `jax.lax.scan` (l
  traced: their programs do not grow with L); `log_probs_at` builds the V^L answers level by
  level, and the prefix-table policy's `log_probs_of` sums its L rows unrolled (a scan there
  changes the recorded regrets' bits, tests/rlhf/test_schemes.py).

  Args:
    name: for messages. init, reference: task -> θ before round 1, and θ_ref (π_θ = π_ref).
    level: log π_θ(y_{l+1} | x, y_1..y_l) for prompts xs (n,) and prefixes (m,) of length l
      (an int, traced in the scans; their numbers among the V^l prefixes, `answers`' order),
      (n, m, V).
    table: a Markov policy's `(rows, row)` (`markov`): `rows(θ, task, xs)` every next-token
      distribution of prompts xs, (n, L·(V+1), V), and `row(V, l, prefixes)` the rows (m,) of
      prefixes of length l; or None. With it `log_probs_of` reads n answers from one table of
      every prompt's when |X| ≤ n (a buffer longer than the prompts), else from `level`.
    next_token: a Markov policy's `next_token(θ, task, at)` (`Policy.next_token`).
  Returns:
    `log_probs_at(θ, task, xs)` = Σ_l log π_θ(y_{l+1} | x, y_1..y_l) for every answer, (n, V^L),
    level by level (the prefixes of length l + 1 are those of length l times the V tokens);
    `log_probs_of(θ, task, xs, ys)`, the same sum for given answers ys (n,) only, (n,); and
    `sample(key, θ, task, x)`, one answer by ancestral sampling: L categorical draws, each
    from the next-token log-probabilities at the prefix drawn so far.
  """
  def along(V, L, tab, xs, ys):
    """Σ_l tab[xs, row(l, y_1..y_l), y_{l+1}] for answers ys, in position order, (n, m)."""
    def add(total, l):
      prefix = ys // V ** (L - l)
      return total + tab[xs, table[1](V, l, prefix), (ys // V ** (L - l - 1)) % V], None
    return jax.lax.scan(add, jnp.zeros(jnp.broadcast_shapes(xs.shape, ys.shape)),
                        jnp.arange(L))[0]

  def log_probs_at(params, task, xs) -> chex.Array:
    # level by level, the prefixes growing V-fold (a Python loop: the shapes differ; L is at
    # most log_V of `sequences.MAX_ANSWERS`): one add per answer, where reading every position
    # of every answer from the table costs L gathers per answer (the tabular policy 4-6x slower)
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
    def draw(prefix, lk):
      l, k = lk
      step = level(params, task, jnp.asarray(x)[None], l, prefix[None])[0, 0]
      return prefix * V + jax.random.categorical(k, step).astype(jnp.int32), None
    return jax.lax.scan(draw, jnp.zeros((), jnp.int32),      # the answer's index: its prefix
                        (jnp.arange(L), jax.random.split(key, L)))[0]

  def log_probs_of(params, task, xs, ys) -> chex.Array:
    V, L = _sizes(task)
    if table is not None and task.rho.shape[0] <= xs.shape[0]:
      return along(V, L, table[0](params, task, jnp.arange(task.rho.shape[0])), xs, ys)

    def one(x, y):                                 # Σ_l log π_θ(y_{l+1} | x, y_1..y_l)
      return sum(level(params, task, x[None], l, (y // V ** (L - l))[None])[
          0, 0, (y // V ** (L - l - 1)) % V] for l in range(L))
    return jax.vmap(one)(xs, ys)

  return Policy(name, init, log_probs, reference, log_probs_at, sample, log_probs_of,
                next_token)


def _previous(V, l, prefixes):
  """The previous token of prefixes of length l (BOS = V at l = 0), (m,)."""
  return jnp.where(l == 0, V, prefixes % V)


def markov(conditionals):
  """`(level, table)` of a policy whose next token depends on the prefix through its last
  token only: `conditionals(θ, task, xs, l)` -> log π_θ(· | x, l, y_{l}) for every previous
  token (BOS at l = 0), (n, V+1, V); the table holds every position's, (n, L·(V+1), V)."""
  def level(params, task, xs, l, prefixes):
    return conditionals(params, task, xs, l)[:, _previous(task.ref_log_probs.shape[-1], l,
                                                          prefixes)]

  def rows(params, task, xs):
    _, L, _, V = task.ref_log_probs.shape
    every = jax.vmap(lambda l: conditionals(params, task, xs, l), out_axes=1)(jnp.arange(L))
    return every.reshape(xs.shape[0], L * (V + 1), V)

  return level, (rows, lambda V, l, prefixes: l * (V + 1) + _previous(V, l, prefixes))


def tabular() -> Policy:
  """One logit per (prompt, prefix, token): π_θ(y_{l+1} | x, y_1..y_l) = softmax(θ[x, p]) at
  the prefix's row p, θ (X, P, V) with P = Σ_{l<L} V^l (level l's rows from (V^l − 1)/(V − 1),
  in `answers`' order). Every policy over the answers is one; θ_ref holds π_ref's
  conditionals. With L = 1 it is `rbx.rlhf.learners.policies.tabular` with θ of shape (X, 1, V)."""
  def reference(task) -> chex.Array:
    V, L = _sizes(task)
    level = np.concatenate([np.full(V ** l, l) for l in range(L)])       # each row's position
    prev = np.concatenate([np.full(1, V)] + [np.arange(V ** l) % V for l in range(1, L)])
    return task.ref_log_probs[:, level, prev]

  def offset(V, l):
    """Level l's first row, (V^l − 1)/(V − 1)."""
    return (V ** l - 1) // (V - 1)

  def level(theta, task, xs, l, prefixes):
    V = task.ref_log_probs.shape[-1]
    return jax.nn.log_softmax(theta[xs[:, None], offset(V, l) + prefixes[None]], -1)

  return autoregressive("tabular", reference, reference, level)


def loglinear() -> Policy:
  """π_θ(y_l | x, l, y_{l−1}) ∝ π_ref(y_l | x, l, y_{l−1}) exp(θᵀψ(x, l, y_{l−1}, y_l)/β) with
  the task's token features ψ, θ ∈ R^d, θ = θ_ref = 0 at the start (π_θ = π_ref). Normalised
  per token, so for L ≥ 2 it does not hold π* ∝ π_ref e^{r*/β} (whose conditionals carry the
  value of the rest of the answer); with L = 1 it is `rbx.rlhf.learners.policies.loglinear`."""
  def init(task) -> chex.Array:
    _sizes(task)
    return jnp.zeros(task.token_features.shape[-1], jnp.float32)

  def logits(theta, task, ref, psi):
    return jax.nn.log_softmax(ref + psi @ theta / task.beta, axis=-1)

  def conditionals(theta, task, xs, l):
    return logits(theta, task, task.ref_log_probs[xs, l], task.token_features[xs, l])

  def next_token(theta, task, at=None):
    if at is None:
      return logits(theta, task, task.ref_log_probs, task.token_features)
    return logits(theta, task, task.ref_log_probs[at], task.token_features[at])

  return autoregressive("loglinear", init, init, *markov(conditionals), next_token)._replace(
      row_cost=4.0)


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

  def logits(p, h, ref):
    return jax.nn.log_softmax(ref + h @ p["out"] + p["out_bias"], -1)

  def conditionals(theta, task, xs, l):
    p = unflatten(theta, task)
    h = jnp.tanh(p["prompt"][xs][:, None] + p["position"][l] + p["previous"][None] + p["bias"])
    return logits(p, h, task.ref_log_probs[xs, l])

  def next_token(theta, task, at=None):
    p = unflatten(theta, task)
    xs, ls, previous = _grid(task) if at is None else at
    h = jnp.tanh(p["prompt"][xs] + p["position"][ls] + p["previous"][previous] + p["bias"])
    return logits(p, h, task.ref_log_probs if at is None else task.ref_log_probs[at])

  return autoregressive("neural", init, init, *markov(conditionals), next_token)


def _grid(task) -> tuple[chex.Array, chex.Array, chex.Array]:
  """Index arrays of every (prompt, position, previous token), broadcasting to (X, L, V+1)."""
  X, L, V1, _ = task.ref_log_probs.shape
  return (jnp.arange(X)[:, None, None], jnp.arange(L)[None, :, None],
          jnp.arange(V1)[None, None, :])


POLICIES = {"tabular": tabular, "loglinear": loglinear, "neural": neural}


def every_conditional(pol: Policy, params, task, xs=None) -> chex.Array:
  """A Markov policy's conditionals log π_θ(y_l | x, l, y_{l−1}) at prompts xs (default every
  prompt), (n, L, V+1, V): the deployed policy the regret (2.6) scores, the exact bonus's."""
  if xs is None:
    return pol.next_token(params, task)
  _, L, V1, _ = task.ref_log_probs.shape
  return pol.next_token(params, task, (xs[:, None, None], jnp.arange(L)[None, :, None],
                                       jnp.arange(V1)[None, None, :]))


def log_probs_of_tokens(pol: Policy, params, task, xs, tokens) -> chex.Array:
  """log π_θ(y_i | x_i) = Σ_l log π_θ(y_{i,l} | x_i, l, y_{i,l−1}) of answers given as tokens
  (n, L) at prompts xs (n,), (n,): from the n·L next-token rows the answers read, or where
  those cost more (`Policy.row_cost`) one gather from the whole table (`markov.along`)."""
  X, L, V1, _ = task.ref_log_probs.shape
  if xs.shape[0] * L * pol.row_cost >= X * L * V1:
    return along(every_conditional(pol, params, task), xs, tokens)
  previous = jnp.concatenate([jnp.full_like(tokens[:, :1], V1 - 1), tokens[:, :-1]], axis=1)
  rows = pol.next_token(params, task, (xs[:, None], jnp.arange(L)[None], previous))  # (n, L, V)
  return jnp.sum(jnp.take_along_axis(rows, tokens[..., None], axis=-1)[..., 0], axis=1)


def sample_tokens(key, pol: Policy, params, task, x) -> chex.Array:
  """One answer y ~ π_θ(·|x) as its tokens, (L,) int32, by ancestral sampling: L categorical
  draws (`jax.lax.scan`), each from the row of the token drawn before (BOS first)."""
  V, L = _sizes(task)
  def draw(previous, lk):
    l, k = lk
    row = pol.next_token(params, task, (x[None], l[None], previous[None]))[0]
    token = jax.random.categorical(k, row).astype(jnp.int32)
    return token, token
  return jax.lax.scan(draw, jnp.int32(V), (jnp.arange(L), jax.random.split(key, L)))[1]


class TokenState(NamedTuple):
  """The sequence agents' state on answers as tokens (`rbx.rlhf.tokens`).

  Attributes:
    params: θ^(t). opt_state: the optax state. params_prev: θ^(t−1) (Algorithm 1's a1).
    data: the comparisons, `practical.Comparisons` with answers (T, L).
    t: the round about to run, int32.
  """
  params: Any
  opt_state: Any
  params_prev: Any
  data: practical.Comparisons
  t: chex.Array


def token_agent(name: str, scheme_name: str, pol: Policy, alpha, cal_samples, optimizer,
                learning_rate, train_steps, pi_cal, l2, data, cal_prompts,
                batch_size=None) -> Agent:
  """The agent of row `scheme_name` on the Markov policy `pol` over answers as tokens: the
  DPO-form loss of `rbx.rlhf.learners.practical` with the log-probabilities of whole answers as
  sums of the conditionals along their tokens (`markov.along`), nothing of size V^L.

  * answers by ancestral sampling (`sample_tokens`) from θ^(t−1), θ^(t) or π_ref, as the row
    says; the deployed policy is θ^(t)'s conditionals (X, L, V+1, V) (`Query.log_pi`), which the
    environment scores exactly (`rbx.rlhf.tokens.TokenEnv.feedback`);
  * the DPO term over the buffer of comparisons (the horizon's), or with `batch_size` B its
    unbiased estimate from B of them drawn each optimiser step (`practical.Comparisons.
    minibatch`), each answer's log π_θ a sum along its tokens of the L next-token rows it reads
    (`log_probs_of_tokens`);
  * the bonus's E_{a∼π_cal}[log π_θ/π_ref]: by the round's a2 (`cal_samples=0`), k fresh draws
    (`cal_samples=k`), or exactly by a forward pass over π_cal's marginals of the previous
    token (`cal_samples=None`: `markov.expectation`, every prompt weighted by ρ, or
    `cal_prompts` prompts drawn from ρ). The fixed π_cal is π_ref (VPO's and `modified`'s).
  """
  scheme = schemes.get(scheme_name)
  schedule = schemes.alpha_schedule(scheme, alpha)
  opt = practical.OPTIMIZERS[optimizer](learning_rate)
  batched = practical.check_batch_size(batch_size, data)

  def check(task):
    if pol.next_token is None:
      raise ValueError(f"policy={pol.name!r} holds one logit per prefix, an enumeration-size "
                       "policy: on answers as tokens (rbx.rlhf.tokens) use policy='loglinear' or "
                       "'neural'")
    if pi_cal is not None:
      raise ValueError("pi_cal is a policy over the enumerated answers; on answers as tokens "
                       "the fixed calibration policy is π_ref")
    if data == "counts":
      raise ValueError("data='counts' holds win counts over the enumerated answers, |X|·V^{2L} "
                       "floats; on answers as tokens the comparisons are a buffer "
                       "(data='buffer')")
    positive_beta(name, task.beta, "the DPO form's reward is r_θ = β log π_θ/π_ref")

  def init(key, task, horizon: int) -> TokenState:
    del key
    check(task)
    params = pol.init(task)
    return TokenState(params, opt.init(params), params,
                      practical.Comparisons.empty(horizon, task.ref_log_probs.shape[1]),
                      jnp.ones((), jnp.int32))

  def samplers(state, obs, task):
    draw = lambda params: lambda key: sample_tokens(key, pol, params, task, obs.x)
    reference = draw(pol.reference(task))                     # θ_ref: π_θ = π_ref
    return {"previous": draw(state.params_prev), "current": draw(state.params),
            "reference": reference, "calibration": reference}

  def act(key, state: TokenState, obs, task):
    a1, a2 = schemes.draw(practical._keys(key, batched)[:2], scheme, samplers(state, obs, task))
    return state, Query(a1, a2, every_conditional(pol, state.params, task))

  def calibration(key, state, obs, query, task):
    """(xs, draws, weights, log π_cal): the bonus's prompts (m,) and answers (m, k, L) drawn
    from π_cal with their weights (m,), or draws None and π_cal's conditionals at xs for the
    exact expectation (xs None: every prompt, weights ρ)."""
    log_cal = schemes.calibration_policy(scheme, {
        "current": lambda: None, "reference": lambda: task.ref_log_probs,
        "fixed": lambda: task.ref_log_probs})
    current = lambda xs: every_conditional(pol, state.params, task, xs)
    if cal_samples is None:
      xs = (None if cal_prompts is None else jax.random.categorical(
          practical._keys(key, batched)[2], jnp.log(task.rho), shape=(cal_prompts,)))
      weights = task.rho if xs is None else jnp.full(cal_prompts, 1.0 / cal_prompts)
      table = current(xs) if log_cal is None else (log_cal if xs is None else log_cal[xs])
      return xs, None, weights, table
    if cal_samples == 0:
      draws = query.a2[None]
    else:
      source = "current" if scheme.calibration == "current" else "reference"
      draws = jax.vmap(samplers(state, obs, task)[source])(
          jax.random.split(practical._keys(key, batched)[2], cal_samples))
    return obs.x[None], draws[None], jnp.ones(1), None

  def update(key, state: TokenState, obs, query: Query, a1_wins, task) -> TokenState:
    data = state.data.add(obs.x, jnp.where(a1_wins, query.a1, query.a2),
                          jnp.where(a1_wins, query.a2, query.a1))
    alpha_t = schedule(state.t)
    log_ref = task.ref_log_probs
    if scheme.bonus:
      xs, draws, weights, log_cal = calibration(key, state, obs, query, task)
    theta_ref = pol.reference(task)

    def log_ratios(params, xs, tokens):
      """log π_θ/π_ref of answers tokens (n, L) at prompts xs (n,), (n,)."""
      return (log_probs_of_tokens(pol, params, task, xs, tokens)
              - along(log_ref, xs, tokens))

    def objective(params, rows_key):
      rows = data if rows_key is None else data.minibatch(rows_key, batch_size)
      n = rows.x.shape[0]
      both = log_ratios(params, jnp.concatenate([rows.x, rows.x]),
                        jnp.concatenate([rows.winner, rows.loser]))
      dpo = practical.dpo_loss_margins(task.beta * (both[:n] - both[n:]), rows.weights())
      prior = 0.5 * l2 * jnp.sum(jnp.square(params - theta_ref))
      if not scheme.bonus:
        return dpo + prior
      if draws is None:                   # E_{π_cal}[log π_θ/π_ref] by the forward pass
        theta_table = every_conditional(pol, params, task, xs)
        ref = log_ref if xs is None else log_ref[xs]
        ratio = expectation(jax.lax.stop_gradient(log_cal), theta_table - ref)
      else:                               # the mean over the draws at each prompt
        m, k, L = draws.shape
        ratio = log_ratios(params, jnp.repeat(xs, k), draws.reshape(m * k, L)).reshape(m, k)
        ratio = ratio.mean(axis=1)
      # L(θ) = DPO − α J*(r_θ; π_cal), J* = −β E_ρ E_{π_cal}[log π_θ/π_ref] (practical.loss)
      return dpo + alpha_t * task.beta * jnp.dot(weights, ratio) + prior

    def step(carry, rows_key):
      params, opt_state = carry
      updates, opt_state = opt.update(jax.grad(objective)(params, rows_key), opt_state, params)
      return (optax.apply_updates(params, updates), opt_state), None

    (params, opt_state), _ = jax.lax.scan(
        step, (state.params, state.opt_state),
        practical.row_keys(key, batch_size, train_steps), length=train_steps)
    return TokenState(params, opt_state, state.params, data, state.t + 1)

  return Agent(name, init, act, update)


def make(scheme: str, alpha: schedules.Schedule | float = 1.0, policy: str | None = None,
         optimizer: str = "adam", learning_rate=0.1, train_steps: int = 20,
         cal_samples: int | None = 0, pi_cal=None, l2=practical.L2, data: str = "buffer",
         cal_prompts: int | None = None, hidden: int | None = None,
         batch_size: int | None = None) -> Agent:
  """The agent of the scheme table's row `scheme` on an autoregressive policy
  ("sequence/<scheme>"): answers by ancestral sampling (θ^(t−1) kept in the state where
  a1 ~ π^(t−1)), the loss of `rbx.rlhf.learners.practical.make` on whole answers. On a
  `rbx.rlhf.sequences.SequenceEnv` (enumerated answers) the answers are indices and the
  policies give log π_θ of every answer (`practical.build`); on a `rbx.rlhf.tokens.TokenEnv`
  the answers are tokens and nothing of size V^L is built (`token_agent`).

  Args:
    scheme: a name in `rbx.rlhf.schemes.SCHEMES`.
    policy: "tabular", "loglinear" or "neural" (`POLICIES`); default "tabular" on enumerated
      answers, "loglinear" on tokens (the prefix table is an enumeration-size policy).
    data: "buffer" (the default here: win counts hold |X|·V^{2L} floats) or "counts"
      (enumerated answers only).
    pi_cal: the fixed calibration policy over whole answers (rows with one; default the
      task's, π_ref), its draws from the enumeration (enumerated answers only).
    hidden: the neural policy's width (policy="neural" only; default `HIDDEN`).
    alpha, optimizer, learning_rate, train_steps, cal_samples, l2, cal_prompts, batch_size: as
      `rbx.rlhf.learners.practical.make`.
  """
  if policy is not None:
    _checks.choice("policy", policy, POLICIES)
  if hidden is not None and policy != "neural":
    raise ValueError(f"hidden is the neural policy's width: set policy='neural' with it, "
                     f"got policy={policy!r}")
  made = lambda name: neural(HIDDEN if hidden is None else hidden) if name == "neural" else (
      POLICIES[name]())
  name = agent_name(CLASS_NAME, scheme)
  enumerated = practical.build(name, scheme, made(policy or "tabular"), alpha, cal_samples,
                               optimizer, learning_rate, train_steps, False, None, pi_cal, l2,
                               data, cal_prompts, batch_size=batch_size)
  tokens = token_agent(name, scheme, made(policy or "loglinear"), alpha, cal_samples, optimizer,
                       learning_rate, train_steps, pi_cal, l2, data, cal_prompts, batch_size)
  on = lambda task: tokens if isinstance(task, TokenTask) else enumerated
  return Agent(name, lambda key, task, horizon: on(task).init(key, task, horizon),
               lambda key, state, obs, task: on(task).act(key, state, obs, task),
               lambda key, state, obs, action, feedback, task: on(task).update(
                   key, state, obs, action, feedback, task))


CLASS_NAME = "sequence"
PARAMS = {
    **{k: practical.PARAMS[k] for k in ("optimizer", "learning_rate", "train_steps", "l2", "data",
                                        "batch_size")},
    "policy": reg.string(POLICIES, doc="the autoregressive policy (rbx.rlhf.learners.sequence; "
                         "default tabular on enumerated answers, loglinear on tokens)"),
    "hidden": reg.integer(1, optional=True, doc="the neural policy's width")}


def params(scheme: schemes.Scheme) -> dict[str, reg.Param]:
  """The options a config sets for the row: α's and the bonus estimate's with a bonus, π_cal
  with a fixed one."""
  return {**schemes.params(scheme), **PARAMS, **(practical.CAL_SAMPLES if scheme.bonus else {})}


CLASS = PolicyClass(CLASS_NAME, make, params, practical.defaults,
                    doc="an autoregressive π_θ (tabular, log-linear, neural) sampled token by "
                        "token, the DPO-form loss; sequence environments")
