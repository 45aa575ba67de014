"""Environments (disjoint classification bandit, synthetic h) and the tiled history buffer."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import neural
from rbx.neural import buffer, likelihoods, network

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 4)).astype(np.float32)
Y = RNG.integers(0, 3, size=30)


def _rewards(env, key, env_state, obs):
  """Every arm's (reward, regret) for one round, as if each arm were played: (K,), (K,)."""
  return jax.vmap(lambda a: env.feedback(key, env_state, obs, a))(jnp.arange(env.num_arms))


def test_classification_rounds_follow_a_per_seed_shuffle():
  env = neural.classification(X, Y)
  assert (env.num_arms, env.num_blocks, env.dim) == (3, 3, 4)
  assert env.spec == neural.Spec(dim=4, num_arms=3, num_blocks=3)
  rows = []
  for key in (jax.random.key(0), jax.random.key(1)):
    state = env.reset(key)
    order = np.asarray(state.order)
    seen = []
    for t in range(1, 31):
      state, obs = env.observe(key, state)
      assert int(state.t) == t
      i = int(order[t - 1])
      np.testing.assert_allclose(obs.x, np.tile(X[i] / np.linalg.norm(X[i]), (3, 1)), rtol=1e-6)
      np.testing.assert_array_equal(obs.block, np.arange(3))
      reward, regret = _rewards(env, key, state, obs)
      np.testing.assert_array_equal(reward, np.eye(3)[Y[i]])
      np.testing.assert_array_equal(regret, 1.0 - np.eye(3)[Y[i]])
      np.testing.assert_array_equal(env.means(state, obs), np.eye(3)[Y[i]])
      seen.append(i)
    assert sorted(seen) == list(range(30))               # every example once per pass
    rows.append(seen)
  assert rows[0] != rows[1]                              # shuffled per seed
  # round t uses row order[(t − 1) mod n]: the second pass repeats the first
  state, obs = env.observe(None, state)
  assert int(env.row(state)) == int(order[0])


def test_synthetic_rewards():
  for kind, h in [("linear", lambda s: s), ("quadratic", lambda s: 10 * s ** 2),
                  ("cosine", lambda s: np.cos(3 * s))]:
    env = neural.synthetic(kind, dim=6, num_arms=5, noise=0.0, seed=3)
    assert env.spec == neural.Spec(dim=6, num_arms=5, num_blocks=1)
    state, obs = env.observe(jax.random.key(1), env.reset(jax.random.key(0)))
    assert obs.x.shape == (5, 6)
    np.testing.assert_allclose(np.linalg.norm(obs.x, axis=1), 1.0, rtol=1e-5)
    mean = env.means(state, obs)
    np.testing.assert_allclose(mean, h(np.asarray(obs.x) @ np.asarray(env.a)), rtol=1e-4,
                               atol=1e-5)
    reward, regret = _rewards(env, jax.random.key(1), state, obs)
    np.testing.assert_allclose(reward, mean)             # noise = 0
    np.testing.assert_allclose(regret, mean.max() - mean, rtol=1e-6)
  noisy = neural.synthetic("linear", noise=0.5)
  key = jax.random.key(1)
  state, obs = noisy.observe(key, noisy.reset(jax.random.key(0)))
  reward, _ = _rewards(noisy, key, state, obs)
  assert np.abs(reward - noisy.means(state, obs)).max() > 1e-3
  # the noise comes from the round's key: the same key gives the same reward
  np.testing.assert_array_equal(reward, _rewards(noisy, key, state, obs)[0])


@pytest.mark.parametrize("args,field", [
    ((X, np.zeros(30, int)), "num_arms"),                  # K = 1 < 2
    ((X, Y, 1), "num_arms"),
    ((X, np.where(Y == 0, 5, Y), 3), "labels"),            # label out of range
    ((X, Y - 1), "labels"),
    ((np.where(X > 1.5, np.nan, X), Y), "features"),       # NaN features
    ((X, Y[:10]), "labels"),
    ((X, Y.astype(float)), "labels"),
])
def test_bad_classification_data_raises(args, field):
  with pytest.raises(ValueError, match=field):
    neural.classification(*args)


@pytest.mark.parametrize("kw,field", [(dict(num_arms=1), "num_arms"), (dict(reward="cubic"), "reward"),
                                      (dict(noise=-1.0), "noise"), (dict(dim=0), "dim")])
def test_bad_synthetic_raises(kw, field):
  with pytest.raises(ValueError, match=field):
    neural.synthetic(**kw)


def test_buffer_tiles_hold_exactly_the_history_and_its_likelihood():
  n, d, K = 40, 3, 4
  rng = np.random.default_rng(1)
  xs = rng.normal(size=(n, d)).astype(np.float32)
  bs = rng.choice(K, size=n, p=[0.7, 0.1, 0.1, 0.1])
  rs = rng.normal(size=n).astype(np.float32)
  buf = buffer.empty(n, d, K)
  add = jax.jit(buffer.add)
  for x, b, r in zip(xs, bs, rs):
    buf = add(buf, x, b, r)
  assert int(buf.count) == n
  stored = np.asarray(buf.mask) > 0
  assert stored.sum() == n
  rows = np.asarray(buf.x)                                            # (G, S, d)
  tile_block = np.broadcast_to(np.asarray(buf.block)[:, None], stored.shape)
  got = sorted(map(tuple, np.concatenate([rows[stored], tile_block[stored][:, None],
                                          np.asarray(buf.r)[stored][:, None]], 1)))
  want = sorted(map(tuple, np.concatenate([xs, bs[:, None], rs[:, None]], 1)))
  np.testing.assert_allclose(got, want)
  # the tiled forward pass equals the per-row one: ℓ(F_t; θ) of (9)
  theta = network.init(jax.random.key(0), d, 6, 2, K)
  flat, unravel = jax.flatten_util.ravel_pytree(theta)
  theta = unravel(flat + 0.3 * jax.random.normal(jax.random.key(1), flat.shape))
  per_row = likelihoods.gaussian.log_prob(rs, network.predict_each(theta, xs, bs)).sum()
  np.testing.assert_allclose(neural.regularised_log_likelihood(theta, theta, buf, likelihoods.gaussian,
                                                               jnp.float32(1.0)), per_row, rtol=1e-5)
  # rows past the capacity are dropped; minibatches draw stored rows only
  full = add(buf, xs[0], bs[0], 99.0)
  assert int(full.count) == n and not np.any(np.asarray(full.r) == 99.0)
  # minibatches: each block's rows come from that block's stored rows, and the weighted
  # per-block means (total W_b / size) estimate ℓ without bias
  tables = buffer.strata(buf)
  np.testing.assert_allclose(tables.total, np.bincount(bs, minlength=K))
  xb, rb = buffer.rows(buf, buffer.sample(tables, jax.random.key(2), (64,)))  # (K, 64, d), (K, 64)
  assert xb.shape == (K, 64, d) and rb.shape == (K, 64)
  for blk in range(K):
    pairs = {(float(ri), *map(float, xi)) for ri, xi, bi in zip(rs, xs, bs) if bi == blk}
    assert all((float(ri), *map(float, xi)) in pairs for ri, xi in zip(rb[blk], xb[blk]))
  big = buffer.rows(buf, buffer.sample(tables, jax.random.key(3), (20000,)))
  z = network.predict_blocks(theta, big[0])
  estimate = jnp.sum(tables.total[:, None] / 20000 * likelihoods.gaussian.log_prob(big[1], z))
  np.testing.assert_allclose(estimate, per_row, rtol=2e-2)
  # full-batch passes cover the used tiles only: a buffer of 50× the capacity holding the same
  # rows gives the same ℓ from no more chunks than those tiles need
  big_buf = buffer.empty(50 * n, d, K)
  for x, b, r in zip(xs, bs, rs):
    big_buf = add(big_buf, x, b, r)
  np.testing.assert_allclose(neural.regularised_log_likelihood(
      theta, theta, big_buf, likelihoods.gaussian, jnp.float32(1.0)), per_row, rtol=1e-5)
  C = buffer.chunk_tiles(big_buf)
  assert big_buf.r.shape[0] % C == 0
  assert int(buffer.num_chunks(big_buf)) == -(-int(big_buf.tiles_used) // C)
  assert int(buffer.num_chunks(big_buf)) * C < big_buf.r.shape[0]