"""Validate the model-based posterior against the bagged one on the bundled MNIST data.

1. Full data (200 instances per population): the model's posterior mean kill
   probability next to the bagged posterior's mean.
2. Sub-populations of n instances (n = 20 and 30 by default): for each magnitude draw
   ``--subsets`` random sub-populations (n healthy and n mutant instances), compute both
   posteriors from the sub-population alone, and compare each with the full-data
   answer (the bagged posterior mean on all 200 instances): mean absolute error, bias,
   and how often the model is the closer of the two.

Prints Markdown tables (pasted in docs/bayes.md). About 15 minutes on one core with the
defaults.

    python scripts/bayes_validation.py [--subsets 10] [--sizes 20,30] [--seed 2024]
                                       [--sampler nutpie|pymc]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from probmut.bayes import BayesSettings, ConvergenceWarning, model_posterior
from probmut.io.manifest import Manifest
from probmut.io.populations import read_population
from probmut.posterior import bagged_posteriors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mnist")
    parser.add_argument("--mutation", default="delete_training_data")
    parser.add_argument("--subsets", type=int, default=10, help="sub-populations per n (10)")
    parser.add_argument("--sizes", default="20,30", help="sub-population sizes (20,30)")
    parser.add_argument("--likelihoods", default="student-t,normal")
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--sampler", default="nutpie", choices=("nutpie", "pymc"))
    args = parser.parse_args()

    manifest = Manifest.load(None)
    healthy = read_population(manifest.healthy(args.model), name="healthy")
    mutation = manifest.mutation(args.model, args.mutation)
    mutants = [read_population(mutation.file_for(m), name=m) for m in mutation.magnitudes]
    likelihoods = args.likelihoods.split(",")
    sizes = [int(n) for n in args.sizes.split(",")]
    settings = {lk: BayesSettings(draws=args.draws, tune=args.tune, likelihood=lk,
                                  sampler=args.sampler)
                for lk in likelihoods}
    root = np.random.SeedSequence(args.seed)
    full_stream, sub_stream = root.spawn(2)
    started = time.time()
    unconverged = 0

    def fit(h, m, likelihood, stream):
        nonlocal unconverged
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            result = model_posterior(h, m, settings[likelihood], seed=stream)
        unconverged += not result.diagnostics.converged
        return result

    print(f"## Full data ({len(healthy)} instances per population), "
          f"{args.model} {args.mutation}\n")
    print("| magnitude | bagged mean [95% HDI] | "
          + " | ".join(f"model {lk} mean [95% HDI]" for lk in likelihoods) + " |")
    print("|---|---|" + "---|" * len(likelihoods))
    full = {}
    for mutant, stream in zip(mutants, full_stream.spawn(len(mutants)), strict=True):
        bagged = bagged_posteriors(healthy, [mutant], seed=args.seed).populations[1]
        full[mutant.name] = bagged.mean
        cells = []
        for lk, child in zip(likelihoods, stream.spawn(len(likelihoods)), strict=True):
            res = fit(healthy, mutant, lk, child)
            low, high = res.interval(res.kill_draws)
            cells.append(f"{res.kill_mean:.3f} [{low:.3f}, {high:.3f}]")
        print(f"| {mutant.name} | {bagged.mean:.3f} [{bagged.ci_low:.3f}, {bagged.ci_high:.3f}] | "
              + " | ".join(cells) + " |", flush=True)

    print(f"\n## Sub-populations: {args.subsets} random draws of n healthy and n mutant "
          "instances; error = estimate - full-data bagged mean\n")
    print("| n | magnitude | full | bagged MAE (bias) | "
          + " | ".join(f"{lk} MAE (bias) | {lk} closer" for lk in likelihoods) + " |")
    print("|---|---|---|---|" + "---|---|" * len(likelihoods))
    rng = np.random.default_rng(sub_stream)
    totals = {lk: [0, 0] for lk in likelihoods}
    for n in sizes:
        for mutant in mutants:
            errors = {"bagged": []} | {lk: [] for lk in likelihoods}
            for s in range(args.subsets):
                h = healthy.subset(rng.choice(healthy.ids, n, replace=False))
                m = mutant.subset(rng.choice(mutant.ids, n, replace=False))
                seed = int(rng.integers(2**31))
                bagged = bagged_posteriors(h, [m], seed=seed).populations[1]
                errors["bagged"].append(bagged.mean - full[mutant.name])
                for lk in likelihoods:
                    res = fit(h, m, lk, np.random.SeedSequence([seed, s]))
                    errors[lk].append(res.kill_mean - full[mutant.name])
            e = {k: np.asarray(v) for k, v in errors.items()}
            cells = [f"{np.abs(e['bagged']).mean():.3f} ({e['bagged'].mean():+.3f})"]
            for lk in likelihoods:
                closer = int((np.abs(e[lk]) < np.abs(e["bagged"])).sum())
                totals[lk][0] += closer
                totals[lk][1] += args.subsets
                cells.append(f"{np.abs(e[lk]).mean():.3f} ({e[lk].mean():+.3f}) | "
                             f"{closer}/{args.subsets}")
            print(f"| {n} | {mutant.name} | {full[mutant.name]:.3f} | " + " | ".join(cells)
                  + " |", flush=True)
    print("\nmodel closer than bagged, all cases: "
          + ", ".join(f"{lk} {c}/{t}" for lk, (c, t) in totals.items()))
    print(f"fits that did not converge: {unconverged}; "
          f"draws {args.draws}, tune {args.tune}, {args.sampler}, seed {args.seed}; "
          f"{time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
