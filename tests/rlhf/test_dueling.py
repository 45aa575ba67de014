"""The dueling baselines (`rbx.rlhf.learners.dueling`) and the dueling regrets recorded beside
(2.6) (`rbx.rlhf.dueling`): they find a clear Condorcet winner; one step of each against a
NumPy reference written from its paper; the metrics through Results and the store; bad input."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rbx import rlhf
from rbx.core import protocol
from rbx.core import sweep as sweep_lib
from rbx.core.record import Recorder
from rbx.rlhf import dueling
from rbx.rlhf.learners import dueling as agents
from rbx.runs import store

NAMES = ("rucb", "rmed1", "double_ts", "rcs")
R_STAR = [0.5, 2.5, 1.5, 0.0]          # Condorcet winner: answer 1; gaps 0.38, 0, 0.23, 0.42


@pytest.fixture(scope="module")
def swept():
  env = rlhf.make_env(R_STAR, [0.25] * 4, beta=0.5, r_max=3.0)
  return env, rlhf.sweep(lambda agent: (env, rlhf.get(agent)), {"agent": list(NAMES)}, seeds=6,
                         steps=300, progress=False)


def test_they_find_a_clear_condorcet_winner(swept):
  env, res = swept
  assert sorted(res.metric_names) == sorted(dueling.METRICS)
  weak, strong = (res.metric(m).regret for m in dueling.METRICS)     # (agent, seed, step)
  assert weak.shape == strong.shape == res.regret.shape == (4, 6, 300)
  assert (weak <= strong).all() and (weak >= 0).all() and (strong < 0.5).all()
  late = strong[..., -100:].mean(axis=(-2, -1))
  early = strong[..., :30].mean(axis=(-2, -1))
  assert (late < 0.06).all() and (late < early / 3).all(), dict(zip(NAMES, late))
  # the deployed point mass is the Condorcet winner: (2.6)'s term is the floor −β ln π*(a*)
  pi_star = jax.nn.softmax(jnp.log(env.pi_ref[0]) + env.r_star[0] / env.beta)
  floor = float(-env.beta * jnp.log(pi_star[1]))
  assert np.allclose(np.median(res.regret[..., -50:], axis=(-2, -1)), floor, rtol=1e-3)


def test_metrics_through_sel_store_and_frames(swept, tmp_path):
  _, res = swept
  one = res.sel(agent="rcs", seed=[1, 2])
  np.testing.assert_array_equal(one.metric("weak_regret").regret,
                                res.metric("weak_regret").regret[3, 1:3])
  back = store.load(store.save(res, tmp_path / "run"))
  for m in dueling.METRICS:
    np.testing.assert_array_equal(back.metric(m).regret, res.metric(m).regret)
  assert back.metric("regret").summary() == res.summary()
  assert "metrics beside the regret: strong_regret, weak_regret" in repr(res)
  df = one.to_dataframe()                                       # (seed, step) rows
  np.testing.assert_allclose(df["cumulative_weak_regret"],
                             one.metric("weak_regret").cumulative.reshape(-1))
  np.testing.assert_allclose(df["strong_regret"], one.metric("strong_regret").regret.reshape(-1))
  with pytest.raises(ValueError, match="metric='weak' is not one of"):
    res.metric("weak")


def test_dueling_regrets_are_the_gaps_at_the_observed_prompt():
  """Every agent's step scores them (env-side, rbx's own agents' Query included): min and max
  of σ(max r* − r*(a)) − 1/2 at the prompt x; with ties at the maximum the gap is 0 there."""
  env = rlhf.make_env([[0.0, 1.0, 1.0], [2.0, 0.5, 1.5]], [1 / 3] * 3, 0.5, 2.0)
  gap = lambda r: 1.0 / (1.0 + np.exp(-(max(r) - np.array(r)))) - 0.5
  for x, (a1, a2), r in ((0, (2, 0), [0.0, 1.0, 1.0]), (1, (1, 2), [2.0, 0.5, 1.5])):
    query = rlhf.Query(jnp.int32(a1), jnp.int32(a2), jnp.zeros((2, 3)))
    got = protocol.step_metrics(env, (), rlhf.Prompt(jnp.int32(x)), query)
    g = gap(r)[[a1, a2]]
    np.testing.assert_allclose([got["weak_regret"], got["strong_regret"]], [g.min(), g.max()],
                               rtol=1e-6)
  trap = rlhf.random_contextual(jax.random.key(0), 2, 3, 2, beta=0.5, r_max=2.0)
  metrics = protocol.step_metrics(trap, (), rlhf.Prompt(jnp.int32(1)), query)
  assert set(metrics) == set(dueling.METRICS)
  tokens = rlhf.sequences.random_sequences(jax.random.key(0), 2, 2, 2, 2, 0.5, 2.0)
  assert set(dueling.METRICS) <= set(protocol.metric_names(tokens))   # their own: test_tokens


def test_the_memory_estimate_counts_the_metrics_the_run_records(swept):
  """The estimate's records are the regret's and each metric's arrays the run kept, byte for
  byte, its sums one float64 per seed and grid point each (names known before anything
  traces: `protocol.metric_names`)."""
  env, res = swept
  build = lambda agent: (env, rlhf.get(agent))
  plan = sweep_lib.plan(build, {"agent": list(NAMES)}, 300, check=False)
  assert plan.metrics == protocol.metric_names(env) == dueling.METRICS
  need = sweep_lib.check_memory(plan, 6, sweep_lib.RunOptions(record="steps"))
  parts = dict((what.split(" (")[0], b) for what, b in need.host_parts)
  kept = [res.regret] + [res.metrics[m] for m in res.metric_names]
  assert parts["the records of the regret and 2 metric(s)"] == sum(a.nbytes for a in kept)
  assert parts["the sums so far and the seeds"] == (3 * 4 + 1) * 6 * 8
  alone = sweep_lib.check_memory(plan._replace(metrics=()), 6,
                                 sweep_lib.RunOptions(record="steps"))
  assert alone.host_parts[0][1] == res.regret.nbytes


def test_declared_metric_names_are_checked():
  class Env:
    pass
  with pytest.raises(ValueError, match="include 'regret'"):
    protocol.add_metrics(Env, lambda *a: {}, ("regret",))
  with pytest.raises(ValueError, match="names must be a sequence of names, got the string"):
    protocol.add_metrics(Env, lambda *a: {}, "weak")
  protocol.add_metrics(Env, lambda *a: {"weak": 0.0}, ("strong",))
  with pytest.raises(ValueError, match=r"returned \['weak'\], but add_metrics declared "
                     r"\['strong'\]"):
    protocol.step_metrics(Env(), (), None, None)


def test_recorder_keeps_metrics_in_its_checkpoint_state():
  rec = Recorder("log", 6, (1, 1, 2), log_points=3)
  values = np.arange(12, dtype=np.float32).reshape(1, 2, 6)
  rec.add(0, slice(0, 2), 1, values[..., :3], {"weak_regret": values[..., :3] / 2})
  again = Recorder("log", 6, (1, 1, 2), log_points=3)
  again.restore(rec.state())
  for r in (rec, again):
    r.add(0, slice(0, 2), 4, values[..., 3:], {"weak_regret": values[..., 3:] / 2})
  np.testing.assert_array_equal(again.metrics["weak_regret"], rec.metrics["weak_regret"])
  np.testing.assert_allclose(rec.metrics["weak_regret"][0, 0, :, -1], values.sum(-1)[0] / 2)


def test_the_beta_sampler_draws_the_beta_law():
  """`_beta` (Marsaglia–Tsang Gamma draws, later rounds' fresh proposals pooled over the
  waiting elements) against SciPy's Beta CDF at shapes where acceptance is lowest (1) and
  high, side by side in one call, so many elements wait after the first round."""
  from scipy import stats
  shapes = [(1.0, 1.0), (1.0, 30.0), (2.0, 2.0), (3.0, 7.0), (150.0, 40.0)]
  n = 4000
  a = jnp.repeat(jnp.array([p for p, _ in shapes]), n)
  b = jnp.repeat(jnp.array([q for _, q in shapes]), n)
  draws = np.asarray(jax.jit(agents._beta)(jax.random.key(7), a, b)).reshape(len(shapes), n)
  for (p, q), x in zip(shapes, draws):
    assert stats.kstest(x, stats.beta(p, q).cdf).pvalue > 1e-3, (p, q)


# ---- one step against NumPy references written from the papers -------------------------------

def _bounds(W, t, alpha):
  N = W + W.T
  with np.errstate(divide="ignore", invalid="ignore"):
    mean = np.where(N > 0, W / N, 0.5)
    radius = np.sqrt(alpha * np.log(t) / N)
  U, L = np.where(N > 0, mean + radius, 1.0), np.where(N > 0, mean - radius, 0.0)
  np.fill_diagonal(U, 0.5)
  np.fill_diagonal(L, 0.5)
  return U, L, mean


def _sample(rng, W):
  A = len(W)
  theta = np.full((A, A), 0.5)
  for i in range(A):
    for j in range(i + 1, A):
      theta[i, j] = rng.beta(W[i, j] + 1, W[j, i] + 1)
      theta[j, i] = 1 - theta[i, j]
  return theta


def _rucb(rng, W, t, B):
  U, _, _ = _bounds(W, t, 0.51)
  C = [i for i in range(len(W)) if (U[i] >= 0.5).all()]
  B = B if B in C else None
  if not C:
    c = rng.integers(len(W))
  elif len(C) == 1 or B is None:
    c = rng.choice(C)
  else:
    c = B if rng.random() < 0.5 else rng.choice([a for a in C if a != B])
  ties = np.flatnonzero(U[:, c] == U[:, c].max())
  return c, rng.choice(ties[ties != c] if len(ties) > 1 else ties)


def _double_ts(rng, W, t):
  U, L, _ = _bounds(W, t, 0.51)
  upper = (U > 0.5).sum(1)
  score = np.where(upper == upper.max(), (_sample(rng, W) > 0.5).sum(1), -1)
  a1 = rng.choice(np.flatnonzero(score == score.max()))
  theta = np.array([0.5 if i == a1 else rng.beta(W[i, a1] + 1, W[a1, i] + 1)
                    for i in range(len(W))])
  return a1, int(np.argmax(np.where(L[:, a1] <= 0.5, theta, -1)))


def _rcs(rng, W, t, counts):
  theta = _sample(rng, W)
  champions = [i for i in range(len(W)) if (np.delete(theta[i], i) > 0.5).all()]
  c = champions[0] if champions else rng.choice(np.flatnonzero(counts == counts.min()))
  U, _, _ = _bounds(W, t, 0.501)
  return c, rng.choice(np.flatnonzero(U[:, c] == U[:, c].max()))


def _rmed1(rng, W, order, remaining):
  _, _, mu = _bounds(W, 2, 1.0)
  N = W + W.T
  I = np.zeros(len(W))
  for i in range(len(W)):
    for j in range(len(W)):
      if j != i and mu[i, j] <= 0.5 and N[i, j] > 0:
        p = mu[i, j]
        kl = sum(q * np.log(2 * q) for q in (p, 1 - p) if q > 0)
        I[i] += N[i, j] * kl
  star = rng.choice(np.flatnonzero(np.isclose(I, I.min(), rtol=1e-5)))
  l = min(np.flatnonzero(remaining), key=lambda a: order[a])
  O = [j for j in range(len(W)) if j != l and mu[l, j] <= 0.5]
  if not O or star in O:
    return l, star
  row = np.where(np.arange(len(W)) == l, np.inf, mu[l])
  return l, rng.choice(np.flatnonzero(row == row.min()))


W = np.array([[0, 3, 1, 2], [1, 0, 4, 0], [2, 1, 0, 1], [3, 0, 2, 0]], np.float32)
CYCLE = np.array([[0, 90, 10, 80], [10, 0, 90, 80], [90, 10, 0, 80], [20, 20, 20, 0]],
                 np.float32)      # a cycle over 0, 1, 2: RUCB's C = ∅
CLEAR = np.array([[0, 80, 80, 80], [20, 0, 50, 50], [20, 50, 0, 50], [20, 50, 50, 0]],
                 np.float32)      # 0 confidently best: RUCB's c = d = 0
ORDER = np.array([2, 0, 3, 1])
REMAINING = {"W": np.array([True, False, True, True]), "CYCLE": np.array([True] * 4),
             "CLEAR": np.array([False, True, True, False])}
STEPS = {"W": 14, "CYCLE": 400, "CLEAR": 800}   # comparisons made so far (past RMED1's first 6)


def _cases(name):
  """(agent, [(wins, comparisons so far, the prompt's memory, NumPy's step)]) of `name` at the
  states above (RMED1 also at its initial phase's six steps)."""
  counts = np.array([2, 0, 1, 0])
  cases = []
  for wins in ("W", "CYCLE", "CLEAR"):
    Wn, s = globals()[wins], STEPS[wins]
    cases.append((Wn, s, *{
        "rucb": (jnp.array([1], jnp.int32), lambda rng, Wn=Wn, s=s: _rucb(rng, Wn, s + 1, 1)),
        "double_ts": ((), lambda rng, Wn=Wn, s=s: _double_ts(rng, Wn, s + 1)),
        "rcs": (jnp.asarray(counts)[None], lambda rng, Wn=Wn, s=s: _rcs(rng, Wn, s + 1, counts)),
        "rmed1": (agents.LoopSets(jnp.asarray(ORDER)[None], jnp.asarray(REMAINING[wins])[None],
                                  jnp.zeros((1, 4), bool)),
                  lambda rng, Wn=Wn, r=REMAINING[wins]: _rmed1(rng, Wn, ORDER, r)),
    }[name]))
  if name == "rmed1":                       # the initial phase: pair s of (0,1), (0,2), ...
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    cases += [(np.zeros((4, 4), np.float32), s, cases[0][2], lambda rng, p=p: p)
              for s, p in enumerate(pairs)]
  make = {"rucb": agents.rucb, "double_ts": agents.double_ts, "rcs": agents.rcs,
          "rmed1": agents.rmed1}[name]
  return make(), cases


@pytest.mark.parametrize("name", NAMES)
def test_one_step_draws_the_papers_pair(name):
  agent, cases = _cases(name)
  stack = lambda *xs: jnp.stack([jnp.asarray(x) for x in xs])
  state = agents.DuelingState(stack(*[c[0][None] for c in cases]),
                              stack(*[[c[1]] for c in cases]),
                              jax.tree.map(stack, *[c[2] for c in cases]))
  spec = rlhf.make_env([0.0, 1.0, 0.5, 0.2], [0.25] * 4, 0.5, 1.0).spec
  n = 2000
  step = lambda k, st: agent.act(k, st, rlhf.Prompt(jnp.int32(0)), spec)[1]
  acted = jax.jit(jax.vmap(jax.vmap(step, (0, None)), (None, 0)))(
      jax.random.split(jax.random.key(1), n), state)                    # (cases, n)
  rng = np.random.default_rng(0)
  for i, (Wn, _, _, reference) in enumerate(cases):
    ours, theirs = np.zeros((4, 4)), np.zeros((4, 4))
    np.add.at(ours, (np.asarray(acted.a1[i]), np.asarray(acted.a2[i])), 1.0 / n)
    for _ in range(n):
      theirs[reference(rng)] += 1.0 / n
    assert np.abs(ours - theirs).max() < 0.05, (i, ours.round(3), theirs.round(3))
    # the deployed policy: uniform over the empirical Copeland winners (RMED1: argmin I)
    pi = np.exp(np.asarray(acted.log_pi[i, 0, 0]))
    if name != "rmed1":
      score = ((Wn / np.maximum(Wn + Wn.T, 1)) > 0.5).sum(1)
      top = score == score.max()
      np.testing.assert_allclose(pi, top / top.sum(), atol=1e-6)
    assert pi.sum() == pytest.approx(1.0)


# ---- bad input -------------------------------------------------------------------------------

def test_bad_input_is_refused_before_compiling():
  tie = rlhf.make_env([1.0, 2.0, 2.0], [1 / 3] * 3, 0.5, 2.0)
  for name in NAMES:
    with pytest.raises(ValueError, match=r"no Condorcet winner at prompt 0: answers \[1, 2\]"):
      rlhf.sweep(lambda: (tie, rlhf.get(name)), {}, seeds=1, steps=2, progress=False)
  with pytest.raises(ValueError, match="exploratory_constant of rucb must be a number > 0.5"):
    rlhf.get("rucb", exploratory_constant=0.5)
  with pytest.raises(ValueError, match="divergence_tolerance must lie in"):
    rlhf.get("rmed1", divergence_tolerance=-1.0)
  tokens = rlhf.sequences.random_sequences(jax.random.key(0), 2, 2, 2, 2, 0.5, 2.0)
  with pytest.raises(ValueError, match="'double_ts' runs on the tabular and contextual"):
    protocol.check(tokens, rlhf.get("double_ts"))
