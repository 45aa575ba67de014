"""Contexts from a generator: a fresh context s ~ D every round, features φ(s, a), the regret
over D.

The environments of `rbx.rlhf.contextual` hold a finite prompt set. Here round t's observation
is a fresh context s_t ~ D, drawn from the round's key by a plain jittable function
`contexts(key) -> s` (an array of any shape), with its features φ(s_t, ·) = `features(s_t)`,
(A, d) — a user's own functions or the built-in ones (`CONTEXTS`, `cos_sin`). The truth is
linear, r*(s, a) = θ*ᵀφ(s, a), scaled as `reward_scale` says; π_ref(·|s) ∝ exp((1 − deviation)
r*(s, ·)), or Example 2's trap at κ (`rbx.rlhf.contextual.reference_policy`); the oracle is the
Bradley–Terry comparison (2.1) at s_t.

**The regret over D.** The regret term (2.6) is E_{s∼D}[J(π*, r*; s) − J(π^(t), r*; s)]. The
environment draws an evaluation pool of m contexts once, from the key it is built with (a key
of its own, not a run's seed), and reports the term *exact over the pool*:
(1/m) Σ_i β KL(π^(t)(·|s_i) ‖ π*(·|s_i)) (at β = 0, max_a r* − E_π r*). As an estimate of the
expectation over D it is unbiased, with the pool's sampling error (standard error sd_D/√m,
`pool_size` sets m), one pool shared by every seed and step, so agents are compared on the same
contexts; `rbx.sweep(..., instances=I)` draws I pools. `tests/rlhf/test_generated.py` checks
that it converges to a closed form as m grows. The pool is a `ContextualPreferenceEnv`
(`pool`): `reward_scale = "range"` scales θ*ᵀφ by the pool's range, and with `"none"` the
truth's bound r_max (and the learner's box) is the widest range over the pool (or given); a
fresh context's rewards may leave that range, which the oracle, comparing differences, does
not mind.

**What the learner is told, sees and deploys.** The spec is a `GeneratedTask`: the fields of
`ContextualTask` over the pool's contexts (φ (m, A, d), π_ref (m, A), ρ = 1/m), so the sums over
prompts of the optimistic agents — J* in the linear class's search (3.1a)/(3.2a), the DPO-form
class's exact bonus and its `cal_prompts` — are sums over the pool (the contexts, never their
rewards). The observation is a `Context`: s_t, φ(s_t, ·) and π_ref(·|s_t); the answers are drawn
there and the comparison's features come from it (`local`). The deployed policy is a
`LogLinear` θ, π_θ(a|s) ∝ π_ref(a|s) e^{θᵀφ(s, a)/β}, which the environment evaluates at every
pool context. The linear class (`linear/<scheme>`) and the DPO-form class with the log-linear
policy (`practical/<scheme>`, policy = "loglinear") run here; the tabular and sequence classes
and the dueling baselines need a finite prompt set.

*Preferences that drift*: given a θ*_t schedule as `theta_star` (`rbx.rlhf.drift.Drift`), the
environment is a `rbx.rlhf.drift.DriftingEnv` around this one built at θ*₀: π_ref(·|s) stays
θ*₀'s, and at round t the oracle and the regret over the pool read θ*_t (`at`), scaled over
the pool as `reward_scale` says.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from rbx import _checks
from rbx.rlhf import contextual, drift, env as env_lib, objectives
from rbx.rlhf.contextual import ContextualTask
from rbx.rlhf.linear import rewards


class GeneratedTask(ContextualTask):
  """What the learner is told on a generated-context environment: `ContextualTask`'s fields
  over the evaluation pool's m contexts — π_ref (m, A), ρ = 1/m, β, the learner's bound, π_cal =
  π_ref (m, A), φ (m, A, d)."""


class Context(NamedTuple):
  """A step's observation: the context s ~ D (the generator's shape), its features φ(s, ·)
  (A, d) and π_ref(·|s) (A,)."""
  s: chex.Array
  features: chex.Array
  pi_ref: chex.Array

  def __getattr__(self, name):
    """No prompt index here (`x`): an AttributeError that says why and what runs instead."""
    if name == "x":
      raise AttributeError(
          "the observation is a context drawn from a generator (rbx.rlhf.generated.Context: s, "
          "features, pi_ref), not an index into a prompt set: the linear class and the practical "
          "class with policy='loglinear' run here; the tabular and sequence classes and the "
          "dueling baselines need a finite prompt set (rbx.rlhf.make_contextual)")
    raise AttributeError(f"'Context' object has no attribute {name!r}")


class LogLinear(NamedTuple):
  """A deployed policy the environment evaluates at any context:
  π_θ(a|s) ∝ π_ref(a|s) exp(θᵀφ(s, a)/β), θ (d,) (at β = 0, greedy in θᵀφ)."""
  theta: chex.Array


def local(task, obs):
  """(task, x): what a policy class's per-prompt code reads at the round's observation — the
  task and the prompt x at a `rbx.rlhf.Prompt`; at a `Context` a one-prompt task of its rows
  (φ (1, A, d), π_ref = π_cal (1, A), ρ = (1,)) and x = 0."""
  if not isinstance(obs, Context):
    return task, obs.x
  return task._replace(pi_ref=obs.pi_ref[None], rho=jnp.ones(1), pi_cal=obs.pi_ref[None],
                       features=obs.features[None]), jnp.zeros((), jnp.int32)


def check_learner(name: str, pi_cal=None) -> None:
  """ValueError naming the field where agent `name`'s option cannot be read at a drawn
  context: a fixed π_cal per prompt (X, A) — the contexts are not a prompt set."""
  if pi_cal is not None and np.ndim(pi_cal) != 1:
    raise ValueError(f"pi_cal of {name} must have shape (A,) on generated contexts (one policy "
                     f"for every context), got shape {np.shape(pi_cal)}")


@dataclasses.dataclass(frozen=True)
class GeneratedContextualEnv:
  """Contexts from a generator (module docstring); a pytree whose arrays may be traced, its
  two functions static.

  Attributes:
    pool: the evaluation pool, a `ContextualPreferenceEnv` over m contexts (r*, π_ref, β,
      r_max, φ (m, A, d), θ* as scaled).
    deviation: π_ref's distance from π_HF, scalar.
    kappa: None, or Example 2's κ (π_ref the trap at every context).
    contexts: `contexts(key) -> s`, D.
    feature_map: `feature_map(s) -> φ(s, ·)`, (A, d).
  """
  pool: contextual.ContextualPreferenceEnv
  deviation: chex.Array
  kappa: chex.Array | None
  contexts: Callable = dataclasses.field(metadata=dict(static=True))
  feature_map: Callable = dataclasses.field(metadata=dict(static=True))

  @property
  def num_prompts(self) -> int:
    """m, the evaluation pool's contexts (what the learner's sums over prompts run over)."""
    return self.pool.num_prompts

  @property
  def num_actions(self) -> int:
    """A."""
    return self.pool.num_actions

  @property
  def dim(self) -> int:
    """d."""
    return self.pool.dim

  @property
  def base(self) -> env_lib.PreferenceEnv:
    """The pool's preference environment (r*, π_ref, ρ = 1/m over the pool)."""
    return self.pool.base

  @property
  def beta(self) -> chex.Array:
    """β."""
    return self.pool.beta

  @property
  def r_max(self) -> chex.Array:
    """The truth's bound over the pool."""
    return self.pool.r_max

  @property
  def learner_r_max(self) -> chex.Array:
    """The learner's bound (≥ r_max)."""
    return self.pool.learner_r_max

  @property
  def theta_star(self) -> chex.Array:
    """θ* as scaled: r*(s, a) = θ*ᵀφ(s, a) up to a per-context offset, (d,)."""
    return self.pool.theta_star

  @property
  def spec(self) -> GeneratedTask:
    """What the learner is told: the pool's π_ref, ρ, β, its bound, π_cal and φ."""
    return GeneratedTask(*self.pool.spec)

  def reset(self, key: chex.PRNGKey) -> tuple:
    """No per-seed environment state: ()."""
    del key
    return ()

  def observe(self, key: chex.PRNGKey, state: tuple) -> tuple[tuple, Context]:
    """The step's context s ~ D, drawn from the key's first half (as a prompt set draws x)."""
    s = self.contexts(jax.random.split(key)[0])
    phi = jnp.asarray(self.feature_map(s), jnp.float32)
    return state, Context(s, phi, contextual.reference_policy(phi @ self.theta_star,
                                                              self.deviation, self.kappa))

  def feedback(self, key: chex.PRNGKey, state: tuple, obs: Context, query):
    """(a1 preferred to a2 by the oracle (2.1) at s_t, the regret term (2.6) of the deployed
    `LogLinear` policy, exact over the pool)."""
    del state
    if not isinstance(query.log_pi, LogLinear):
      raise ValueError(f"the deployed policy (Query.log_pi) on generated contexts must be a "
                       f"rbx.rlhf.generated.LogLinear θ, which the environment evaluates at "
                       f"every pool context; got {type(query.log_pi).__name__}")
    r = obs.features @ self.theta_star
    return (env_lib.oracle(jax.random.split(key)[1], r, query.a1, query.a2),
            self.regret(query.log_pi))

  def at(self, theta: chex.Array, reward_scale: str) -> GeneratedContextualEnv:
    """The environment with the truth θ (d,) in place of θ*, held over the pool as
    `reward_scale` says (`ContextualPreferenceEnv.at`); π_ref(·|s) unchanged (θ*₀'s)."""
    return dataclasses.replace(self, pool=self.pool.at(theta, reward_scale))

  def regret(self, policy: LogLinear) -> chex.Array:
    """(1/m) Σ_i [J(π*, r*) − J(π_θ, r*)] at the pool's contexts s_i: (2.6) exact over the pool."""
    base = self.pool.base
    log_pi = jax.vmap(objectives.log_optimal_policy, (0, 0, None))(
        rewards(policy.theta, self.pool.features), base.pi_ref, base.beta)
    return base.regret(log_pi)


jax.tree_util.register_dataclass(GeneratedContextualEnv,
                                 data_fields=["pool", "deviation", "kappa"],
                                 meta_fields=["contexts", "feature_map"])


def generated_contextual(key: chex.PRNGKey, contexts: Callable, features: Callable, theta_star,
                         beta, r_max=None, pool_size: int = 1000, deviation=1.0,
                         learner_r_max=None, kappa=None,
                         reward_scale: str = "range"
                         ) -> GeneratedContextualEnv | drift.DriftingEnv:
  """An environment whose contexts are drawn from `contexts` every round (module docstring).

  Args:
    key: the evaluation pool's key (the instance's; runs draw their contexts from their seeds).
    contexts: D, a jittable `contexts(key) -> s`, one array of any shape.
    features: φ, a jittable `features(s) -> φ(s, ·)` of shape (A, d), A ≥ 2, d ≥ 1.
    theta_star: θ*, (d,); or a θ*_t schedule (`rbx.rlhf.drift.Drift`): a
      `rbx.rlhf.drift.DriftingEnv` around this environment at θ*₀ (module docstring).
    beta, r_max, deviation, learner_r_max, kappa, reward_scale: as
      `rbx.rlhf.make_contextual`, over the pool's contexts.
    pool_size: m ≥ 1, the evaluation pool's contexts.
  Raises:
    ValueError naming the field for bad input — a generator or feature map that is not
    jittable or returns another shape, a pool of size 0 — before anything compiles.
  """
  _checks.positive_int("pool_size", pool_size)
  contextual.check_options(beta, r_max, deviation, learner_r_max, reward_scale)
  s = _traced("contexts", "contexts(key) -> s", contexts, key)
  if not isinstance(s, jax.ShapeDtypeStruct):
    raise ValueError(f"contexts(key) must return one array s (any shape), got "
                     f"{jax.tree.structure(s)}")
  phi = _traced("features", "features(s) -> φ(s, ·) of shape (A, d)", features, s)
  if not isinstance(phi, jax.ShapeDtypeStruct) or len(phi.shape) != 2 or phi.shape[0] < 2 \
     or phi.shape[1] < 1:
    got = phi.shape if isinstance(phi, jax.ShapeDtypeStruct) else jax.tree.structure(phi)
    raise ValueError(f"features(s) must return φ(s, ·) of shape (A, d) with A >= 2 answers and "
                     f"d >= 1, got {got} (s of shape {s.shape})")
  pool = jax.vmap(contexts)(jax.random.split(key, pool_size))
  if (pool_size > 1 and _checks.is_concrete(pool)
      and np.all(np.asarray(pool) == np.asarray(pool)[:1])):
    raise ValueError(f"contexts(key) returned the same context for all {pool_size} keys of the "
                     "pool: it must draw s from its key (jax.random)")
  env = contextual.make_contextual(jax.vmap(features)(pool), theta_star, beta, r_max, deviation,
                                   learner_r_max=learner_r_max, kappa=kappa,
                                   reward_scale=reward_scale)
  moving = isinstance(env, drift.DriftingEnv)         # the pool's at θ*₀, and the schedule
  made = GeneratedContextualEnv(env.env if moving else env, jnp.asarray(deviation, jnp.float32),
                                None if kappa is None else jnp.asarray(kappa, jnp.float32),
                                contexts, features)
  return drift.DriftingEnv(made, env.drift, reward_scale) if moving else made


def _traced(field: str, signature: str, f, *args):
  """`jax.eval_shape(f, *args)` (nothing runs); ValueError naming `field` where f is not a
  function or cannot be traced (not jittable: NumPy on its argument, Python control flow on
  its values, ...)."""
  if not callable(f):
    raise ValueError(f"{field} must be a jittable function {signature}, got {type(f).__name__}")
  try:
    return jax.eval_shape(f, *args)
  except Exception as e:                   # the user's function: any failure to trace it
    raise ValueError(f"{field} must be a jittable function {signature} (jax.numpy on its "
                     f"argument, no NumPy or Python control flow on its values); tracing it "
                     f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                     ) from e


@functools.cache
def uniform(context_dim: int) -> Callable:
  """D = U[0, 1]^k: `key -> s`, (k,)."""
  return lambda key: jax.random.uniform(key, (context_dim,))


@functools.cache
def normal(context_dim: int) -> Callable:
  """D = N(0, I_k): `key -> s`, (k,)."""
  return lambda key: jax.random.normal(key, (context_dim,))


CONTEXTS = {"uniform": uniform, "normal": normal}
"""The built-in context distributions by name, each `context_dim -> (key -> s)`."""


@functools.cache
def cos_sin(num_actions: int) -> Callable:
  """φ(s, a) = ((a + 1) cos(π s), sin(π s)/(a + 1)) ∈ R^{2k} for s ∈ R^k: `s -> (A, 2k)` (the
  feature map of the online-NS-DPO synthetic benchmark)."""
  scale = jnp.arange(1, num_actions + 1, dtype=jnp.float32)[:, None]

  def features(s):
    return jnp.concatenate([scale * jnp.cos(jnp.pi * s), jnp.sin(jnp.pi * s) / scale], axis=-1)

  return features
