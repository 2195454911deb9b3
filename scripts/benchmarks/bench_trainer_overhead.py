"""probmut's own cost per instance around a user's training function: runs of a function
that trains nothing (it returns an accuracy and a per-input outcome at once), so that all
that is timed is probmut's (the spec, the call, the record, the files, the progress).

Each round trains a run of ``--instances`` healthy instances (``N``) and one of ``2N``
into fresh folders, the order alternating; the overhead per instance is the difference
of their wall times over ``N``, which leaves out what a run costs once (loading the
data, checking, starting workers, writing the manifest). Reported per backend: the
median over the rounds, with the least and the most, and what a run costs once. The
target (issue 53) is at most 50 ms per instance on the local backend.

    python scripts/benchmarks/bench_trainer_overhead.py --instances 100 --rounds 5 --ray
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
#: The local backend's target: probmut's own time per instance.
TARGET_MS = 50


def nothing(spec):
    """A training function that trains nothing: every test input right but the first."""
    correct = np.ones(len(spec.y_test), dtype=bool)
    correct[0] = False
    return {"accuracy": float(correct.mean()), "correct": correct}


def timed_run(out: Path, instances: int, execution) -> float:
    from probmut.train import train_populations
    from probmut.train.options import Instances

    start = time.perf_counter()
    train_populations(out, [], trainer="bench_trainer_overhead:nothing",
                      mode=Instances(count=instances), execution=execution)
    return time.perf_counter() - start


def measure(name: str, execution, instances: int, rounds: int, top: Path) -> dict:
    """Per instance (ms) and once (s), over ``rounds`` pairs of runs of N and 2N."""
    per_instance, once = [], []
    for index in range(rounds):
        sizes = (instances, 2 * instances) if index % 2 == 0 else (2 * instances, instances)
        seconds = {n: timed_run(top / f"{name}-{index}-{n}", n, execution) for n in sizes}
        marginal = (seconds[2 * instances] - seconds[instances]) / instances
        per_instance.append(1000 * marginal)
        once.append(seconds[instances] - instances * marginal)
    return {"backend": name, "instances": [instances, 2 * instances], "rounds": rounds,
            "per_instance_ms": per_instance,
            "median_ms": statistics.median(per_instance),
            "once_s": statistics.median(once)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=100,
                        help="N: runs of N and 2N instances (default 100)")
    parser.add_argument("--rounds", type=int, default=5, help="pairs of runs (default 5)")
    parser.add_argument("--jobs", type=int, default=0,
                        help="also with J local worker processes (default: not)")
    parser.add_argument("--ray", action="store_true", help="also with a local Ray")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    from probmut.train.options import ExecutionOptions

    sys.path.insert(0, str(HERE))  # the function's module, for this process
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE),
                                                os.environ.get("PYTHONPATH", "")])
    found = []
    with tempfile.TemporaryDirectory(prefix="bench-trainer-") as scratch:
        top = Path(scratch)
        found.append(measure("local", ExecutionOptions(progress=False), args.instances,
                             args.rounds, top))
        if args.jobs:
            found.append(measure(f"local --jobs {args.jobs}",
                                 ExecutionOptions(jobs=args.jobs, progress=False),
                                 args.instances, args.rounds, top))
        if args.ray:
            import ray

            ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                     runtime_env={"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}})
            try:
                found.append(measure("ray", ExecutionOptions(backend="ray", progress=False),
                                     args.instances, args.rounds, top))
            finally:
                ray.shutdown()
    if args.json:
        print(json.dumps({"results": found, "target_ms": TARGET_MS,
                          "load_average": os.getloadavg()}, indent=1))
        return 0
    print(f"probmut's time per instance, a training function that trains nothing "
          f"(runs of {args.instances} and {2 * args.instances} instances, {args.rounds} "
          f"rounds; load average {os.getloadavg()[0]:.1f})")
    for result in found:
        low, high = min(result["per_instance_ms"]), max(result["per_instance_ms"])
        print(f"  {result['backend']:<16} {result['median_ms']:6.1f} ms per instance (median; "
              f"{low:.1f} to {high:.1f}), {result['once_s']:.2f} s once per run")
    local = found[0]["median_ms"]
    print(f"target: at most {TARGET_MS} ms per instance locally: "
          f"{'met' if local <= TARGET_MS else 'not met'} ({local:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
