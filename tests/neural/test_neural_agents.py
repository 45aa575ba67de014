"""The neural agents: first rounds against closed forms, sublinear regret on a linear problem,
seed reproducibility inside sweeps, and validation before anything compiles."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import jit_play, observe, play, toy_data
from rbx import neural
from rbx.neural import network

# T = 200 rounds, 2 seeds: second half / first half 0.09–0.19 per agent and total / random
# play's 0.035–0.135 (`pytest -s -k learns` prints them), against the bounds 0.5 and 1/3.
# PC at ν = 0.1 settles slowly (total / random 0.42 at T = 400, 0.29 at T = 800), so it runs
# at ν = 0.01 here (0.11 at T = 200).
T = 200
ENV = neural.synthetic("linear", dim=5, num_arms=4, noise=0.1, seed=0)
VARIANTS = {
    "rbmle_ga": lambda: neural.rbmle_ga(nu=0.1),
    "rbmle_ga_mixture": lambda: neural.rbmle_ga(nu=0.1, likelihood="mixture"),
    "rbmle_pc": lambda: neural.rbmle_pc(nu=0.01),
    "neural_ucb": lambda: neural.neural_ucb(nu=0.1),
    "neural_ucb_exact": lambda: neural.neural_ucb(nu=0.1, precision="exact"),
    "neural_ucb_minibatch": lambda: neural.neural_ucb(nu=0.1, batch_size=32),
    "neural_ts": lambda: neural.neural_ts(nu=0.1),
}


@pytest.fixture(scope="module")
def regret():
  return neural.sweep(lambda agent: (ENV, VARIANTS[agent]()), {"agent": list(VARIANTS)},
                      seeds=2, steps=T)


@pytest.mark.slow
def test_every_agent_learns_sublinearly_and_beats_random_play(regret):
  assert regret.axes == ("agent", "seed", "step") and regret.regret.shape == (len(VARIANTS), 2, T)
  rounds = jax.vmap(lambda k: observe(ENV, k))(jax.random.split(jax.random.key(9), 20000))
  random_per_step = float(jnp.mean(rounds.mean.max(1) - rounds.mean.mean(1)))
  first = regret.regret[..., : T // 2].sum(-1).mean(-1)
  second = regret.regret[..., T // 2:].sum(-1).mean(-1)
  total = first + second
  for name, f, s, tot in zip(VARIANTS, first, second, total):
    print(f"{name}: second/first {s / f:.3f}, total/random {tot / (random_per_step * T):.4f}")
    assert s < 0.5 * f, (name, f, s)
    assert tot < random_per_step * T / 3, (name, tot, random_per_step * T)


def _round(key):
  return observe(ENV, key)


def _dense(theta, compact, blocks):
  return np.asarray(network.to_dense(theta, compact, blocks))


def test_ga_first_rounds_match_one_ascent_step_of_12():
  nu, eta, lam, zeta = 0.7, 0.05, 0.01, 1.5
  agent = neural.rbmle_ga(nu=nu, eta=eta, lam=lam, zeta=zeta, train_steps=1, restart=True)
  state = agent.init(jax.random.key(0), ENV.spec, 8)
  theta0 = state.theta0
  m = theta0.w.shape[0]
  p0 = np.asarray(jax.flatten_util.ravel_pytree(theta0)[0])
  unravel = jax.flatten_util.ravel_pytree(theta0)[1]
  # round 1: empty history, α(1) = ν, ∇ of (12) at θ_0 is α g(x_a; θ_0)
  rnd = _round(jax.random.key(1))
  obs = rnd.obs
  _, g = network.arm_grads(theta0, obs.x, obs.block)
  tilde = p0 + eta * nu * _dense(theta0, g, obs.block)                          # (K, p)
  f = np.array([network.apply(unravel(v), x, 0) for v, x in zip(tilde, obs.x)])
  index = -m * lam / 2 * ((tilde - p0) ** 2).sum(1) + nu * zeta * f            # (13) with ζ
  state1, info = play(ENV, agent, jax.random.key(2), state, rnd)
  np.testing.assert_allclose(jax.vmap(lambda t: jax.flatten_util.ravel_pytree(t)[0])(state1.theta),
                             tilde, rtol=1e-5, atol=1e-7)
  assert int(info.arm) == int(np.argmax(index))
  assert float(info.regret) == pytest.approx(float(rnd.mean.max() - rnd.mean[info.arm]))
  # round 2 restarted from θ_0: ∇ of (12)/n is (r_1 − f(x_1; θ_0)) g(x_1; θ_0) + α(2) g(x_{2,a}; θ_0)
  rnd2 = _round(jax.random.key(3))
  _, g1 = network.arm_grads(theta0, obs.x[info.arm][None], obs.block[:1])
  _, g2 = network.arm_grads(theta0, rnd2.obs.x, rnd2.obs.block)
  expect = p0 + eta * (float(info.reward) * _dense(theta0, g1, obs.block[:1])
                       + nu * np.sqrt(2.0) * _dense(theta0, g2, rnd2.obs.block))
  state2, _ = play(ENV, agent, jax.random.key(4), state1, rnd2)
  np.testing.assert_allclose(jax.vmap(lambda t: jax.flatten_util.ravel_pytree(t)[0])(state2.theta),
                             expect, rtol=1e-4, atol=1e-6)
  # warm start continues from θ̃_{1,a} instead
  warm = neural.rbmle_ga(nu=nu, eta=eta, lam=lam, zeta=zeta, train_steps=1)
  state2w, _ = play(ENV, warm, jax.random.key(4), state1, rnd2)
  assert not np.allclose(jax.vmap(lambda t: jax.flatten_util.ravel_pytree(t)[0])(state2w.theta),
                         expect, atol=1e-4)


def test_ga_index_weight_follows_zeta_t():
  # ζ(t) = ζ t^zeta_n: on an empty history at round t = 4, θ̃_a = θ_0 + η α(4) g_a and the
  # index is −(mλ/2)‖θ̃_a − θ_0‖² + α(4) ζ(4) f(x_a; θ̃_a), (13) with ζ(t). As f ≈ η α ‖g_a‖²,
  # the index ≈ η α² ‖g_a‖² (ζ(t) − mλη/2): at ζ = 0.004 < mλη/2 = 0.008 < ζ(4) = 0.016 the
  # constant ζ would pick the arm of smallest ‖g_a‖, ζ(t) the largest.
  nu, eta, lam, zeta, zeta_n, t = 0.7, 0.05, 0.01, 0.004, 1.0, 4
  agent = neural.rbmle_ga(nu=nu, eta=eta, lam=lam, zeta=zeta, zeta_n=zeta_n, train_steps=1,
                          restart=True)
  state = agent.init(jax.random.key(0), ENV.spec, 8)._replace(t=jnp.int32(t))
  p0, unravel = jax.flatten_util.ravel_pytree(state.theta0)
  m, a_t = state.theta0.w.shape[0], nu * np.sqrt(t)
  assert zeta < m * lam * eta / 2 < zeta * t ** zeta_n
  for k in range(4):
    rnd = _round(jax.random.key(10 + k))
    _, g = network.arm_grads(state.theta0, rnd.obs.x, rnd.obs.block)
    tilde = np.asarray(p0) + eta * a_t * _dense(state.theta0, g, rnd.obs.block)
    f = np.array([network.apply(unravel(v), x, 0) for v, x in zip(tilde, rnd.obs.x)])
    index = -m * lam / 2 * ((tilde - np.asarray(p0)) ** 2).sum(1) + a_t * zeta * t ** zeta_n * f
    _, info = play(ENV, agent, jax.random.key(20 + k), state, rnd)
    assert int(info.arm) == int(np.argmax(index))


@pytest.mark.parametrize("prec", ["diag", "exact"])
def test_pc_and_ucb_first_round_indices(prec):
  nu, lam = 0.3, 0.01
  rnd = _round(jax.random.key(5))
  obs = rnd.obs
  pc = neural.rbmle_pc(nu=nu, lam=lam, precision=prec)
  state = pc.init(jax.random.key(0), ENV.spec, 8)
  theta0, m = state.theta0, state.theta0.w.shape[0]
  p0, unravel = jax.flatten_util.ravel_pytree(theta0)
  _, g = network.arm_grads(theta0, obs.x, obs.block)
  G = _dense(theta0, g, obs.block)
  bar = np.asarray(p0) + nu / m * G / lam                   # (15) with Z_0 = λI, α(1) = ν
  index = [network.apply(unravel(v), x, 0) for v, x in zip(bar, obs.x)]
  state1, info = play(ENV, pc, jax.random.key(1), state, rnd)
  assert int(info.arm) == int(np.argmax(index))
  # Z_1 = λI + g(x_1; θ̂_1) g(x_1; θ̂_1)ᵀ / m at the newly trained θ̂_1 (line 10)
  _, g_new = network.arm_grads(state1.theta, obs.x[info.arm][None], obs.block[:1])
  gd = _dense(theta0, g_new, obs.block[:1])[0]
  z1 = np.diag(np.full(gd.size, lam)) + np.outer(gd, gd) / m
  got = (np.asarray(jax.flatten_util.ravel_pytree(state1.z)[0]) if prec == "diag"
         else np.linalg.inv(np.asarray(state1.z, np.float64)))
  np.testing.assert_allclose(got, np.diag(z1) if prec == "diag" else z1, rtol=2e-3, atol=2e-4)

  ucb = neural.neural_ucb(nu=nu, lam=lam, precision=prec)
  state1, info = play(ENV, ucb, jax.random.key(1), ucb.init(jax.random.key(0), ENV.spec, 8), rnd)
  assert int(info.arm) == int(np.argmax(nu * np.sqrt((G ** 2).sum(1) / (lam * m))))
  # NeuralUCB adds the selection-time gradient g(x_1; θ_0)
  ga = G[int(info.arm)]
  got = (np.asarray(jax.flatten_util.ravel_pytree(state1.z)[0]) if prec == "diag"
         else np.linalg.inv(np.asarray(state1.z, np.float64)))
  want = lam + ga ** 2 / m if prec == "diag" else lam * np.eye(ga.size) + np.outer(ga, ga) / m
  np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-4)


def test_ts_without_exploration_is_greedy_like_ucb():
  ts = neural.simulate(ENV, neural.neural_ts(nu=0.0), jax.random.key(3), 40)
  ucb = neural.simulate(ENV, neural.neural_ucb(nu=0.0), jax.random.key(3), 40)
  np.testing.assert_array_equal(ts.action, ucb.action)
  explore = neural.simulate(ENV, neural.neural_ts(nu=1.0), jax.random.key(3), 40)
  assert not np.array_equal(explore.action, ts.action)


@pytest.mark.slow
def test_one_seed_alone_equals_the_same_seed_in_a_traced_sweep():
  env = neural.classification(*toy_data())
  build = lambda nu, lam, eta, n: (env, neural.rbmle_pc(nu=nu, lam=lam, eta=eta, n=n))
  res = neural.sweep(build, {"nu": [0.1, 1.0], "lam": [1e-3], "eta": [0.01, 0.03], "n": [0.5, 1.0]},
                     seeds=[2, 5], steps=60)
  assert res.axes == ("nu", "lam", "eta", "n", "seed", "step")
  alone = neural.simulate(*build(1.0, 1e-3, 0.03, 1.0), jax.random.key(5), 60).regret
  np.testing.assert_allclose(res.sel(nu=1.0, lam=1e-3, eta=0.03, n=1.0, seed=5).regret, alone,
                             atol=1e-6)
  assert not np.allclose(res.regret[0], res.regret[1])   # ν matters
  prefix = neural.simulate(*build(1.0, 1e-3, 0.03, 1.0), jax.random.key(5), 20, capacity=60)
  np.testing.assert_allclose(prefix.regret, alone[:20], atol=1e-6)
  # minibatches too: the rows a seed draws do not depend on the batch it runs in
  mini = lambda: (env, neural.neural_ucb(nu=1.0, batch_size=8))
  batch = neural.sweep(mini, {}, seeds=[2, 5], steps=60)
  np.testing.assert_allclose(batch.regret[1], neural.simulate(*mini(), jax.random.key(5), 60).regret,
                             atol=1e-6)


@pytest.mark.slow
def test_width_is_a_static_field_of_a_python_sweep():
  """The registry declares `width` static, so the sweep loops over it in Python (the
  constructor sees an int) and the results have a "width" axis."""
  build = lambda width: (ENV, neural.neural_ucb(width=width, train_steps=2))
  res = neural.sweep(build, {"width": [16, 32]}, seeds=2, steps=10)
  assert res.axes == ("width", "seed", "step") and res.regret.shape == (2, 2, 10)
  np.testing.assert_array_equal(res.coords["width"], [16, 32])
  alone = neural.simulate(*build(16), jax.random.key(1), 10).regret
  np.testing.assert_allclose(res.sel(width=16, seed=1).regret, alone, atol=1e-6)


def test_simulate_returns_transitions_of_what_the_agent_saw():
  out = neural.simulate(ENV, neural.neural_ucb(train_steps=2), jax.random.key(0), 12)
  assert isinstance(out, neural.Transition) and isinstance(out.obs, neural.Context)
  assert neural.Context._fields == ("x", "block")          # no means or rewards in the obs
  assert out.obs.x.shape == (12, 4, 5) and out.obs.block.shape == (12, 4)
  assert out.action.shape == out.feedback.shape == out.regret.shape == (12,)
  assert out.regret.dtype == jnp.float32
  mean = jax.vmap(ENV.means, (None, 0))(None, out.obs)                    # h(x), (12, K)
  np.testing.assert_allclose(out.regret, mean.max(1) - mean[jnp.arange(12), out.action],
                             rtol=1e-6, atol=1e-6)


def test_ga_arm_batches_solve_the_same_arm_problems():
  """The K = 4 arm problems one after another, in vmapped batches of 3 (and a remainder of 1)
  and all at once: the same θ̃_{t,a} to float32 rounding, so the same arms."""
  def run(arm_batch):
    agent = neural.rbmle_ga(nu=0.5, arm_batch=arm_batch, train_steps=3)
    state = agent.init(jax.random.key(0), ENV.spec, 16)
    step = jit_play(ENV, agent)
    arms = []
    for t in range(8):
      state, info = step(jax.random.key(10 + t), state, _round(jax.random.key(t)))
      arms.append(int(info.arm))
    return arms, jax.flatten_util.ravel_pytree(state.theta)[0]
  arms, theta = run(1)
  for batch in (3, 4):
    other_arms, other_theta = run(batch)
    assert other_arms == arms
    np.testing.assert_allclose(other_theta, theta, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kw,field", [
    ("rbmle_ga", dict(eta=0.0), "eta"), ("rbmle_pc", dict(eta=-1.0), "eta"),
    ("neural_ucb", dict(lam=0.0), "lam"), ("neural_ts", dict(nu=-1.0), "nu"),
    ("rbmle_ga", dict(likelihood="poisson"), "likelihood"),
    ("rbmle_pc", dict(precision="full"), "precision"),
    ("rbmle_ga", dict(width=31), "width"), ("neural_ucb", dict(depth=1), "depth"),
    ("neural_ts", dict(train_steps=0), "train_steps"), ("rbmle_pc", dict(batch_size=0), "batch_size"),
    ("rbmle_ga", dict(optimizer="lbfgs"), "optimizer"), ("rbmle_pc", dict(n=-0.5), "n"),
    ("rbmle_ga", dict(arm_batch=0), "arm_batch"),
    ("neural_ucbb", dict(), "agent"),
])
def test_bad_agent_settings_raise(name, kw, field):
  with pytest.raises(ValueError, match=field):
    neural.get(name, **kw)


def test_simulate_and_sweep_validate_before_compiling():
  with pytest.raises(ValueError, match="env"):
    neural.simulate("mnist", neural.neural_ucb(), jax.random.key(0), 10)
  with pytest.raises(ValueError, match="agent"):
    neural.simulate(ENV, lambda *a: None, jax.random.key(0), 10)
  with pytest.raises(ValueError, match="steps"):
    neural.simulate(ENV, neural.neural_ucb(), jax.random.key(0), 0)
  with pytest.raises(ValueError, match="eta"):
    neural.sweep(lambda eta: (ENV, neural.rbmle_ga(eta=eta)), {"eta": [0.1, -0.1]}, seeds=1, steps=5)


@pytest.mark.parametrize("name", ["neural_ucb", "neural_ts"])
def test_reference_form_is_the_public_codes_sigma(name):
  # The public NeuralTS/NeuralUCB code (diagonal U): σ_a = √(Σ_i λ ν g_{a,i}² / U_i) with
  # U = λ + Σ_τ g_τ² over the played arms' selection-time gradients, no 1/m; UCB adds σ_a, TS
  # draws N(f_a, σ_a²). Two rounds, computed by hand from the agent's own f and g.
  nu, lam = 0.3, 0.05
  make = getattr(neural, name)
  agent = make(nu=nu, lam=lam, form="reference", train_steps=1)
  state = agent.init(jax.random.key(0), ENV.spec, 8)
  U = lam * np.ones(network.num_params(state.theta0))
  for k in range(2):
    rnd = _round(jax.random.key(30 + k))
    f, g = network.arm_grads(state.theta, rnd.obs.x, rnd.obs.block)
    G = _dense(state.theta0, g, rnd.obs.block)
    sigma = np.sqrt((lam * nu * G ** 2 / U).sum(1))
    key = jax.random.key(40 + k)
    if name == "neural_ucb":
      want = np.asarray(f) + sigma
    else:   # act draws with the first half of its key
      k_index = jax.random.split(key)[0]
      want = np.asarray(f) + sigma * np.asarray(jax.random.normal(k_index, f.shape))
    state, info = play(ENV, agent, key, state, rnd)
    assert int(info.arm) == int(np.argmax(want)), k
    U = U + G[int(info.arm)] ** 2
    np.testing.assert_allclose(np.asarray(jax.flatten_util.ravel_pytree(state.z)[0]), U,
                               rtol=2e-3, atol=1e-6)
  with pytest.raises(ValueError, match=r"form='ucb' is not one of \['paper', 'reference'\]"):
    make(form="ucb")


# BootstrappedNN on the torch network: f(θ_0) ≠ 0, so its greedy first arms are not the exact
# ties of the paper network's f(θ_0) = 0, which here play arm 0 with reward 0 and never train
NETWORK_AGENTS = {"rbmle_ga": {}, "rbmle_pc": {}, "neural_ucb": {"batch_size": 6}, "neural_ts": {},
                  "deep_fpl": {}, "bootstrapped_nn": {"num_networks": 2, "network": "torch"}}


def _rounds(name, steps=8, **kw):
  """Arms played and final θ of `steps` rounds on a disjoint 3-arm problem."""
  env = neural.classification(*toy_data())
  agent = neural.get(name, width=16, train_steps=3, **NETWORK_AGENTS[name], **kw)
  step = jit_play(env, agent)
  state = agent.init(jax.random.key(0), env.spec, steps)
  arms = []
  for k in jax.random.split(jax.random.key(1), steps):
    state, played = step(k, state, observe(env, k))
    arms.append(int(played.arm))
  return arms, jax.tree.leaves(state.theta)


@pytest.mark.parametrize("name", list(NETWORK_AGENTS))
def test_products_options_keep_every_agent_within_their_rounding(name):
  """"dense" plays as "blocks" with θ equal to float32 rounding; "bf16" changes θ but stays
  finite and near; the default is "blocks"/"float32" exactly."""
  arms, theta = _rounds(name)
  if name == "neural_ucb":
    explicit = _rounds(name, first_layer="blocks", matmul_precision="float32")
    assert explicit[0] == arms
    for a, b in zip(explicit[1], theta):
      np.testing.assert_array_equal(a, b)
  dense_arms, dense = _rounds(name, first_layer="dense")
  assert dense_arms == arms
  for a, b in zip(dense, theta):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4 * np.abs(b).max())
  _, bf16 = _rounds(name, matmul_precision="bf16")
  assert all(np.isfinite(a).all() for a in bf16)
  assert any(not np.array_equal(a, b) for a, b in zip(bf16, theta))
