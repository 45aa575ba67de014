"""The dueling baselines against duelpy 1.0.0 (`benchmarks/reference/duelpy_dueling.py`), tiny:
K = 4, T = 120, 16 seeds. Needs the `duelpy` extra (`pip install '.[duelpy]'`)."""
import pytest

ref = pytest.importorskip("benchmarks.reference.duelpy_dueling")
try:
  ref.import_duelpy()
except ImportError:
  pytest.skip("duelpy is not installed: pip install '.[duelpy]'", allow_module_level=True)


def test_they_land_where_duelpy_with_the_papers_text_lands():
  rows = ref.compare(list(ref.AGENTS), arms=4, steps=120, seeds=16, level=0.99)
  assert len(rows) == 2 * len(ref.AGENTS)
  for r in rows:
    assert r["paper_low"] <= 0.0 <= r["paper_high"], r     # the named differences explain it
  rucb = [r for r in rows if r["agent"] == "rucb"]
  # duelpy 1.0.0's RUCB records c as every duel's winner: the check sees that difference
  assert all(r["high"] < 0.0 for r in rucb), rucb
