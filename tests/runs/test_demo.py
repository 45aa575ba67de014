"""`rbx demo` (the README's first Quickstart command) at its defaults, run once for this file:
the table docs/reproducibility.md shows, the standard-deviation and quantile conventions, and the comparison
it exists to show (Algorithm 1 against the scheme that fails on each example, equal α)."""
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_default():
  """`rbx demo` at its default sizes, run once for this file: (printed lines, results)."""
  from rbx.runs import demo
  lines = []
  return lines, demo.run(echo=lines.append, progress=False)


def test_demo_prints_the_documented_table(demo_default):
  # `rbx demo` is demo.run at its defaults (test_cli checks the command's wiring)
  printed = "\n".join(demo_default[0])
  page = (ROOT / "docs" / "reproducibility.md").read_text()
  documented = re.findall(r"```\n(.*?)```", page, re.S)[0]
  rows = lambda text: {tuple(l.split()[:2]): l.split()[2:] for l in text.splitlines()
                       if l.split()[:1] in (["example1"], ["example2"])}
  got, want = rows(printed), rows(documented)
  assert got.keys() == want.keys()
  for key, fields in want.items():
    # "mean ± std median [q10, q90] stuck% (>= threshold)": the mean and median to 10% (float32
    # rounding can flip a near-tied seed), the stuck fraction to 3 points
    for column in (0, 3):
      assert float(got[key][column]) == pytest.approx(float(fields[column]), rel=0.1, abs=1.0), key
    assert abs(int(got[key][6].rstrip("%")) - int(fields[6].rstrip("%"))) <= 3, key


def test_demo_reports_the_std_with_ddof_1_and_the_quantiles_like_the_report(demo_default):
  lines, res = demo_default
  assert "ddof = 1" in lines[0]
  final = res["example2"].sel(agent="vpo").final()
  row = next(l for l in lines if l.startswith("example2   vpo"))
  q10, median, q90 = np.quantile(final, (0.1, 0.5, 0.9))
  assert f"± {final.std(ddof=1):.1f}" in row and f"{final.mean():.1f}" in row
  assert f"{median:.1f} [{q10:.1f}, {q90:.1f}]" in row
  assert res["example2"].summary()[1]["std"] == pytest.approx(np.std(final, ddof=1))


@pytest.mark.parametrize("example,failing", [("example1", "vpo"), ("example2", "xpo")])
def test_algorithm1_beats_the_failing_scheme_at_equal_alpha(demo_default, example, failing):
  res = demo_default[1][example]          # 64 seeds, T = 500, α = 3 (`rbx.runs.demo`)
  a1, other = (res.sel(agent=name).final() for name in ("algorithm1", failing))
  se = lambda f: f.std() / np.sqrt(f.size)
  assert a1.mean() + 2 * se(a1) < other.mean() - 2 * se(other), (a1.mean(), other.mean())
