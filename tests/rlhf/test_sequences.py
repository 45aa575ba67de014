"""Online RLHF over token sequences (rbx.rlhf.sequences): the enumeration and the exact ground
truth against brute force, the hard instance, ancestral sampling, the policies against the
practical ones at L = 1, the agents learning, the linear agents on the enumerated answers,
bad input, and a TOML config through rbx's run path."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import rlhf
from rbx.rlhf import sequences
from rbx.rlhf.learners import policies, practical, sequence
from rbx.rlhf.env import Prompt, Query
from rbx.runs import config, experiment, store


def _env(seed=0, X=2, V=3, L=2, d=3, deviation=0.5):
  return sequences.random_sequences(jax.random.key(seed), X, V, L, d, 0.5, 4.0, deviation)


def test_the_answers_are_every_sequence_once_and_pi_ref_sums_to_one():
  tokens = np.asarray(sequences.answers(3, 3))
  assert tokens.shape == (27, 3) and tokens.dtype == np.int32
  assert [tuple(t) for t in tokens] == list(itertools.product(range(3), repeat=3))
  env = _env(L=3)
  np.testing.assert_allclose(np.asarray(env.base.pi_ref).sum(-1), 1.0, rtol=1e-6)
  np.testing.assert_allclose(np.exp(np.asarray(env.ref_log_probs)).sum(-1), 1.0, rtol=1e-6)


def test_reward_pi_ref_optimum_and_regret_are_exact_against_brute_force():
  X, V, L, beta, r_max = 2, 2, 3, 0.5, 4.0
  env = _env(seed=3, X=X, V=V, L=L)
  psi, log_ref = np.asarray(env.token_features, np.float64), np.asarray(env.ref_log_probs, np.float64)
  theta = np.asarray(jax.random.normal(jax.random.split(jax.random.key(3))[1], (3,)), np.float64)
  ys = list(itertools.product(range(V), repeat=L))
  phi = np.array([[sum(psi[x, l, ([V] + list(y))[l], y[l]] for l in range(L)) for y in ys]
                  for x in range(X)])
  score = phi @ theta
  r_star = r_max * (score - score.min()) / (score.max() - score.min())
  pi_ref = np.array([[np.exp(sum(log_ref[x, l, ([V] + list(y))[l], y[l]] for l in range(L)))
                      for y in ys] for x in range(X)])
  np.testing.assert_allclose(env.context.features, phi, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(env.base.r_star, r_star, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(env.base.pi_ref, pi_ref, rtol=1e-5)
  assert not np.allclose(pi_ref, 1.0 / len(ys))                   # deviation 0.5: not uniform

  def J(pi):                                                       # (2.5) per prompt
    return (pi * r_star).sum(-1) - beta * (pi * np.log(pi / pi_ref)).sum(-1)
  pi_star = pi_ref * np.exp(r_star / beta)
  pi_star /= pi_star.sum(-1, keepdims=True)
  np.testing.assert_allclose(jax.vmap(rlhf.optimal_policy, (0, 0, None))(
      env.base.r_star, env.base.pi_ref, beta), pi_star, rtol=1e-4)
  pi = np.asarray(jax.nn.softmax(jax.random.normal(jax.random.key(9), (X, len(ys))), -1),
                  np.float64)
  expected = np.dot(np.asarray(env.base.rho), J(pi_star) - J(pi))  # (2.6), ρ-weighted
  _, regret = env.feedback(jax.random.key(0), (), Prompt(jnp.int32(0)),
                           Query(jnp.int32(0), jnp.int32(1), jnp.log(jnp.asarray(pi, jnp.float32))))
  np.testing.assert_allclose(regret, expected, rtol=1e-4)
  assert expected > 0


def test_the_hard_instance_hides_the_best_answer_at_epsilon_to_the_length():
  eps, L, V, beta, r_max = 0.02, 3, 4, 0.25, 6.0
  env = sequences.hard_sequences(jax.random.key(1), 3, V, L, 4, beta, r_max, eps)
  best = np.asarray(sequences.best_answers(env))
  tokens, r_star = np.asarray(env.tokens), np.asarray(env.base.r_star)
  matches = (tokens[None] == tokens[best][:, None]).sum(-1)        # #{l: y_l = y*_l(x)}
  np.testing.assert_allclose(r_star, r_max * matches / L, atol=1e-5)
  pi_ref = np.asarray(env.base.pi_ref)
  np.testing.assert_allclose(pi_ref[np.arange(3), best], eps ** L, rtol=1e-4)
  assert (np.sort(pi_ref, -1)[:, 1] > 10 * eps ** L).all()         # y* alone is that rare
  # r_max/(Lβ) = 8 ≫ log((1 − ε)/(ε(V − 1))) = 2.8: π* is near y*, so π_ref's regret is large.
  pi_star = jax.vmap(rlhf.optimal_policy, (0, 0, None))(env.base.r_star, env.base.pi_ref, beta)
  assert (np.asarray(pi_star)[np.arange(3), best] > 0.9).all()


def _perturbed(pol, task, key):
  """θ away from θ_ref, so that every policy is far from π_ref."""
  theta = pol.init(task)
  return theta + jax.random.normal(key, theta.shape)


@pytest.mark.parametrize("policy", sorted(sequence.POLICIES))
def test_ancestral_samples_follow_the_enumerated_probabilities(policy):
  # Pearson's χ² over the V^L = 8 answers: below its 0.999 quantile with 7 degrees of freedom.
  env = _env(seed=2, V=2, L=3)
  task, pol = env.spec, sequence.POLICIES[policy]()
  theta = _perturbed(pol, task, jax.random.key(5))
  n, x = 20_000, jnp.int32(1)
  draws = jax.jit(jax.vmap(lambda k: pol.sample(k, theta, task, x)))(
      jax.random.split(jax.random.key(6), n))
  expected = n * np.exp(np.asarray(pol.log_probs(theta, task)[1], np.float64))
  counts = np.bincount(np.asarray(draws), minlength=8)
  np.testing.assert_allclose(expected.sum(), n, rtol=1e-5)
  assert ((counts - expected) ** 2 / expected).sum() < 24.3
  # log π_θ of given answers alone is the enumeration's, read row by row (fewer answers than
  # prompts) and, for the Markov policies, from one table of every prompt's conditionals
  xs, ys = jnp.array([0, 1, 1, 0, 2, 1]), jnp.array([7, 0, 5, 3, 6, 2])
  assert task.rho.shape[0] < xs.shape[0]
  for n in (1, 6):
    np.testing.assert_allclose(pol.log_probs_of(theta, task, xs[:n], ys[:n]),
                               pol.log_probs(theta, task)[xs[:n], ys[:n]], rtol=1e-6, atol=1e-6)
  # and the reference parameters θ_ref give π_ref exactly (to rounding)
  np.testing.assert_allclose(pol.log_probs(pol.reference(task), task), jnp.log(task.pi_ref),
                             atol=1e-5)


def test_one_token_tabular_is_the_practical_tabular_policy():
  env = _env(seed=4, X=3, V=4, L=1)
  task = env.spec
  seq, flat = sequence.tabular(), policies.tabular()
  theta = jax.random.normal(jax.random.key(0), (3, 4))
  np.testing.assert_allclose(seq.log_probs(theta[:, None], task), flat.log_probs(theta, task),
                             atol=1e-6)
  np.testing.assert_allclose(seq.reference(task)[:, 0], flat.reference(task), atol=1e-6)
  # The same rounds (answers given, so no sampling) move both agents alike.
  for scheme in ("xpo", "algorithm1"):
    ours = rlhf.get(f"sequence/{scheme}", data="counts")
    theirs = rlhf.get(f"practical/{scheme}")
    s_ours, s_theirs = (a.init(jax.random.key(0), task, 8) for a in (ours, theirs))
    for t, (x, a1, a2, win) in enumerate([(0, 1, 2, True), (2, 3, 3, False), (0, 0, 1, False)]):
      key, obs = jax.random.key(t), Prompt(jnp.int32(x))
      s_ours = ours.update(key, s_ours, obs, Query(jnp.int32(a1), jnp.int32(a2), s_ours.log_pi),
                           win, task)
      s_theirs = theirs.update(key, s_theirs, obs,
                               Query(jnp.int32(a1), jnp.int32(a2), s_theirs.log_pi), win, task)
    np.testing.assert_allclose(s_ours.log_pi, s_theirs.log_pi, atol=1e-5, err_msg=scheme)
    assert not np.allclose(s_ours.log_pi, jnp.log(task.pi_ref), atol=1e-3)


def test_the_dpo_term_from_the_compared_answers_is_the_one_from_the_rows():
  # The buffer's DPO term from log π_θ of the compared answers (Policy.log_probs_of) against
  # the same agent reading whole rows: the same regret to float32 rounding.
  env = _env(seed=6, X=3, V=2, L=3, d=3)
  pol = sequence.loglinear()
  for name in ("greedy", "algorithm1"):
    regret = [np.asarray(rlhf.sweep(lambda: (env, practical.build(
        name, name, p, 1.0, 0, "adam", 0.1, 5, False, None, None, 1.0, "buffer", None)), {},
        seeds=3, steps=10, seed_batch=3, progress=False).regret)
        for p in (pol, pol._replace(log_probs_of=None))]
    assert np.ptp(regret[0]) > 0
    np.testing.assert_allclose(regret[0], regret[1], rtol=1e-4, atol=1e-6, err_msg=name)


def _regret(env, name, seeds, steps, **kw):
  res = rlhf.sweep(lambda: (env, rlhf.get(name, **kw)), {}, seeds=seeds, steps=steps,
                   seed_batch=seeds, progress=False)
  return np.asarray(res.regret).reshape(seeds, steps)


@pytest.mark.parametrize("name,policy", [
    ("sequence_dpo", "loglinear"), ("sequence_xpo", "loglinear"), ("sequence_vpo", "loglinear"),
    ("sequence_algorithm1", "loglinear"), ("sequence_algorithm1", "tabular"),
    ("sequence_xpo", "neural")])
def test_sequence_agents_learn_on_an_easy_instance(name, policy):
  # 2 prompts, V = 2, L = 2, uniform π_ref: π_ref's regret at t = 1 is ≈ 0.55; after 60 rounds
  # every case here is below 0.6 of it over 4 seeds (≈ 0.06-0.25).
  env = _env(seed=1, X=2, V=2, L=2, d=4, deviation=1.0)
  S, T = 4, 60
  r = _regret(env, name, S, T, policy=policy, train_steps=10,
              **({"learning_rate": 0.02} if policy == "neural" else {}))
  ref = float(np.dot(env.base.rho, jax.vmap(rlhf.regret, (0, 0, 0, None))(
      env.base.pi_ref, env.base.r_star, env.base.pi_ref, env.beta)))
  np.testing.assert_allclose(r[:, 0], ref, rtol=1e-4)              # t = 1: π^(1) = π_ref
  last = r[:, -10:].mean(axis=1)
  assert last.mean() + 2 * last.std(ddof=1) / np.sqrt(S) < 0.6 * ref, (last, ref)


def test_linear_agents_run_on_the_enumerated_answers_as_on_a_contextual_env():
  # make_contextual from the same enumerated features and θ*, with the sequence π_ref: the
  # linear agents' regret bit for bit (linear XPO's; the other linear agents read the same
  # task fields).
  env = _env(seed=5, X=3, V=2, L=2, d=3)
  ctx = rlhf.make_contextual(env.context.features, jax.random.normal(
      jax.random.split(jax.random.key(5))[1], (3,)), env.beta, 4.0)
  ctx = ctx._replace(base=ctx.base._replace(pi_ref=env.base.pi_ref, pi_cal=env.base.pi_ref))
  np.testing.assert_array_equal(ctx.base.r_star, env.base.r_star)
  ours, theirs = (_regret(e, "linear_xpo", 2, 5) for e in (env, ctx))
  np.testing.assert_array_equal(ours, theirs)
  assert np.ptp(ours) > 0


@pytest.mark.parametrize("call,field", [
    (lambda: sequences.answers(1, 3), "vocab"),
    (lambda: sequences.answers(3, 0), "length"),
    (lambda: sequences.answers(4, 9), "vocab \\*\\* length"),
    (lambda: sequences.random_sequences(jax.random.key(0), 0, 2, 2, 2, 0.5, 1.0), "num_prompts"),
    (lambda: sequences.random_sequences(jax.random.key(0), 2, 2, 2, 0, 0.5, 1.0), "dim"),
    (lambda: sequences.random_sequences(jax.random.key(0), 2, 2, 2, 2, 0.0, 1.0), "beta"),
    (lambda: sequences.random_sequences(jax.random.key(0), 2, 2, 2, 2, 0.5, 1.0, 3.0),
     "deviation"),
    (lambda: sequences.hard_sequences(jax.random.key(0), 2, 2, 2, 2, 0.5, 1.0, 1.0), "epsilon"),
    (lambda: sequences.make_sequences(np.ones((2, 2, 2, 2, 1)), np.ones(1), 0.5, 1.0),
     "token_features"),
    (lambda: sequences.make_sequences(np.ones((2, 2, 3, 2, 1)), np.ones(2), 0.5, 1.0),
     "theta_star"),
    (lambda: sequences.make_sequences(np.ones((2, 2, 3, 2, 1)), np.ones(1), 0.5, 1.0,
                                      ref_logits=np.ones((2, 2, 2, 2))), "ref_logits"),
    (lambda: sequence.make("xpo", policy="transformer"), "policy"),
    (lambda: sequence.make("xpo", hidden=8), "hidden"),
    (lambda: sequence.neural(hidden=0), "hidden"),
    (lambda: sequence.make("vpo", cal_samples=0), "cal_samples"),
    (lambda: sequence.make("greedy", learning_rate=0.0), "learning_rate"),
    (lambda: sequence.tabular().init(rlhf.example1().spec), "sequence environment"),
])
def test_bad_input_is_a_value_error_naming_the_field(call, field):
  with pytest.raises(ValueError, match=field):
    call()


CONFIG = """
family = "rlhf"
seeds = 2
steps = 4

[env]
name = "hard_sequences"
num_prompts = 3
vocab = 2
length = 2
dim = 3
epsilon = 0.1

[agent]
alpha = 1.0
policy = "loglinear"
train_steps = 2

[grid]
agent = ["sequence_dpo", "sequence_xpo", "sequence_selm", "sequence_vpo", "sequence_algorithm1"]
"""


def test_a_config_with_a_sequence_environment_runs_through_the_experiment(tmp_path):
  path = tmp_path / "sweep.toml"
  path.write_text(CONFIG)
  assert experiment.run(config.load(path, out=str(tmp_path / "out")), progress=False,
                        echo=lambda s: None) == experiment.COMPLETE
  regret = np.asarray(store.load(tmp_path / "out").regret)
  assert regret.shape[-1] == 4 and regret.size == 5 * 2 * 4 and np.isfinite(regret).all()
  assert (regret >= -1e-6).all() and np.ptp(regret) > 0


def test_the_throughput_benchmark_at_its_tiny_size_prints_a_rate():
  from benchmarks.throughput import sequence_throughput
  lines = sequence_throughput.main(["--tiny", "--agents", "sequence_xpo"])
  enumerated, tokens = (line.split() for line in lines[-2:])
  assert enumerated[:5] == ["4", "2", "3", "8", "enumerated"] and tokens[4] == "tokens"
  assert tokens[6:10] == ["sequence_xpo", "loglinear", "2", "all"] and float(tokens[5]) >= 0
  rates = [float(row[10].replace(",", "")) for row in (enumerated, tokens)]
  assert min(rates) > 0 and float(tokens[12]) == pytest.approx(rates[1] / rates[0], abs=0.06)


def test_proposition3_reads_the_sequence_instances_kappa():
  # Assumption 1's κ of the hard instance is π_ref's odds of the worst answer against y*,
  # ((1 − ε)/ε)^L at V = 2, and a config's proposition3 schedule (κ not given) uses it.
  from rbx import schedules
  from rbx.rlhf import assumptions, registry
  eps, L = 0.1, 2
  env = sequences.hard_sequences(jax.random.key(1), 2, 2, L, 3, 0.25, 4.0, eps)
  assert float(assumptions.kappa(env)) == pytest.approx(((1 - eps) / eps) ** L, rel=1e-4)
  alpha = registry.prepare({"schedule": "proposition3", "scale": 0.5}, env, 10)["alpha"]
  expected = schedules.proposition3(4, 10, 0.25, 4.0, kappa=((1 - eps) / eps) ** L, scale=0.5)
  np.testing.assert_allclose(alpha(5), expected(5), rtol=1e-4)
