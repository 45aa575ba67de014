"""rbx's benchmarks, run from the repository root as modules: `python -m benchmarks.GROUP.NAME`
(benchmarks/README.md lists them). Groups: throughput, accuracy, profiles, reference (the
implementations rbx is compared with), reproduction (the reproduction report and the Tables 1–2
protocol); generated outputs go to results/."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The neural benchmarks' default data directory: shared/datasets beside the repository.
SHARED_DATASETS = ROOT.parent / "shared" / "datasets"
