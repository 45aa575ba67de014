"""`procedure="neuralucb"`: the public NeuralUCB code's per-row SGD training
(`rbx.neural.training.neuralucb_fit`) against a plain NumPy re-implementation of its loop,
its early stop and update cap, an agent running it in a sweep, and its settings' validation."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import neural
from rbx.neural import buffer, likelihoods, network, training

D, M, B, CAP = 3, 4, 2, 16        # features, width, first-layer blocks, buffer capacity
ETA, LAM, MAX_UPDATES = 0.05, 0.1, 12


def _theta(key):
  """θ_0 moved a little, so that f ≠ 0 and every parameter gets a gradient."""
  theta0 = network.init(key, D, M, 2, B)
  noise = jax.random.normal(jax.random.fold_in(key, 1), (B, D, M))
  return theta0._replace(W1=theta0.W1 + 0.1 * noise, w=theta0.w + 0.1)


def _buffer(n, key, rewards=None):
  x = jax.random.normal(key, (n, D))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True)
  r = jnp.linspace(-0.5, 1.0, n) if rewards is None else rewards(x)
  buf = buffer.empty(CAP, D, B)
  for i in range(n):
    buf = buffer.add(buf, x[i], i % B, r[i])
  return buf


@jax.jit
def _fit(theta, buf, key, tolerance):
  """The reference procedure with step η, decay λ, at most 12 updates; `tolerance` traced."""
  cfg = training.settings(width=M, procedure="neuralucb", max_updates=MAX_UPDATES,
                          tolerance=tolerance)
  opt = training.optimizer(LAM, ETA, cfg)
  return training.neuralucb_fit(theta, buf, key, likelihoods.gaussian, LAM, opt, cfg)


def _numpy_reference(theta, buf, order, tolerance, max_updates=MAX_UPDATES, bias_x=None,
                     alpha=0.0):
  """The reference code's `train` in NumPy (float64), hand-computed gradients of the depth-2
  f(x; θ) = √m w·relu(x W1[b]); the rows visited in `order`. With `bias_x = (x, b)` each
  update also ascends (2/n) α f(x, b; θ), GA's bias term. Returns (W1, w, updates, passes)."""
  W1, w = np.asarray(theta.W1, np.float64), np.asarray(theta.w, np.float64)
  S = buf.r.shape[1]
  n = int(buf.count)
  rows = [(np.asarray(buf.x[f // S, f % S], np.float64), int(buf.block[f // S]),
           float(buf.r[f // S, f % S])) for f in np.asarray(order)[:n]]
  sm = np.sqrt(M)

  def f_and_grads(x, b):
    pre = x @ W1[b]
    h = np.maximum(pre, 0.0)
    gW1 = np.zeros_like(W1)
    gW1[b] = sm * np.outer(x, w * (pre > 0))
    return sm * h @ w, gW1, sm * h

  updates = passes = 0
  while updates < max_updates:
    total = 0.0
    for x, b, r in rows:
      f, gW1, gw = f_and_grads(x, b)
      loss = (f - r) ** 2
      dW1, dw = 2 * (f - r) * gW1 + LAM * W1, 2 * (f - r) * gw + LAM * w   # torch weight_decay
      if bias_x is not None:
        _, bW1, bw = f_and_grads(*bias_x)
        dW1, dw = dW1 - 2 * alpha / n * bW1, dw - 2 * alpha / n * bw
      W1, w = W1 - ETA * dW1, w - ETA * dw
      total += loss
      updates += 1
      if updates >= max_updates:
        return W1, w, updates, passes
    passes += 1
    if total / n <= tolerance:
      break
  return W1, w, updates, passes


def _close(out, ref):
  np.testing.assert_allclose(out.theta.W1, ref[0], rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(out.theta.w, ref[1], rtol=1e-5, atol=1e-5)
  assert (int(out.updates), int(out.passes)) == ref[2:]


def test_row_order_is_a_permutation_of_the_stored_rows():
  buf = _buffer(5, jax.random.key(0))
  order = np.asarray(training.row_order(buf, jax.random.key(1)))
  assert sorted(order[:5]) == sorted(np.asarray(buf.slot[:5]))
  assert order.shape == (CAP,)


def test_reference_procedure_matches_a_numpy_loop_with_the_same_order():
  # 5 rows, tolerance 0 (never met): two full passes, then the cap stops it mid-pass
  theta, buf, key = _theta(jax.random.key(0)), _buffer(5, jax.random.key(1)), jax.random.key(2)
  out = _fit(theta, buf, key, 0.0)
  ref = _numpy_reference(theta, buf, training.row_order(buf, key), 0.0)
  assert ref[2:] == (MAX_UPDATES, 2)
  _close(out, ref)


def test_ga_bias_enters_every_update_over_n():
  theta, buf, key = _theta(jax.random.key(3)), _buffer(5, jax.random.key(4)), jax.random.key(5)
  xa, ba, alpha = jnp.array([0.6, 0.0, 0.8]), 1, 0.3
  cfg = training.settings(width=M, procedure="neuralucb", max_updates=MAX_UPDATES, tolerance=0.0)
  opt = training.optimizer(LAM, ETA, cfg)
  bias = lambda th: alpha * network.apply(th, xa, ba)
  out = jax.jit(lambda th: training.neuralucb_fit(th, buf, key, likelihoods.gaussian, LAM, opt,
                                                  cfg, bias))(theta)
  ref = _numpy_reference(theta, buf, training.row_order(buf, key), 0.0,
                         bias_x=(np.asarray(xa, np.float64), ba), alpha=alpha)
  _close(out, ref)
  th_fit, _ = jax.jit(lambda th: training.fit(th, (), th, buf, key, likelihoods.gaussian, LAM,
                                              opt, cfg, bias))(theta)
  np.testing.assert_array_equal(th_fit.w, out.theta.w)         # `fit` dispatches to it


def test_early_stop_after_one_pass_when_the_fit_is_already_within_tolerance():
  # rewards r_s = f(x_s; θ): the first pass's mean loss is ~0 ≤ 10⁻³, so exactly one pass of
  # updates is made (θ moves by them, mostly the weight decay) and training stops
  theta, key = _theta(jax.random.key(6)), jax.random.key(7)
  buf = _buffer(5, jax.random.key(8),
                lambda x: network.predict_each(theta, x, jnp.arange(5) % B))
  out = _fit(theta, buf, key, 1e-3)
  ref = _numpy_reference(theta, buf, training.row_order(buf, key), 1e-3)
  assert ref[2:] == (5, 1)
  _close(out, ref)
  assert int(_fit(theta, buf, key, 0.0).updates) == MAX_UPDATES   # same program, tolerance 0


def test_update_cap_with_more_rows_than_max_updates():
  theta, buf, key = _theta(jax.random.key(9)), _buffer(14, jax.random.key(10)), jax.random.key(11)
  out = _fit(theta, buf, key, 1e3)                 # a tolerance that any pass would meet
  ref = _numpy_reference(theta, buf, training.row_order(buf, key), 1e3)
  assert ref[2:] == (MAX_UPDATES, 0)
  _close(out, ref)


def test_empty_history_makes_no_update():
  theta = _theta(jax.random.key(12))
  out = _fit(theta, buffer.empty(CAP, D, B), jax.random.key(13), 1e-3)
  assert int(out.updates) == 0
  np.testing.assert_array_equal(out.theta.W1, theta.W1)


def test_neural_ts_with_the_reference_form_and_training_runs_a_vmapped_sweep():
  env = neural.synthetic("linear", dim=3, num_arms=3, noise=0.1, seed=0)
  agent = lambda: neural.neural_ts(nu=0.1, lam=1e-3, eta=0.01, form="reference",
                                   procedure="neuralucb", max_updates=50, width=8)
  res = neural.sweep(lambda: (env, agent()), {}, seeds=2, steps=12, seed_batch=2)
  assert res.regret.shape == (2, 12)
  assert np.isfinite(res.regret).all() and (res.regret >= -1e-6).all()


def test_defaults_are_todays_steps_procedure():
  cfg = training.settings()
  assert (cfg.procedure, cfg.max_updates, cfg.tolerance) == ("steps", 1000, 1e-3)
  assert cfg == training.settings(procedure="steps", max_updates=1000, tolerance=1e-3)


@pytest.mark.parametrize("kw,field", [
    (dict(procedure="per_row"), "procedure"), (dict(max_updates=0), "max_updates"),
    (dict(max_updates=2.5), "max_updates"), (dict(tolerance=-1e-3), "tolerance"),
    (dict(tolerance=float("nan")), "tolerance"), (dict(tolerance=[1e-3]), "tolerance"),
    (dict(procedure="neuralucb", batch_size=8), "batch_size"), (dict(network="mlp"), "network"),
    (dict(network="paper", width=5), "width"), (dict(thin_after=-1), "thin_after"),
    (dict(thin_every=0), "thin_every")])
def test_bad_settings_raise_naming_the_field(kw, field):
  with pytest.raises(ValueError, match=field):
    training.settings(**kw)
  with pytest.raises(ValueError, match=field):          # from an agent, before compiling
    neural.neural_ucb(form="reference", **kw)
