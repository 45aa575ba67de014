"""The baselines LinRBMLE, LinUCB, DeepFPL and BootstrappedNN: sublinear regret far below random
play, the linear agents against explicit inverses and the disjoint block structure, the
bootstrap's data masks, traced ν in sweeps, and validation."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import jit_play, observe, play, toy_data
from rbx import neural

# T = 200 rounds, 2 seeds: second half / first half 0.010 (LinRBMLE, LinUCB), 0.10 (DeepFPL)
# and 0.16 (BootstrappedNN), and total / random play's ≤ 0.054: the bounds below (0.5, 0.1)
# hold with room (`pytest -s -k learns` prints them). Each round trains BootstrappedNN's ten
# networks on the whole buffer: the fixture's time grows as T².
T = 200
ENV = neural.synthetic("linear", dim=5, num_arms=4, noise=0.1, seed=0)
BASELINES = {"lin_rbmle": dict(nu=0.1), "lin_ucb": dict(nu=0.1), "deep_fpl": dict(nu=0.1),
             "bootstrapped_nn": dict()}


@pytest.fixture(scope="module")
def regret():
  return neural.sweep(lambda agent: (ENV, neural.get(agent, **BASELINES[agent])),
                      {"agent": list(BASELINES)}, seeds=2, steps=T)


@pytest.mark.slow
def test_every_baseline_learns_sublinearly_and_far_below_random_play(regret):
  assert regret.regret.shape == (len(BASELINES), 2, T)
  rounds = jax.vmap(lambda k: observe(ENV, k))(jax.random.split(jax.random.key(9), 20000))
  random_total = T * float(jnp.mean(rounds.mean.max(1) - rounds.mean.mean(1)))
  first = regret.regret[..., : T // 2].sum(-1).mean(-1)
  second = regret.regret[..., T // 2:].sum(-1).mean(-1)
  for name, f, s in zip(BASELINES, first, second):
    print(f"{name}: second/first {s / f:.3f}, total/random {(f + s) / random_total:.4f}")
    assert s < 0.5 * f, (name, f, s)
    assert f + s < 0.1 * random_total, (name, f + s, random_total)


@pytest.mark.parametrize("name", ["lin_rbmle", "lin_ucb"])
def test_linear_index_and_sherman_morrison_match_explicit_inverses(name):
  X, y = toy_data()
  env = neural.classification(X, y)
  nu, lam = 0.7, 0.5
  agent = neural.get(name, nu=nu, lam=lam)
  state = agent.init(jax.random.key(0), env.spec, 50)
  env_state = env.reset(jax.random.key(1))
  played = {b: [] for b in range(env.num_arms)}
  for t in range(1, 31):
    rnd = observe(env, None, env_state)
    env_state, obs = rnd.env_state, rnd.obs
    V = [_gram(played[b], lam, env.dim) for b in range(env.num_arms)]
    xr = [sum((r * x for x, r in played[b]), np.zeros(env.dim)) for b in range(env.num_arms)]
    index = []
    for x, b in zip(np.asarray(obs.x, np.float64), np.asarray(obs.block)):
      v_inv = np.linalg.inv(V[b])
      w2 = x @ v_inv @ x
      bonus = 0.5 * nu * np.sqrt(t) * w2 if name == "lin_rbmle" else nu * np.sqrt(w2)
      index.append(x @ v_inv @ xr[b] + bonus)
    state, info = play(env, agent, None, state, rnd)
    a = int(info.arm)
    assert a == int(np.argmax(index)), t
    assert float(info.reward) == float(rnd.mean[a])
    played[int(obs.block[a])].append((np.asarray(obs.x[a], np.float64), float(info.reward)))
  # V is block-diagonal over arms under the disjoint encoding: one (d', d') block per arm
  assert state.v_inv.shape == (env.num_arms, env.dim, env.dim)
  for b in range(env.num_arms):
    want = np.linalg.inv(_gram(played[b], lam, env.dim))
    np.testing.assert_allclose(np.asarray(state.v_inv[b]), want, rtol=1e-4, atol=1e-5)


def _gram(played, lam, d):
  """V_b = λI + Σ x xᵀ over the (x, r) played in block b."""
  return lam * np.eye(d) + sum((np.outer(x, x) for x, _ in played), np.zeros((d, d)))


def test_bootstrap_networks_see_about_p_of_the_data_and_differ():
  agent = neural.bootstrapped_nn(p=0.8, num_networks=4, train_steps=2)
  state = agent.init(jax.random.key(0), ENV.spec, 400)
  step = jit_play(ENV, agent)
  for t in range(1, 401):
    state, _ = step(jax.random.fold_in(jax.random.key(1), t), state,
                    observe(ENV, jax.random.fold_in(jax.random.key(2), t)))
  member, mask = np.asarray(state.member), np.asarray(state.buffer.mask)
  assert (member <= mask).all() and mask.sum() == 400
  frac = member.sum((1, 2)) / 400
  assert np.all(np.abs(frac - 0.8) < 0.08), frac
  assert not np.allclose(state.theta.w[0], state.theta.w[1])
  # the minibatch view: network i's rows are exactly its mask's rows
  S = mask.shape[1]
  for i in range(4):
    rows = np.asarray(state.slot[i, : int(state.count[i])])
    assert int(state.count[i]) == member[i].sum()
    assert np.all(member[i][rows // S, rows % S] == 1.0) and len(set(rows.tolist())) == len(rows)


@pytest.mark.slow
def test_nu_is_traced_in_a_sweep_and_matches_simulate():
  env = neural.classification(*toy_data())
  for name in ["lin_rbmle", "deep_fpl"]:
    build = lambda nu, name=name: (env, neural.get(name, nu=nu))
    res = neural.sweep(build, {"nu": [1.0, 1e-3]}, seeds=[3], steps=40)
    alone = neural.simulate(*build(1.0), jax.random.key(3), 40).regret
    np.testing.assert_allclose(res.sel(nu=1.0, seed=3).regret, alone, atol=1e-6)
    assert not np.allclose(res.regret[0], res.regret[1]), name


@pytest.mark.parametrize("name,kw,field", [
    ("lin_rbmle", dict(lam=0.0), "lam"), ("lin_rbmle", dict(n=-1.0), "n"),
    ("lin_ucb", dict(nu=-0.1), "nu"), ("deep_fpl", dict(eta=0.0), "eta"),
    ("deep_fpl", dict(width=3), "width"), ("bootstrapped_nn", dict(p=1.5), "p"),
    ("bootstrapped_nn", dict(num_networks=0), "num_networks"),
    ("bootstrapped_nn", dict(batch_size=0), "batch_size"),
])
def test_bad_baseline_settings_raise(name, kw, field):
  with pytest.raises(ValueError, match=field):
    neural.get(name, **kw)
