"""`probmut bayes` with nutpie's sampler against PyMC's, side by side in one run.

Each repetition runs ``probmut bayes --model mnist --mutation delete_training_data
--no-plot --json`` once with ``--sampler pymc`` and once with ``--sampler nutpie`` (the
order alternates), each a fresh process, so the wall time is what a user waits for,
start-up included; repetition i uses seed i for both. One untimed run of each first fills
the compile caches (PyTensor's C modules for PyMC, Numba's cache of probmut's density for
nutpie), as any second use of the command finds them.

Reported: the median wall time of each sampler with its range, the speed-up (ratio of
the medians, and the range of the per-repetition ratios), and whether the posteriors
agree: for every magnitude the kill probability's posterior mean averaged over the
repetitions (seeds) with its standard error across seeds, for both samplers (with 5
seeds a standard error is itself rough: a gap of 3 of them happens); the worst R-hat,
the median and least over the fits of each fit's smallest ESS (bulk or tail), and the
divergences. The load average before and after says how busy the machine was. Run from
the repository root::

    python scripts/bench_bayes.py                 # 5 repetitions, about 3 minutes
    python scripts/bench_bayes.py --repetitions 9 --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SAMPLERS = ("pymc", "nutpie")


def run(sampler: str, seed: int, model: str, mutation: str) -> tuple[float, dict]:
    """Wall time and JSON document of one ``probmut bayes`` process."""
    command = [sys.executable, "-m", "probmut", "bayes", "--model", model, "--mutation",
               mutation, "--no-plot", "--quiet", "--json", "--seed", str(seed),
               "--sampler", sampler]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True,
                          text=True)
    return time.perf_counter() - start, json.loads(done.stdout)


def bench(repetitions: int, model: str, mutation: str) -> dict:
    load_before = os.getloadavg()
    for sampler in SAMPLERS:
        run(sampler, 0, model, mutation)  # compile caches
    seconds = {s: [] for s in SAMPLERS}
    kill = {s: [] for s in SAMPLERS}
    r_hat = {s: [] for s in SAMPLERS}
    ess = {s: [] for s in SAMPLERS}    # each fit's smallest bulk or tail ESS
    divergences = {s: 0 for s in SAMPLERS}
    for seed in range(1, repetitions + 1):
        order = SAMPLERS if seed % 2 else SAMPLERS[::-1]
        for sampler in order:
            wall, document = run(sampler, seed, model, mutation)
            seconds[sampler].append(wall)
            rows = document["comparisons"]
            kill[sampler].append([row["kill_probability"]["mean"] for row in rows])
            for row in rows:
                diagnostics = row["diagnostics"]
                r_hat[sampler].append(diagnostics["r_hat_max"])
                ess[sampler].append(min(diagnostics["ess_bulk_min"],
                                        diagnostics["ess_tail_min"]))
                divergences[sampler] += diagnostics["divergences"]
    names = [row["name"] for row in rows]
    ratios = np.array(seconds["pymc"]) / np.array(seconds["nutpie"])
    agreement = []
    for i, name in enumerate(names):
        entry = {"magnitude": name}
        for sampler in SAMPLERS:
            means = np.array(kill[sampler])[:, i]
            entry[sampler] = {"mean": float(means.mean()),
                              "se": float(means.std(ddof=1) / np.sqrt(len(means)))}
        gap = abs(entry["pymc"]["mean"] - entry["nutpie"]["mean"])
        entry["difference_in_se"] = float(gap / max(np.hypot(entry["pymc"]["se"],
                                                             entry["nutpie"]["se"]), 1e-12))
        agreement.append(entry)
    return {
        "command": f"probmut bayes --model {model} --mutation {mutation} --no-plot --json",
        "repetitions": repetitions,
        "seconds": {s: [round(v, 2) for v in seconds[s]] for s in SAMPLERS},
        "median_seconds": {s: float(np.median(seconds[s])) for s in SAMPLERS},
        "speedup_of_medians": float(np.median(seconds["pymc"]) / np.median(seconds["nutpie"])),
        "speedup_range": [float(ratios.min()), float(ratios.max())],
        "kill_probability": agreement,
        "r_hat_max": {s: max(v) for s, v in r_hat.items()},
        "ess_min": {s: float(min(v)) for s, v in ess.items()},
        "ess_median": {s: float(np.median(v)) for s, v in ess.items()},
        "divergences": divergences,
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=5, help="runs of each (5)")
    parser.add_argument("--model", default="mnist")
    parser.add_argument("--mutation", default="delete_training_data")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    if args.repetitions < 2:
        parser.error("--repetitions: at least 2 (the agreement needs a spread across seeds)")
    result = bench(args.repetitions, args.model, args.mutation)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['command']}, {args.repetitions} repetitions each, alternating")
    for sampler in SAMPLERS:
        times = result["seconds"][sampler]
        print(f"  --sampler {sampler:<7} median {result['median_seconds'][sampler]:6.2f} s "
              f"(range {min(times):.2f} to {max(times):.2f} s); worst R-hat "
              f"{result['r_hat_max'][sampler]:.3f}, a fit's smallest ESS: median "
              f"{result['ess_median'][sampler]:.0f}, least {result['ess_min'][sampler]:.0f}; "
              f"divergences {result['divergences'][sampler]}")
    low, high = result["speedup_range"]
    print(f"  speed-up {result['speedup_of_medians']:.2f}x (per repetition {low:.2f}x to "
          f"{high:.2f}x)")
    print("  P(kill) posterior mean over the seeds (standard error):")
    for entry in result["kill_probability"]:
        print(f"    {entry['magnitude']:<8} pymc {entry['pymc']['mean']:.4f} "
              f"({entry['pymc']['se']:.4f})  nutpie {entry['nutpie']['mean']:.4f} "
              f"({entry['nutpie']['se']:.4f})  difference {entry['difference_in_se']:.1f} se")
    before, after = result["load_average_before"][0], result["load_average_after"][0]
    print(f"  load average {before:.2f} before, {after:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
