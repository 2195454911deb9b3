"""Validate, and calibrate, the stopping rule of `probmut train --until-settled`.

A *path* is one run of training until settled, replayed on accuracies that exist already:
the verdict of :func:`probmut.recommend.recommend` (verdict only, the defaults of the
command line) after each round, on the first n instances per side, for n = 20, 30, ...,
200 (pilot 20, rounds of 10, at most 200 per side: 19 looks), each look with the stream
`train --until-settled` gives it (the "verdict" role of probmut.seeds, of the path's
name and the look). A path stops as the command stops a mutant: at its first settled
verdict, at 200, or, not settled, when the chance of settling at 200 is under
probmut.train.rounds.FUTILITY. Each path is judged against a reference it has no part in:

(a) Synthetic populations over a grid of effects (Cohen's d from 0 to 1.5 in steps of
    0.1; the mutant worse) and three shapes: normal; heavy tailed and skewed like the
    bundled lenet populations (a mirrored log-normal: skewness -2.9, as lenet's healthy
    accuracies); and paired with a skewed drop like the bundled model-level mutants
    (mutant = 0.5 healthy + noise - a log-normal drop; correlation 0.3 to 0.5). q, the
    chance that a fresh population of 200 per side is judged killed, comes from --fresh
    independent populations per effect; path j is judged against fresh population j, and
    the expected share of wrong verdicts given q (1 - q for a settled killed, q for a
    settled not killed: the path and the fresh population are independent) is reported
    beside it, with its standard error and the upper end of its 95% interval.
(b) The 77 bundled magnitudes with 200 instances per side (4 random orders each; paired
    mutations keep their ids): a settled verdict is judged against the decision of the
    bagged posterior on the instances the path did not use when it used at most half of
    the population (100 per side), and against the whole population otherwise (reported
    separately: the reference then contains most of the path).

A path's verdict blocks (the simulated populations behind p_killed) are computed once
and cached under --out/.cache, whatever rule reads them: a rule is replayed on the same
blocks, so rules can be compared path by path (``--calibrate``), and an interrupted run
resumes. The rule the library uses (probmut.sequential.settle_threshold and
CONFIDENCE) is the one validated; ``--calibrate`` compares the family it was chosen from
(the latent model's budget, the thresholds' shape, the Monte-Carlo bound's confidence) on
the paths of a seed of its own (calibrate on one seed, validate on another).

Markdown on stdout (the tables of docs/recommend.md), the numbers in
--out/sequential_validation.json.

    python scripts/validation/sequential_validation.py [--paths 200] [--orders 4] [--quick]
        [--threads T] [--shapes 0,1,2] [--effects 0.5,0.6] [--only a|b|ab] [--calibrate]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from probmut.bagging import PosteriorSettings
from probmut.beta import beta_mean_var, fit_beta_batch, ratio_of
from probmut.engine import kill_counts
from probmut.io.cache import Cache, cache_key
from probmut.recommend import SIMULATIONS, simulate_block
from probmut.seeds import seed_of
from probmut.sequential import (
    CERTAINTY,
    CONFIDENCE,
    REFERENCE_SIZE,
    killed_of,
    plan_thresholds,
    sequential_error,
    settle,
    settle_chance,
    settle_threshold,
)
from probmut.train.rounds import FUTILITY

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pilot_validation import magnitudes  # noqa: E402  (the 77 bundled magnitudes)

PILOT, ROUND, MAXIMUM = 20, 10, 200  # the command line's defaults
LOOKS = list(range(PILOT, MAXIMUM + 1, ROUND))
EFFECTS = [round(0.1 * i, 1) for i in range(16)]
SHAPES = ("normal", "heavy-tailed (lenet-like)", "skewed drop, paired (model-level-like)")
PAIRED = {"normal": False, "heavy-tailed (lenet-like)": False,
          "skewed drop, paired (model-level-like)": True}
#: Accuracies: 0.99 plus 0.0006 (MNIST's healthy spread) times the standardised draws.
CENTRE, SCALE = 0.99, 0.0006
#: Log-normal shape parameter of the heavy tail and of the paired drop.
SIGMA = 0.7


# --- the rules ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    """Thresholds on p_killed, one per look of LOOKS, and the confidence of the
    Monte-Carlo bound that must clear them."""

    label: str
    thresholds: tuple
    confidence: float = CONFIDENCE


def library_rule() -> Rule:
    """The rule `train --until-settled` uses with the command line's defaults."""
    return Rule("probmut's", tuple(settle_threshold(n, LOOKS) for n in LOOKS), CONFIDENCE)


def family(budgets, shapes, confidences, floor=0.0) -> list[Rule]:
    """The rules ``--calibrate`` compares: the latent model's thresholds at each budget
    and shape (probmut.sequential.plan_thresholds), with each confidence."""
    return [Rule(f"budget {budget:g}, shape {shape:g}, confidence {confidence:g}",
                 tuple(plan_thresholds(LOOKS, budget=budget, shape=shape, floor=floor)),
                 confidence)
            for budget in budgets for shape in shapes for confidence in confidences]


# --- synthetic populations ----------------------------------------------------------------------

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


def judged_killed(h_rows, m_rows, paired, settings, seed, threads) -> np.ndarray:
    """The bagged posterior's decision on every row pair (what a population decides)."""
    counts = kill_counts(h_rows, m_rows, bootstraps=settings.bootstraps,
                         trials=settings.trials, sample=settings.sample, paired=paired,
                         criterion=settings.criterion, seed=seed, threads=threads)
    a, b = fit_beta_batch(counts.reshape(len(h_rows), -1), settings.trials, settings.fit,
                          settings.grid_step, settings.solver)
    means, variances = beta_mean_var(a, b)
    return np.array([ratio_of(mu, v, settings.trials) > settings.threshold
                     for mu, v in zip(means, variances, strict=True)])


# --- one path -------------------------------------------------------------------------------------

class Memo:
    """The disk cache with the entries read so far kept in memory: a rule replayed after
    another reads its blocks without touching the disk."""

    def __init__(self, directory):
        self.disk, self.memory = Cache(directory), {}

    def get(self, key, shapes=None):
        if key not in self.memory:
            self.memory[key] = self.disk.get(key, shapes)
        return self.memory[key]

    def put(self, key, **arrays):
        self.disk.put(key, **arrays)
        self.memory[key] = arrays


@dataclass
class Trajectory:
    """A path's accuracies (200 per side, in the order they are trained) and its
    verdict's stream: the blocks of simulated populations at each look are computed on
    demand and cached."""

    h: np.ndarray
    m: np.ndarray
    paired: bool
    name: str
    seed: int
    settings: PosteriorSettings
    cache: Memo
    draws: int = SIMULATIONS
    threads: int | None = None

    def verdict(self, n: int, threshold: float, confidence: float):
        """The verdict from the first n instances per side at this threshold and
        confidence: (verdict, populations judged killed, populations simulated)."""
        root = np.random.SeedSequence(seed_of(self.seed, "verdict", self.name, n))

        def simulate(block, count):
            return simulate_block(self.h[:n], self.m[:n], self.settings, role="verdict",
                                  n=REFERENCE_SIZE, block=block, count=count,
                                  paired=self.paired, root=root, cache=self.cache,
                                  threads=self.threads)

        verdict, blocks = settle(simulate, threshold, self.draws, confidence)
        return (verdict, *killed_of(blocks))


def replay(trajectory: Trajectory, rule: Rule) -> dict:
    """The path as `train --until-settled` runs it under ``rule``: looks until the first
    settled verdict, the last look, or the first look before the last where the chance of
    settling at the last is under FUTILITY (read from that look's p_killed, as
    probmut.train.rounds does)."""
    seen = []
    for i, n in enumerate(LOOKS):
        verdict, killed, used = trajectory.verdict(n, rule.thresholds[i], rule.confidence)
        p_killed = killed / used
        seen.append((p_killed, used))
        if verdict != "not settled":
            break
        if i < len(LOOKS) - 1 and settle_chance(p_killed, used, n, rule.thresholds[-1],
                                                REFERENCE_SIZE, MAXIMUM, grown=True) < FUTILITY:
            return {"verdict": verdict, "n": n, "looks": i + 1, "stopped": True,
                    "p_killed": p_killed, "trajectory": seen}
    return {"verdict": verdict, "n": n, "looks": len(seen), "stopped": False,
            "p_killed": seen[-1][0], "trajectory": seen}


def most_settled(q: float) -> float:
    """The largest share of paths that any rule may settle on a mutant whose fresh
    populations are judged killed with probability q, if at most 1 - CERTAINTY of them may
    end wrongly settled: a settled verdict is wrong with probability min(q, 1 - q) at
    best."""
    return min(1.0, (1 - CERTAINTY) / max(min(q, 1 - q), 1e-12))


def summarise(paths) -> dict:
    """Share settled, share wrongly settled (against each path's reference; and expected
    from q where known, with its standard error), mean instances per side, mean looks and
    the share stopped for futility."""
    settled = [p for p in paths if p["verdict"] != "not settled"]
    wrong = [p for p in settled if (p["verdict"] == "killed") != p["reference_killed"]]
    summary = {"paths": len(paths), "settled": len(settled) / len(paths),
               "wrong": len(wrong) / len(paths), "wrong_count": len(wrong),
               "instances": float(np.mean([p["n"] for p in paths])),
               "looks": float(np.mean([p["looks"] for p in paths])),
               "stopped": float(np.mean([p["stopped"] for p in paths]))}
    if all("q" in p for p in paths):  # the expected share of wrong verdicts given q
        each = np.array([((1 - p["q"]) if p["verdict"] == "killed" else p["q"])
                         if p["verdict"] != "not settled" else 0.0 for p in paths])
        summary["expected_wrong"] = float(each.mean())
        summary["expected_wrong_se"] = float(each.std(ddof=1) / np.sqrt(len(each)))
        summary["expected_wrong_high"] = (summary["expected_wrong"]
                                          + 1.96 * summary["expected_wrong_se"])
    return summary


# --- (a) synthetic populations --------------------------------------------------------------------

def _effect_key(effect: float) -> int:
    return int(round(effect * 100))


def cells_a(args, settings, cache) -> list[dict]:
    """Every shape and effect of (a): q from the fresh populations, and the trajectories
    of its paths (``--paths`` where 0.1 <= q <= 0.9, ``--paths-near`` where 0.02 <= q <=
    0.98, ``--paths-far`` elsewhere: a settled verdict there is almost never wrong)."""
    cells = []
    for shape in args.shapes:
        s, paired = SHAPES.index(shape), PAIRED[shape]
        for effect in args.effects:
            e = _effect_key(effect)  # seeds follow the effect: a subset reuses the same paths
            key = cache_key("sequential-validation fresh", shape, effect, args.fresh,
                            settings, args.seed)
            fresh = cache.get(key)
            if fresh is None:
                rng = np.random.default_rng(np.random.SeedSequence(args.seed,
                                                                   spawn_key=(s, e, 0)))
                h, m = synthetic(shape, effect, rng, args.fresh, REFERENCE_SIZE)
                fresh = {"killed": judged_killed(h, m, paired, settings,
                                                 rng.integers(2**62), args.threads)}
                cache.put(key, **fresh)
            fresh_killed = np.asarray(fresh["killed"], dtype=bool)
            q = float(fresh_killed.mean())
            count = (args.paths if 0.1 <= q <= 0.9 else
                     args.paths_near if 0.02 <= q <= 0.98 else args.paths_far)
            trajectories = []
            for j in range(count):
                rng = np.random.default_rng(np.random.SeedSequence(args.seed,
                                                                   spawn_key=(s, e, 1, j)))
                h, m = (rows[0] for rows in synthetic(shape, effect, rng, 1, MAXIMUM))
                trajectories.append(Trajectory(h, m, paired, f"{shape} {effect} {j}",
                                               args.seed, settings, cache, args.draws,
                                               args.threads))
            cells.append({"shape": shape, "effect": effect, "q": q,
                          "fresh_killed": fresh_killed, "trajectories": trajectories})
    return cells


def run_a(cells, rule: Rule, progress: str | None = None) -> list[dict]:
    """Every path of (a) replayed under ``rule``, with its q and its own reference."""
    bar = tqdm(total=sum(len(c["trajectories"]) for c in cells), desc=progress, unit="path",
               file=sys.stderr, disable=progress is None)
    results = []
    for cell in cells:
        paths = []
        for j, trajectory in enumerate(cell["trajectories"]):
            path = replay(trajectory, rule)
            path.update(q=cell["q"], reference_killed=bool(
                cell["fresh_killed"][j % len(cell["fresh_killed"])]))
            paths.append(path)
            bar.update()
        results.append({"shape": cell["shape"], "effect": cell["effect"], "q": cell["q"],
                        "paths": paths, "summary": summarise(paths)})
    bar.close()
    return results


def report_a(cells, args):
    print("## (a) Synthetic populations: wrong settled verdicts against fresh populations\n")
    print(f"{args.paths} paths per effect and shape where 0.1 <= q <= 0.9, {args.paths_near} "
          f"where 0.02 <= q <= 0.98, {args.paths_far} elsewhere; q from {args.fresh} fresh "
          f"populations of {REFERENCE_SIZE} per side; 'wrong' judges each path against its own "
          "fresh population, 'expected wrong' weighs each settled verdict by its chance of "
          "being wrong given q (standard error in brackets; 'high': the upper end of its 95% "
          f"interval). Paths stop as the command stops them (settled, at {MAXIMUM}, or when "
          f"the chance of settling at {MAXIMUM} is under {FUTILITY:g}: 'stopped'). 'Most any "
          "rule may settle': a settled verdict is wrong with probability min(q, 1 - q) at "
          f"best, so no rule keeping wrong settled verdicts under {1 - CERTAINTY:.0%} settles "
          "more.\n")
    pooled = {}
    for shape in dict.fromkeys(c["shape"] for c in cells):
        print(f"### {shape}\n")
        print("| d | q | paths | settled | most any rule may settle | wrong | expected wrong | "
              "high | mean instances per side | mean looks | stopped |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        rows = [c for c in cells if c["shape"] == shape]
        for c in rows:
            s = c["summary"]
            print(f"| {c['effect']:.2f} | {c['q']:.3f} | {s['paths']} | {s['settled']:.1%} | "
                  f"{most_settled(c['q']):.0%} | {s['wrong']:.1%} | {s['expected_wrong']:.1%} "
                  f"({s['expected_wrong_se']:.1%}) | {s['expected_wrong_high']:.1%} | "
                  f"{s['instances']:.0f} | {s['looks']:.1f} | {s['stopped']:.0%} |")
        pooled[shape] = summarise([p for c in rows for p in c["paths"]])
        worst = max(rows, key=lambda c: c["summary"]["expected_wrong"])
        print(f"\nPooled over the grid: settled {pooled[shape]['settled']:.1%}, wrong "
              f"{pooled[shape]['wrong']:.1%}, expected wrong {pooled[shape]['expected_wrong']:.1%}"
              f", mean instances {pooled[shape]['instances']:.0f}; largest expected wrong "
              f"{worst['summary']['expected_wrong']:.1%} "
              f"({worst['summary']['expected_wrong_se']:.1%}) at d = {worst['effect']:.2f} "
              f"(q = {worst['q']:.2f}).\n")
    return pooled


# --- (b) the bundled magnitudes ---------------------------------------------------------------

def trajectories_b(args, settings, cache) -> list[dict]:
    """Every bundled magnitude in ``--orders`` random orders, with its resampled q."""
    found = magnitudes()
    found = found[::13] if args.quick else found
    orders = 1 if args.quick else args.orders
    items = []
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
                                              rng.integers(2**62), args.threads)}
            cache.put(key, **stored)
        q = float(np.mean(stored["killed"]))
        for j in range(orders):
            rng = np.random.default_rng(np.random.SeedSequence(args.seed,
                                                               spawn_key=(100, index, j)))
            order_h = rng.permutation(h.size)
            order_m = order_h if paired else rng.permutation(m.size)
            items.append({"magnitude": label, "model": model, "order": j, "resampled_q": q,
                          "h": h, "m": m, "order_h": order_h, "order_m": order_m,
                          "paired": paired,
                          "trajectory": Trajectory(h[order_h], m[order_m], paired,
                                                   f"{label} {j}", args.seed, settings, cache,
                                                   args.draws, args.threads)})
    return items


def run_b(items, rule: Rule, settings, cache, threads, progress: str | None = None) -> list[dict]:
    """Every bundled path replayed under ``rule``, judged against the instances it did not
    use (or the whole population)."""
    results = []
    for item in tqdm(items, desc=progress, unit="path", file=sys.stderr,
                     disable=progress is None):
        path = replay(item["trajectory"], rule)
        settled = path["verdict"] != "not settled"
        population = min(item["h"].size, item["m"].size)
        outside = settled and path["n"] <= population // 2
        path.update(magnitude=item["magnitude"], model=item["model"], order=item["order"],
                    outside=outside, reference_killed=None, resampled_q=item["resampled_q"])
        if settled:  # the decision on the instances not used (or on all of them)
            used = path["n"] if outside else 0
            rest_h = np.sort(item["order_h"][used:])
            rest_m = np.sort(item["order_m"][used:])
            key = cache_key("sequential-validation reference", item["h"], item["m"],
                            item["paired"], settings, rest_h, rest_m)
            stored = cache.get(key)
            if stored is None:
                stored = {"killed": judged_killed(item["h"][rest_h][None],
                                                  item["m"][rest_m][None], item["paired"],
                                                  settings, 42, threads)}
                cache.put(key, **stored)
            path["reference_killed"] = bool(stored["killed"][0])
        results.append(path)
    return results


def report_b(paths):
    print("## (b) The bundled magnitudes: wrong settled verdicts against the instances not used\n")
    print("| paths | settled | wrong | mean instances per side | mean looks | stopped |")
    print("|---|---|---|---|---|---|")
    settled = [p for p in paths if p["verdict"] != "not settled"]
    groups = {"all": paths,
              "settled from at most 100 per side (reference: the unused instances)":
                  [p for p in settled if p["outside"]],
              "settled from more than 100 per side (reference: the whole population)":
                  [p for p in settled if not p["outside"]]}
    rows = {}
    for name, group in groups.items():
        if not group:
            continue
        s = summarise(group)
        rows[name] = s
        print(f"| {name}: {s['paths']} | {s['settled']:.1%} | {s['wrong']:.1%} | "
              f"{s['instances']:.0f} | {s['looks']:.1f} | {s['stopped']:.0%} |")
    bands = (("q <= 0.05", lambda q: q <= 0.05), ("0.05 < q < 0.95", lambda q: 0.05 < q < 0.95),
             ("q >= 0.95", lambda q: q >= 0.95))
    print("\nBy q, the share of populations of 200 resampled from the magnitude's whole "
          "populations that are judged killed (a bootstrap reading of the chance that a "
          "fresh population is), with the most any rule keeping wrong settled verdicts under "
          f"{1 - CERTAINTY:.0%} may settle (mean over the paths of min(1, {1 - CERTAINTY:g} / "
          "min(q, 1 - q))):\n")
    print("| q | paths | settled | most any rule may settle | wrong | mean instances per side "
          "| settled at the first or second look |")
    print("|---|---|---|---|---|---|---|")
    for name, inside in bands + (("all", lambda q: True),):
        group = [p for p in paths if inside(p["resampled_q"])]
        if group:
            s = summarise(group)
            bound = float(np.mean([most_settled(p["resampled_q"]) for p in group]))
            early = float(np.mean([p["verdict"] != "not settled" and p["looks"] <= 2
                                   for p in group]))
            rows[f"q {name}"] = s | {"most_settled": bound, "early": early}
            print(f"| {name} | {s['paths']} | {s['settled']:.1%} | {bound:.1%} | "
                  f"{s['wrong']:.1%} | {s['instances']:.0f} | {early:.1%} |")
    wrong = [p for p in settled if (p["verdict"] == "killed") != p["reference_killed"]]
    print("\nWrong settled verdicts:\n")
    for p in wrong:
        print(f"- {p['magnitude']}, order {p['order']}: {p['verdict']} at {p['n']} per side "
              f"(P(killed) {p['p_killed']:.3f}; q {p['resampled_q']:.2f}); reference "
              f"({'unused instances' if p['outside'] else 'whole population'}): "
              f"{'killed' if p['reference_killed'] else 'not killed'}")
    if not wrong:
        print("- none")
    print()
    return rows


# --- targets and calibration -----------------------------------------------------------

def clear_looks(cells) -> dict:
    """Mean looks of the paths of clear effects (q = 0 or 1) that settle, per shape."""
    return {shape: float(np.mean([p["looks"] for c in cells if c["shape"] == shape
                                  and c["q"] in (0.0, 1.0) for p in c["paths"]]))
            for shape in dict.fromkeys(c["shape"] for c in cells)}


def report_targets(cells, rows_b) -> list:
    print("## Targets\n")
    print("| target | measured | met |")
    print("|---|---|---|")
    targets = []
    for shape in dict.fromkeys(c["shape"] for c in cells):
        worst = max((c for c in cells if c["shape"] == shape),
                    key=lambda c: c["summary"]["expected_wrong"])
        s = worst["summary"]
        targets.append((f"(a) {shape}: wrong settled verdicts at most 5% at every effect",
                        f"largest {s['expected_wrong']:.1%} (standard error "
                        f"{s['expected_wrong_se']:.1%}, 95% interval up to "
                        f"{s['expected_wrong_high']:.1%}; d = {worst['effect']:.2f}, "
                        f"q = {worst['q']:.2f}, {s['paths']} paths)",
                        s["expected_wrong"] <= 0.05))
    for shape, looks in clear_looks(cells).items():
        zero = [c for c in cells if c["shape"] == shape and c["effect"] == 0.0]
        if zero:
            s = zero[0]["summary"]
            targets.append((f"(a) {shape}: d = 0 settles at the first or second look",
                            f"{s['looks']:.1f} looks, {s['instances']:.0f} instances per "
                            f"side on average (every clear effect: {looks:.1f} looks)",
                            s["looks"] <= 2))
    if rows_b:
        everything = rows_b["all"]
        targets += [
            ("(b) wrong settled verdicts at most 2% pooled over the 77",
             f"{everything['wrong']:.1%}", everything["wrong"] <= 0.02),
            ("(b) at least 75% of the paths settled by 200 per side",
             f"{everything['settled']:.1%} (most any rule may settle: "
             f"{rows_b['q all']['most_settled']:.1%})", everything["settled"] >= 0.75),
            ("(b) at most 67 instances per side on average (a third of 200)",
             f"{everything['instances']:.0f}", everything["instances"] <= 67)]
    for target, measured, met in targets:
        print(f"| {target} | {measured} | {'yes' if met else '**no**'} |")
    print()
    return [{"target": t, "measured": v, "met": bool(ok)} for t, v, ok in targets]


def calibrate(cells, items, rules, settings, cache, args) -> list[dict]:
    """Every rule of the family on the same paths: its worst expected wrong share over
    (a)'s cells (with its standard error and the upper end of its 95% interval), its
    pooled instances and settled share on (a), and on (b)."""
    print("## Calibration: the family of rules on the paths of one seed\n")
    print("| rule | thresholds at 20, 30, 100, 200 | worst expected wrong (se) [high] | "
          "at d, shape | (a) settled | (a) instances | (b) settled | (b) wrong | "
          "(b) instances |")
    print("|---|---|---|---|---|---|---|---|---|")
    table = []
    for rule in rules:
        replayed = run_a(cells, rule, progress=f"calibrate {rule.label}") if cells else []
        b = summarise(run_b(items, rule, settings, cache, args.threads)) if items else None
        picked = [rule.thresholds[LOOKS.index(n)] for n in (20, 30, 100, 200)]
        row = {"rule": rule.label, "thresholds": list(rule.thresholds),
               "confidence": rule.confidence, "b": b}
        a_cells = "- | - | - | -"
        if replayed:  # (a) run too (--only a or ab)
            worst = max(replayed, key=lambda c: c["summary"]["expected_wrong"])
            pooled = summarise([p for c in replayed for p in c["paths"]])
            s = worst["summary"]
            row |= {"worst": s, "worst_effect": worst["effect"], "worst_shape": worst["shape"],
                    "settled_a": pooled["settled"], "instances_a": pooled["instances"],
                    "cells": [{k: c[k] for k in ("shape", "effect", "q", "summary")}
                              for c in replayed]}
            a_cells = (f"{s['expected_wrong']:.1%} ({s['expected_wrong_se']:.1%}) "
                       f"[{s['expected_wrong_high']:.1%}] | {worst['effect']:.2f}, "
                       f"{worst['shape']} | {pooled['settled']:.1%} | {pooled['instances']:.0f}")
        table.append(row)
        b_cells = (f"{b['settled']:.1%} | {b['wrong']:.1%} | {b['instances']:.0f}" if b else
                   "- | - | -")
        print(f"| {rule.label} | {', '.join(f'{t:.4f}' for t in picked)} | {a_cells} | "
              f"{b_cells} |")
    print()
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=200,
                        help="paths per effect and shape in (a) where 0.1 <= q <= 0.9 (200)")
    parser.add_argument("--paths-near", type=int, default=60,
                        help="paths per effect and shape in (a) where 0.02 <= q <= 0.98 "
                             "otherwise (60)")
    parser.add_argument("--paths-far", type=int, default=25,
                        help="paths per effect and shape in (a) elsewhere (25)")
    parser.add_argument("--fresh", type=int, default=400,
                        help="fresh reference populations per effect and shape in (a) (400)")
    parser.add_argument("--orders", type=int, default=4,
                        help="random orders per bundled magnitude in (b) (4)")
    parser.add_argument("--resamples", type=int, default=100,
                        help="populations of 200 resampled per bundled magnitude for its q in "
                             "(b) (100)")
    parser.add_argument("--draws", type=int, default=SIMULATIONS,
                        help=f"the verdict's first block of simulated populations ({SIMULATIONS})")
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default="validation_results")
    parser.add_argument("--only", default="ab", choices=["a", "b", "ab"],
                        help="the parts to run (both)")
    parser.add_argument("--shapes", default="0,1,2",
                        help="the shapes of (a), by number: " + ", ".join(
                            f"{i} {shape}" for i, shape in enumerate(SHAPES)) + " (all)")
    parser.add_argument("--effects", default=None,
                        help="effects d of (a), comma-separated (the grid 0, 0.1, ..., 1.5)")
    parser.add_argument("--calibrate", action="store_true",
                        help="compare the family of rules (--budgets x --rule-shapes x "
                             "--confidences) on the same paths instead of validating "
                             "probmut's rule")
    parser.add_argument("--budgets", default="0.05,0.075,0.1,0.125,0.15",
                        help="latent-model budgets of the family (--calibrate)")
    parser.add_argument("--rule-shapes", default="0,0.2",
                        help="thresholds' shapes of the family (--calibrate)")
    parser.add_argument("--confidences", default="0.95",
                        help="Monte-Carlo bound confidences of the family (--calibrate)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: the normal shape at d = 0, 0.6, 1.5, 4 paths, "
                             "6 magnitudes, smaller bagged posteriors")
    args = parser.parse_args()
    try:
        args.shapes = [SHAPES[int(i)] for i in args.shapes.split(",")]
        args.effects = (EFFECTS if args.effects is None else
                        [round(float(d), 2) for d in args.effects.split(",")])
        numbers = {name: [float(v) for v in getattr(args, name).split(",")]
                   for name in ("budgets", "rule_shapes", "confidences")}
    except (ValueError, IndexError):
        parser.error(f"--shapes takes numbers from 0 to {len(SHAPES) - 1}; --effects, "
                     "--budgets, --rule-shapes and --confidences take numbers")
    settings = PosteriorSettings()
    if args.quick:
        args.paths, args.paths_near, args.paths_far, args.fresh, args.resamples = 4, 4, 2, 8, 8
        args.shapes, args.effects = SHAPES[:1], [0.0, 0.6, 1.5]
        settings = PosteriorSettings(bootstraps=20, trials=20)
    cache = Memo(Path(args.out) / ".cache")
    started = time.perf_counter()
    rule = library_rule()
    print(f"Paths: looks at {LOOKS[0]}, {LOOKS[1]}, ..., {LOOKS[-1]} instances per side "
          f"({len(LOOKS)} looks); probmut's thresholds {rule.thresholds[0]:.4f}, "
          f"{rule.thresholds[1]:.4f}, ..., {rule.thresholds[-1]:.4f} (latent-model error "
          f"{sequential_error(rule.thresholds, LOOKS):.3f}; a fixed {CERTAINTY} would give "
          f"{sequential_error(CERTAINTY, LOOKS):.3f}), Monte-Carlo bound of confidence "
          f"{rule.confidence:g}; bagged posteriors B = {settings.bootstraps}, "
          f"N = {settings.trials}, k = {settings.sample}; seed {args.seed}\n")
    cells = cells_a(args, settings, cache) if "a" in args.only else []
    items = trajectories_b(args, settings, cache) if "b" in args.only else []
    document = {"thresholds": list(rule.thresholds), "confidence": rule.confidence,
                "looks": LOOKS, "seed": args.seed}
    if args.calibrate:
        rules = family(numbers["budgets"], numbers["rule_shapes"], numbers["confidences"])
        document["calibration"] = calibrate(cells, items, rules, settings, cache, args)
    else:
        replayed = run_a(cells, rule, "(a) synthetic paths") if cells else []
        pooled_a = report_a(replayed, args) if replayed else {}
        paths_b = (run_b(items, rule, settings, cache, args.threads, "(b) bundled paths")
                   if items else [])
        rows_b = report_b(paths_b) if paths_b else {}
        document |= {"targets": report_targets(replayed, rows_b),
                     "synthetic": [{k: c[k] for k in ("shape", "effect", "q", "summary")}
                                   for c in replayed],
                     "synthetic_pooled": pooled_a, "bundled": rows_b,
                     "bundled_paths": paths_b}
    seconds = time.perf_counter() - started
    print(f"total {seconds:.0f} s")
    from probmut.io.atomic import atomic_write_text

    document["seconds"] = seconds
    atomic_write_text(Path(args.out) / "sequential_validation.json",
                      json.dumps(document, indent=1, default=float))


if __name__ == "__main__":
    main()
