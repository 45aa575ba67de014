"""rbx's matched learners beside wsolow/online-ns-dpo's `synthetic/` (commit 2bb2f62), on its
exp1 configuration: stationary (`configs/exp1_notv`) and its time-varying default
(`configs/exp1_tv`, the `faury` rotation); and the speed side by side.

    git -C <mirror> archive HEAD synthetic | tar -x -C /tmp/nsdpo
    PYTHONPATH=. python -m benchmarks.reference.online_nsdpo --peer /tmp/nsdpo/synthetic
    (or RBX_NSDPO_PEER=/tmp/nsdpo/synthetic; without it only rbx's side runs, and it says so)

*The instance* (its `default.yaml`): a fresh context s ~ U[0, 1]^4 every round, A = 16 answers,
φ(s, a) = ((a + 1) cos πs, sin πs/(a + 1)) ∈ R^8 (`rbx.rlhf.generated.cos_sin`), β = 1 (its
`reg_coef`), π_ref uniform (its reference agent's θ = 0; rbx: deviation = 1), rewards as given
(rbx: reward_scale = "none"); θ* = (v₁·1₄, v₂·1₄) stationary, or θ*_t rotating from
(1, 0, 1, 0, …)/2 to (0, 1, 0, 1, …)/2 over its steps ⌊S/3⌋ .. ⌊2S/3⌋ (S = T/20 steps of 20
rounds). Its code holds the angle π after the rotation (θ*_t = −θ*₀, `rbx.rlhf.drift`'s
docstring); both sides here hold θ*₁ there (the peer's own `rparams_end`, fed to its loop).

*The learners, matched* (`LEARNERS`): uniform random pairs; a logistic fit of r = θᵀφ (its
`sigmoidloss`, ridge 0.01, ↔ the linear class on `ROW`, the exact constrained MLE), a DPO fit of
the log-linear policy (its `dpo` ↔ the practical class on `ROW`, policy = "loglinear"), NS-DPO
(γ) and SW-DPO (w) (the practical agent's `discount`, `window`). The peer re-fits from a fresh
θ ~ U[0, 1]^8 each round (1,000 AdaGrad-norm steps on all the data, then ‖θ‖ ≤ 1); rbx takes
20 Adam steps a round from the last θ (practical) or solves the MLE (linear). Differences
that stay, by design of the match:
  * pairs: the peer draws two *distinct* answers; `ROW` (a1, a2 ~ π_ref, no bonus; the
    scheme table's row for the build only, `agent`) draws them independently, so 1/A of its
    pairs are a tie, whose z = 0 carries no information;
  * NS-DPO: the peer weighs a row of step i by γ^{2(S−1−i)} (its `update_step` applies
    `gamma2s` twice) and every row of a step alike, so its per-round discount is γ^{2/20}; rbx
    gets γ_round = γ^{2/20};
  * SW-DPO: the peer's window is counted from the *horizon* (`apply_window`:
    S − i ≤ w), not from the current step: until step S − w it fits no data (its θ stays at
    the random start) and from then on keeps every row since S − w. rbx's window is the
    current one, 20·w rounds (`--window w`, default its 33). The two windows hold the same rows
    at the last step only, so the *final* learners are comparable (at T = 200, w = 3: steps
    7–9 on both sides); the sums over rounds are not expected to agree.
  * logistic: no bonus, so F = ℓ is concave on the convex box K, any local maximum is the
    global one, and one (warm) start is the search (`solver` starts = 1, not the class's 4).
*Labels.* As shipped the peer draws each label from the learner's own estimate
(`get_preference(config, feature_func, agent, ...)`), never from θ*; `--labels truth` (the
default) feeds its loop the θ* agent instead (both sides then label with θ*_t), and
`--labels learner` runs it as shipped.

*The metrics* (NumPy, from the equations, on one evaluation pool: rbx's, m = 1,000 contexts):
the peer's expected regret (its `calc_expected_regret`, "loglinear"):
E_s[Σ_a π*(a|s) r*(s, a) − Σ_a π_θ(a|s) r*(s, a)] with π_θ = softmax(θᵀφ), π* = π_{θ*}; and
rbx's (2.6), E_s[J(π*) − J(π_θ)] with J(π) = E_π r* − β KL(π‖π_ref) (= β KL(π_θ‖π*) here). For
each, the final learner's value and the sum over rounds of the deployed learner's (dynamic:
against θ*_t), rbx − peer with its Welch 95% interval ("agrees" when it holds 0). The peer's
own online metric (`calc_pseudo_regret`: the winner's regret every fifth round) does not
depend on the learner under random pairs, so it checks nothing here.

*The speed.* The peer's loop as its `run_linear_bandit` runs it (a fresh agent, `train`,
`select_action_pair`, `get_preference`, `apply_preference`, the data grown; without its
logging), its seeds 2021.. in turn, beside rbx's `rbx.simulate` of the same seeds (rbx's first
seed's wall time holds the compile, its run time is the later seeds' mean) and beside
`rbx.sweep` of them, the way rbx runs seeds (one program, vmapped and sharded over the CPU
devices; its run seconds over the seeds).
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import platform
import sys
import time
import types
from pathlib import Path

import numpy as np

from rbx.core import stats


PEER_ENV = "RBX_NSDPO_PEER"
SEED_START = 2021                    # the peer's seed_start; its num_seeds is 5
ROUNDS_PER_STEP = 20                 # its train_per_step
ACTIONS, CONTEXT_DIM, BETA, POOL = 16, 4, 1.0, 1000
SCHEME = "uniform_pairs"
WINDOW = 33                          # its window_size, in steps of ROUNDS_PER_STEP rounds
LEARNERS = {
    # name: (the peer's config file, rbx agent, its options; SW-DPO's window: `--window`)
    "logistic": ("sigmoid_g1.0", "linear", {}),
    "dpo": ("dpo_g1.0", "practical", {}),
    "nsdpo γ=0.9": ("nsdpo_g0.9", "practical", {"discount": 0.9 ** (2 / ROUNDS_PER_STEP)}),
    "swdpo": ("swdpo_w33", "practical", {}),
}
SETTINGS = {"stationary": "exp1_notv", "time-varying": "exp1_tv"}
LABELS = {"truth": " (θ*_t, fed to its loop)", "learner": " (its own estimate, as shipped)"}


# ---------------------------------------------------------------- the truth and the metrics

def theta_stationary(v1: float = 0.018215, v2: float = 0.15031, k: int = CONTEXT_DIM):
  """The peer's `set_reward_params` at its exp1 values: (v₁·1_k, v₂·1_k), (2k,)."""
  return np.repeat(np.array([v1, v2]), k)


def rotation_ends(k: int = CONTEXT_DIM):
  """The faury rotation's θ*₀ = (1, 0, 1, 0, …)/√k and θ*₁ = (0, 1, 0, 1, …)/√k, (2k,) each."""
  return np.tile([1.0, 0.0], k) / np.sqrt(k), np.tile([0.0, 1.0], k) / np.sqrt(k)


def rotation_rounds(steps: int) -> tuple[int, int]:
  """rbx's rounds (1-based) t₀, t₁ of the peer's rotation over its steps ⌊S/3⌋ .. ⌊2S/3⌋."""
  s = steps // ROUNDS_PER_STEP
  return (s // 3) * ROUNDS_PER_STEP + 1, (2 * s // 3) * ROUNDS_PER_STEP + 1


def truth_at_rounds(setting: str, steps: int) -> np.ndarray:
  """θ*_t at rounds t = 1..T (T, d): held, or rotated as `rbx.rlhf.drift`'s `rotation`."""
  if setting == "stationary":
    return np.tile(theta_stationary(), (steps, 1))
  (u, v), (t0, t1) = rotation_ends(), rotation_rounds(steps)
  lam = np.clip((np.arange(1, steps + 1) - t0) / (t1 - t0), 0.0, 1.0)[:, None]
  return np.cos(lam * np.pi / 2) * u + np.sin(lam * np.pi / 2) * v


def cos_sin(s: np.ndarray, num_actions: int = ACTIONS) -> np.ndarray:
  """The peer's φ in NumPy: s (..., k) -> (..., A, 2k)."""
  a = np.arange(1, num_actions + 1, dtype=float)[:, None]
  s = np.asarray(s, float)[..., None, :]
  return np.concatenate([a * np.cos(np.pi * s), np.sin(np.pi * s) / a], axis=-1)


def _softmax(z):
  z = z - z.max(-1, keepdims=True)
  e = np.exp(z)
  return e / e.sum(-1, keepdims=True)


def metrics(theta: np.ndarray, theta_star: np.ndarray, features: np.ndarray,
            beta: float = BETA) -> tuple[np.ndarray, np.ndarray]:
  """(the peer's expected regret, rbx's (2.6)) of π_θ against θ*, over the pool's features
  (m, A, d); θ and θ* (..., d) alike, π_ref uniform. Each (...,)."""
  r = np.einsum("mad,...d->...ma", features, theta_star)
  pi = _softmax(np.einsum("mad,...d->...ma", features, theta) / beta)
  pi_star, pi_opt = _softmax(r), _softmax(r / beta)
  expected = ((pi_star - pi) * r).sum(-1).mean(-1)
  log_a = np.log(ACTIONS)
  j = lambda p: (p * r).sum(-1) - beta * (p * (np.log(np.maximum(p, 1e-300)) + log_a)).sum(-1)
  return expected, (j(pi_opt) - j(pi)).mean(-1)


def summary(thetas: np.ndarray, truth: np.ndarray, features: np.ndarray) -> dict:
  """The four numbers of one run: thetas (T, d) the deployed learners, truth (T, d) θ*_t."""
  expected, regret = metrics(thetas, truth, features)
  return {"final expected regret": expected[-1], "Σ_t expected regret": expected.sum(),
          "final (2.6)": regret[-1], "Σ_t (2.6)": regret.sum()}


# ---------------------------------------------------------------- rbx's side

def environment(setting: str, steps: int, pool_seed: int = 0):
  """rbx's generated-contexts environment of the setting (module docstring)."""
  import jax
  from rbx import rlhf
  from rbx.rlhf import generated
  if setting == "stationary":
    theta = theta_stationary()
  else:
    (u, v), (t0, t1) = rotation_ends(), rotation_rounds(steps)
    theta = rlhf.drift.drift("rotation", u, v, t0, t1)
  return rlhf.generated_contextual(
      jax.random.key(pool_seed), generated.uniform(CONTEXT_DIM), generated.cos_sin(ACTIONS),
      theta, BETA, pool_size=POOL, deviation=1.0, reward_scale="none")


ROW = ("reference", "reference", "reference")
"""The scheme row of `SCHEME`: a1, a2 ~ π_ref, no bonus — uniform random pairs where π_ref is
uniform."""


def agent(learner: str, window: int = WINDOW):
  """rbx's matched agent: the learner's class (`rbx.rlhf.learners.linear` / `practical`, its
  `make`) on the row `ROW`, with the learner's options. The row is in the scheme table only
  while the agent is built (it reads its row then, and carries it as data), so the registry and
  its documented agents stay as they are."""
  from rbx.rlhf import schemes
  from rbx.rlhf.learners import linear, practical
  from rbx.rlhf.linear import LINEAR_SOLVER
  _, cls, options = LEARNERS[learner]
  if learner == "swdpo":
    options = {"window": window * ROUNDS_PER_STEP}
  schemes.SCHEMES[SCHEME] = schemes.Scheme(*ROW, bonus=False, doc="uniform random pairs")
  try:
    if cls == "linear":
      return linear.make(SCHEME, solver=LINEAR_SOLVER._replace(starts=1), **options)
    return practical.make(SCHEME, policy="loglinear", **options)
  finally:
    del schemes.SCHEMES[SCHEME]


def pool_features(env) -> np.ndarray:
  """The evaluation pool's φ (m, A, d), both sides' metrics read."""
  inner = getattr(env, "env", env)
  return np.asarray(inner.pool.features, float)


def run_rbx(learner: str, setting: str, steps: int, seeds,
            window: int = WINDOW) -> tuple[list, dict]:
  """[summary per seed], {"compile+first": s, "run": s per seed (the later seeds' mean),
  "recorded": rbx's own R(T) per seed}."""
  import jax
  from rbx import rlhf
  env, ag = environment(setting, steps), agent(learner, window)
  features, truth = pool_features(env), truth_at_rounds(setting, steps)
  out, walls, recorded = [], [], []
  for seed in seeds:
    start = time.perf_counter()
    tr = rlhf.simulate(env, ag, jax.random.key(seed), steps)
    thetas = np.asarray(jax.block_until_ready(tr.action.log_pi.theta), float)
    walls.append(time.perf_counter() - start)
    recorded.append(float(np.asarray(tr.regret, float).sum()))
    out.append(summary(thetas, truth, features))
  return out, {"compile+first": walls[0], "run": float(np.mean(walls[1:] or walls)),
               "recorded": recorded}


def sweep_seconds(learner: str, setting: str, steps: int, seeds, window: int = WINDOW) -> float:
  """Run seconds per seed of rbx's matched learner over `seeds` as one `rbx.sweep` (vmapped
  and sharded over the CPU devices, the compile apart)."""
  from benchmarks import timing
  env, ag = environment(setting, steps), agent(learner, window)
  seeds = list(seeds)
  return timing.sweep(lambda: (env, ag), {}, seeds, steps)["run_seconds"] / len(seeds)


# ---------------------------------------------------------------- the peer's side

def peer_dir(given: str | None) -> Path | None:
  """The peer's `synthetic/` directory (--peer, else $RBX_NSDPO_PEER), or None."""
  path = given or os.environ.get(PEER_ENV)
  if not path:
    return None
  path = Path(path)
  path = path / "synthetic" if (path / "synthetic" / "algos").is_dir() else path
  return path if (path / "algos" / "dpo.py").is_file() else None


def read_config(path: Path) -> types.SimpleNamespace:
  """The peer's flat YAML (one level of nesting), values as OmegaConf reads them ("None" is a
  string, so `gamma2: None` leaves NS-DPO off)."""
  root: dict = {}
  current = root
  for line in path.read_text().splitlines():
    text = line.split("#")[0].rstrip()
    if not text.strip():
      continue
    key, _, value = text.strip().partition(":")
    if not value.strip():
      current = root[key] = {}
    else:
      (current if line.startswith(" ") else root)[key] = _value(value.strip())
  return types.SimpleNamespace(**{k: types.SimpleNamespace(**v) if isinstance(v, dict) else v
                                  for k, v in root.items()})


def _value(v: str):
  if v in ("True", "False", "true", "false"):
    return v.lower() == "true"
  for cast in (int, float):
    try:
      return cast(v)
    except ValueError:
      pass
  return v


def import_peer(path: Path) -> dict:
  """The peer's modules by name, from `path` (its `synthetic/`). Its `envs.linear_bandit`
  imports wandb, pandas and omegaconf for logging only: empty modules stand in for those that
  are not installed (nothing of theirs is called here)."""
  for name, attrs in (("wandb", {}), ("pandas", {}), ("omegaconf", {"OmegaConf": None})):
    try:
      __import__(name)
    except ImportError:
      sys.modules[name] = types.ModuleType(name)
      for k, v in attrs.items():
        setattr(sys.modules[name], k, v)
  if str(path) not in sys.path:
    sys.path.insert(0, str(path))
  import algos.action_selection as action_selection
  import algos.dpo as dpo
  import algos.sigmoidloss as sigmoidloss
  import envs.linear_bandit as linear_bandit
  import envs.preference as preference
  import envs.reward as reward
  return dict(action_selection=action_selection, dpo=dpo, sigmoidloss=sigmoidloss,
              linear_bandit=linear_bandit, preference=preference, reward=reward)


def peer_config(path: Path, learner: str, setting: str, steps: int,
                window: int = WINDOW) -> types.SimpleNamespace:
  """Its `configs/<exp1_notv|exp1_tv>/<learner's file>.yaml` at T = `steps` rounds (and its
  SW-DPO window, `window_size`, in steps)."""
  cfg = read_config(path / "configs" / SETTINGS[setting] / f"{LEARNERS[learner][0]}.yaml")
  cfg.num_steps = steps // cfg.train_per_step
  cfg.window_size = window
  return cfg


def peer_truth(mods: dict, cfg) -> np.ndarray:
  """θ* per step (S, d): its `set_reward_params_tv`, held at θ*₁ after the rotation (module
  docstring)."""
  thetas = np.asarray(mods["reward"].set_reward_params_tv(cfg), float)
  if cfg.tv.use:
    thetas[2 * cfg.num_steps // 3:] = rotation_ends(cfg.state_dim)[1]
  return thetas


def run_peer(mods: dict, cfg, seed: int, labels: str = "truth") -> tuple[np.ndarray, float]:
  """Its online loop (`envs.linear_bandit.run_linear_bandit`'s), seeded as it seeds:
  (the learner's θ every round (T, d), the loop's seconds)."""
  np.random.seed(seed)
  env = mods["linear_bandit"].LinearBanditEnv(cfg)
  phi, d = env.get_feature_func(), 2 * cfg.state_dim
  po = mods["dpo"].DirectPreferenceOptimization if cfg.algo == "dpo" else \
      mods["sigmoidloss"].SigmoidLossOptimization
  sel, pref = mods["action_selection"], mods["preference"]
  opt_params = peer_truth(mods, cfg)
  ref = po(cfg, d, phi, param=None)
  data = np.concatenate((sel.init_pref_data(cfg, env), [[0]]), axis=1)
  thetas, seconds = [], 0.0
  for t in range(cfg.num_steps):
    opt = po(cfg, d, phi, param=opt_params[t], ref_agent=ref)
    for _ in range(cfg.train_per_step):
      start = time.perf_counter()
      learner = po(cfg, d, phi, param=None, ref_agent=ref)
      with contextlib.redirect_stdout(io.StringIO()):
        learner.train(train_data=data, true_param=opt_params[t])
      state = env.reset()
      pair = sel.select_action_pair(cfg, state, learner, None, cfg.action_selection)
      y = pref.get_preference(cfg, phi, opt if labels == "truth" else learner, state, pair)
      pair = pref.apply_preference(y, pair)
      data = np.concatenate([data, np.concatenate([state, pair, [[t]]], axis=1)], axis=0)
      seconds += time.perf_counter() - start
      thetas.append(learner.param.copy())
  return np.array(thetas), seconds


# ---------------------------------------------------------------- the comparison

def compare(ours: list, theirs: list, level: float = 0.95) -> list[dict]:
  """One row per metric: the two means, rbx − peer with its Welch interval, and "agrees"
  (the interval holds 0; no interval, NaN, with one seed on a side)."""
  rows = []
  for k in ours[0]:
    a = np.array([o[k] for o in ours])
    b = np.array([o[k] for o in theirs])
    diff, low, high = (stats.welch(a, b, level) if min(a.size, b.size) > 1
                       else (float(a.mean() - b.mean()), np.nan, np.nan))
    rows.append(dict(metric=k, rbx=float(a.mean()), peer=float(b.mean()), diff=diff, low=low,
                     high=high, agrees=bool(low <= 0.0 <= high)))
  return rows


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--peer", default=None, help=f"its synthetic/ (else ${PEER_ENV})")
  parser.add_argument("--steps", type=int, default=2000, help="T (the peer's 100 × 20)")
  parser.add_argument("--seeds", type=int, default=5, help="the peer's seeds 2021..")
  parser.add_argument("--rbx-seeds", type=int, default=5, help="rbx's seeds 2021..")
  parser.add_argument("--learners", nargs="*", default=list(LEARNERS), choices=list(LEARNERS))
  parser.add_argument("--settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS))
  parser.add_argument("--labels", default="truth", choices=("truth", "learner"))
  parser.add_argument("--window", type=int, default=WINDOW, help="SW-DPO's window in steps of "
                      f"{ROUNDS_PER_STEP} rounds, both sides (the peer's {WINDOW})")
  args = parser.parse_args()
  import jax
  from benchmarks import revision
  commit, start = revision.head(), time.time()
  path = peer_dir(args.peer)
  if path is None:
    print(f"online-ns-dpo is NOT available (--peer DIR or ${PEER_ENV}, its synthetic/ with "
          f"algos/dpo.py): rbx's side only, nothing compared.\n")
  mods = None if path is None else import_peer(path)
  print(f"T = {args.steps}, peer seeds {SEED_START}..{SEED_START + args.seeds - 1}, rbx seeds "
        f"{SEED_START}..{SEED_START + args.rbx_seeds - 1}; the peer's labels: {args.labels}"
        f"{LABELS[args.labels]}."
        f" rbx − peer, Welch 95%.\n")
  print("| setting | learner | metric | rbx | peer | rbx − peer [95%] | |")
  print("|---|---|---|---:|---:|---:|---|")
  speed = []
  for setting in args.settings:
    env_features = pool_features(environment(setting, args.steps))
    truth = truth_at_rounds(setting, args.steps)
    for learner in args.learners:
      label = f"swdpo w={args.window}" if learner == "swdpo" else learner
      ours, timing = run_rbx(learner, setting, args.steps,
                             range(SEED_START, SEED_START + args.rbx_seeds), args.window)
      if mods is None:
        for k in ours[0]:
          print(f"| {setting} | {label} | {k} | {np.mean([o[k] for o in ours]):.4f} | — | — | |")
        continue
      cfg = peer_config(path, learner, setting, args.steps, args.window)
      theirs, loop = [], []
      for seed in range(SEED_START, SEED_START + args.seeds):
        thetas, seconds = run_peer(mods, cfg, seed, args.labels)
        theirs.append(summary(thetas, truth, env_features))
        loop.append(seconds)
      for r in compare(ours, theirs):
        print(f"| {setting} | {label} | {r['metric']} | {r['rbx']:.4f} | {r['peer']:.4f} | "
              f"{r['diff']:+.4f} [{r['low']:+.4f}, {r['high']:+.4f}] | "
              f"{'one seed' if np.isnan(r['low']) else 'agrees' if r['agrees'] else 'differs'} |")
      timing["sweep"] = sweep_seconds(learner, setting, args.steps,
                                      range(SEED_START, SEED_START + args.rbx_seeds), args.window)
      speed.append((setting, label, float(np.mean(loop)), timing))
  if speed:
    print("\nSeconds per seed (T rounds): the peer's loop; rbx's `simulate`, one seed at a time "
          "(the later seeds' mean), and its first seed with the compile; rbx's seeds as one "
          "sweep (run seconds over the seeds).\n")
    print("| setting | learner | peer | rbx run | ratio | rbx first (compile) | ratio "
          "| rbx sweep | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for setting, learner, p, t in speed:
      print(f"| {setting} | {learner} | {p:.1f} | {t['run']:.3f} | {p / t['run']:.0f}× | "
            f"{t['compile+first']:.1f} | {p / t['compile+first']:.1f}× | {t['sweep']:.3f} | "
            f"{p / t['sweep']:.0f}× |")
  flags = " ".join(f"--{k.replace('_', '-')} "
                   f"{' '.join(map(repr, v)) if isinstance(v, list) else v}"
                   for k, v in vars(args).items() if k != "peer")
  print(f"\n{datetime.date.today()}, {platform.node()} ({jax.devices()[0].platform}), commit "
        f"{commit}, {time.time() - start:.0f} s: PYTHONPATH=. python -m "
        f"benchmarks.reference.online_nsdpo --peer {path or '(none)'} {flags}")


if __name__ == "__main__":
  main()
