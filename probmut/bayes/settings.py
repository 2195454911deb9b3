"""The choices of a model-based analysis (:class:`BayesSettings`), plain Python: the
command line reads its choices and defaults here without the ``bayes`` extra."""

from __future__ import annotations

from dataclasses import dataclass, field

from probmut.killtest import KillCriterion
from probmut.validation import MAX_COUNT, check_fields, choice, instance, integer, number

LIKELIHOODS = ("student-t", "normal")
#: NUTS implementations: nutpie's (Rust, on the model's log density compiled by Numba and
#: cached on disk) and PyMC's own (Python, on the model compiled by PyTensor for each fit).
SAMPLERS = ("nutpie", "pymc")


@dataclass(frozen=True)
class BayesSettings:
    """Every choice of a model-based analysis.

    Parameters
    ----------
    draws, tune, chains : int
        NUTS draws and tuning steps per chain, and the number of chains (at least 2:
        R-hat needs several).
    cores : int
        Parallel workers (results do not depend on them): threads for nutpie's chains
        and for the kill simulation, processes for PyMC's chains.
    sampler : {"nutpie", "pymc"}
        Which NUTS draws the posterior (default nutpie): the same model and posterior,
        other draws.
    likelihood : {"student-t", "normal"}
        The model's likelihood (default the robust Student-t).
    trials : int
        Simulated k-vs-k kill tests per posterior draw.
    sample : int
        k, the instances per side of one simulated test.
    mass : float
        The probability mass of the highest-density intervals.
    target_accept : float
        NUTS's step-size adaptation target.
    criterion : KillCriterion
        The kill rule of the simulated tests.

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
        # the command line's bounds (probmut/cli/bayes.py); at least 2 chains: R-hat
        # compares chains
        check_fields(
            self, draws=integer(1, 10**6), tune=integer(1, 10**6), chains=integer(2, 64),
            cores=integer(1, 4096), sampler=choice(SAMPLERS), likelihood=choice(LIKELIHOODS),
            trials=integer(1, 10**6), sample=integer(2, MAX_COUNT),
            mass=number(0, 1, low_open=True, high_open=True),
            target_accept=number(0, 1, low_open=True, high_open=True),
            criterion=instance(KillCriterion))

    def describe(self) -> str:
        model = "Student-t" if self.likelihood == "student-t" else "Normal"
        return (f"{model} model, {self.chains} chains x {self.draws} draws ({self.tune} tuning, "
                f"{self.sampler}); "
                f"{self.trials} simulated {self.sample} vs {self.sample} tests per draw, kill iff "
                f"{self.criterion.describe()}; {self.mass:.0%} HDI")

