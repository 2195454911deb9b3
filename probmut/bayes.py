"""Model-based posterior of the kill probability (nutpie or PyMC), with ArviZ diagnostics.

The bagged posterior (:mod:`probmut.posterior`) resamples the instances that were
trained, so with 20-30 instances it can only replay those few. Here each population's
accuracies get a parametric model; the kill probability ``pi`` (the chance that one
k-vs-k kill test on fresh instances kills) is a function of the model's parameters,
and its posterior follows from theirs.

Model (Kruschke's BEST, on data scaled to the pair)
---------------------------------------------------
Independent populations (source-level mutations), group g in {healthy, mutant}::

    z = (accuracy - c) / s            c, s: mean and sd of both groups pooled
    z_gi ~ StudentT(nu, mu_g, sigma_g)
    mu_g ~ Normal(0, 2)   sigma_g ~ HalfNormal(2)   nu - 1 ~ Exponential(1/29)

Paired populations (model-level mutations: mutant i derived from healthy i) are
modelled through the per-instance differences ``d_i = mutant_i - healthy_i``::

    healthy_i ~ StudentT(nu_h, mu_h, sigma_h)  (scaled as above)
    d_i / r   ~ StudentT(nu_d, mu_d, sigma_d)  r = sqrt(mean(d^2)), priors as above

so a simulated mutant instance is a simulated healthy one plus a simulated difference
(on the bundled MNIST data healthy accuracy and difference are uncorrelated, |r| < 0.13).

Why this likelihood: accuracies of trained instances are unimodal but have outliers
(an instance that trained badly; the bundled delete_training_data 3.1 population has
excess kurtosis 6). A normal likelihood lets one outlier inflate sigma; the Student-t
with a shared normality parameter ``nu`` (estimated, prior mean 30, so near-normal
unless the data say otherwise) absorbs it. A Beta likelihood was rejected: accuracies
sit within 0.001 of each other near 0.99, where a Beta is indistinguishable from a
normal and has no heavy tails. ``likelihood="normal"`` is offered for comparison.
Priors are weakly informative on the scaled data (a group mean within +-4 pooled sds,
a group sd up to a few pooled sds), so they do not depend on the accuracy's units.

Samplers
--------
``sampler="nutpie"`` (default): nutpie's NUTS (Rust) on the model's log density written
out below and compiled by Numba (cached on disk); the tests check it against PyMC's logp
and gradient. ``sampler="pymc"``: PyMC's NUTS on the PyMC model, compiled for every fit.
The same posterior; the draws differ.

Kill probability
----------------
For every posterior draw, ``trials`` k-vs-k kill tests are simulated from the model
(``(trials, k)`` samples per side) and decided at once by the compiled
:func:`probmut.killtest.kill_test_batch` with the user's
:class:`~probmut.killtest.KillCriterion`; the share killed is ``pi`` for that draw.
The posterior mean of ``pi`` is exact up to Monte-Carlo error; its interval also holds
the binomial noise of ``trials`` simulated tests per draw.

Effect sizes: the mean accuracy difference is ``mu_mutant - mu_healthy`` (the GLM
coefficient's sign); Cohen's d is ``(mu_healthy - mu_mutant) / sqrt((sigma_h^2 +
sigma_m^2) / 2)`` as in BEST (scale parameters; for the paired model
``sigma_m^2 = sigma_h^2 + sigma_d^2``), healthy minus mutant as in DeepCrime.

References
----------
Kruschke. Bayesian estimation supersedes the t test. J. Exp. Psychol. General, 2013.
Vehtari, Gelman, Simpson, Carpenter, Buerkner. Rank-normalization, folding, and
localization: an improved R-hat. Bayesian Analysis, 2021.
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.populations import aligned, as_population
from probmut.killtest import KillCriterion
from probmut.results import Result, listing

LIKELIHOODS = ("student-t", "normal")
#: NUTS implementations: nutpie's (Rust, on the model's log density compiled by Numba and
#: cached on disk) and PyMC's own (Python, on the model compiled by PyTensor for each fit).
SAMPLERS = ("nutpie", "pymc")
#: Convergence thresholds (Vehtari et al. 2021): rank-normalised split R-hat and the
#: bulk/tail effective sample size per chain.
RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100
_DRAW_CHUNK = 250
#: Sample skewness beyond which the symmetric likelihood is flagged as a poor fit.
SKEW_WARN = 1.0


class ConvergenceWarning(UserWarning):
    """The sampler did not converge: R-hat, effective sample size or divergences."""


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


def _arviz():
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


def _hdi(values, mass: float) -> tuple[float, float]:
    low, high = _arviz().hdi(np.asarray(values, dtype=np.float64).ravel(), hdi_prob=mass)
    return float(low), float(high)


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
        return _hdi(draws, self.settings.mass)

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


# --- model ------------------------------------------------------------------------------
# One model, two implementations of its log density: PyMC's (the definition, and the
# density PyMC's sampler uses) and a compiled one for nutpie's sampler
# (probmut.bayes_density, with the priors both read).

def _scale(values, center) -> float:
    scale = float(np.sqrt(np.mean((values - center) ** 2)))
    if not scale > 0:
        raise ProbmutError("every accuracy is identical; the model needs some spread")
    return scale


def _scaled_data(h, m, paired: bool):
    """The two modelled groups on the model's scale (healthy; mutant, or the per-instance
    differences when paired) and the maps (c, s, r) back to accuracies."""
    if paired:
        diff = m - h
        c = float(h.mean())
        s = _scale(h, c)
        r = _scale(diff, 0.0)
        return (h - c) / s, diff / r, (c, s, r)
    both = np.concatenate([h, m])
    c = float(both.mean())
    s = _scale(both, c)
    return (h - c) / s, (m - c) / s, (c, s, s)


def _nu_names(paired: bool, likelihood: str) -> list[str]:
    if likelihood == "normal":
        return []
    return ["nu_healthy", "nu_difference"] if paired else ["nu"]


def _pymc():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import pymc
    except ImportError:
        raise ProbmutError("the pymc sampler needs PyMC (not installed): install "
                           "probmut[bayes], e.g. pip install 'probmut[bayes]'") from None
    return pymc


@contextmanager
def _quiet_pymc():
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _pymc_model(first, second, paired: bool, likelihood: str):
    """The model in PyMC, observing the two scaled groups."""
    from probmut.bayes_density import MU_SD, NU_MINUS_ONE_MEAN, SIGMA_SD

    pm = _pymc()
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, MU_SD, shape=2)   # healthy, mutant (paired: difference)
        sigma = pm.HalfNormal("sigma", SIGMA_SD, shape=2)
        nus = [pm.Exponential(name + "_minus_one", 1 / NU_MINUS_ONE_MEAN) + 1
               for name in _nu_names(paired, likelihood)]
        for group, data in enumerate((first, second)):
            name = ("healthy", "difference" if paired else "mutant")[group]
            if likelihood == "normal":
                pm.Normal(name, mu=mu[group], sigma=sigma[group], observed=data)
            else:
                pm.StudentT(name, nu=nus[group % len(nus)], mu=mu[group], sigma=sigma[group],
                            observed=data)
    return model


def _nutpie():
    try:
        import nutpie
        import nutpie.compiled_pyfunc
    except ImportError:
        raise ProbmutError("the nutpie sampler needs nutpie (not installed): install "
                           "probmut[bayes], e.g. pip install 'probmut[bayes]', or choose "
                           "the sampler 'pymc'") from None
    return nutpie


@functools.cache
def _nutpie_model(paired: bool, likelihood: str):
    """The model for nutpie's NUTS (Rust), its density compiled by Numba (cached on disk);
    each fit passes its data with ``.with_data(first=..., second=...)``."""
    from probmut.bayes_density import NU_MINUS_ONE_MEAN, SIGMA_SD, model_log_density

    student = likelihood == "student-t"
    nus = [name + "_minus_one" for name in _nu_names(paired, likelihood)]
    names = ["mu", "sigma", *nus]
    shapes = [(2,), (2,)] + [()] * len(nus)
    # PyMC's start: its initial point (prior mean or scale), jittered by U(-1, 1) per chain
    center = np.array([0.0, 0.0, math.log(SIGMA_SD), math.log(SIGMA_SD)]
                      + [math.log(NU_MINUS_ONE_MEAN)] * len(nus))

    def log_density(x, first, second):
        return model_log_density(x, first, second, student, paired)

    def named(x, first, second):
        return {"mu": x[:2].copy(), "sigma": np.exp(x[2:4])} | {
            name: np.asarray(math.exp(x[4 + i])) for i, name in enumerate(nus)}

    def start(seed):
        return center + np.random.default_rng(seed).uniform(-1.0, 1.0, center.size)

    return _nutpie().compiled_pyfunc.from_pyfunc(
        center.size, lambda: log_density, lambda seed1, seed2, chain: named,
        [np.dtype(np.float64)] * len(names), shapes, names,
        shared_data={"first": np.zeros(3), "second": np.zeros(3)},
        make_initial_point_fn=start)


def _sample(paired: bool, first, second, settings: BayesSettings, seed: int, progressbar):
    """NUTS draws of the model's parameters given the two groups' scaled data."""
    if settings.sampler == "nutpie":
        model = _nutpie_model(paired, settings.likelihood).with_data(
            first=np.ascontiguousarray(first, dtype=np.float64),
            second=np.ascontiguousarray(second, dtype=np.float64))
        with _ctrl_c_stops():
            return _nutpie().sample(model, draws=settings.draws, tune=settings.tune,
                                    chains=settings.chains, cores=settings.cores, seed=seed,
                                    target_accept=settings.target_accept,
                                    progress_bar=progressbar, save_warmup=False)
    pm = _pymc()
    with (_pymc_model(first, second, paired, settings.likelihood), _quiet_pymc(),
          _ctrl_c_stops(), warnings.catch_warnings()):
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return pm.sample(draws=settings.draws, tune=settings.tune, chains=settings.chains,
                         cores=settings.cores, target_accept=settings.target_accept,
                         random_seed=seed, progressbar=progressbar,
                         compute_convergence_checks=False)


def _nu_draws(posterior, name, likelihood, shape):
    if likelihood == "normal":
        return np.full(shape, np.inf)
    return posterior[name + "_minus_one"].values + 1.0


def _diagnostics(idata, settings: BayesSettings) -> Diagnostics:
    names = [v for v in idata.posterior.data_vars]
    summary = _arviz().summary(idata, var_names=names, kind="diagnostics")
    divergences = int(idata.sample_stats["diverging"].values.sum())
    return Diagnostics(r_hat_max=float(summary["r_hat"].max()),
                       ess_bulk_min=float(summary["ess_bulk"].min()),
                       ess_tail_min=float(summary["ess_tail"].min()),
                       divergences=divergences, chains=settings.chains, draws=settings.draws)


def _student_t(rng, nu, size):
    # nu is per draw, shape (D,); infinite nu is the normal limit.
    nu = np.asarray(nu, dtype=np.float64)
    finite = np.isfinite(nu)
    out = rng.standard_normal(size)
    if finite.any():
        out[finite] = rng.standard_t(nu[finite][:, None, None], size=(int(finite.sum()),) + size[1:])
    return out


def _simulated_kill_rates(params, paired: bool, settings: BayesSettings,
                          stream: np.random.SeedSequence) -> np.ndarray:
    """Share of ``trials`` simulated k-vs-k tests killed, for each posterior draw.

    The draws are simulated in blocks of ``_DRAW_CHUNK``, each from its own child of
    ``stream``, on ``settings.cores`` threads (NumPy's generators release the GIL): the
    same numbers for any number of threads.
    """
    from probmut.killtest import kill_test_batch

    mu_h, sigma_h, nu_h, mu_2, sigma_2, nu_2 = params
    k, tests = settings.sample, settings.trials
    starts = range(0, mu_h.size, _DRAW_CHUNK)
    rates = np.empty(mu_h.size)

    def simulate(start, child):
        part = slice(start, start + _DRAW_CHUNK)
        rng = np.random.default_rng(child)
        count = mu_h[part].size
        size = (count, tests, k)
        x = mu_h[part, None, None] + sigma_h[part, None, None] * _student_t(rng, nu_h[part], size)
        second = mu_2[part, None, None] + sigma_2[part, None, None] * _student_t(
            rng, nu_2[part], size)
        y = x + second if paired else second
        _, _, killed = kill_test_batch(x.reshape(-1, k), y.reshape(-1, k),
                                       settings.criterion)
        rates[part] = killed.reshape(count, tests).mean(axis=1)

    children = stream.spawn(len(starts))
    with ThreadPoolExecutor(max(1, min(settings.cores, len(starts)))) as pool:
        list(pool.map(simulate, starts, children))
    return rates


def _skewness(values) -> float:
    centered = values - values.mean()
    spread = np.sqrt(np.mean(centered**2))
    return float(np.mean(centered**3) / spread**3) if spread > 0 else 0.0


@contextmanager
def _ctrl_c_stops():
    """Ctrl-C stops the sampling with KeyboardInterrupt. PyMC and nutpie catch it and
    return the draws made so far (PyMC fails on too few): after a SIGINT nothing they
    return is used."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = []

    def note(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield
    except Exception:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        raise KeyboardInterrupt


def model_posterior(healthy, mutant, settings: BayesSettings | None = None, *,
                    paired: bool = False, seed=None, name: str | None = None,
                    progressbar: bool = False) -> BayesComparison:
    """Fit the model to one healthy and one mutant population; posterior of the kill
    probability, the mean accuracy difference and Cohen's d, with diagnostics.

    Parameters
    ----------
    healthy, mutant : :class:`~probmut.io.populations.Population` or arrays of accuracies.
    settings : :class:`BayesSettings` (default: 2 chains x 1000 draws, Student-t).
    paired : model-level mutation: populations aligned by instance id, modelled
        through per-instance differences.
    seed : int, SeedSequence or None; seeds NUTS and the simulated tests.
    name : display name (default the mutant population's name).
    progressbar : the sampler's progress display (for a terminal).

    Warns :class:`ConvergenceWarning` when R-hat, ESS or divergences fail the checks.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> res = model_posterior(rng.normal(0.99, 0.001, 30), rng.normal(0.988, 0.001, 30),
    ...                       BayesSettings(draws=500, tune=500), seed=1)
    >>> res.kill_mean > 0.5, res.p_mutant_worse > 0.99, res.diagnostics.converged
    (True, True, True)
    """
    from probmut.engine import seed_sequence

    settings = settings or BayesSettings()
    settings.criterion.require_pairing(paired)
    _arviz()  # missing: say so now, not after minutes of sampling
    healthy, mutant = aligned(healthy, as_population(mutant, name or "mutant"), paired)
    smallest = min(len(healthy), len(mutant))
    if smallest < 3:
        raise ProbmutError(f"the model needs at least 3 instances per population, got {smallest}")
    sequence = seed_sequence(seed)
    sampler_stream, simulation_stream = sequence.spawn(2)
    sampler_seed = int(sampler_stream.generate_state(1)[0])
    h, m = healthy.values, mutant.values
    first, second, (c, s, r) = _scaled_data(h, m, paired)
    idata = _sample(paired, first, second, settings, sampler_seed, progressbar)
    post = idata.posterior
    shape = post["mu"].values.shape[:2]
    mu = post["mu"].values
    sigma = post["sigma"].values
    if paired:
        nu_1 = _nu_draws(post, "nu_healthy", settings.likelihood, shape)
        nu_2 = _nu_draws(post, "nu_difference", settings.likelihood, shape)
    else:
        nu_1 = nu_2 = _nu_draws(post, "nu", settings.likelihood, shape)
    mu_h, sigma_h = c + s * mu[..., 0], s * sigma[..., 0]
    if paired:      # second group: the per-instance difference
        mu_2, sigma_2 = r * mu[..., 1], r * sigma[..., 1]
        diff, sigma_m = mu_2, np.sqrt(sigma_h**2 + sigma_2**2)
    else:           # second group: the mutant
        mu_2, sigma_2 = c + s * mu[..., 1], s * sigma[..., 1]
        diff, sigma_m = mu_2 - mu_h, sigma_2
    cohens_d = -diff / np.sqrt((sigma_h**2 + sigma_m**2) / 2)
    params = [a.ravel() for a in (mu_h, sigma_h, nu_1, mu_2, sigma_2, nu_2)]
    rates = _simulated_kill_rates(params, paired, settings, simulation_stream).reshape(shape)
    diagnostics = _diagnostics(idata, settings)
    label = name or mutant.name
    if not diagnostics.converged:
        warnings.warn(f"{label}: sampling did not converge (" + "; ".join(diagnostics.problems())
                      + "); raise tune/draws before trusting the result",
                      ConvergenceWarning, stacklevel=2)
    nu_all = np.concatenate([nu_1.ravel(), nu_2.ravel()])
    for variable, draws in (("kill_probability", rates), ("mean_difference", diff),
                            ("cohens_d", cohens_d)):
        post[variable] = (("chain", "draw"), np.asarray(draws))
    return BayesComparison(
        name=label, n_healthy=len(healthy), n_mutant=len(mutant), paired=paired,
        kill_draws=rates, diff_draws=diff, d_draws=cohens_d,
        nu_mean=float(nu_all.mean()) if np.isfinite(nu_all).all() else math.inf,
        diagnostics=diagnostics, settings=settings,
        seed=seed if isinstance(seed, int) else None,
        skewness=(_skewness(h), _skewness(m - h if paired else m)), trace=idata)


def model_posteriors(healthy, mutants, settings: BayesSettings | None = None, *,
                     paired: bool = False, seed=None, names=None,
                     progress: bool = False) -> BayesStudy:
    """:func:`model_posterior` of each mutant against ``healthy``, one fit per mutant.

    Every mutant is fitted with the same seed: its numbers do not depend on which other
    mutants are analysed with it, nor on their order. ``progress`` shows one step per fit
    on stderr (and PyMC's sampling bar on a terminal).
    """
    import sys

    from probmut.engine import seed_sequence
    from probmut.progress import progress as progress_display

    settings = settings or BayesSettings()
    mutants = [as_population(m, f"mutant {i}") for i, m in enumerate(mutants, start=1)]
    if not mutants:
        raise ProbmutError("give at least one mutant population")
    _arviz()  # missing: say so before the progress display starts
    names = list(names) if names else [m.name for m in mutants]
    shared = seed_sequence(seed).entropy  # one seed for all, also when seed is None
    comparisons = []
    with progress_display(len(mutants), "bayes: model fits", enabled=progress) as bar:
        for m, label in zip(mutants, names, strict=True):
            bar.set_postfix(fitting=label)
            comparisons.append(model_posterior(
                healthy, m, settings, paired=paired, seed=shared, name=label,
                progressbar=progress and sys.stderr.isatty()))
            bar.update()
    return BayesStudy(tuple(comparisons), settings, paired,
                      seed if isinstance(seed, int) else None)
