"""Answers as token arrays (`rbx.rlhf.tokens`): the environment is the enumerated one without the
enumeration, and the sequence agents on it are the enumerated path's agents, answer for answer."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import rlhf
from rbx.rlhf import markov, sequences, tokens

SIZES = dict(num_prompts=3, vocab=3, length=3, dim=4, beta=0.5, r_max=2.0)


def both(make, **kw):
  """(the enumerated env, the token env) of one instance."""
  key = jax.random.key(1)
  return make(key, **SIZES, **kw), make(key, **SIZES, **kw, enumerate=False)


@pytest.mark.parametrize("make,kw", [(sequences.random_sequences, dict(deviation=0.5)),
                                     (sequences.hard_sequences, dict(epsilon=0.1))])
def test_the_token_env_is_the_enumerated_one(make, kw):
  enum, tok = both(make, **kw)
  assert isinstance(tok, tokens.TokenEnv) and tok.num_actions == 27
  np.testing.assert_allclose(tok.token_rewards, enum.token_rewards, atol=1e-6)
  np.testing.assert_allclose(tok.ref_log_probs, enum.ref_log_probs, atol=1e-6)
  np.testing.assert_allclose(tok.star_log_probs, markov.optimal_value(enum)[1], atol=1e-5)
  answers = sequences.answers(3, 3)
  for x in range(3):                     # r* of every answer, read along its tokens
    np.testing.assert_allclose(tok.reward(jnp.full(27, x), answers), enum.base.r_star[x],
                               atol=2e-6)
  # the regret of a random Markov policy: by the token env's recursion, by enumeration
  log_pi = jax.nn.log_softmax(jax.random.normal(jax.random.key(2), enum.ref_log_probs.shape))
  by_answers = jax.nn.log_softmax(sequences.along_answers(log_pi, answers), axis=-1)
  whole = enum.context.feedback(jax.random.key(0), (), rlhf.env.Prompt(jnp.int32(0)),
                                rlhf.env.Query(0, 0, by_answers))[1]
  query = rlhf.env.Query(answers[0], answers[1], log_pi)
  assert float(tok.feedback(jax.random.key(0), (), rlhf.env.Prompt(jnp.int32(0)), query)[1]) \
      == pytest.approx(float(whole), rel=1e-5)


def test_the_oracle_prefers_by_r_star_along_the_tokens():
  env = sequences.hard_sequences(jax.random.key(0), 1, 4, 6, 2, 0.5, 6.0, 0.1, enumerate=False)
  best = jnp.argmax(env.token_rewards[0, jnp.arange(6), 0], axis=-1)   # y*'s token per position
  assert float(env.reward(jnp.zeros(1, jnp.int32), best[None])[0]) == pytest.approx(6.0)
  worst = (best + 1) % 4
  query = rlhf.env.Query(best, worst, env.ref_log_probs)
  wins = jax.vmap(lambda k: env.feedback(k, (), rlhf.env.Prompt(jnp.int32(0)), query)[0])(
      jax.random.split(jax.random.key(3), 4000))
  assert float(wins.mean()) == pytest.approx(float(jax.nn.sigmoid(6.0)), abs=0.01)


AGENTS = {"greedy": ("sequence/greedy", {}), "xpo": ("sequence/xpo", {}),
          "algorithm1": ("sequence/algorithm1", {}),
          "vpo": ("sequence/vpo", dict(cal_samples=None)),
          "xpo minibatches": ("sequence/xpo", dict(batch_size=4))}


@pytest.mark.slow
def test_the_agents_on_tokens_are_the_enumerated_agents():
  # the same answers (ancestral sampling, the same keys), the same loss to float32 rounding:
  # the same regret, step for step, with the exact bonus and the round's a2 alike, and with
  # minibatch steps (the same rows drawn) (VPO's and `modified`'s draws from the fixed π_cal
  # differ: over answers there, over tokens here)
  enum, tok = both(sequences.random_sequences, deviation=0.5)
  runs = [rlhf.sweep(lambda case: (env, rlhf.get(AGENTS[case][0], policy="loglinear",
                                                  **AGENTS[case][1])),
                     {"case": list(AGENTS)}, seeds=3, steps=10, progress=False)
          for env in (enum, tok)]
  assert np.ptp(runs[0].regret) > 0.1
  np.testing.assert_allclose(runs[1].regret, runs[0].regret, rtol=1e-4, atol=1e-5)
  minibatches, whole = (runs[0].sel(case=c).regret for c in ("xpo minibatches", "xpo"))
  assert not np.allclose(minibatches, whole)             # the minibatches changed the run


def test_answers_of_10_to_the_48_tokens_arrays_run_and_wrong_classes_are_refused():
  env = rlhf.FAMILY.envs["sequences"].make(num_prompts=2, vocab=32, length=32, dim=2, seed=0)
  assert isinstance(env, tokens.TokenEnv) and env.num_actions == 32 ** 32
  res = rlhf.sweep(lambda: (env, rlhf.get("sequence/xpo", cal_samples=2)), {}, seeds=2, steps=3,
                   progress=False)
  assert np.isfinite(res.regret).all() and (res.regret >= 0).all()
  for agent, message in [(rlhf.get("xpo"), "pi_ref is a table over the enumerated answers"),
                         (rlhf.get("sequence/xpo", policy="tabular"), "enumeration-size policy"),
                         (rlhf.get("sequence/xpo", data="counts"), "data='counts'"),
                         (rlhf.get("sequence/vpo", pi_cal=[1.0]), "pi_cal is a policy over")]:
    with pytest.raises((ValueError, AttributeError), match=message):
      rlhf.sweep(lambda: (env, agent), {}, seeds=1, steps=1, progress=False)
  with pytest.raises(ValueError, match="vocab ... length must be <= 65,536|enumerate=False"):
    sequences.random_sequences(jax.random.key(0), 2, 32, 32, 2, 0.5, 2.0, enumerate=True)
  with pytest.raises(ValueError, match=r"need .* but .* is available .*fewer prompts"):
    sequences.random_sequences(jax.random.key(0), 10 ** 4, 256, 128, 64, 0.5, 2.0)  # 2.8 TiB
  with pytest.raises(ValueError, match="enumerate must be True, False or None"):
    sequences.random_sequences(jax.random.key(0), 2, 3, 3, 2, 0.5, 2.0, enumerate="yes")


def test_both_paths_record_the_dueling_regrets_and_the_mass_on_y_star():
  # y* by Viterbi on the tokens = the enumeration's argmax; the metrics are the same on both
  # paths for the same answers and policy, p_best of π_ref on the hard instance is ε^L
  enum, tok = both(sequences.hard_sequences, epsilon=0.1)
  answers = sequences.answers(3, 3)
  best = jnp.argmax(enum.base.r_star, axis=-1)
  np.testing.assert_array_equal(tok.best_tokens, answers[best])
  x, a1, a2 = jnp.int32(1), 5, 17
  got = [sequences.metrics(enum, (), rlhf.env.Prompt(x),
                           rlhf.env.Query(a1, a2, jnp.log(enum.base.pi_ref))),
         tokens.metrics(tok, (), rlhf.env.Prompt(x), rlhf.env.Query(answers[a1], answers[a2],
                                                                    tok.ref_log_probs))]
  for name in tokens.METRICS:
    assert float(got[0][name]) == pytest.approx(float(got[1][name]), rel=1e-4, abs=1e-7), name
  assert float(got[1]["p_best"]) == pytest.approx(0.1 ** 3, rel=1e-4)
  gap = jax.nn.sigmoid(enum.base.r_star[1].max() - enum.base.r_star[1, jnp.array([a1, a2])]) - 0.5
  assert float(got[0]["weak_regret"]) == pytest.approx(float(gap.min()))
  res = rlhf.sweep(lambda: (tok, rlhf.get("sequence/greedy")), {}, seeds=2, steps=3, progress=False)
  mass = res.metric("p_best").regret                          # per step, (seed, step)
  assert mass.shape == (2, 3) and np.all((mass > 0) & (mass <= 1))
  assert np.all(res.metric("strong_regret").regret >= res.metric("weak_regret").regret)
