"""Benchmark: probmut's engine and studies against the paper's way, measured side by side.

The paper runs one statsmodels GLM fit per DeepCrime test, through pandas and patsy
(``smf.glm("Acc ~ Mod", df).fit()`` and the p-value read from the printed summary).
This script times that on a few hundred tests, then probmut on the same populations,
and reports tests per second, the speed-up, and for each study the time the paper's
way would need (its tests/s times the study's number of tests).

Parts (``--only``, comma-separated; default all):

- ``engine``: reference tests/s vs the compiled engine (B = N = 100, R = 100).
- ``criteria``: engine tests/s of every kill criterion on one thread (B = N = 100,
  R = 20, best of 3 in CPU time, so that other load on the machine matters less):
  unpaired (MNIST change_label 3.12) and paired (MNIST weights_fuzzing 0.05_1, paired by
  instance id; the paired criteria only there).
- ``cli``: wall time of ``probmut posterior --model mnist --mutation
  delete_training_data --no-plot`` (a whole mutation, start-up included).
- ``mce``: the MCE of one mutation (R = 100), default and ``--paper`` fits.
- ``sample-size``: the population-size study of one magnitude at the paper's settings
  (8 sizes x 30 sub-populations x R = B = N = 100 = 240 million tests).
- ``replicate``: the full ``replicate`` (not quick), without cache, into a temporary
  directory.
- ``report``: wall time of ``probmut report --model mnist`` (30 mutants, their verdicts
  and figures, start-up included), and its CPU time; bench_report.py times it side by
  side with the code before the report's second round.

Usage::

    python scripts/benchmarks/bench.py                   # everything (about 6 minutes)
    python scripts/benchmarks/bench.py --only engine,mce,cli --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from probmut.engine import kill_counts
from probmut.io.manifest import Manifest
from probmut.io.populations import read_population

PARTS = ("engine", "criteria", "cli", "mce", "sample-size", "replicate", "report")
RAW = Path(__file__).resolve().parents[2] / "raw_data" / "mnist"
HEALTHY = RAW / "results_mnist_original.csv"
MUTANT = RAW / "results_mnist_change_label_mutated0_MP_3.12.csv"


def reference_tests_per_s(healthy, mutant, tests: int, seed: int = 0) -> float:
    """The paper's DeepCrime test: one GLM fit per test via pandas/patsy, p from the summary."""
    import pandas as pd
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(tests):
            x = rng.choice(healthy, 20, replace=False)
            y = rng.choice(mutant, 20, replace=False)
            df = pd.DataFrame({"Acc": np.concatenate([x, y]), "Mod": [0] * 20 + [1] * 20})
            result = smf.glm("Acc ~ Mod", df).fit()
            float(str(result.summary().tables[1][2][4]))
    return tests / (time.perf_counter() - start)


def _timed(function):
    start = time.perf_counter()
    value = function()
    return time.perf_counter() - start, value


def bench_engine(healthy, mutant, threads):
    kill_counts(healthy, mutant, bootstraps=2, trials=2, seed=0, threads=threads)  # load the kernel
    tests = 100 * 100 * 100
    seconds, _ = _timed(lambda: kill_counts(healthy, mutant, bootstraps=100, trials=100,
                                            repetitions=100, seed=1, threads=threads))
    return {"engine_tests_per_s": tests / seconds, "engine_tests": tests,
            "engine_seconds": seconds}


def bench_criteria():
    from probmut.killtest import CRITERIA, KillCriterion
    from probmut.population import pair

    unpaired = (read_population(HEALTHY).values, read_population(MUTANT).values)
    healthy, fuzzed = pair(read_population(HEALTHY), read_population(
        RAW / "results_mnist_weights_fuzzing_mutated0_MP_0.05_1.csv"))
    data = {False: unpaired, True: (healthy.values, fuzzed.values)}
    rates = {}
    for name, spec in CRITERIA.items():
        for paired in ((True,) if spec.paired else (False, True)):
            run = dict(paired=paired, criterion=KillCriterion(kind=name), threads=1)
            kill_counts(*data[paired], bootstraps=2, trials=2, seed=0, **run)  # load
            seconds = []
            for _ in range(3):
                start = time.process_time()
                kill_counts(*data[paired], bootstraps=100, trials=100, repetitions=20, seed=1,
                            **run)
                seconds.append(time.process_time() - start)
            rates[f"{name}{' paired' if paired else ''}"] = 200_000 / min(seconds)
    return {"criteria_tests_per_s_one_thread": rates}


def bench_cli():
    command = [sys.executable, "-m", "probmut", "posterior", "--model", "mnist",
               "--mutation", "delete_training_data", "--no-plot"]
    subprocess.run(command, check=True, capture_output=True)  # warm the kernel cache
    seconds, _ = _timed(lambda: subprocess.run(command, check=True, capture_output=True))
    return {"cli_posterior_seconds": seconds, "cli_posterior_tests": 6 * 100 * 100}


def bench_mce(healthy, mutant, threads):
    from probmut import paper
    from probmut.mce import monte_carlo_error

    default, _ = _timed(lambda: monte_carlo_error(healthy, mutant, repetitions=100, seed=1,
                                                  threads=threads))
    as_paper, _ = _timed(lambda: monte_carlo_error(healthy, mutant, paper.mce_settings(),
                                                   repetitions=100, seed=1, threads=threads))
    return {"mce_seconds": default, "mce_paper_seconds": as_paper, "mce_tests": 100 * 100 * 100}


def bench_sample_size(healthy, mutant, threads):
    from probmut import paper
    from probmut.sample_size import sample_size_study

    seconds, _ = _timed(lambda: sample_size_study(healthy, mutant, paper.study_settings(),
                                                  seed=42, threads=threads, progress=True))
    return {"sample_size_seconds": seconds,
            "sample_size_tests": len(paper.SIZES) * 30 * 100 * 100 * 100}


def replicate_tests() -> int:
    """Number of DeepCrime tests of a full (not quick) replicate."""
    from probmut.paper import MOTIVATING, SAMPLE_SIZE_CONFIGS
    from probmut.replicate import DEEPCRIME_SUFFIX, Plan

    plan, manifest = Plan.full(), Manifest.load()
    per_posterior = plan.posterior.bootstraps * plan.posterior.trials
    figure3 = sum((1 + len(manifest.mutation(m, name).magnitudes)) * per_posterior
                  for m in manifest.model_names() if not m.endswith(DEEPCRIME_SUFFIX)
                  for name in manifest.mutation_names(m))
    motivating = ((1 + len(manifest.mutation(*MOTIVATING).magnitudes))
                  * len(plan.motivating_ks) * plan.motivating_repetitions * 100)
    study = plan.study.bootstraps * plan.study.trials
    sample_size = (sum(len(c[2]) for c in SAMPLE_SIZE_CONFIGS) * len(plan.sizes)
                   * plan.subpopulations * plan.repetitions * study)
    return figure3 + motivating + sample_size


def bench_replicate(threads):
    from probmut.replicate import replicate

    with tempfile.TemporaryDirectory() as out:
        seconds, report = _timed(lambda: replicate(out, threads=threads, cache_dir=False,
                                                   progress=True))
    return {"replicate_seconds": seconds, "replicate_tests": replicate_tests(),
            "replicate_part_seconds": report.seconds}


def bench_report():
    """``probmut report --model mnist`` in a subprocess (after one run that loads the
    compiled kernels), wall and CPU seconds."""
    import resource

    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "probmut", "report", "--model", "mnist", "--out",
                   str(Path(out) / "mnist.html"), "--quiet"]
        subprocess.run(command, check=True, capture_output=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds, _ = _timed(lambda: subprocess.run(command, check=True, capture_output=True))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"report_seconds": seconds, "report_cpu_seconds": cpu}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help=f"comma-separated parts: {', '.join(PARTS)} (default all)")
    parser.add_argument("--reference-tests", type=int, default=300,
                        help="tests timed the paper's way (300)")
    parser.add_argument("--threads", type=int, default=None, help="engine threads (all cores)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    parts = args.only.split(",") if args.only else list(PARTS)
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {', '.join(sorted(unknown))}; choose from {PARTS}")
    healthy, mutant = read_population(HEALTHY).values, read_population(MUTANT).values
    reference = reference_tests_per_s(healthy, mutant, args.reference_tests)
    results = {"reference_tests_per_s": reference, "reference_tests": args.reference_tests,
               "threads": args.threads}
    runners = {"engine": lambda: bench_engine(healthy, mutant, args.threads),
               "criteria": bench_criteria, "cli": bench_cli,
               "mce": lambda: bench_mce(healthy, mutant, args.threads),
               "sample-size": lambda: bench_sample_size(healthy, mutant, args.threads),
               "replicate": lambda: bench_replicate(args.threads), "report": bench_report}
    for part in PARTS:
        if part in parts:
            results |= runners[part]()
    if "engine_tests_per_s" in results:
        results["speedup"] = results["engine_tests_per_s"] / reference
    for study in ("cli_posterior", "mce", "sample_size", "replicate"):
        if f"{study}_tests" in results:
            paper = results[f"{study}_tests"] / reference
            results[f"{study}_paper_equivalent_seconds"] = paper
            results[f"{study}_speedup"] = paper / results[f"{study}_seconds"]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"paper's way (statsmodels GLM per test): {reference:,.0f} tests/s "
          f"({args.reference_tests} tests)")
    if "speedup" in results:
        print(f"probmut engine: {results['engine_tests_per_s']:,.0f} tests/s "
              f"(threads {args.threads or 'all'}); speed-up {results['speedup']:,.0f}x")
    for name, rate in results.get("criteria_tests_per_s_one_thread", {}).items():
        print(f"engine, one thread, {name}: {rate:,.0f} tests/s")
    labels = {"cli_posterior": "CLI posterior, whole mutation (start-up included)",
              "mce": "MCE of one mutation, R = 100 (moments)",
              "sample_size": "sample-size study, paper settings (240 M tests)",
              "replicate": "full replicate (not quick)"}
    for study, label in labels.items():
        if f"{study}_seconds" in results:
            print(f"{label}: {results[f'{study}_seconds']:.2f} s; the paper's way "
                  f"{results[f'{study}_paper_equivalent_seconds'] / 3600:,.2f} h "
                  f"({results[f'{study}_speedup']:,.0f}x)")
    if "report_seconds" in results:
        print(f"probmut report --model mnist (30 mutants, start-up included): "
              f"{results['report_seconds']:.1f} s ({results['report_cpu_seconds']:.1f} s of CPU)")
    if "mce_paper_seconds" in results:
        print(f"MCE of one mutation, R = 100, --paper (curve_fit per repetition): "
              f"{results['mce_paper_seconds']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
