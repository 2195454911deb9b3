"""Convergence of a fit: ArviZ's R-hat, effective sample sizes and divergences against
the thresholds of Vehtari et al. (2021), and the highest-density intervals. ArviZ is
imported on first use."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from probmut.errors import ProbmutError

#: Convergence thresholds (Vehtari et al. 2021): rank-normalised split R-hat and the
#: bulk/tail effective sample size per chain.
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


class ConvergenceWarning(UserWarning):
    """The sampler did not converge: R-hat, effective sample size or divergences."""


@dataclass(frozen=True)
class Diagnostics:
    """ArviZ convergence diagnostics of the model's parameters."""

    r_hat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int
    chains: int
    draws: int

    @property
    def converged(self) -> bool:
        need = ESS_PER_CHAIN_MIN * self.chains
        return bool(self.r_hat_max <= RHAT_MAX and self.ess_bulk_min >= need
                    and self.ess_tail_min >= need and self.divergences == 0)

    def problems(self) -> list[str]:
        need = ESS_PER_CHAIN_MIN * self.chains
        found = []
        if not self.r_hat_max <= RHAT_MAX:
            found.append(f"R-hat {self.r_hat_max:.3f} > {RHAT_MAX}")
        if not self.ess_bulk_min >= need:
            found.append(f"bulk ESS {self.ess_bulk_min:.0f} < {need}")
        if not self.ess_tail_min >= need:
            found.append(f"tail ESS {self.ess_tail_min:.0f} < {need}")
        if self.divergences:
            found.append(f"{self.divergences} divergent transitions")
        return found

    def __str__(self) -> str:
        state = "converged" if self.converged else "NOT CONVERGED: " + "; ".join(self.problems())
        return (f"R-hat max {self.r_hat_max:.3f}, ESS bulk min {self.ess_bulk_min:.0f}, "
                f"tail min {self.ess_tail_min:.0f}, divergences {self.divergences} ({state})")


def arviz():
    """ArviZ, imported on first use (it takes seconds): importing this module, as the
    command line does for its choices, needs none of the ``bayes`` extra."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import arviz
    except ImportError:
        raise ProbmutError(
            "the model-based posterior needs ArviZ (not installed): install probmut[bayes], "
            "e.g. pip install 'probmut[bayes]'") from None
    return arviz


def hdi(values, mass: float) -> tuple[float, float]:
    low, high = arviz().hdi(np.asarray(values, dtype=np.float64).ravel(), hdi_prob=mass)
    return float(low), float(high)


def diagnostics_of(idata, chains: int, draws: int) -> Diagnostics:
    """The :class:`Diagnostics` of every parameter in ``idata``'s posterior group."""
    names = [v for v in idata.posterior.data_vars]
    summary = arviz().summary(idata, var_names=names, kind="diagnostics")
    divergences = int(idata.sample_stats["diverging"].values.sum())
    return Diagnostics(r_hat_max=float(summary["r_hat"].max()),
                       ess_bulk_min=float(summary["ess_bulk"].min()),
                       ess_tail_min=float(summary["ess_tail"].min()),
                       divergences=divergences, chains=chains, draws=draws)
