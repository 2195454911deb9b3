"""Validate `probmut train --until-score` by replaying it on the bundled campaigns.

A *replay* runs the mode's rounds (:func:`probmut.train.until_score.score_round`: the
same score, parts of its variance and plan as the command) on accuracies that exist
already: the bundled campaigns mnist (30 mutants), lenet (30) and movie_recomm (17), each
with 200 instances per population. Each replay takes a random order of the instances
(a paired, model-level mutant follows the order of the healthy ids it derives from) and
the first n of each population stand for the n a run would have trained; the analysis
seed differs from replay to replay. The pilot, the rounds (10), the cap (200) and k (20)
are the command line's defaults.

Reported per campaign and width: the instances the replays trained against training
every population to 200 (healthy included and excluded), the final width and how often
the target was reached, and the coverage: how often the final interval holds the score
computed from all 200 instances of every population (with its binomial 95% interval),
with every miss listed. Beside them, the same stopping rule with every population
trained alike each round (``uniform``), and how well the variance model predicted the
next round's width. Every replay is cached under --out/.cache: an interrupted run
resumes, a rerun only prints. Markdown on stdout, the numbers in
--out/score_validation.json.

The all-200 score holds the instances a replay used, so coverage of it flatters the
interval. ``--halves`` judges against an independent reference too: each replay splits
every population at random into two halves of 100 (a paired mutant as the healthy ids
it derives from), replays the mode on the first half (at most 100 per population), and
judges its final interval against the score of the other half (all its 100 instances,
the reference seed) beside the all-200 score. The other half's score is an estimate
with its own error, so coverage of it is lower than coverage of the true score would
be: the two references bracket it.

    python scripts/validation/score_validation.py [--replays 100] [--widths 0.1,0.15,0.2]
        [--models mnist,lenet,movie_recomm] [--seed 2] [--halves] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import binomtest
from tqdm import tqdm

from probmut.bagging import PosteriorSettings
from probmut.io.cache import Cache, cache_key
from probmut.io.manifest import Manifest
from probmut.io.populations import read_population
from probmut.population import Population, pair
from probmut.train.until_score import (
    HEALTHY_PILOT,
    LEAST_BLOCKS,
    MARGIN,
    MOST_BLOCKS,
    PILOT,
    REPLICATES,
    Decision,
    assess,
    pilot_targets,
    score_round,
)
from probmut.train.work import HEALTHY

MODELS = ("mnist", "lenet", "movie_recomm")
ROUND, MAXIMUM = 10, 200  # the command line's defaults
#: Bump when the mode's maths change, so that cached replays are not reused.
METHOD = 3  # 3: the stop decided beyond the width's Monte-Carlo error


def campaign(model: str):
    """The healthy accuracies (by id) and every mutant (stem, accuracies, ids, paired) of
    one bundled campaign."""
    manifest = Manifest.load()
    healthy = read_population(manifest.healthy(model), name=HEALTHY)
    mutants = []
    for mutation in manifest.mutations(model):
        for magnitude, path in zip(mutation.magnitudes, mutation.files, strict=True):
            found = read_population(path, name=magnitude)
            if mutation.paired:
                h, found = pair(healthy, found)
                assert np.array_equal(h.ids, np.sort(healthy.ids))
            mutants.append((f"{mutation.name}_{magnitude}", found, mutation.paired))
    order = np.argsort(healthy.ids)
    return healthy.subset(healthy.ids[order]), mutants


def subset(population: Population, order, n: int) -> Population:
    return population.subset(population.ids[order[:n]])


def orders(healthy, mutants, seed, index, replay):
    """A random order of each population's instances; paired mutants take the healthy's."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, replay)))
    first = rng.permutation(len(healthy))
    return first, [first if paired else rng.permutation(len(m)) for _, m, paired in mutants]


def populations(healthy, mutants, order_h, orders_m, targets):
    h = subset(healthy, order_h, targets[HEALTHY])
    return h, {stem: (subset(m, o, targets[stem]), paired)
               for (stem, m, paired), o in zip(mutants, orders_m, strict=True)}


def replay(healthy, mutants, order_h, orders_m, *, width, settings, seed, uniform, memo,
           maximum=MAXIMUM):
    """The rounds of one replay (each round's record, as rounds.json holds it), at most
    ``maximum`` instances per population."""
    targets = pilot_targets([stem for stem, _, _ in mutants], settings.sample, maximum)
    records = []
    while True:
        h, scored = populations(healthy, mutants, order_h, orders_m, targets)
        record = score_round(len(records) + 1, targets, h, scored, settings, seed=seed,
                             width=width, round_size=ROUND, max_instances=maximum, memo=memo)
        if uniform and record["next"]:  # every population below the cap, alike
            record["next"] = {p: min(n + ROUND, maximum) for p, n in targets.items()
                              if n < maximum}
        records.append(record)
        if not record["next"]:
            return records
        targets = targets | record["next"]


def scored_summary(found) -> dict:
    """The score of an assessment, as the validation keeps it."""
    return {"mean": found.score.mean, "ci_low": found.score.ci_low,
            "ci_high": found.score.ci_high, "width": found.width}


def other_half(healthy, mutants, order_h, orders_m, half, settings, seed) -> dict:
    """The score of every population's instances beyond the first ``half`` of its order
    (the half a replay does not see)."""
    rest = lambda order: order[half:]  # noqa: E731
    h, scored = populations(healthy, mutants, rest(order_h), [rest(o) for o in orders_m],
                            {HEALTHY: half} | {stem: half for stem, _, _ in mutants})
    return scored_summary(assess(h, scored, settings, seed=seed))


def replays(model, index, args, settings, cache):
    healthy, mutants = campaign(model)
    maximum = len(healthy) // 2 if args.halves else MAXIMUM
    whole = {HEALTHY: min(len(healthy), maximum)} | {stem: min(len(m), maximum)
                                                      for stem, m, _ in mutants}
    everything = {HEALTHY: len(healthy)} | {stem: len(m) for stem, m, _ in mutants}
    h, scored = populations(healthy, mutants, np.arange(len(healthy)),
                            [np.arange(len(m)) for _, m, _ in mutants], everything)
    reference = assess(h, scored, settings, seed=args.reference_seed)
    results, others = {}, []
    policies = ("planned", "uniform") if args.uniform else ("planned",)
    bar = tqdm(total=args.replays * len(args.widths) * len(policies), desc=model,
               unit="replay", file=sys.stderr)
    for j in range(args.replays):
        order_h, orders_m = orders(healthy, mutants, args.seed, index, j)
        memo = {}
        if args.halves:
            key = cache_key("score-validation other half", METHOD, model, j, settings,
                            args.seed, args.reference_seed, maximum)
            if (stored := cache.get(key)) is None:
                stored = {"other": np.array(json.dumps(other_half(
                    healthy, mutants, order_h, orders_m, maximum, settings,
                    args.reference_seed)))}
                cache.put(key, **stored)
            others.append(json.loads(str(stored["other"])))
        for width in args.widths:
            for policy in policies:
                key = cache_key("score-validation replay", METHOD, model, j, width, policy,
                                settings, args.seed, ROUND, maximum, PILOT, HEALTHY_PILOT,
                                MARGIN, LEAST_BLOCKS, MOST_BLOCKS, REPLICATES)
                stored = cache.get(key)
                if stored is None:
                    records = replay(healthy, mutants, order_h, orders_m, width=width,
                                     settings=settings, seed=args.seed * 1000 + j,
                                     uniform=policy == "uniform", memo=memo, maximum=maximum)
                    stored = {"records": np.array(json.dumps(records))}
                    cache.put(key, **stored)
                results.setdefault((width, policy), []).append(
                    json.loads(str(stored["records"])))
                bar.update()
    bar.close()
    return {"model": model, "mutants": len(mutants), "whole": whole, "maximum": maximum,
            "reference": scored_summary(reference), "others": others, "runs": results}


def calibrated(finals, others) -> float:
    """How often an exactly calibrated interval would hold the other half's score, which
    has an error of its own: for normal errors with the standard deviations the two
    intervals' widths give (width / 3.92), the mean over replays of
    ``P(|Z| <= 1.96 s_final / sqrt(s_final^2 + s_other^2))``."""
    from scipy.stats import norm

    ratios = [f["score"]["width"] / np.hypot(f["score"]["width"], other["width"])
              for f, other in zip(finals, others, strict=True)]
    return float(np.mean([2 * norm.cdf(1.959964 * r) - 1 for r in ratios]))


def coverage(finals, truths) -> dict:
    """How often the final intervals hold ``truths`` (one per replay), with the binomial
    95% interval, the mean bias, and every miss."""
    covered = [f["score"]["ci_low"] <= t <= f["score"]["ci_high"]
               for f, t in zip(finals, truths, strict=True)]
    ci = binomtest(sum(covered), len(covered)).proportion_ci(0.95)
    misses = [{"replay": j, "interval": [f["score"]["ci_low"], f["score"]["ci_high"]],
               "mean": f["score"]["mean"], "spent": f["spent"], "rounds": f["round"],
               "healthy": f["instances"][HEALTHY], "truth": t}
              for j, (f, t, ok) in enumerate(zip(finals, truths, covered, strict=True))
              if not ok]
    return {"covered": float(np.mean(covered)), "covered_low": float(ci.low),
            "covered_high": float(ci.high),
            "bias": float(np.mean([f["score"]["mean"] - t for f, t in zip(finals, truths,
                                                                            strict=True)])),
            "misses": misses}


def summarise(found, width, policy) -> dict:
    runs = found["runs"][(width, policy)]
    whole = found["whole"]
    all_instances = sum(whole.values())
    mutant_instances = all_instances - whole[HEALTHY]
    finals = [r[-1] for r in runs]
    spent = np.array([f["spent"] for f in finals])
    healthy = np.array([f["instances"][HEALTHY] for f in finals])
    predicted = [a["width_next"] / b["score"]["width"]
                 for r in runs for a, b in zip(r, r[1:], strict=False)]
    independent = {} if not found["others"] else {"independent": coverage(
        finals, [other["mean"] for other in found["others"]])
        | {"calibrated": calibrated(finals, found["others"])}}
    return {"width": width, "policy": policy, "replays": len(runs),
            "spent": float(spent.mean()), "spent_share": float(spent.mean() / all_instances),
            "mutant_share": float((spent - healthy).mean() / mutant_instances),
            "healthy": float(healthy.mean()),
            "reached": float(np.mean([Decision(width, **f["decision"]).settles
                                      for f in finals])),
            "final_width": float(np.mean([f["score"]["width"] for f in finals])),
            "widest": float(np.max([f["score"]["width"] for f in finals])),
            "rounds": float(np.mean([f["round"] for f in finals])),
            "resamples": float(np.mean([r["decision"]["resamples"] for run in runs
                                        for r in run])),
            **coverage(finals, [found["reference"]["mean"]] * len(finals)),
            **independent,
            "prediction": [float(np.quantile(predicted, q)) for q in (0.05, 0.5, 0.95)]
            if predicted else None}


def report(found, rows):
    ref = found["reference"]
    whole, cap = found["whole"], found["maximum"]
    halves = bool(found["others"])
    print(f"### {found['model']}: {found['mutants']} mutants, {sum(whole.values())} instances "
          f"at {cap} each" + (" (one half of each population)" if halves else "") + "\n")
    print(f"All 200 instances of every population: score {ref['mean']:.3f} "
          f"[{ref['ci_low']:.3f}, {ref['ci_high']:.3f}], width {ref['width']:.3f}.\n")
    if halves:
        means = [other["mean"] for other in found["others"]]
        print(f"The other halves' scores (100 instances of every population each): mean "
              f"{np.mean(means):.3f}, standard deviation {np.std(means, ddof=1):.3f}, mean "
              f"width {np.mean([other['width'] for other in found['others']]):.3f}.\n")
    against = ("| covers the other half's score [95% interval] (an exactly calibrated "
               "interval) | its bias ") if halves else ""
    print(f"| width | rounds trained | replays | instances (share of all at {cap}) | mutants' "
          "instances (share) | healthy | reached | mean final width (widest) | rounds | "
          "resamples per decision | covers the all-200 score [95% interval] | bias of the "
          f"final score {against}| predicted / realised next width (5%, 50%, 95%) |")
    print("|---" * (13 + 2 * halves) + "|")
    for s in rows:
        p = s["prediction"]
        other = s.get("independent")
        beside = (f"{other['covered']:.1%} [{other['covered_low']:.1%}, "
                  f"{other['covered_high']:.1%}] (calibrated: {other['calibrated']:.1%}) | "
                  f"{other['bias']:+.3f} | ") if other else ""
        print(f"| {s['width']:g} | {s['policy']} | {s['replays']} | {s['spent']:.0f} "
              f"({s['spent_share']:.0%}) | {s['mutant_share']:.0%} | {s['healthy']:.0f} | "
              f"{s['reached']:.0%} | {s['final_width']:.3f} ({s['widest']:.3f}) | "
              f"{s['rounds']:.1f} | {s['resamples']:.0f} | {s['covered']:.1%} "
              f"[{s['covered_low']:.1%}, {s['covered_high']:.1%}] | {s['bias']:+.3f} | "
              + beside + (f"{p[0]:.2f}, {p[1]:.2f}, {p[2]:.2f}" if p else "-") + " |")
    print()
    for s in rows:
        for name, result in (("the all-200 score", s), ("the other half's score",
                                                         s.get("independent"))):
            for miss in (result or {}).get("misses", []):
                print(f"- miss of {name}: width {s['width']:g}, {s['policy']}, replay "
                      f"{miss['replay']}: {miss['mean']:.3f} [{miss['interval'][0]:.3f}, "
                      f"{miss['interval'][1]:.3f}] after {miss['rounds']} rounds and "
                      f"{miss['spent']} instances (healthy {miss['healthy']}); "
                      f"{name} {miss['truth']:.3f}")
    print()


def report_targets(document, width: float) -> None:
    """The issue's targets at ``width``: the interval at most that wide, covering the
    all-200 score at least 95% of the time, from at most half the instances."""
    print(f"## Targets at width {width:g}\n")
    print("| campaign | all 200 per population: width | reached | instances (share of all "
          "at 200) | covers the all-200 score | at most half the instances, covering >= 95% |")
    print("|---|---|---|---|---|---|")
    for found in document:
        row = next(r for r in found["rows"] if r["width"] == width and r["policy"] == "planned")
        met = row["reached"] == 1 and row["spent_share"] <= 0.5 and row["covered"] >= 0.95
        print(f"| {found['model']} | {found['reference']['width']:.3f} | {row['reached']:.0%} | "
              f"{row['spent']:.0f} ({row['spent_share']:.0%}) | {row['covered']:.1%} | "
              + ("yes" if met else "**no**" + (
                  ": out of reach at 200 per population" if found["reference"]["width"] > width
                  else "")) + " |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=100, help="replays per campaign (100)")
    parser.add_argument("--widths", default="0.1,0.15,0.2",
                        help="target widths of the score's interval (0.1,0.15,0.2)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seed", type=int, default=2,
                        help="the orders' and the analyses' seed (2; 1 was the calibration's)")
    parser.add_argument("--reference-seed", type=int, default=42,
                        help="the analysis seed of the all-200 score (42, the report's)")
    parser.add_argument("--no-uniform", dest="uniform", action="store_false",
                        help="skip the comparison with every population trained alike")
    parser.add_argument("--out", default="validation_results")
    parser.add_argument("--halves", action="store_true",
                        help="replay on one half of each population (at most 100) and judge "
                             "against the other half's score too (an independent reference)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 replays of lenet at width 0.15, B = N = 30")
    args = parser.parse_args()
    args.widths = [float(w) for w in args.widths.split(",")]
    args.models = args.models.split(",")
    settings = PosteriorSettings()
    if args.quick:
        args.replays, args.widths, args.models = 2, [0.15], ["lenet"]
        settings = PosteriorSettings(bootstraps=30, trials=30)
    cache = Cache(Path(args.out) / ".cache")
    started = time.perf_counter()
    print(f"Replays of train --until-score: pilots of {HEALTHY_PILOT} x k = "
          f"{HEALTHY_PILOT * settings.sample} healthy and {PILOT} x k = {PILOT * settings.sample} "
          "instances per mutant, "
          f"rounds of {ROUND}, at most {'100 (halves)' if args.halves else MAXIMUM} per "
          f"population; B = {settings.bootstraps}, "
          f"N = {settings.trials}, k = {settings.sample}; {args.replays} replays per "
          f"campaign, seed {args.seed}\n")
    document = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small populations for k, read notes
        for model in args.models:
            found = replays(model, MODELS.index(model), args, settings, cache)
            rows = [summarise(found, w, p) for w in args.widths
                    for p in (("planned", "uniform") if args.uniform else ("planned",))]
            report(found, rows)
            document.append({k: found[k] for k in ("model", "mutants", "whole", "maximum",
                                                   "reference", "others")} | {"rows": rows})
    if not args.halves:
        report_targets(document, args.widths[0])
    seconds = time.perf_counter() - started
    print(f"total {seconds:.0f} s")
    from probmut.io.atomic import atomic_write_text

    atomic_write_text(Path(args.out) / "score_validation.json",
                      json.dumps({"seed": args.seed, "halves": args.halves, "campaigns": document,
                                  "seconds": seconds}, indent=1, default=float))


if __name__ == "__main__":
    main()
