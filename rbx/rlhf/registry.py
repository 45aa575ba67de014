"""The RLHF family's declaration: its environments and agents, each parameter's kind.

Everything that runs RLHF agents by name — `rbx.rlhf.get`, TOML configs and `rbx run`, the
static fields of `rbx.sweep` — reads this one declaration. The agents are the product of the
policy classes (`rbx.rlhf.learners.CLASSES`) and the scheme table (`rbx.rlhf.schemes.SCHEMES`),
registered by one loop as "class/scheme" (`linear/xpo`, `sequence/greedy`), with today's
names as aliases (`xpo` = `tabular/xpo`, `linear_xpo`, `practical_xpo`, `online_dpo` =
`practical/greedy`, `sequence_dpo` = `sequence/greedy`); `add_scheme` and `add_class` extend
the product from outside the package. Beside the product, the classic dueling-bandit baselines
`rucb`, `rmed1`, `double_ts` and `rcs` (`rbx.rlhf.learners.dueling`) and the contextual linear
ones `colstim`, `maxinp` and `maxminlcb` (`rbx.rlhf.learners.contextual_dueling`). An agent's α is either the
constant `alpha` or a schedule of `rbx.schedules` chosen by `schedule` with its own
parameters; a schedule's num_actions, horizon, beta and r_max (the learner's bound,
`Task.r_max`) come from the environment and the number of steps (`prepare`), and κ and μ, when not given, are the instance's Assumption 1
(at τ = 1) and Assumption 2 constants (`rbx.rlhf.assumptions`) — κ given as `schedule_kappa`,
distinct from the environment's `kappa` (Example 2's trap); parameters of other schedules
are ignored. The solver's settings are the table `solver` (`rbx.rlhf.SolverConfig` fields),
and Algorithm 1's at the prompts a step did not sample the table `unsampled_solver`.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any

import jax

from rbx import _checks, schedules
from rbx.core import registry as reg
from rbx.rlhf import (analysis, assumptions, contextual, drift as drift_lib, env as env_lib,
                      generated, schemes, sequences, tokens)
from rbx.rlhf.learners import CLASSES, PolicyClass, agent_name
from rbx.rlhf.learners import contextual_dueling
from rbx.rlhf.learners import dueling as dueling_agents
from rbx.rlhf.solver import SolverConfig


def prepare(params: dict[str, Any], env: env_lib.PreferenceEnv, steps: int) -> dict[str, Any]:
  """Declared agent parameters -> constructor arguments: `schedule` and its parameters become
  the schedule α_t; the `solver` table becomes a `SolverConfig`."""
  sched = params.pop("schedule", "constant")
  given = {schemes.SCHEDULE_ARGS.get(k, k): params.pop(k) for k in schemes.PARAMS if k in params}
  if sched != "constant" or "alpha" in given:
    make = schedules.SCHEDULES[_checks.choice("schedule", sched, schedules.SCHEDULES)]
    args = inspect.signature(make).parameters
    auto = dict(num_actions=env.num_actions, horizon=steps, beta=env.beta, r_max=env.spec.r_max)
    derived = {"kappa": assumptions.kappa, "mu": assumptions.mu}      # the instance's, if not given
    auto.update({k: f(env) for k, f in derived.items() if k in args and k not in given})
    kwargs = {k: v for k, v in {**auto, **given}.items() if k in args}   # others: other schedules'
    missing = [k for k in args if k not in kwargs and args[k].default is inspect.Parameter.empty]
    if missing:
      raise ValueError(f"{missing[0]}=? is needed by schedule {sched!r}: set it in [agent] or [grid]")
    params["alpha"] = make(**kwargs)
  for field in ("solver", "unsampled_solver"):
    if isinstance(params.get(field), dict):
      for key in params[field]:
        _checks.choice(f"agent.{field} key", key, SolverConfig._fields)
      params[field] = SolverConfig(**params[field])
  return params


def _random_instance(num_prompts=4, num_actions=3, beta=0.5, r_max=2.0, deviation=1.0, seed=0,
                     learner_r_max=None):
  """`random_instance` from an integer seed (its key)."""
  return env_lib.random_instance(jax.random.key(seed), num_prompts, num_actions, beta, r_max,
                                 deviation, learner_r_max)


def cpu_seed_batch(env) -> int:
  """Seeds vmapped at once per CPU device for `env`: the largest power of two ≤ 16 with
  seeds × |X| × A² ≤ 2^16, at least 1 — 16 at A ≤ 64 on one prompt, 1 at A = 200, 4 at
  |X| = 100 and A = 10. The solver's batch then holds ≤ 2^16 × 16 starts entries per (A, A)
  array, near the CPU's caches. The batch is also the program's width (every batch full, the
  last padded: `rbx.core.batching`), so a larger one costs small runs their padding: 16 is
  within 7% of the best at A = 10 and 50, where 64 seeds ran at 0.95× and 0.8× the best (A = 3,
  tiny, runs 0.63× as fast as at 64; `python -m benchmarks.profiles.solver_profile
  --seed-batch`, benchmarks/README.md). Answers as tokens (`tokens.TokenEnv`): seeds × the
  conditionals' tables ≤ 2^20 floats (each (X, L, V+1, V); `token_tables`)."""
  if isinstance(env, tokens.TokenEnv):
    return 1 << max(0, min(4, (2 ** 20 // token_tables(env)).bit_length() - 1))
  per_seed = env.num_prompts * env.num_actions ** 2
  return 1 << max(0, min(4, (2 ** 16 // per_seed).bit_length() - 1))


_TABLES = 6       # a token step's conditionals tables per seed: deployed, DPO's with its
                  # gradient, the bonus's with its gradient, π_cal's


def token_tables(env) -> int:
  """Floats of the per-token tables a sequence agent's step holds per seed on a `TokenEnv`:
  `_TABLES` × |X|·L·(V+1)·V."""
  return _TABLES * env.num_prompts * env.length * (env.vocab + 1) * env.vocab


_TRIALS = 8       # points a solver step holds per start: the current one and 5–7 trial points


def step_bytes(env, state: int) -> int:
  """Bytes a step holds per seed beyond its state, at most: the exact agents' solver holds
  float32 (A, A) arrays for each of `SolverConfig().starts` starts × `_TRIALS` points at
  every prompt, |X| × starts × 8 × A² floats. The linear agents' starts hold (X, A) arrays
  (the features φ are the task's, shared by the seeds), the practical agents' policies less.
  On a `tokens.TokenEnv`: the sequence agents' tables, 4 × `token_tables` bytes."""
  if isinstance(env, tokens.TokenEnv):
    return 4 * token_tables(env)
  return 4 * SolverConfig().starts * _TRIALS * env.num_prompts * env.num_actions ** 2


def control(agent: str) -> str | None:
  """The greedy agent of `agent`'s policy class ("linear/xpo" -> "linear/greedy"), None for a
  greedy one or an agent outside the scheme table: with `alpha` = 0 (the scheme's sampling
  without its bonus) it splits the scheme's advantage into its sampling and bonus effects."""
  policy_class, _, scheme = FAMILY.agents.resolve(agent).partition("/")
  bonus = scheme in schemes.SCHEMES and schemes.SCHEMES[scheme].bonus
  return agent_name(policy_class, "greedy") if bonus and policy_class in CLASSES else None


FAMILY = reg.family("rlhf", env_types=(env_lib.PreferenceEnv, contextual.ContextualPreferenceEnv,
                                       generated.GeneratedContextualEnv, drift_lib.DriftingEnv,
                                       sequences.SequenceEnv, tokens.TokenEnv),
                    cpu_seed_batch=cpu_seed_batch, cpu_rule="seeds × |X| × A² ≤ 2^16",
                    step_bytes=step_bytes, prepare=prepare,
                    reference_exponent=analysis.paper_exponent, control=control)

ENV_BETA = reg.real(doc="the KL weight β ≥ 0 (0: the greedy policy; exact agents only)")
ENV_RMAX = reg.real(doc="the reward bound r_max > 0")
ENV_LEARNER = reg.real(doc="the learner's reward bound, >= r_max (default r_max)")
FAMILY.env("example1", env_lib.example1, {
    "p": reg.real(doc="π_cal = (1 − 2p, p, p), 0 ≤ p < 1/4"),
    "beta": ENV_BETA, "r_max": ENV_RMAX, "learner_r_max": ENV_LEARNER})
FAMILY.env("example2", env_lib.example2, {
    "kappa": reg.real(doc="π_ref = (1 − 2/κ, 1/κ, 1/κ), κ ≥ 4"),
    "beta": ENV_BETA, "r_max": ENV_RMAX, "learner_r_max": ENV_LEARNER})
FAMILY.env("random_instance", _random_instance, {
    "num_prompts": reg.integer(1), "num_actions": reg.integer(2), "beta": ENV_BETA,
    "r_max": ENV_RMAX, "deviation": reg.real(doc="π_ref's distance from π_HF"),
    "seed": reg.integer(0, doc="the instance's random seed"), "learner_r_max": ENV_LEARNER})
FAMILY.env("custom", env_lib.make_env, {
    "r_star": reg.vector(), "pi_ref": schemes.POLICY, "beta": ENV_BETA, "r_max": ENV_RMAX,
    "rho": reg.vector(), "pi_cal": schemes.POLICY, "learner_r_max": ENV_LEARNER})


def _contextual(num_prompts=100, num_actions=10, dim=16, beta=0.5, r_max=None, deviation=1.0,
                seed=0, learner_r_max=None, kappa=None, reward_scale="range", drift="none",
                drift_start=None, drift_end=None):
  """`random_contextual` from an integer seed (its key).

  r_max None: 4 with `reward_scale = "range"`, the rewards' own bound with "none"."""
  if r_max is None and reward_scale == "range":
    r_max = 4.0
  return contextual.random_contextual(jax.random.key(seed), num_prompts, num_actions, dim, beta,
                                      r_max, deviation, learner_r_max, kappa, reward_scale,
                                      *_drift(drift, drift_start, drift_end))


DRIFT = {
    "drift": reg.string(("none", *drift_lib.SCHEDULES),
                        doc="θ*_t from θ* to θ*₁ ~ N(0, I) (the seed's): \"switch\" at "
                            "drift_start, \"linear\" or \"rotation\" from drift_start to "
                            "drift_end; the regret is then the dynamic one (rbx.rlhf.drift)"),
    "drift_start": reg.integer(1, optional=True, doc="t₀, the round the truth starts to move"),
    "drift_end": reg.integer(1, optional=True,
                             doc="t₁ > t₀, the round it reaches θ*₁ (linear, rotation)")}


def _drift(kind: str, start, end) -> tuple:
  """(kind, start, end) of a θ*_t schedule for the random constructors, (None, None, None) for
  "none"; ValueError naming drift_start where a schedule has none."""
  _checks.choice("drift", kind, DRIFT["drift"].choices)
  if kind == "none":
    return None, None, None
  if start is None:
    raise ValueError(f"drift_start=? is needed with drift={kind!r} (the round t₀ the truth "
                     f"starts to move)")
  return kind, start, end


FAMILY.env("contextual", _contextual, {
    "num_prompts": reg.integer(1), "num_actions": reg.integer(2),
    "dim": reg.integer(1, doc="the feature dimension d"), "beta": ENV_BETA,
    "r_max": reg.real(doc="the reward bound r_max > 0 (default 4; with reward_scale = \"none\" "
                      "the rewards' own bound)"),
    "deviation": reg.real(doc="π_ref's distance from π_HF"),
    "seed": reg.integer(0, doc="the instance's random seed"), "learner_r_max": ENV_LEARNER,
    "kappa": reg.real(doc="Example 2's trap at every prompt: π_ref 1/κ on every "
                      "answer but the worst, κ ≥ A (rbx.rlhf.contextual.trap_reference)"),
    "reward_scale": reg.string(contextual.REWARD_SCALES,
                               doc="\"range\": r* = θ*ᵀφ scaled into [0, r_max]; \"none\": "
                                   "as given (rbx.rlhf.make_contextual)"),
    **DRIFT})


def _generated(num_actions=16, context_dim=4, contexts="uniform", pool_size=1000, beta=1.0,
               r_max=None, deviation=1.0, seed=0, learner_r_max=None, kappa=None,
               reward_scale="range", drift="none", drift_start=None, drift_end=None):
  """A fresh context s ~ D every round, built-in D and φ, θ* ~ N(0, I) (rbx.rlhf.generated).

  D is a built-in distribution of dimension k (`generated.CONTEXTS`), the features
  `generated.cos_sin` (d = 2k); the pool and θ* come from an integer seed (its key), and with
  a `drift` θ*₁ ~ N(0, I) from `fold_in(key, 2)` (as `random_contextual`). r_max None: 4 with
  `reward_scale = "range"`, as `contextual`."""
  _checks.choice("contexts", contexts, generated.CONTEXTS)
  _checks.positive_int("num_actions", num_actions, low=2)
  _checks.positive_int("context_dim", context_dim)
  kind, start, end = _drift(drift, drift_start, drift_end)
  if r_max is None and reward_scale == "range":
    r_max = 4.0
  key = jax.random.key(seed)
  k_pool, k_theta = jax.random.split(key)
  theta = jax.random.normal(k_theta, (2 * context_dim,))
  if kind is not None:
    theta = drift_lib.drift(kind, theta, jax.random.normal(jax.random.fold_in(key, 2), theta.shape),
                        start, end)
  return generated.generated_contextual(
      k_pool, generated.CONTEXTS[contexts](context_dim), generated.cos_sin(num_actions),
      theta, beta, r_max, pool_size, deviation, learner_r_max, kappa, reward_scale)


FAMILY.env("generated_contextual", _generated, {
    "num_actions": reg.integer(2, doc="A, the answers at every context"),
    "context_dim": reg.integer(1, doc="k: s ∈ R^k, features φ(s, a) = ((a + 1) cos πs, "
                               "sin πs/(a + 1)), d = 2k (rbx.rlhf.generated.cos_sin)"),
    "contexts": reg.string(generated.CONTEXTS, doc="D, a fresh context every round: "
                           "\"uniform\" U[0, 1]^k or \"normal\" N(0, I_k)"),
    "pool_size": reg.integer(1, doc="the evaluation pool's contexts, drawn once from the seed: "
                             "the regret (2.6) is exact over the pool"),
    "beta": ENV_BETA,
    "r_max": reg.real(doc="the reward bound r_max > 0 (default 4; with reward_scale = \"none\" "
                      "the rewards' own bound over the pool)"),
    "deviation": reg.real(doc="π_ref's distance from π_HF"),
    "seed": reg.integer(0, doc="the instance's random seed (the pool and θ* ~ N(0, I))"),
    "learner_r_max": ENV_LEARNER,
    "kappa": reg.real(doc="Example 2's trap at every context: π_ref 1/κ on every answer but "
                      "the worst, κ ≥ A"),
    "reward_scale": reg.string(contextual.REWARD_SCALES,
                               doc="\"range\": r* = θ*ᵀφ scaled into [0, r_max] over the pool; "
                                   "\"none\": as given"),
    **DRIFT})


def _sequences(num_prompts=16, vocab=4, length=3, dim=8, beta=0.5, r_max=4.0, deviation=1.0,
               seed=0, learner_r_max=None, enumerate=None):
  """`random_sequences` from an integer seed (its key)."""
  return sequences.random_sequences(jax.random.key(seed), num_prompts, vocab, length, dim, beta,
                                    r_max, deviation, learner_r_max, enumerate)


def _hard_sequences(num_prompts=16, vocab=4, length=3, dim=8, beta=0.25, r_max=6.0,
                    epsilon=0.02, seed=0, learner_r_max=None, enumerate=None):
  """`hard_sequences` from an integer seed (its key)."""
  return sequences.hard_sequences(jax.random.key(seed), num_prompts, vocab, length, dim, beta,
                                  r_max, epsilon, learner_r_max, enumerate)


SEQUENCE_ENV = {
    "num_prompts": reg.integer(1), "vocab": reg.integer(2, doc="V, the tokens"),
    "length": reg.integer(1, doc="L, the tokens per answer"),
    "dim": reg.integer(1, doc="the feature dimension d"),
    "beta": reg.real(doc="the KL weight β > 0"), "r_max": ENV_RMAX,
    "seed": reg.integer(0, doc="the instance's random seed"), "learner_r_max": ENV_LEARNER,
    "enumerate": reg.boolean(doc="enumerate the V^L answers (default: where V^L <= 65,536; "
                             "else answers are token arrays, rbx.rlhf.tokens)")}
FAMILY.env("sequences", _sequences,
           {**SEQUENCE_ENV, "deviation": reg.real(doc="π_ref's per-token distance from r*")})
FAMILY.env("hard_sequences", _hard_sequences,
           {**SEQUENCE_ENV, "epsilon": reg.real(doc="π_ref's mass on each token of y*(x): "
                                                "π_ref(y*|x) = ε^L")})


def _register(policy_class: PolicyClass, scheme: str) -> None:
  """Registers `policy_class`'s agent of the row `scheme` as "class/scheme", with today's
  name as its alias (the tabular class's: the scheme's own; the others': "class_scheme")."""
  row = schemes.SCHEMES[scheme]
  name = agent_name(policy_class.name, scheme)
  FAMILY.agent(name, functools.partial(policy_class.make, scheme, **policy_class.defaults(row)),
               policy_class.params(row), doc=f"{row.doc or scheme}; {policy_class.doc}")
  FAMILY.alias(scheme if policy_class.name == "tabular" else f"{policy_class.name}_{scheme}",
               name)


def add_scheme(name: str, scheme: schemes.Scheme) -> None:
  """Adds the row `name` to the scheme table and registers it on every policy class
  ("class/name"). ValueError for a name the table has."""
  if name in schemes.SCHEMES or "/" in name:
    raise ValueError(f"scheme name {name!r} is taken or has a '/': the table has "
                     f"{list(schemes.SCHEMES)}")
  schemes.SCHEMES[name] = scheme
  for policy_class in CLASSES.values():
    _register(policy_class, name)


def add_class(policy_class: PolicyClass) -> None:
  """Adds a policy class and registers its agent of every scheme ("class/scheme")."""
  if policy_class.name in CLASSES or "/" in policy_class.name:
    raise ValueError(f"policy class name {policy_class.name!r} is taken or has a '/': the "
                     f"classes are {list(CLASSES)}")
  CLASSES[policy_class.name] = policy_class
  for scheme in schemes.SCHEMES:
    _register(policy_class, scheme)


for _class in CLASSES.values():
  for _scheme in schemes.SCHEMES:
    _register(_class, _scheme)
FAMILY.alias("online_dpo", "practical/greedy")
FAMILY.alias("sequence_dpo", "sequence/greedy")
for _name, (_make, _params, _doc) in {**dueling_agents.AGENTS,          # the dueling baselines
                                      **contextual_dueling.AGENTS}.items():
  FAMILY.agent(_name, _make, _params, doc=_doc)

get = FAMILY.get_agent
