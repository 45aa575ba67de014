"""Exact values over token sequences by recursion (rbx.rlhf.markov, issue 56): the per-token
rewards, r*'s range, J(π*, r*) and π*'s conditionals, a Markov policy's J and regret against the
enumeration for every instance kind; a size far beyond the enumeration against a closed form;
bad input."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx.rlhf import markov, sequences
from rbx.rlhf.env import Prompt, Query

KEY = jax.random.key(0)
INSTANCES = {   # every constructor of rbx.rlhf.sequences at (X, V, L) = (3, 3, 3); two more shapes
    "random": lambda: sequences.random_sequences(KEY, 3, 3, 3, 4, 0.5, 4.0, 0.5),
    "random_uniform_ref": lambda: sequences.random_sequences(KEY, 3, 3, 3, 4, 0.5, 4.0),
    "random_reversed_ref": lambda: sequences.random_sequences(KEY, 3, 3, 3, 4, 0.5, 4.0, 2.0),
    "hard": lambda: sequences.hard_sequences(KEY, 3, 3, 3, 4, 0.25, 6.0, 0.02),
    "given_reference_and_rho": lambda: sequences.make_sequences(
        jax.random.normal(KEY, (3, 3, 4, 3, 4)), jnp.arange(4.0) - 1.5, 0.3, 2.0,
        ref_logits=3 * jax.random.normal(jax.random.key(1), (3, 3, 4, 3)), rho=[0.5, 0.3, 0.2]),
    "constant_reward": lambda: sequences.make_sequences(jnp.ones((3, 3, 4, 3, 4)), jnp.zeros(4),
                                                        0.5, 2.0),
    "one_token": lambda: sequences.random_sequences(KEY, 1, 2, 1, 2, 0.5, 4.0, 0.0),
    "hard_long": lambda: sequences.hard_sequences(KEY, 2, 4, 4, 3, 0.25, 8.0, 0.05),
}


def _along(table, tokens):
  """Σ_l table[x, l, y_{l−1}, y_l] of every answer in float64 numpy (`along_answers`), (X, A)."""
  table, tokens = np.asarray(table, np.float64), np.asarray(tokens)
  prev = np.concatenate([np.full((len(tokens), 1), table.shape[3]), tokens[:, :-1]], 1)
  return sum(table[:, l, prev[:, l], tokens[:, l]] for l in range(tokens.shape[1]))


def _log_softmax(z):
  return z - np.logaddexp.reduce(z, axis=-1, keepdims=True)


@jax.jit
def _feedback(env, log_pi):
  """The environment's (comparison, regret) of answers 0 and 1 at prompt 0, jitted."""
  return env.feedback(jax.random.key(3), (), Prompt(jnp.int32(0)),
                      Query(jnp.int32(0), jnp.int32(1), log_pi))


@pytest.mark.parametrize("kind", sorted(INSTANCES))
def test_the_recursions_are_the_enumerations_values(kind):
  env = INSTANCES[kind]()
  tokens, beta, r_max = env.tokens, float(env.beta), float(env.r_max)
  r_star = np.asarray(env.base.r_star, np.float64)                  # the enumeration, (X, V^L)
  log_ref = np.log(np.asarray(env.base.pi_ref, np.float64))
  rho = np.asarray(env.rho, np.float64)

  # r* = Σ_l token_rewards, its offset on position 1; r*'s range by min- and max-plus passes
  np.testing.assert_allclose(_along(env.token_rewards, tokens), r_star, rtol=1e-5,
                             atol=1e-5 * r_max)
  scores = np.asarray(env.token_features) @ np.asarray(env.context.theta_star)   # θ̃ᵀψ
  score = _along(scores, tokens)
  low, high = sequences.reward_range(scores)
  np.testing.assert_allclose(low, score.min(-1), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(high, score.max(-1), rtol=1e-5, atol=1e-6)

  # J(π*, r*) = β log Σ_y π_ref e^{r*/β}, and π*'s conditionals give π* ∝ π_ref e^{r*/β}
  j_star, log_star = sequences.optimal_value(env)
  tilted = log_ref + r_star / beta
  log_z = np.logaddexp.reduce(tilted, axis=-1)
  np.testing.assert_allclose(j_star, beta * log_z, rtol=1e-5)
  np.testing.assert_allclose(np.exp(_along(log_star, tokens)),
                             np.exp(tilted - log_z[:, None]), rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(sequences.value(env, log_star), j_star, rtol=1e-5)

  # a random Markov policy: J(π, r*) = E_π[r*] − β KL(π‖π_ref), the regret (2.6) ρ-weighted
  log_cond = _log_softmax(2 * np.random.default_rng(7).normal(size=env.ref_log_probs.shape))
  log_cond = log_cond.astype(np.float32)
  log_pi = _along(log_cond, tokens)
  pi = np.exp(log_pi)
  j_pi = (pi * r_star).sum(-1) - beta * (pi * (log_pi - log_ref)).sum(-1)
  np.testing.assert_allclose(sequences.value(env, log_cond), j_pi, rtol=1e-5, atol=1e-6 * r_max)
  regret = np.dot(rho, beta * log_z - j_pi)
  np.testing.assert_allclose(sequences.markov_regret(env, log_cond), regret, rtol=1e-5)
  assert regret > 1e-3

  # the environment scores a policy given as conditionals by the recursion, with the oracle's
  # draw of the enumerated path (jitted at one shape: the other shapes add compiles only)
  if env.tokens.shape == (27, 3):
    (wins_markov, regret_markov), (wins_enum, regret_enum) = (
        _feedback(env, log_cond), _feedback(env, jnp.asarray(log_pi, jnp.float32)))
    assert bool(wins_markov) == bool(wins_enum)
    np.testing.assert_allclose(regret_markov, regret, rtol=1e-5)
    np.testing.assert_allclose(regret_enum, regret, rtol=1e-4)


def test_a_size_beyond_the_enumeration_against_a_closed_form(monkeypatch):
  # V = 32, L = 32: 10^48 answers. With rewards and π_ref independent of the previous token,
  # J(π*, r*) = β Σ_l log Σ_t π_ref(t|l) e^{R(l, t)/β} and max r* = Σ_l max_t R(l, t).
  def no_enumeration(*args, **kwargs):
    raise AssertionError("the recursion enumerated the answers")
  monkeypatch.setattr(sequences, "answers", no_enumeration)
  monkeypatch.setattr(sequences, "along_answers", no_enumeration)
  X, L, V, beta = 2, 32, 32, 0.3
  rng = np.random.default_rng(11)
  r = rng.uniform(size=(X, L, V)) / 8                                         # r* ∈ [0, 4]
  lr = _log_softmax(rng.normal(size=(X, L, V)))
  shape = (X, L, V + 1, V)
  truth = markov.TokenTruth(np.broadcast_to(r[:, :, None], shape).astype(np.float32),
                            np.broadcast_to(lr[:, :, None], shape).astype(np.float32),
                            np.float32(beta), np.array([0.25, 0.75], np.float32))
  j_star, log_star = markov.optimal_value(truth)
  np.testing.assert_allclose(j_star, beta * np.logaddexp.reduce(lr + r / beta, -1).sum(-1),
                             rtol=1e-5)
  low, high = markov.reward_range(truth.token_rewards)
  np.testing.assert_allclose(high, r.max(-1).sum(-1), rtol=1e-5)
  np.testing.assert_allclose(low, r.min(-1).sum(-1), rtol=1e-5)
  np.testing.assert_allclose(markov.value(truth, log_star), j_star, rtol=1e-5)
  # π_ref: J = E_{π_ref}[r*] = Σ_l Σ_t π_ref(t|l) R(l, t); the regret is J* − J
  j_ref = (np.exp(lr) * r).sum(-1).sum(-1)
  np.testing.assert_allclose(markov.value(truth, truth.ref_log_probs), j_ref, rtol=1e-5)
  np.testing.assert_allclose(markov.markov_regret(truth, truth.ref_log_probs),
                             np.dot([0.25, 0.75], beta * np.logaddexp.reduce(
                                 lr + r / beta, -1).sum(-1) - j_ref), rtol=1e-4)
  assert float(markov.markov_regret(truth, log_star)) < 1e-5
  # a policy depending on the previous token runs too (finite, J below J*)
  log_cond = _log_softmax(rng.normal(size=shape)).astype(np.float32)
  assert (np.asarray(markov.value(truth, log_cond)) < np.asarray(j_star)).all()


def _truth(X=2, L=2, V=3, beta=0.5):
  table = np.zeros((X, L, V + 1, V), np.float32)
  return markov.TokenTruth(table, table - np.log(V), np.float32(beta), np.ones(X) / X)


UNIFORM = np.full((2, 2, 4, 3), -np.log(3.0), np.float32)


def _with(table, at, values):
  table = table.copy()
  table[at] = values
  return table


@pytest.mark.parametrize("call,field", [
    (lambda: markov.value(_truth(), UNIFORM[:, :1]), "log_conditionals must have shape"),
    (lambda: markov.value(_truth(), UNIFORM + 0.01), "log_conditionals' rows must normalise"),
    (lambda: markov.markov_regret(_truth(), _with(_with(UNIFORM, (1, 1, 2), [0, -np.inf, -np.inf]),
                                                  (0, 0, 3, 0), -1.0)),
     "the first at \\[x, l, previous\\] = \\[0, 0, 3\\]"),
    (lambda: markov.value(_truth(), _with(UNIFORM, (0, 0, 0, 0), np.nan)), "log_conditionals"),
    (lambda: markov.optimal_value(_truth(V=1)), "vocab"),
    (lambda: markov.optimal_value(_truth(L=0)), "length"),
    (lambda: markov.optimal_value(_truth(beta=0.0)), "beta"),
    (lambda: markov.optimal_value(_truth()._replace(rho=np.ones(3) / 3)), "rho"),
    (lambda: markov.optimal_value(_truth()._replace(token_rewards=np.zeros((2, 2, 4, 4)))),
     "token_rewards"),
    (lambda: markov.reward_range(np.zeros((2, 2, 3, 3))), "table"),
])
def test_bad_input_is_a_value_error_naming_the_field(call, field):
  with pytest.raises(ValueError, match=field):
    call()


def test_rows_with_log_zero_are_allowed():
  # π(t) = 0 (log π = −inf) is a valid policy: a point mass on token 0 everywhere
  point = np.broadcast_to(np.array([0.0, -np.inf, -np.inf], np.float32), (2, 2, 4, 3))
  truth = _truth()
  # r* = 0, π_ref uniform: J = −β KL = −β L log V
  np.testing.assert_allclose(markov.value(truth, point), -0.5 * 2 * np.log(3.0), rtol=1e-6)
