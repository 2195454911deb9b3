"""Time ``probmut coverage`` on 20 digits_cnn instances and the full digits test set.

The target (issue 14): IDC (m = 6, 8, 10, 12) and the baselines (NC, KMNC, TKNC) for 20
instances in under a minute on a 2-CPU machine. The instances are trained once with
``--save-models`` into ``--run`` (reused when it is already there; the coverage work
does not depend on how long they trained, so ``--epochs`` defaults to 2). Two times
are reported: the coverage computation itself (in this process, TensorFlow already
imported), and the whole ``probmut coverage`` command as a user runs it (start-up
included). Run from the repository root::

    python scripts/benchmarks/bench_coverage.py
    python scripts/benchmarks/bench_coverage.py --run runs/cov20 --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _probmut(*args) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-m", "probmut", *map(str, args)], cwd=REPO, env=env,
                   check=True, capture_output=True)


def bench(run: Path, instances: int, epochs: int) -> dict:
    run = run.resolve()  # the training runs in the repository's folder, not the caller's
    models = run / "models" / "healthy"
    if len(list(models.glob("*.keras"))) < instances:
        _probmut("train", "--dataset", "digits", "--architecture", "digits_cnn", "--instances",
                 instances, "--epochs", epochs, "--jobs", 2, "--save-models", "--out", run,
                 "--quiet")
    paths = sorted(models.glob("*.keras"))[:instances]

    from probmut.train.datasets import load_dataset
    from probmut.train.relevance import measure_coverage
    from probmut.train.tf_setup import configure_tensorflow

    configure_tensorflow(1)
    data = load_dataset("digits")
    measure_coverage(paths[:1], data, progress=False)  # warm-up: first-call tracing
    start = time.perf_counter()
    study = measure_coverage(paths, data, progress=False)
    computation = time.perf_counter() - start
    start = time.perf_counter()
    _probmut("coverage", run, "--no-plot", "--quiet", "--json")
    command = time.perf_counter() - start
    return {"instances": len(paths), "test_inputs": study.test_inputs,
            "neurons": list(study.neurons), "computation_seconds": round(computation, 2),
            "seconds_per_instance": round(computation / len(paths), 3),
            "command_seconds": round(command, 2), "target_seconds": 60,
            "cpus": os.cpu_count(), "load_average": os.getloadavg()[0],
            "idc_mean": round(float(study.idc(study.neurons[0]).mean()), 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="run directory to train into or reuse "
                                                 "(default: a temporary one)")
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        row = bench(args.run or Path(tmp) / "run", args.instances, args.epochs)
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    print(f"digits_cnn, {row['instances']} instances, {row['test_inputs']} test inputs, m = "
          f"{row['neurons']}, {row['cpus']} CPUs, load average {row['load_average']:.1f}")
    print(f"coverage computation  {row['computation_seconds']:7.1f} s  "
          f"({row['seconds_per_instance']:.2f} s per instance)")
    print(f"probmut coverage      {row['command_seconds']:7.1f} s  (whole command, start-up "
          f"included; target {row['target_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
