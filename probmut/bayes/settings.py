"""The choices of a model-based analysis (:class:`BayesSettings`), plain Python: the
command line reads its choices and defaults here without the ``bayes`` extra."""

from __future__ import annotations

from dataclasses import dataclass, field

from probmut.errors import ProbmutError
from probmut.killtest import KillCriterion

LIKELIHOODS = ("student-t", "normal")
#: NUTS implementations: nutpie's (Rust, on the model's log density compiled by Numba and
#: cached on disk) and PyMC's own (Python, on the model compiled by PyTensor for each fit).
SAMPLERS = ("nutpie", "pymc")


@dataclass(frozen=True)
class BayesSettings:
    """Every choice of a model-based analysis.

    Parameters
    ----------
    draws, tune, chains : NUTS draws and tuning steps per chain, number of chains (>= 2,
        R-hat needs several).
    cores : parallel workers (results do not depend on them): threads for nutpie's chains
        and for the kill simulation, processes for PyMC's chains.
    sampler : ``"nutpie"`` (default) or ``"pymc"``: which NUTS draws the posterior; the
        same model and posterior, other draws.
    likelihood : ``"student-t"`` (robust, default) or ``"normal"``.
    trials : simulated k-vs-k kill tests per posterior draw.
    sample : k, instances per side of one simulated test.
    mass : probability mass of the highest-density intervals.
    target_accept : NUTS step-size adaptation target.
    criterion : the kill rule of the simulated tests.

    >>> BayesSettings(draws=500).describe()[:40]
    'Student-t model, 2 chains x 500 draws (1'
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 2
    cores: int = 1
    sampler: str = "nutpie"
    likelihood: str = "student-t"
    trials: int = 100
    sample: int = 20
    mass: float = 0.95
    target_accept: float = 0.9
    criterion: KillCriterion = field(default_factory=KillCriterion)

    def __post_init__(self):
        if self.likelihood not in LIKELIHOODS:
            raise ProbmutError(f"unknown likelihood {self.likelihood!r}; choose one of "
                               f"{', '.join(LIKELIHOODS)}")
        if self.sampler not in SAMPLERS:
            raise ProbmutError(f"unknown sampler {self.sampler!r}; choose one of "
                               f"{', '.join(SAMPLERS)}")
        for name in ("draws", "tune", "trials", "cores"):
            if int(getattr(self, name)) < 1:
                raise ProbmutError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.chains < 2:
            raise ProbmutError(f"use at least 2 chains (R-hat compares chains), got {self.chains}")
        if self.sample < 2:
            raise ProbmutError(f"the sample size k must be at least 2, got {self.sample}")
        if not 0 < self.mass < 1:
            raise ProbmutError(f"the interval's mass must be in (0, 1), got {self.mass}")
        if not 0 < self.target_accept < 1:
            raise ProbmutError(f"target_accept must be in (0, 1), got {self.target_accept}")

    def describe(self) -> str:
        model = "Student-t" if self.likelihood == "student-t" else "Normal"
        return (f"{model} model, {self.chains} chains x {self.draws} draws ({self.tune} tuning, "
                f"{self.sampler}); "
                f"{self.trials} simulated {self.sample} vs {self.sample} tests per draw, kill iff "
                f"{self.criterion.describe()}; {self.mass:.0%} HDI")

