"""The online-ns-dpo check (`benchmarks/reference/online_nsdpo.py`), tiny: its rbx side and its
comparison code against NumPy re-computations of the peer's definitions, written from their
equations (`synthetic/envs/linear_bandit.py`'s φ, `envs/reward.py`'s `faury_rparams` and
`set_reward_params`, `algos/agent.py`'s `calc_expected_regret`, `algos/dpo.py`'s DPO fit with
`Agent.train`'s projection), not from its code. Where the
peer's `synthetic/` is present ($RBX_NSDPO_PEER) its loop runs too; skipped otherwise."""
import numpy as np
import pytest

from benchmarks.reference import online_nsdpo as ref

STEPS = 40                                   # two of the peer's steps of 20 rounds


def _faury(num_steps: int, k: int = 4) -> np.ndarray:
  """The peer's faury θ* per step i (S, 2k): (1, 0, …)/√k before ⌊S/3⌋, the angle
  ((i − t₁)/(t₂ − t₁))·π/2 until ⌊2S/3⌋, then (0, 1, …)/√k (held, as the benchmark holds it)."""
  t1, t2 = num_steps // 3, 2 * num_steps // 3
  angle = np.clip((np.arange(num_steps) - t1) / (t2 - t1), 0, 1) * np.pi / 2
  return np.stack([np.tile([np.cos(a), np.sin(a)], k) for a in angle]) / np.sqrt(k)


def test_the_truth_and_features_are_the_peers():
  import jax
  from rbx.rlhf import generated
  s = np.random.default_rng(0).uniform(size=(5, 4))
  a = np.arange(16)[:, None, None]
  phi = np.concatenate([(a + 1) * np.cos(np.pi * s), np.sin(np.pi * s) / (a + 1)], -1)
  np.testing.assert_allclose(ref.cos_sin(s), phi.transpose(1, 0, 2), rtol=1e-12)
  np.testing.assert_allclose(np.asarray(jax.vmap(generated.cos_sin(16))(s)), phi.transpose(1, 0, 2),
                             rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(ref.theta_stationary(), [0.018215] * 4 + [0.15031] * 4)
  # the rotation at the first round of every peer step is the peer's θ* of that step
  steps = 2000
  truth = ref.truth_at_rounds("time-varying", steps)
  np.testing.assert_allclose(truth[::ref.ROUNDS_PER_STEP], _faury(steps // ref.ROUNDS_PER_STEP),
                             atol=1e-12)
  env = ref.environment("time-varying", steps)         # rbx's DriftingEnv reads the same θ*_t
  for t in (1, 661, 900, 1321, 2000):
    np.testing.assert_allclose(np.asarray(env.drift.at(t)), truth[t - 1], atol=1e-6)


def test_the_metrics_are_the_peers_expected_regret_and_rbxs_2_6():
  rng = np.random.default_rng(1)
  features = ref.cos_sin(rng.uniform(size=(7, 4)))
  theta, star = rng.normal(size=(3, 8)), rng.normal(size=8)
  expected, regret = ref.metrics(theta, star, features)
  for i in range(3):                                   # one context at a time, as the peer does
    e, kl = [], []
    for f in features:
      r = f @ star
      p_star, p = np.exp(r - r.max()), np.exp(f @ theta[i] - (f @ theta[i]).max())
      p_star, p = p_star / p_star.sum(), p / p.sum()
      e.append(p_star @ r - p @ r)
      kl.append(p @ (np.log(p) - np.log(p_star)))        # β KL(π_θ‖π*), β = 1, π_ref uniform
    np.testing.assert_allclose(expected[i], np.mean(e), rtol=1e-10)
    np.testing.assert_allclose(regret[i], np.mean(kl), rtol=1e-8)


@pytest.mark.parametrize("setting", list(ref.SETTINGS))
def test_rbx_side_records_what_the_comparison_computes(setting):
  ours, timing = ref.run_rbx("dpo", setting, STEPS, range(2))
  # rbx's own dynamic R(T) is the benchmark's Σ_t (2.6) of the deployed θ over the pool
  np.testing.assert_allclose([o["Σ_t (2.6)"] for o in ours], timing["recorded"], rtol=1e-4)
  assert all(o["Σ_t (2.6)"] > 0 for o in ours)             # β KL(π_θ‖π*) > 0 while θ ≠ θ*


def _peer_dpo(theta_star: np.ndarray, steps: int, seed: int) -> np.ndarray:
  """The peer's DPO learner (β = 1, π_ref uniform) with labels from θ*, from its equations:
  every round a fresh θ ~ U[0, 1]^8 takes 1,000 AdaGrad-norm steps θ ← θ − 0.1 g/√(Σ‖g‖²),
  g = −mean_i σ(−θᵀz_i) z_i over all the data, then θ ← θ/max(1, ‖θ‖); then a context
  s ~ U[0, 1]^4 and two distinct uniform answers, z = φ(s, winner) − φ(s, loser). The data
  start with one unlabelled random pair. Returns the deployed θ per round (T, 8)."""
  rng = np.random.default_rng(seed)

  def pair():
    phi = ref.cos_sin(rng.uniform(size=4))
    a = rng.permutation(16)[:2]
    return phi[a[1]] - phi[a[0]]

  zs, thetas = [pair()], []
  for _ in range(steps):
    z, theta, acc = np.array(zs), rng.uniform(size=8), 0.0
    for _ in range(1000):
      g = -((1 / (1 + np.exp(z @ theta)))[:, None] * z).mean(0)
      acc += g @ g
      theta = theta - (0.1 / np.sqrt(acc) if acc > 0 else 0.1) * g
    theta = theta / max(1.0, np.linalg.norm(theta))
    thetas.append(theta)
    d = pair()
    zs.append(d if rng.uniform() < 1 / (1 + np.exp(-d @ theta_star)) else -d)
  return np.array(thetas)


def test_rbx_dpo_lands_where_the_peers_dpo_lands_stationary():
  env = ref.environment("stationary", STEPS)
  features, truth = ref.pool_features(env), ref.truth_at_rounds("stationary", STEPS)
  ours, _ = ref.run_rbx("dpo", "stationary", STEPS, range(8))
  theirs = [ref.summary(_peer_dpo(ref.theta_stationary(), STEPS, s), truth, features)
            for s in range(8)]
  rows = {r["metric"]: r for r in ref.compare(ours, theirs, level=0.99)}
  assert rows["Σ_t (2.6)"]["agrees"], rows
  assert rows["final expected regret"]["agrees"], rows


def test_compare_reads_the_welch_interval():
  rng = np.random.default_rng(2)
  same = [{"m": x} for x in rng.normal(size=12)]
  other = [{"m": x} for x in rng.normal(size=12)]
  far = [{"m": x} for x in rng.normal(5.0, 1.0, size=12)]
  (row,) = ref.compare(same, other)
  assert row["low"] <= row["diff"] <= row["high"] and row["agrees"]
  (row,) = ref.compare(same, far)
  assert not row["agrees"] and row["high"] < 0


def test_the_peers_yaml_is_read_as_omegaconf_reads_it(tmp_path):
  p = tmp_path / "c.yaml"
  p.write_text("# c\nnum_steps: 100 # steps\ngamma2: None\ntv:\n  use: True\n  type: faury\n"
               "step_size: 0.1\nwandb:\n  use: false\n")
  cfg = ref.read_config(p)
  assert (cfg.num_steps, cfg.gamma2, cfg.tv.use, cfg.tv.type, cfg.step_size, cfg.wandb.use) == \
      (100, "None", True, "faury", 0.1, False)
  assert ref.peer_dir(str(tmp_path)) is None                # no algos/dpo.py: not the peer


def test_the_peers_loop_where_it_is_present():
  path = ref.peer_dir(None)
  if path is None:
    pytest.skip(f"online-ns-dpo's synthetic/ is not present (${ref.PEER_ENV})")
  mods = ref.import_peer(path)
  cfg = ref.peer_config(path, "dpo", "time-varying", 2000)
  np.testing.assert_allclose(ref.peer_truth(mods, cfg), _faury(cfg.num_steps), atol=1e-6)
  cfg = ref.peer_config(path, "dpo", "stationary", STEPS)
  thetas, seconds = ref.run_peer(mods, cfg, ref.SEED_START)
  assert thetas.shape == (STEPS, 8) and seconds > 0
  assert np.all(np.linalg.norm(thetas, axis=1) <= 1 + 1e-9)      # its projection onto ‖θ‖ ≤ 1
