"""Training throughput of ``probmut train`` against the one-process-per-instance loop.

Trains the same healthy digits_cnn instances three ways, in one run, on this machine:

* ``naive``: a fresh Python process per instance (as DeepCrime's scripts run), each
  importing TensorFlow and loading the data again: ``probmut train`` is called with
  ``--instances 1, 2, ..., N`` into one directory, so each call trains one instance;
* ``jobs 1``: one ``probmut train --instances N`` process;
* ``jobs 2``: the same with two worker processes.

Wall time includes process start-up, as a user sees it. All three write the same
``healthy.csv`` (checked). Run from the repository root::

    python scripts/bench_train.py --instances 6
    python scripts/bench_train.py --instances 6 --json
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

REPO = Path(__file__).resolve().parents[1]


def _train(out: Path, instances: int, jobs: int, epochs: int | None) -> None:
    command = [sys.executable, "-m", "probmut", "train", "--dataset", "digits",
               "--model", "digits_cnn", "--instances", str(instances), "--jobs", str(jobs),
               "--out", str(out), "--no-progress"]
    if epochs is not None:
        command += ["--epochs", str(epochs)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True)


def bench(instances: int, epochs: int | None) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        modes = [("naive (process per instance)", "naive", 1), ("probmut --jobs 1", "jobs1", 1),
                 ("probmut --jobs 2", "jobs2", 2)]
        for label, key, jobs in modes:
            out = Path(tmp) / key
            start = time.perf_counter()
            if key == "naive":
                for n in range(1, instances + 1):
                    _train(out, n, 1, epochs)
            else:
                _train(out, instances, jobs, epochs)
            seconds = time.perf_counter() - start
            rows.append({"mode": label, "jobs": jobs, "instances": instances,
                         "seconds": round(seconds, 2),
                         "instances_per_minute": round(instances / seconds * 60, 2),
                         "healthy_csv": (out / "healthy.csv").read_text()})
    naive_seconds, naive_file = rows[0]["seconds"], rows[0]["healthy_csv"]
    for row in rows:
        row["speedup_vs_naive"] = round(naive_seconds / row["seconds"], 2)
        row["same_file_as_naive"] = row.pop("healthy_csv") == naive_file
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--epochs", type=int, help="default: digits_cnn's own (15)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    rows = bench(args.instances, args.epochs)
    if args.json:
        print(json.dumps({"cpus": os.cpu_count(), "load_average": os.getloadavg(),
                          "epochs": args.epochs, "results": rows}, indent=2))
        return 0
    print(f"digits_cnn, {args.instances} healthy instances, epochs "
          f"{args.epochs or 'default (15)'}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f} at the end")
    print(f"{'mode':30} {'seconds':>8} {'inst/min':>9} {'speedup':>8}  same file")
    for row in rows:
        print(f"{row['mode']:30} {row['seconds']:8.1f} {row['instances_per_minute']:9.1f} "
              f"{row['speedup_vs_naive']:7.2f}x  {'yes' if row['same_file_as_naive'] else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
