"""Validate the stopping rule of `probmut train --until-settled` against independent references.

A *path* is one run of training until settled, replayed on accuracies that exist already:
the verdict of :func:`probmut.recommend.recommend` (verdict only, the defaults of the
command line) after each round, on the first n instances per side, for n = 20, 30, ...,
200 (pilot 20, rounds of 10, at most 200 per side: 19 looks), told the whole plan; the
path stops at its first settled verdict. Each path is then judged:

(a) Synthetic populations with known kill probability, over a grid of effects (Cohen's d
    from 0 to 1.5 in steps of 0.1; the mutant worse) and three shapes: normal; heavy
    tailed and skewed like the bundled lenet populations (a mirrored log-normal: skewness
    -2.9, as lenet's healthy accuracies); and paired with a skewed drop like the bundled
    model-level mutants (mutant = 0.5 healthy + noise - a log-normal drop; correlation
    0.3 to 0.5). q, the chance that a fresh population of 200 per side is judged
    killed, comes from --fresh independent populations per effect; path j is judged
    against fresh population j (its own, independent of it), and the expected share of
    wrong verdicts given q (1 - q for killed, q for not killed) is reported beside it.
(b) The 77 bundled magnitudes with 200 instances per side (4 random orders each; paired
    mutations keep their ids): a settled verdict is judged against the decision of the
    bagged posterior on the instances the path did not use when it used at most half of
    the population (100 per side), and against the whole population otherwise (reported
    separately: the reference then contains most of the path).

Reported per effect: share of paths settled, share wrongly settled, mean instances per
side (200 for paths never settled), mean looks; and pooled figures, the issue's targets
and the wrong verdicts. Every path is cached under --out/.cache (a small entry per
path): an interrupted run resumes, a rerun only prints. Markdown on stdout (the tables
of docs/recommend.md), the numbers in --out/sequential_validation.json.

    python scripts/validation/sequential_validation.py [--paths 100] [--orders 4] [--quick] [--jobs J]
        [--shapes 0,1,2] [--effects 0.5,0.6]   (a part of (a)'s grid, same paths)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from probmut.bagging import PosteriorSettings
from probmut.beta import beta_mean_var, fit_beta_batch, ratio_of
from probmut.engine import kill_counts
from probmut.io.cache import Cache, cache_key
from probmut.recommend import (
    CONFIDENCE,
    DRAWS,
    LEVEL,
    METHOD,
    MORE_DRAWS,
    REFERENCE_SIZE,
    recommend,
    sequential_error,
    settle_chance,
    settle_threshold,
)
from probmut.train.rounds import FUTILITY

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pilot_validation import magnitudes  # noqa: E402  (the 77 bundled magnitudes)

PILOT, ROUND, MAXIMUM = 20, 10, 200  # the command line's defaults
LOOKS = list(range(PILOT, MAXIMUM + 1, ROUND))
THRESHOLDS = [settle_threshold(n, LOOKS, REFERENCE_SIZE, LEVEL) for n in LOOKS]
EFFECTS = [round(0.1 * i, 1) for i in range(16)]
SHAPES = ("normal", "heavy-tailed (lenet-like)", "skewed drop, paired (model-level-like)")
PAIRED = {"normal": False, "heavy-tailed (lenet-like)": False,
          "skewed drop, paired (model-level-like)": True}
#: Accuracies: 0.99 plus 0.0006 (MNIST's healthy spread) times the standardised draws.
CENTRE, SCALE = 0.99, 0.0006
#: Log-normal shape parameter of the heavy tail and of the paired drop.
SIGMA = 0.7
VERDICTS = ("not settled", "killed", "not killed")


# --- synthetic populations ---------------------------------------------------------------

def _lognormal_moments(sigma=SIGMA):
    mean = np.exp(sigma**2 / 2)
    return mean, np.sqrt((np.exp(sigma**2) - 1) * np.exp(sigma**2))


def synthetic(shape: str, effect: float, rng, count: int, n: int):
    """(count, n) healthy and mutant accuracies whose Cohen's d (pooled, as the kill test
    reads it) is ``effect``, the mutant worse."""
    z = rng.standard_normal((3, count, n))
    if shape == "normal":
        healthy, mutant = z[0], z[1] - effect
    elif shape.startswith("heavy"):  # a mirrored log-normal, standardised: a long low tail
        mean, sd = _lognormal_moments()
        tail = -(np.exp(SIGMA * z[:2]) - mean) / sd
        healthy, mutant = tail[0], tail[1] - effect
    else:  # paired: mutant = 0.5 healthy + noise - s log-normal, with d = effect
        mean, sd = _lognormal_moments()
        s = effect / np.sqrt(mean**2 - effect**2 * sd**2 / 2)
        drop = s * np.exp(SIGMA * z[2])
        healthy, mutant = z[0], 0.5 * z[0] + np.sqrt(0.75) * z[1] - drop
    return CENTRE + SCALE * healthy, CENTRE + SCALE * mutant


def judged_killed(h_rows, m_rows, paired, settings, seed, jobs) -> np.ndarray:
    """The bagged posterior's decision on every row pair (what a population decides)."""
    counts = kill_counts(h_rows, m_rows, bootstraps=settings.bootstraps,
                         trials=settings.trials, sample=settings.sample, paired=paired,
                         criterion=settings.criterion, seed=seed, jobs=jobs)
    a, b = fit_beta_batch(counts.reshape(len(h_rows), -1), settings.trials, settings.fit,
                          settings.grid_step, settings.solver)
    means, variances = beta_mean_var(a, b)
    return np.array([ratio_of(mu, v, settings.trials) > settings.threshold
                     for mu, v in zip(means, variances, strict=True)])


# --- one path --------------------------------------------------------------------------------

def follow(h, m, paired, settings, seed, args, cache) -> dict:
    """Look after every round until the verdict settles (cached per path), keeping every
    look's p_killed, its standard error and ``needed`` (-1 for out of reach)."""
    key = cache_key("sequential-validation path with its looks", METHOD, CONFIDENCE,
                    MORE_DRAWS, THRESHOLDS, h, m, paired, settings, seed, args.draws, LOOKS)
    stored = cache.get(key)
    if stored is None:
        seen = []
        for n in LOOKS:
            advice = recommend(h[:n], m[:n], settings, sizes=(), draws=args.draws,
                               max_instances=MAXIMUM, looks=LOOKS, paired=paired, seed=seed,
                               jobs=args.jobs)
            seen.append((advice.p_killed, advice.p_killed_se, advice.draws_used,
                         -1 if advice.needed is None else advice.needed))
            if advice.verdict != "not settled":
                break
        p_killed, se, draws, needed = (np.array(column) for column in zip(*seen, strict=True))
        stored = {"verdict": np.array(VERDICTS.index(advice.verdict)), "p_killed": p_killed,
                  "se": se, "draws": draws, "needed": needed}
        cache.put(key, **stored)
    looks = len(stored["p_killed"])
    return {"verdict": VERDICTS[int(stored["verdict"])], "n": LOOKS[looks - 1], "looks": looks,
            "p_killed": float(stored["p_killed"][-1]), "se": float(stored["se"][-1]),
            "draws": int(stored["draws"][-1]),
            "trajectory": {name: stored[name].tolist()
                           for name in ("p_killed", "se", "draws", "needed")}}


def stopped(path) -> dict:
    """The path as `train --until-settled` runs it: it also stops, not settled, at the
    first look before the last where the chance of settling by the last is under
    probmut.train.rounds.FUTILITY (read from that look's p_killed, as rounds.py does)."""
    trajectory = path["trajectory"]
    last = len(trajectory["p_killed"]) - (path["verdict"] != "not settled")
    for i in range(min(last, len(LOOKS) - 1)):
        chance = settle_chance(trajectory["p_killed"][i], trajectory["draws"][i], LOOKS[i],
                               THRESHOLDS[-1], REFERENCE_SIZE, MAXIMUM, grown=True)
        if chance < FUTILITY:
            return {**path, "verdict": "not settled", "n": LOOKS[i], "looks": i + 1,
                    "stopped": True}
    return path


def most_settled(q: float) -> float:
    """The largest share of paths that any rule may settle on a mutant whose fresh
    populations are judged killed with probability q, if at most 1 - LEVEL of them may
    end wrongly settled: a settled verdict is wrong with probability min(q, 1 - q) at
    best."""
    return min(1.0, (1 - LEVEL) / max(min(q, 1 - q), 1e-12))


def summarise(paths) -> dict:
    """Share settled, share wrongly settled (against each path's reference, and expected
    from q where known), mean instances per side and mean looks, for the paths as the
    command runs them (:func:`stopped`); and the settled share and instances had the
    paths gone on to the last look instead."""
    whole = paths
    paths = [stopped(p) for p in whole]
    settled = [p for p in paths if p["verdict"] != "not settled"]
    wrong = [p for p in settled if (p["verdict"] == "killed") != p["reference_killed"]]
    summary = {"paths": len(paths), "settled": len(settled) / len(paths),
               "wrong": len(wrong) / len(paths),
               "instances": float(np.mean([p["n"] for p in paths])),
               "looks": float(np.mean([p["looks"] for p in paths])),
               "settled_going_on": float(np.mean([p["verdict"] != "not settled"
                                                  for p in whole])),
               "instances_going_on": float(np.mean([p["n"] for p in whole]))}
    if all("q" in p for p in paths):  # the expected share of wrong verdicts given q
        expected = [(1 - p["q"]) if p["verdict"] == "killed" else p["q"] for p in settled]
        summary["expected_wrong"] = float(np.sum(expected)) / len(paths)
        summary["expected_wrong_se"] = float(np.std(
            np.r_[expected, np.zeros(len(paths) - len(settled))]) / np.sqrt(len(paths)))
    return summary


# --- (a) synthetic populations ---------------------------------------------------------------

def part_a(args, settings, cache):
    """Every path of every shape and effect, with q from the fresh populations. Where q is
    below 0.02 or above 0.98 a settled verdict is almost never wrong: ``--paths-far``
    paths measure the settled share and the instances there, ``--paths`` elsewhere."""
    shapes, effects = args.shapes, args.effects
    cells = []
    bar = tqdm(total=len(shapes) * len(effects), desc="(a) synthetic effects", unit="effect",
               file=sys.stderr)
    for shape in shapes:
        s, paired = SHAPES.index(shape), PAIRED[shape]
        for effect in effects:
            e = EFFECTS.index(effect)  # seeds follow the grid: a subset reuses the same paths
            key = cache_key("sequential-validation fresh", shape, effect, args.fresh,
                            settings, args.seed)
            fresh = cache.get(key)
            if fresh is None:
                rng = np.random.default_rng(np.random.SeedSequence(args.seed,
                                                                   spawn_key=(s, e, 0)))
                h, m = synthetic(shape, effect, rng, args.fresh, REFERENCE_SIZE)
                fresh = {"killed": judged_killed(h, m, paired, settings,
                                                 rng.integers(2**62), args.jobs)}
                cache.put(key, **fresh)
            fresh_killed = np.asarray(fresh["killed"], dtype=bool)
            q = float(fresh_killed.mean())
            count = args.paths if 0.02 <= q <= 0.98 else args.paths_far
            paths = []
            for j in range(count):
                rng = np.random.default_rng(np.random.SeedSequence(args.seed,
                                                                   spawn_key=(s, e, 1, j)))
                h, m = (rows[0] for rows in synthetic(shape, effect, rng, 1, MAXIMUM))
                path = follow(h, m, paired, settings, j, args, cache)
                path.update(q=q, reference_killed=bool(fresh_killed[j % len(fresh_killed)]))
                paths.append(path)
                bar.set_postfix(d=effect, path=j)
            cells.append({"shape": shape, "effect": effect, "q": q, "paths": paths,
                          "summary": summarise(paths)})
            bar.update()
    bar.close()
    return cells


def report_a(cells, args):
    print("## (a) Synthetic populations: wrong settled verdicts against fresh populations\n")
    print(f"{args.paths} paths per effect and shape where 0.02 <= q <= 0.98, "
          f"{args.paths_far} elsewhere; q from {args.fresh} fresh populations of "
          f"{REFERENCE_SIZE} per side; 'wrong' judges each path against its own fresh "
          "population, 'expected wrong' weighs each settled verdict by its chance of being "
          "wrong given q (standard error in brackets). Paths stop as the command stops them "
          f"(settled, at {MAXIMUM}, or when the chance of settling by {MAXIMUM} is under "
          f"{FUTILITY:g}); 'going on': had they gone on to {MAXIMUM} instead. 'Most any "
          f"rule may settle': a settled verdict is wrong with probability min(q, 1 - q) at "
          f"best, so no rule keeping wrong settled verdicts under {1 - LEVEL:.0%} settles "
          "more.\n")
    pooled = {}
    for shape in dict.fromkeys(c["shape"] for c in cells):
        print(f"### {shape}\n")
        print("| d | q | paths | settled | most any rule may settle | wrong | expected wrong | "
              "mean instances per side | mean looks | going on: settled | going on: instances |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        rows = [c for c in cells if c["shape"] == shape]
        for c in rows:
            s = c["summary"]
            print(f"| {c['effect']:.1f} | {c['q']:.3f} | {s['paths']} | {s['settled']:.1%} | "
                  f"{most_settled(c['q']):.0%} | "
                  f"{s['wrong']:.1%} | {s['expected_wrong']:.1%} ({s['expected_wrong_se']:.1%}) "
                  f"| {s['instances']:.0f} | {s['looks']:.1f} | {s['settled_going_on']:.1%} | "
                  f"{s['instances_going_on']:.0f} |")
        pooled[shape] = summarise([p for c in rows for p in c["paths"]])
        worst = max(rows, key=lambda c: c["summary"]["expected_wrong"])
        print(f"\nPooled over the grid: settled {pooled[shape]['settled']:.1%}, wrong "
              f"{pooled[shape]['wrong']:.1%}, expected wrong {pooled[shape]['expected_wrong']:.1%}"
              f", mean instances {pooled[shape]['instances']:.0f}; largest expected wrong "
              f"{worst['summary']['expected_wrong']:.1%} at d = {worst['effect']:.1f} "
              f"(q = {worst['q']:.2f}).\n")
    return pooled


# --- (b) the bundled magnitudes ---------------------------------------------------------------

def part_b(args, settings, cache):
    found = magnitudes()
    found = found[::13] if args.quick else found
    orders = 1 if args.quick else args.orders
    results = []
    bar = tqdm(total=len(found) * orders, desc="(b) bundled paths", unit="path",
               file=sys.stderr)
    for index, (label, model, h, m, paired) in enumerate(found):
        key = cache_key("sequential-validation bundled q", h, m, paired, settings,
                        args.resamples, args.seed)
        stored = cache.get(key)
        if stored is None:  # populations of 200 resampled from the whole ones (paired: by id)
            rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(101, index)))
            ids_h = rng.integers(0, h.size, (args.resamples, REFERENCE_SIZE))
            ids_m = ids_h if paired else rng.integers(0, m.size, (args.resamples,
                                                                  REFERENCE_SIZE))
            stored = {"killed": judged_killed(h[ids_h], m[ids_m], paired, settings,
                                              rng.integers(2**62), args.jobs)}
            cache.put(key, **stored)
        q = float(np.mean(stored["killed"]))
        for j in range(orders):
            rng = np.random.default_rng(np.random.SeedSequence(args.seed,
                                                               spawn_key=(100, index, j)))
            order_h = rng.permutation(h.size)
            order_m = order_h if paired else rng.permutation(m.size)
            path = follow(h[order_h], m[order_m], paired, settings, j, args, cache)
            settled = path["verdict"] != "not settled"
            outside = settled and path["n"] <= min(h.size, m.size) // 2
            path.update(magnitude=label, model=model, order=j, outside=outside,
                        reference_killed=None, resampled_q=q)
            if settled:  # the decision on the instances not used (or on all of them)
                used = path["n"] if outside else 0
                rest_h, rest_m = np.sort(order_h[used:]), np.sort(order_m[used:])
                key = cache_key("sequential-validation reference", h, m, paired, settings,
                                rest_h, rest_m)
                stored = cache.get(key)
                if stored is None:
                    stored = {"killed": judged_killed(h[rest_h][None], m[rest_m][None], paired,
                                                      settings, 42, args.jobs)}
                    cache.put(key, **stored)
                path["reference_killed"] = bool(stored["killed"][0])
            results.append(path)
            bar.update()
    bar.close()
    return results


def report_b(paths):
    print("## (b) The bundled magnitudes: wrong settled verdicts against the instances not used\n")
    print("| paths | settled | wrong | mean instances per side | mean looks | going on: "
          "settled | going on: instances |")
    print("|---|---|---|---|---|---|---|")
    kept = [p for p in paths if stopped(p)["verdict"] != "not settled"]
    groups = {"all": paths,
              "settled from at most 100 per side (reference: the unused instances)":
                  [p for p in kept if p["outside"]],
              "settled from more than 100 per side (reference: the whole population)":
                  [p for p in kept if not p["outside"]]}
    rows = {}
    for name, group in groups.items():
        if not group:
            continue
        s = summarise(group)
        rows[name] = s
        print(f"| {name}: {s['paths']} | {s['settled']:.1%} | {s['wrong']:.1%} | "
              f"{s['instances']:.0f} | {s['looks']:.1f} | {s['settled_going_on']:.1%} | "
              f"{s['instances_going_on']:.0f} |")
    bands = (("q <= 0.05", lambda q: q <= 0.05), ("0.05 < q < 0.95", lambda q: 0.05 < q < 0.95),
             ("q >= 0.95", lambda q: q >= 0.95))
    print("\nBy q, the share of populations of 200 resampled from the magnitude's whole "
          "populations that are judged killed (a bootstrap reading of the chance that a "
          "fresh population is), with the most any rule keeping wrong settled verdicts under "
          f"{1 - LEVEL:.0%} may settle (mean over the paths of min(1, {1 - LEVEL:g} / "
          "min(q, 1 - q))):\n")
    print("| q | paths | settled | most any rule may settle | wrong | mean instances per side |")
    print("|---|---|---|---|---|---|")
    for name, inside in bands + (("all", lambda q: True),):
        group = [p for p in paths if inside(p["resampled_q"])]
        if group:
            s = summarise(group)
            bound = float(np.mean([most_settled(p["resampled_q"]) for p in group]))
            rows[f"q {name}"] = s | {"most_settled": bound}
            print(f"| {name} | {s['paths']} | {s['settled']:.1%} | {bound:.1%} | "
                  f"{s['wrong']:.1%} | {s['instances']:.0f} |")
    wrong = [p for p in map(stopped, paths) if p["verdict"] != "not settled"
             and (p["verdict"] == "killed") != p["reference_killed"]]
    print("\nWrong settled verdicts:\n")
    for p in wrong:
        print(f"- {p['magnitude']}, order {p['order']}: {p['verdict']} at {p['n']} per side "
              f"(P(killed) {p['p_killed']:.3f} ± {p['se']:.3f}; q {p['resampled_q']:.2f}); "
              "reference "
              f"({'unused instances' if p['outside'] else 'whole population'}): "
              f"{'killed' if p['reference_killed'] else 'not killed'}")
    if not wrong:
        print("- none")
    print()
    return rows


def report_targets(cells, rows_b) -> list:
    print("## Targets\n")
    print("| target | measured | met |")
    print("|---|---|---|")
    targets = []
    for shape in dict.fromkeys(c["shape"] for c in cells):
        worst = max((c for c in cells if c["shape"] == shape),
                    key=lambda c: c["summary"]["expected_wrong"])
        value = worst["summary"]["expected_wrong"]
        targets.append((f"(a) {shape}: wrong settled verdicts at most 5% at every effect",
                        f"largest {value:.1%} (d = {worst['effect']:.1f}, q = {worst['q']:.2f})",
                        value <= 0.05))
    if rows_b:
        everything = rows_b["all"]
        targets += [
            ("(b) wrong settled verdicts at most 2% pooled over the 77",
             f"{everything['wrong']:.1%}", everything["wrong"] <= 0.02),
            ("(b) at least 70% of the paths settled by 200 per side",
             f"{everything['settled']:.1%} (most any rule may settle: "
             f"{rows_b['q all']['most_settled']:.1%})", everything["settled"] >= 0.7),
            ("(b) at most 100 instances per side on average", f"{everything['instances']:.0f}",
             everything["instances"] <= 100)]
    for target, measured, met in targets:
        print(f"| {target} | {measured} | {'yes' if met else '**no**'} |")
    print()
    return [{"target": t, "measured": v, "met": bool(ok)} for t, v, ok in targets]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=100,
                        help="paths per effect and shape in (a) where 0.02 <= q <= 0.98 (100)")
    parser.add_argument("--paths-far", type=int, default=25,
                        help="paths per effect and shape in (a) elsewhere (25)")
    parser.add_argument("--fresh", type=int, default=400,
                        help="fresh reference populations per effect and shape in (a) (400)")
    parser.add_argument("--orders", type=int, default=4,
                        help="random orders per bundled magnitude in (b) (4)")
    parser.add_argument("--resamples", type=int, default=100,
                        help="populations of 200 resampled per bundled magnitude for its q in "
                             "(b) (100)")
    parser.add_argument("--draws", type=int, default=DRAWS,
                        help=f"the verdict's first block of simulated populations ({DRAWS})")
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--out", default="validation_results")
    parser.add_argument("--only", default="ab", choices=["a", "b", "ab"],
                        help="the parts to run (both)")
    parser.add_argument("--shapes", default="0,1,2",
                        help="the shapes of (a), by number: " + ", ".join(
                            f"{i} {shape}" for i, shape in enumerate(SHAPES)) + " (all)")
    parser.add_argument("--effects", default=None,
                        help="a subset of (a)'s grid of effects d, comma-separated (the whole "
                             "grid 0, 0.1, ..., 1.5)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: the normal shape at d = 0, 0.6, 1.5, 4 paths, "
                             "6 magnitudes, smaller bagged posteriors")
    args = parser.parse_args()
    try:
        args.shapes = [SHAPES[int(i)] for i in args.shapes.split(",")]
        args.effects = (EFFECTS if args.effects is None else
                        [EFFECTS[EFFECTS.index(round(float(d), 1))]
                         for d in args.effects.split(",")])
    except (ValueError, IndexError):
        parser.error(f"--shapes takes numbers from 0 to {len(SHAPES) - 1}, --effects values "
                     f"of the grid {EFFECTS[0]}, {EFFECTS[1]}, ..., {EFFECTS[-1]}")
    settings = PosteriorSettings()
    if args.quick:
        args.paths, args.paths_far, args.fresh, args.resamples = 4, 2, 8, 8
        args.shapes, args.effects = SHAPES[:1], [0.0, 0.6, 1.5]
        settings = PosteriorSettings(bootstraps=20, trials=20)
    cache = Cache(Path(args.out) / ".cache")
    started = time.perf_counter()
    print(f"Paths: looks at {LOOKS[0]}, {LOOKS[1]}, ..., {LOOKS[-1]} instances per side "
          f"({len(LOOKS)} looks); thresholds {THRESHOLDS[0]:.4f}, {THRESHOLDS[1]:.4f}, ..., "
          f"{THRESHOLDS[-1]:.4f} (latent-model error {sequential_error(THRESHOLDS, LOOKS):.3f}; "
          f"a fixed {LEVEL} would give {sequential_error(LEVEL, LOOKS):.3f}); bagged posteriors "
          f"B = {settings.bootstraps}, N = {settings.trials}, k = {settings.sample}; seed "
          f"{args.seed}\n")
    cells, pooled_a, paths_b, rows_b = [], {}, [], {}
    if "a" in args.only:
        cells = part_a(args, settings, cache)
        pooled_a = report_a(cells, args)
    if "b" in args.only:
        paths_b = part_b(args, settings, cache)
        rows_b = report_b(paths_b)
    targets = report_targets(cells, rows_b)
    seconds = time.perf_counter() - started
    print(f"total {seconds:.0f} s")
    from probmut.io.atomic import atomic_write_text

    document = {"thresholds": THRESHOLDS, "looks": LOOKS, "targets": targets,
                "synthetic": [{k: c[k] for k in ("shape", "effect", "q", "summary")}
                              for c in cells],
                "synthetic_pooled": pooled_a, "bundled": rows_b, "bundled_paths": paths_b,
                "seconds": seconds}
    atomic_write_text(Path(args.out) / "sequential_validation.json",
                      json.dumps(document, indent=1, default=float))


if __name__ == "__main__":
    main()
