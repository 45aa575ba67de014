"""rbx.core.stats against SciPy (the paired t-test at any level), Holm against a hand-worked
family, the detectable difference against the noncentral t's exact power, and `rbx report
--compare` on a tiny saved run."""
import numpy as np
import pytest
from scipy import stats as scipy_stats

import rbx
from rbx import cli
from rbx.core import stats
from rbx.core.results import Results


def test_t_quantiles_refuse_a_level_outside_the_unit_interval():
  assert stats.t_quantile(0.975, 0) != stats.t_quantile(0.975, 0)   # NaN for df ≤ 0
  with pytest.raises(ValueError, match="q must be in"):
    stats.t_quantile(1.0, 3)


def test_welch_is_scipys_unequal_variance_interval_at_any_level():
  rng = np.random.default_rng(0)
  a, b = rng.normal(50, 6, 8), rng.normal(48, 2, 6)
  for level in (0.9, 0.95, 0.99):
    diff, low, high = stats.welch(a, b, level)
    ci = scipy_stats.ttest_ind(a, b, equal_var=False).confidence_interval(level)
    np.testing.assert_allclose([diff, low, high], [a.mean() - b.mean(), ci.low, ci.high])
  with pytest.raises(ValueError, match="at least 2 values each"):
    stats.welch(a, b[:1])


def test_paired_difference_is_scipys_paired_t_test_at_any_level():
  rng = np.random.default_rng(0)
  b = rng.normal(10.0, 3.0, 12)
  a = b - 1.0 + rng.normal(0.0, 1.5, 12)
  want = scipy_stats.ttest_rel(a, b)
  for level in (0.5, 0.9, 0.95, 0.999):
    c = stats.paired(a, b, level)
    lo, hi = want.confidence_interval(level)
    assert c.mean == pytest.approx(np.mean(a - b)) and c.n == 12
    assert (c.low, c.high) == (pytest.approx(lo, rel=1e-9), pytest.approx(hi, rel=1e-9))
    assert c.p == pytest.approx(want.pvalue, rel=1e-9)
  same = np.arange(12.0)                                             # sd = 0
  assert stats.paired(same + 2.0, same).p == 0.0 and stats.paired(same, same).p == 1.0


@pytest.mark.parametrize("a, b, level, field", [
    (np.ones(5), np.ones(4), 0.95, "shapes"),           # not over the same seeds
    (np.ones(1), np.ones(1), 0.95, "at least 2 seeds"),
    (np.r_[1.0, np.nan, 2.0], np.ones(3), 0.95, "at least 2 seeds"),
    (np.ones(5), np.ones(5), 1.0, "level"), (np.ones(5), np.ones(5), 0.0, "level")])
def test_paired_refuses_bad_input_naming_it(a, b, level, field):
  with pytest.raises(ValueError, match=field):
    stats.paired(a, b, level)


def test_holm_adjusts_a_hand_worked_family():
  # sorted 0.005, 0.01, 0.03, 0.04: × 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max
  p = [0.01, 0.04, 0.03, 0.005]
  np.testing.assert_allclose(stats.holm_adjust(p), [0.03, 0.06, 0.06, 0.02])
  np.testing.assert_allclose(stats.holm_adjust([0.2, 0.6]), [0.4, 0.6])
  np.testing.assert_allclose(stats.holm_adjust([0.5, 0.9, 0.7]), [1.0, 1.0, 1.0])   # capped


def test_holm_family_separates_and_states_the_detectable_difference():
  rng = np.random.default_rng(0)
  base = rng.normal(10.0, 3.0, 64)
  lead = stats.paired(base - 1.0 + rng.normal(0, 0.1, 64), base)
  tied = stats.paired(base + rng.normal(0, 1.0, 64), base)
  out = stats.holm({"lead": lead, "tied": tied})
  assert out["lead"].separated and not out["tied"].separated
  assert out["lead"].p_holm == pytest.approx(min(1.0, 2 * lead.p))
  q = scipy_stats.t.ppf(1 - 0.05 / 4, 63) + scipy_stats.t.ppf(0.8, 63)
  assert out["tied"].detectable == pytest.approx(q * tied.sd / 8, rel=1e-9)


@pytest.mark.parametrize("n, m", [(10, 1), (64, 1), (64, 6), (256, 20)])
def test_detectable_difference_has_its_power(n, m):
  """At δ the two-sided test at α/m rejects with the noncentral t's probability ≈ 0.8."""
  alpha, sd = 0.05, 2.0
  delta = stats.detectable(sd, n, alpha, 0.8, m)
  crit = scipy_stats.t.ppf(1 - alpha / (2 * m), n - 1)
  shift = delta / (sd / np.sqrt(n))
  power = (scipy_stats.nct.sf(crit, n - 1, shift) + scipy_stats.nct.cdf(-crit, n - 1, shift))
  assert power == pytest.approx(0.8, abs=0.01)
  assert delta == pytest.approx((crit + scipy_stats.t.ppf(0.8, n - 1)) * sd / np.sqrt(n))


def saved_run(tmp_path, instances=False):
  """A saved run (agent × beta × 8 seeds, R(T) only): xpo 2 below greedy, vpo as greedy."""
  rng = np.random.default_rng(1)
  shape = (3, 2) + ((3,) if instances else ()) + (8, 1)
  base = rng.uniform(20, 30, shape[2:])
  final = np.stack([base - 2 + rng.normal(0, 0.3, shape[1:]), base + rng.normal(0, 0.3, shape[1:]),
                    np.broadcast_to(base, shape[1:])])
  axes = ("agent", "beta") + (("instance",) if instances else ()) + ("seed", "step")
  coords = {"agent": np.array(["xpo", "vpo", "greedy"]), "beta": np.array([0.5, 1.0]),
            "seed": np.arange(8), "step": np.array([100]), "instance": np.arange(3)}
  run = tmp_path / "run"
  rbx.save(Results(axes, {a: coords[a] for a in axes}, recorded=final), run)
  return run, final


def test_report_compare_prints_paired_differences_with_holm(tmp_path, capsys):
  run, final = saved_run(tmp_path)
  assert cli.main(["report", str(run), "--compare", "agent=xpo", "agent=vpo", "agent=greedy",
                   "--level", "0.9"]) == 0
  out = capsys.readouterr().out
  assert out.startswith("## Paired comparisons") and "Holm's adjusted p over these 6" in out
  assert out.strip().endswith("report.md") and "## Paired comparisons" in (run / "report.md").read_text()
  rows = [r for r in out.splitlines() if r.startswith("| agent=")]
  assert [r.split(" | ")[:2] for r in rows] == [
      [f"| agent={a} − agent={b}", beta] for a, b in
      (("xpo", "vpo"), ("xpo", "greedy"), ("vpo", "greedy")) for beta in ("0.5", "1")]
  c = stats.paired(final[0, 1, :, 0], final[2, 1, :, 0], 0.9)
  cells = rows[3].split(" | ")                               # xpo − greedy at β = 1
  assert cells[2] == "8" and cells[3].startswith("**") and float(cells[3].strip("*")) == (
      pytest.approx(c.mean, abs=0.01))
  assert "90% CI" in out and cells[4] == f"[{c.low:.3f}, {c.high:.3f}]"


def test_report_compare_over_instances_and_bad_labels(tmp_path, capsys):
  run, final = saved_run(tmp_path, instances=True)
  assert cli.main(["report", str(run), "--compare", "agent=xpo,beta=0.5", "agent=greedy,beta=0.5"]) == 0
  out = capsys.readouterr().out
  assert "over the instances" in out and "| agent=xpo,beta=0.5 − agent=greedy,beta=0.5 | 3 |" in out
  for args, message in [(["agent=xpo", "agent=dpo"], "agent='dpo' is not on the axis"),
                        (["agnt=xpo", "agent=greedy"], "'agnt' is not one of"),
                        (["xpo", "agent=greedy"], "field=value"),
                        (["agent=xpo"], "at least 2 labels"),
                        (["agent=xpo,beta=1", "agent=greedy"], "name the same fields"),
                        (["agent=xpo", "agent=greedy", "--level", "95"], "level must be in")]:
    assert cli.main(["report", str(run), "--out", str(tmp_path / "r"), "--compare", *args]) == cli.EXIT_ERROR
    assert message in capsys.readouterr().err
  assert not (tmp_path / "r").exists()                       # refused before writing


def test_report_splits_each_schemes_advantage_into_sampling_and_bonus(tmp_path, capsys):
  # greedy, xpo and vpo at α ∈ {0, 1, 3}, 10 seeds: xpo's sampling moves R(T) by −2, its bonus
  # by −0.5 α; vpo's sampling by 0, its bonus by +1 (noise 0.2); greedy ignores α
  rng = np.random.default_rng(1)
  alphas = np.array([0.0, 1.0, 3.0])
  base = rng.uniform(20, 30, (1, 1, 10, 1))
  shift = {"greedy": 0 * alphas, "xpo": -2 - 0.5 * alphas, "vpo": np.where(alphas > 0, 1.0, 0.0)}
  final = base + np.stack([shift[a] for a in ("greedy", "xpo", "vpo")])[:, :, None, None]
  final[1:] += rng.normal(0, 0.2, final[1:].shape)
  final[0] = base                                            # the control: the same at every α
  coords = {"agent": np.array(["greedy", "xpo", "vpo"]), "alpha": alphas,
            "seed": np.arange(10), "step": np.array([100])}
  run = tmp_path / "run"
  rbx.save(Results(("agent", "alpha", "seed", "step"), coords, recorded=final), run)
  (run / "config.toml").write_text('family = "rlhf"\nsteps = 100\n')
  assert cli.main(["report", str(run)]) == 0
  out = capsys.readouterr().out
  assert out.startswith("## Sampling and bonus") and "over these 10 distinct differences" in out
  rows = {tuple(r.split(" | ")[:2]): r.split(" | ")[3:] for r in out.splitlines()
          if r.startswith(("| xpo", "| vpo", "| greedy"))}
  assert set(rows) == {("| xpo", "1"), ("| xpo", "3"), ("| vpo", "1"), ("| vpo", "3")}
  x = final[..., 0]
  for (agent, alpha), cells in rows.items():
    a, k = ["greedy", "xpo", "vpo"].index(agent[2:]), int(alpha) // 2 + 1    # α = 1, 3 → 1, 2
    want = [stats.paired(x[a, k], x[0, k]), stats.paired(x[a, 0], x[0, k]),
            stats.paired(x[a, k], x[a, 0])]
    assert cells[0] == "10"
    for got, c in zip(cells[1:], want):
      mean, interval = got.rstrip(" |").split(" [")
      assert float(mean.strip("*")) == pytest.approx(c.mean, abs=1e-3)
      assert [float(v) for v in interval.rstrip("]").split(", ")] == pytest.approx(
          [c.low, c.high], abs=1e-3)
    total, sampling, bonus = (float(g.split(" [")[0].strip("*")) for g in cells[1:])
    assert total == pytest.approx(sampling + bonus, abs=2e-3)
  # xpo's sampling and bonus at α = 3 separated (bold); vpo's sampling is not
  assert rows["| xpo", "3"][2].startswith("**") and rows["| xpo", "3"][3].startswith("**")
  assert not rows["| vpo", "3"][2].startswith("**")
  # without α = 0 in the grid there is nothing to split: no section
  sub = tmp_path / "sub"
  rbx.save(Results(("agent", "alpha", "seed", "step"), {**coords, "alpha": alphas[1:]},
                   recorded=final[:, 1:]), sub)
  (sub / "config.toml").write_text('family = "rlhf"\nsteps = 100\n')
  assert cli.main(["report", str(sub)]) == 0
  assert "Sampling and bonus" not in capsys.readouterr().out


def test_report_tunes_alpha_on_some_seeds_and_reports_it_on_the_others(tmp_path, capsys):
  # xpo's α = 1 is best on seeds 0–4 and α = 3 on seeds 5–9: α = 1 is selected and reported
  # on seeds 5–9 only, where it is not the best
  rng = np.random.default_rng(2)
  final = rng.uniform(20, 30, (2, 3, 10, 1))              # (agent, alpha, seed, step)
  final[0] = final[0, :1]                                  # greedy ignores α
  final[1, 1, :5] -= 8
  final[1, 2, 5:] -= 8
  coords = {"agent": np.array(["greedy", "xpo"]), "alpha": np.array([0.0, 1.0, 3.0]),
            "seed": np.arange(10), "step": np.array([100])}
  run = tmp_path / "run"
  rbx.save(Results(("agent", "alpha", "seed", "step"), coords, recorded=final), run)
  (run / "config.toml").write_text('family = "rlhf"\nsteps = 100\n')
  assert cli.main(["report", str(run), "--tune-seeds", "5"]) == 0
  out = capsys.readouterr().out
  assert "## α tuned on held-out seeds" in out and "first 5 seeds" in out
  section = out.split("## α tuned on held-out seeds")[1]
  row = next(r for r in section.splitlines() if r.startswith("| xpo |")).split(" | ")
  held = final[1, 1, 5:, 0]
  c = stats.paired(held, final[0, 0, 5:, 0])
  assert row[1:3] == ["1", "5"] and float(row[3].split(" ± ")[0]) == pytest.approx(held.mean(), abs=0.01)
  assert row[4] == "greedy" and float(row[5].split(" [")[0].strip("*")) == pytest.approx(c.mean, abs=0.01)
  for args, message in [(["--tune-seeds", "9"], "at least 2 seeds on each side of the run's 10"),
                        (["--tune-seeds", "1"], "at least 2 seeds on each side")]:
    assert cli.main(["report", str(run), "--out", str(tmp_path / "r"), *args]) == cli.EXIT_ERROR
    assert message in capsys.readouterr().err
  beta = tmp_path / "beta"
  rbx.save(Results(("agent", "beta", "seed", "step"), {**coords, "beta": coords["alpha"]},
                   recorded=final), beta)
  assert cli.main(["report", str(beta), "--tune-seeds", "5"]) == cli.EXIT_ERROR
  assert "needs the fields agent and alpha" in capsys.readouterr().err
