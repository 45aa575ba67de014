"""The public NeuralUCB/NeuralTS code's pieces (issue 28): the torch network
(`network="torch"`), the NeuralTS code's training (`procedure="neuralts"`), NeuralUCB's thinned
training rounds (`thin_after`) and the ordinal encoding of categorical columns."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from helpers import jit_play, observe
from rbx import data, neural
from rbx.neural import buffer, likelihoods, network, training

K, D, M = 2, 12, 100           # arms (first-layer blocks), d', width


def _unit_rows(key, n, d=D):
  x = jax.random.normal(key, (n, d))
  return x / jnp.linalg.norm(x, axis=1, keepdims=True)


def test_torch_network_has_biases_the_public_parameter_count_and_no_sqrt_m():
  theta = network.init(jax.random.key(0), D, M, 2, K, kind="torch")
  assert network.num_params(theta) == (K * D + 1) * M + M + 1       # torch's p for disjoint x
  x = _unit_rows(jax.random.key(1), 1)[0]
  b1, b2 = theta.b
  by_hand = jax.nn.relu(x @ theta.W1[1] + b1) @ theta.w + b2           # fc2(relu(fc1(x)))
  np.testing.assert_allclose(network.apply(theta, x, 1), by_hand, rtol=1e-6)
  assert abs(float(network.apply(theta, x, 1))) > 1e-4                 # f(θ_0) ≠ 0
  paper = network.init(jax.random.key(0), D, M, 2, K)
  assert paper.b == () and float(network.apply(paper, x, 1)) == 0.0   # the paper's f(θ_0) = 0
  assert network.num_params(paper) == K * D * M + M


def test_torch_init_is_uniform_with_bound_one_over_sqrt_fan_in():
  theta = network.init(jax.random.key(2), D, M, 3, K, kind="torch")
  for leaf, fan_in in ((theta.W1, K * D), (theta.b[0], K * D), (theta.hidden[0], M),
                       (theta.b[1], M), (theta.w, M), (theta.b[2], M)):
    v, bound = np.asarray(leaf).ravel(), 1 / np.sqrt(fan_in)
    assert np.all(np.abs(v) <= bound)
    if v.size >= 2000:                 # U(−a, a): variance a²/3, so E|v| = a/2
      assert abs(np.var(v) - bound ** 2 / 3) < 0.1 * bound ** 2 / 3
      assert abs(np.mean(np.abs(v)) - bound / 2) < 0.05 * bound


def test_torch_gradients_are_about_100_times_smaller_than_the_papers_at_m_100():
  x = _unit_rows(jax.random.key(3), 64)
  blocks = jnp.arange(64) % K

  def mean_sq_grad(kind):
    theta = network.init(jax.random.key(4), D, M, 2, K, kind=kind)
    _, g = network.arm_grads(theta, x, blocks)
    return float(jnp.mean(jax.vmap(lambda v: jnp.sum(ravel_pytree(v)[0] ** 2))(g)))

  paper, torch = mean_sq_grad("paper"), mean_sq_grad("torch")
  assert 1.0 * M < paper < 2.5 * M          # ‖g‖² ≈ 1.5–2 m for unit inputs (f of (2))
  assert 0.5 < torch < 3.0                  # torch's: O(1)
  assert paper / torch > 30


def test_neuralts_procedure_is_full_batch_gd_on_the_mse_with_decay_lambda_over_n():
  lam, eta, steps, n = 0.1, 0.05, 3, 5
  theta = network.init(jax.random.key(5), D, 8, 2, K, kind="torch")
  x = _unit_rows(jax.random.key(6), n)
  r = jnp.linspace(0.0, 1.0, n)
  buf = buffer.empty(16, D, K)
  for i in range(n):
    buf = buffer.add(buf, x[i], i % K, r[i])
  cfg = training.settings(width=8, procedure="neuralts", network="torch", train_steps=steps)
  opt = training.optimizer(lam, eta, cfg)
  got, _ = jax.jit(lambda th: training.fit(th, opt.init(th), th, buf, jax.random.key(7),
                                           likelihoods.gaussian, lam, opt, cfg))(theta)

  def torch_loss(th):                       # MSELoss + SGD weight_decay = λ/n as a penalty
    pred = network.predict_each(th, x, jnp.arange(n) % K)
    return jnp.mean((pred - r) ** 2) + 0.5 * lam / n * sum(
        jnp.sum(p ** 2) for p in jax.tree.leaves(th))

  step = jax.jit(lambda th: jax.tree.map(lambda p, g: p - eta * g, th, jax.grad(torch_loss)(th)))
  want = theta
  for _ in range(steps):
    want = step(want)
  np.testing.assert_allclose(ravel_pytree(got)[0], ravel_pytree(want)[0], rtol=1e-5,
                             atol=1e-6)


def _run(env, agent, T):
  """The agent's states after each of T rounds of `env` (played by hand, as the driver does)."""
  key = jax.random.key(0)
  state = agent.init(key, env.spec, T)
  step, env_state, states = jit_play(env, agent), None, []
  for t in range(T):
    rnd = observe(env, jax.random.fold_in(key, t), env_state)
    state, _ = step(jax.random.fold_in(key, 1000 + t), state, rnd)
    env_state = rnd.env_state
    states.append(state)
  return states


def test_thinned_training_stores_and_trains_only_on_its_rounds_but_updates_z_every_round():
  env, T, lam = neural.synthetic(dim=4, num_arms=3), 9, 1e-3
  agent = neural.neural_ts(nu=0.1, width=8, train_steps=2, form="reference", lam=lam,
                           thin_after=3, thin_every=4)
  states = _run(env, agent, T)
  # rounds 1..3 train; then those with t − 1 ≡ 0 (mod 4): t = 5 and 9 — five rows stored
  assert [int(s.buffer.count) for s in states] == [1, 2, 3, 3, 4, 4, 4, 4, 5]
  assert int(states[-1].t) == T + 1
  # θ moves on training rounds only; U = λ + Σ g² grows on every round
  moved = [not np.array_equal(ravel_pytree(a.theta)[0], ravel_pytree(b.theta)[0])
           for a, b in zip(states, states[1:])]
  assert moved == [True, True, False, True, False, False, False, True]
  u = [float(jnp.sum(ravel_pytree(s.z)[0] - lam)) for s in states]
  assert all(b > a for a, b in zip(u, u[1:]))
  assert [bool(training.trains(training.settings(thin_after=3, thin_every=4), t))
          for t in range(1, 10)] == [True, True, True, False, True, False, False, False, True]
  with pytest.raises(ValueError, match="thin_after"):
    neural.rbmle_ga(thin_after=3)


def test_ordinal_encoding_matches_a_hand_computed_row():
  csv = "a,b,n,label\nx,?,3,p\ny,u,0,e\nx,t,4,e\n"
  header, rows = ["a", "b", "n", "label"], [r.split(",") for r in csv.splitlines()[1:]]
  ds = data.preprocess(header, rows, categorical="ordinal")
  # a: x → 0, y → 1; b: '?' → −1, t → 0, u → 1 (sorted present values); n numeric
  expected = np.array([[0, -1, 3], [1, 1, 0], [0, 0, 4]], np.float64)
  expected /= np.linalg.norm(expected, axis=1, keepdims=True)
  np.testing.assert_allclose(ds.features, expected, rtol=1e-6)
  assert ds.columns == ("a", "b", "n") and ds.labels.tolist() == [1, 0, 0]
  onehot = data.preprocess(header, rows)
  assert onehot.features.shape == (3, 2 + 3 + 1)       # '?' is a category when one-hot
  with pytest.raises(ValueError, match="categorical"):
    data.preprocess(header, rows, categorical="binary")
