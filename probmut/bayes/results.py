"""The answers of a model-based analysis: one mutant's posterior (:class:`BayesComparison`)
and a study of several (:class:`BayesStudy`), as text, JSON, DataFrame or netCDF traces."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from probmut.bayes.diagnostics import Diagnostics, hdi
from probmut.bayes.settings import BayesSettings
from probmut.results import Result, listing

#: Sample skewness beyond which the symmetric likelihood is flagged as a poor fit.
SKEW_WARN = 1.0


@dataclass(frozen=True)
class BayesComparison:
    """Model-based posterior of one mutant against the healthy population.

    The ``*_draws`` arrays have shape ``(chains, draws)``; ``kill_draws`` holds the
    simulated kill probability of each posterior draw.
    """

    name: str
    n_healthy: int
    n_mutant: int
    paired: bool
    kill_draws: np.ndarray = field(repr=False)
    diff_draws: np.ndarray = field(repr=False)
    d_draws: np.ndarray = field(repr=False)
    nu_mean: float
    diagnostics: Diagnostics
    settings: BayesSettings
    seed: int | None = None
    skewness: tuple[float, float] = (0.0, 0.0)
    #: The ArviZ InferenceData of the fit, with the derived kill probability, mean
    #: difference and Cohen's d added to its posterior group.
    trace: object = field(default=None, repr=False, compare=False)

    def skew_problem(self) -> str | None:
        """A note when the modelled data are too skewed for a symmetric likelihood."""
        groups = ("healthy", "difference" if self.paired else "mutant")
        bad = [f"{g} skewness {v:+.2f}" for g, v in zip(groups, self.skewness, strict=True)
               if abs(v) > SKEW_WARN]
        if not bad:
            return None
        return (", ".join(bad) + ": the symmetric model misses the long tail and can "
                "misjudge the kill probability; compare with probmut posterior")

    def interval(self, draws) -> tuple[float, float]:
        return hdi(draws, self.settings.mass)

    @property
    def kill_mean(self) -> float:
        return float(self.kill_draws.mean())

    @property
    def p_mutant_worse(self) -> float:
        """Posterior probability that the mutant's mean accuracy is below the healthy one."""
        return float((self.diff_draws < 0).mean())

    def to_dict(self) -> dict:
        row = {"name": self.name, "n_healthy": self.n_healthy, "n_mutant": self.n_mutant,
               "paired": self.paired}
        for key, draws in (("kill_probability", self.kill_draws),
                           ("mean_difference", self.diff_draws), ("cohens_d", self.d_draws)):
            low, high = self.interval(draws)
            row[key] = {"mean": float(draws.mean()), "sd": float(draws.std()),
                        "hdi_low": low, "hdi_high": high}
        row["p_mutant_worse"] = self.p_mutant_worse
        row["nu_mean"] = self.nu_mean
        row["skewness"] = list(self.skewness)
        row["skew_warning"] = self.skew_problem()
        row["diagnostics"] = asdict(self.diagnostics) | {"converged": self.diagnostics.converged}
        return row

    def summary_cells(self) -> list[str]:
        """The cells of this mutant's row of the study's table (see :class:`BayesStudy`)."""
        low, high = self.interval(self.kill_draws)
        d_low, d_high = self.interval(self.d_draws)
        diff_low, diff_high = self.interval(self.diff_draws)
        return [self.name, f"{self.kill_mean:.3f} [{low:.3f}, {high:.3f}]",
                f"{self.diff_draws.mean():+.5f} [{diff_low:+.5f}, {diff_high:+.5f}]",
                f"{self.d_draws.mean():+.2f} [{d_low:+.2f}, {d_high:+.2f}]",
                f"{self.p_mutant_worse:.3f}", f"{self.diagnostics.r_hat_max:.3f}",
                f"{self.diagnostics.ess_bulk_min:.0f}", f"{self.diagnostics.divergences:d}"]


@dataclass(frozen=True)
class BayesStudy(Result):
    """Model-based posteriors of one or more mutants against one healthy population."""

    comparisons: tuple[BayesComparison, ...]
    settings: BayesSettings
    paired: bool = False
    seed: int | None = None

    @property
    def converged(self) -> bool:
        return all(c.diagnostics.converged for c in self.comparisons)

    def save_traces(self, path) -> list:
        """Write each fit's ArviZ InferenceData as netCDF: ``path`` itself for one mutant,
        ``{stem}_{mutant}{suffix}`` beside it for several. Returns the paths written.

        Read one back with ``arviz.from_netcdf(path)``.
        """
        from pathlib import Path

        from probmut.io.atomic import atomic_target

        path = Path(path)
        written = []
        for comparison in self.comparisons:
            target = (path if len(self.comparisons) == 1 else
                      path.with_name(f"{path.stem}_{comparison.name}{path.suffix}"))
            with atomic_target(target) as temporary:
                comparison.trace.to_netcdf(str(temporary), engine="h5netcdf")
            written.append(target)
        return written

    def to_dict(self) -> dict:
        return {**listing([c.to_dict() for c in self.comparisons]),
                "paired": self.paired,
                "seed": self.seed, "converged": self.converged,
                "settings": self.settings.describe(),
                "settings_detail": {k: v for k, v in asdict(self.settings).items()
                                    if k != "criterion"}
                | {"criterion": asdict(self.settings.criterion)}}


    def to_frame(self):
        import pandas as pd

        rows = []
        for c in self.comparisons:
            flat = {"name": c.name}
            for key, value in c.to_dict().items():
                if isinstance(value, dict):
                    flat |= {f"{key}_{k}": v for k, v in value.items()}
                elif key != "name":
                    flat[key] = value
            rows.append(flat)
        return pd.DataFrame(rows).set_index("name")

    #: The table's columns: heading and narrowest width (the first left-aligned, the others
    #: right-aligned and at least two spaces wider than their longest cell).
    COLUMNS = (("mutant", 16), ("P(kill) [{mass} HDI]", 22),
               ("mean diff mutant-healthy [HDI]", 32), ("Cohen d [HDI]", 22),
               ("P(worse)", 9), ("R-hat", 7), ("ESS", 7), ("div", 5))

    def __str__(self) -> str:
        mass = f"{self.settings.mass:.0%}"
        rows = [c.summary_cells() for c in self.comparisons]
        headings = [heading.format(mass=mass) for heading, _ in self.COLUMNS]
        widths = [max(least, len(headings[0]) if j == 0 else len(headings[j]) + 1,
                      *(len(row[j]) + (0 if j == 0 else 2) for row in rows))
                  for j, (_, least) in enumerate(self.COLUMNS)]

        def line(cells):
            return cells[0].ljust(widths[0]) + "".join(
                cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))

        header = line(headings)
        lines = [header, "-" * len(header)] + [
            line(row) + ("" if c.diagnostics.converged else "  NOT CONVERGED")
            for row, c in zip(rows, self.comparisons, strict=True)]
        lines.append(f"settings: {self.settings.describe()}"
                     + (", paired (per-instance differences)" if self.paired else "")
                     + (f", seed {self.seed}" if self.seed is not None else ""))
        bad = [c for c in self.comparisons if not c.diagnostics.converged]
        for c in bad:
            lines.append(f"WARNING: {c.name}: sampling did not converge ("
                         + "; ".join(c.diagnostics.problems())
                         + "); do not trust these numbers; raise the tuning steps and draws")
        for c in self.comparisons:
            if c.skew_problem():
                lines.append(f"NOTE: {c.name}: {c.skew_problem()}")
        return "\n".join(lines)
