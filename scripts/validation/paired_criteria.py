"""Should a paired criterion be the default for paired (model-level) mutations?

Measures, on the bundled model-level mutations (mnist and lenet, weights_fuzzing and
neurons_freezing, 20 mutants of 200 paired instances), the kill probability of one
k-vs-k test (k = 20 pairs drawn at random without replacement, ``--draws`` draws) for
every criterion of the registry:

- **false positives** under two paired nulls built from the same data, drawn afresh for
  every test: *re-paired healthy*: 20 healthy instances against 20 other healthy
  instances (independent pairs, no effect); *sign-flipped*: for each real mutant, 20
  pairs with mutant'_i = healthy_i - s_i (healthy_i - mutant_i) and random signs s_i
  (the real within-pair structure and spread of the differences, symmetric about zero:
  no effect);
- **power**: the same kill probability on the real mutants, beside each mutant's
  whole-population Cohen's d (the shift in units of the instance-to-instance spread) and
  d_z (in units of the spread of the per-instance changes).

Usage::

    python scripts/validation/paired_criteria.py              # the tables of docs/criteria.md
    python scripts/validation/paired_criteria.py --draws 2000 # quicker, noisier
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from probmut.io.manifest import Manifest
from probmut.io.populations import read_population
from probmut.killtest import CRITERIA, KillCriterion, kill_test, kill_test_batch
from probmut.population import pair

MUTATIONS = [(model, name) for model in ("mnist", "lenet")
             for name in ("weights_fuzzing", "neurons_freezing")]


def paired_populations(manifest):
    """(label, healthy values, mutant values) of every bundled paired mutant, aligned by id."""
    out = []
    for model, name in MUTATIONS:
        mutation = manifest.mutation(model, name)
        healthy = read_population(mutation.healthy)
        for magnitude, path in zip(mutation.magnitudes, mutation.files, strict=True):
            h, m = pair(healthy, read_population(path))
            out.append((f"{model} {name} {magnitude}", h.values, m.values))
    return out


def kill_rates(x, y) -> dict[str, float]:
    """Share of the tests (rows of paired samples x, y) each criterion kills."""
    return {name: float(kill_test_batch(x, y, KillCriterion(kind=name))[2].mean())
            for name in CRITERIA}


def draw_ids(size: int, draws: int, count: int, rng) -> np.ndarray:
    """``draws`` rows of ``count`` distinct ids out of ``size``."""
    return np.argsort(rng.random((draws, size)), axis=1)[:, :count]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=10000, help="tests per population (10000)")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    populations = paired_populations(Manifest.load())
    names = list(CRITERIA)
    header = f"{'':<34}" + "".join(f"{n:>12}" for n in names)

    print(f"false-positive rate of one 20-pair test ({args.draws} draws per null; mean and "
          f"max over the nulls: 2 re-paired healthy, 20 sign-flipped)")
    print(header)
    healthy_by_model = {label.split()[0]: h for label, h, _ in populations}
    repaired, flipped = [], []
    for h in healthy_by_model.values():
        ids = draw_ids(h.size, args.draws, 40, rng)
        repaired.append(kill_rates(h[ids[:, :20]], h[ids[:, 20:]]))
    for _, h, m in populations:
        ids = draw_ids(h.size, args.draws, 20, rng)
        signs = rng.choice([-1.0, 1.0], ids.shape)
        flipped.append(kill_rates(h[ids], h[ids] - signs * (h[ids] - m[ids])))
    nulls = {"re-paired healthy": repaired, "sign-flipped differences": flipped}
    for label, rates in nulls.items():
        print(f"{label + ' (mean)':<34}" + "".join(
            f"{np.mean([r[n] for r in rates]):>12.4f}" for n in names))
        print(f"{label + ' (max)':<34}" + "".join(
            f"{np.max([r[n] for r in rates]):>12.4f}" for n in names))

    print(f"\nkill probability of one 20-pair test on the bundled paired mutants "
          f"({args.draws} draws)")
    print(f"{'':<34}{'d':>7}{'d_z':>7}" + header[34:])
    power = []
    for label, h, m in populations:
        ids = draw_ids(h.size, args.draws, 20, rng)
        rates = kill_rates(h[ids], m[ids])
        power.append(rates)
        whole = [kill_test(h, m, KillCriterion(kind=kind)).effect_size
                 for kind in ("deepcrime", "paired-t")]
        print(f"{label:<34}" + "".join(f"{v:>7.2f}" for v in whole)
              + "".join(f"{rates[n]:>12.4f}" for n in names))
    print(f"{'mean':<48}" + "".join(f"{np.mean([r[n] for r in power]):>12.4f}" for n in names))
    for threshold in (0.5, 0.95):
        print(f"{'mutants with P(kill) >= ' + f'{threshold:g}':<48}" + "".join(
            f"{sum(r[n] >= threshold for r in power):>12d}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
