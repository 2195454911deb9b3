"""The public API (``probmut.__all__`` and the settings classes) refuses what the command line
refuses: a wrong type or value is one ProbmutError naming the argument, never a raw
AttributeError or TypeError from inside, nor a silent wrong answer (issue 57); and
``help(probmut)`` lists the API it loads lazily."""

import functools
import math
import pydoc

import numpy as np
import pandas as pd
import pytest

import probmut
from probmut import ProbmutError
from probmut.bayes.settings import BayesSettings
from probmut.io.cache import Cache

from .conftest import KILL_RATES, RAW

H = np.linspace(0.90, 0.95, 40)
M = np.linspace(0.85, 0.90, 40)
NAN = math.nan
TABLE = pd.DataFrame({"population": ["healthy"] * 3 + ["m"] * 3,
                      "accuracy": [0.9, 0.91, 0.92, 0.8, 0.81, 0.82]})
HEALTHY_CSV = RAW / "mnist" / "results_mnist_original.csv"


@functools.cache
def _posterior():
    return probmut.bagged_posteriors(H, [M], probmut.PosteriorSettings(bootstraps=2, trials=10),
                                     seed=0).populations[1]


#: (public name, the call, the argument it must name). Each name of probmut.__all__ that
#: is a function or a class is here (test_every_public_callable_is_covered).
CASES = [
    ("Population", lambda: probmut.Population(values="x", ids=[0]), None),
    ("Population", lambda: probmut.Population(values=[0.9], ids=[0], name=5), "name"),
    ("as_population", lambda: probmut.as_population([0.9], name=5), "name"),
    ("as_population", lambda: probmut.as_population(5), None),
    ("pair", lambda: probmut.pair(H, "x"), "mutant"),
    ("read_population", lambda: probmut.read_population(5), "path"),
    ("read_population", lambda: probmut.read_population(HEALTHY_CSV, strict="yes"), "strict"),
    ("read_population", lambda: probmut.read_population(HEALTHY_CSV, manifest="x"),
     "manifest"),
    ("write_tidy", lambda: probmut.write_tidy("x", "out.csv"), "population"),
    ("write_tidy", lambda: probmut.write_tidy(H, 5), "path"),
    ("load_kill_rates", lambda: probmut.load_kill_rates(KILL_RATES / "mnist_orig.npy", 0),
     "trials"),
    ("load_kill_rates", lambda: probmut.load_kill_rates(KILL_RATES / "mnist_orig.npy", "100"),
     "trials"),
    ("load_kill_rates", lambda: probmut.load_kill_rates(None, 100), "path"),
    ("Manifest", lambda: probmut.Manifest.load(5), "path"),
    ("KillCriterion", lambda: probmut.KillCriterion(alpha=NAN), "alpha"),
    ("KillCriterion", lambda: probmut.KillCriterion(alpha="0.05"), "alpha"),
    ("KillCriterion", lambda: probmut.KillCriterion(round_p=2.5), "round_p"),
    ("KillCriterion", lambda: probmut.KillCriterion(kind=5), "kind"),
    ("KillCriterion", lambda: probmut.KillCriterion(direction="worse"), "direction"),
    ("KillCriterion", lambda: probmut.KillCriterion(effect=[]), "effect"),
    ("kill_test", lambda: probmut.kill_test(H, M, criterion=5), "criterion"),
    ("kill_test", lambda: probmut.kill_test("x", M), "healthy"),
    ("kill_test", lambda: probmut.kill_test(H, [0.9, NAN]), "mutant"),
    ("kill_test_batch", lambda: probmut.kill_test_batch([H], [M], criterion="welch"),
     "criterion"),
    ("kill_test_batch", lambda: probmut.kill_test_batch([H], "x"), "mutant"),
    ("kill_tests", lambda: probmut.kill_tests(H, probmut.as_population(M)), "mutants"),
    ("kill_tests", lambda: probmut.kill_tests(H, [M], paired="yes"), "paired"),
    ("kill_tests", lambda: probmut.kill_tests(H, ["x"]), "mutants[0]"),
    ("kill_counts", lambda: probmut.kill_counts(H, M, bootstraps="10"), "bootstraps"),
    ("kill_counts", lambda: probmut.kill_counts(H, M, sample=2.5), "sample"),
    ("kill_counts", lambda: probmut.kill_counts(H, M, threads="2"), "threads"),
    ("kill_counts", lambda: probmut.kill_counts(H, M, first_set=-1), "first_set"),
    ("kill_counts", lambda: probmut.kill_counts(H, M, seed=-1), "seed"),
    ("kill_counts", lambda: probmut.kill_counts(H, M, report=5), "report"),
    ("PosteriorSettings", lambda: probmut.PosteriorSettings(threshold=NAN), "threshold"),
    ("PosteriorSettings", lambda: probmut.PosteriorSettings(sample="20"), "sample"),
    ("PosteriorSettings", lambda: probmut.PosteriorSettings(trials=2.5), "trials"),
    ("PosteriorSettings", lambda: probmut.PosteriorSettings(mass=1.0), "mass"),
    ("PosteriorSettings", lambda: probmut.PosteriorSettings(criterion="deepcrime"),
     "criterion"),
    ("PosteriorSettings", lambda: probmut.PosteriorSettings(fit=None), "fit"),
    ("bagged_posteriors", lambda: probmut.bagged_posteriors(H, [M], {"sample": 10}),
     "settings"),
    ("bagged_posteriors", lambda: probmut.bagged_posteriors(H, M), "mutants[0]"),
    ("bagged_posteriors", lambda: probmut.bagged_posteriors(H, [M], names=5), "names"),
    ("bagged_posteriors", lambda: probmut.bagged_posteriors(H, [M], threads=0), "threads"),
    ("bagged_posteriors", lambda: probmut.bagged_posteriors(H, [M], paired=1), "paired"),
    ("study_from_kill_counts", lambda: probmut.study_from_kill_counts(
        np.zeros(5, int), [np.zeros(5, int)], ["h", "m"], None), "settings"),
    ("study_from_kill_counts", lambda: probmut.study_from_kill_counts(
        np.full(5, 0.5), [np.zeros(5, int)], ["h", "m"], probmut.PosteriorSettings()),
     "baseline_counts"),
    ("study_from_kill_counts", lambda: probmut.study_from_kill_counts(
        np.zeros(5, int), [np.full(5, 101)], ["h", "m"], probmut.PosteriorSettings()),
     "mutant_counts[0]"),
    ("hellinger", lambda: probmut.hellinger(-1, 2, 3, 4), "a1"),
    ("hellinger", lambda: probmut.hellinger(1, 0, 1, 1), "b1"),
    ("hellinger", lambda: probmut.hellinger(1, 2, "3", 4), "a2"),
    ("prob_greater", lambda: probmut.prob_greater(1, 2, 3, NAN), "b2"),
    ("repeated_tests", lambda: probmut.repeated_tests(H, M, repetitions="2"), "repetitions"),
    ("repeated_tests", lambda: probmut.repeated_tests(H, M, pool=1.5), "pool"),
    ("repeated_tests", lambda: probmut.repeated_tests(H, None), "studied"),
    ("monte_carlo_error", lambda: probmut.monte_carlo_error(H, M, {"sample": 10}), "settings"),
    ("monte_carlo_error", lambda: probmut.monte_carlo_error(H, M, repetitions=1),
     "repetitions"),
    ("monte_carlo_error", lambda: probmut.monte_carlo_error(H, M, cache="dir"), "cache"),
    ("sample_size_study", lambda: probmut.sample_size_study(H, M, sizes="25"), "sizes"),
    ("sample_size_study", lambda: probmut.sample_size_study(H, M, subpopulations=1),
     "subpopulations"),
    ("sample_size_study", lambda: probmut.sample_size_study(H, M, chunk=0), "chunk"),
    ("summarize_campaign", lambda: probmut.summarize_campaign(manifest=5), "manifest"),
    ("summarize_campaign", lambda: probmut.summarize_campaign(model=5), "model"),
    ("summarize_campaign", lambda: probmut.summarize_campaign(settings={"a": 1}), "settings"),
    ("summarize_campaign", lambda: probmut.summarize_campaign(verdicts="no"), "verdicts"),
    ("mutation_score", lambda: probmut.mutation_score("x"), "posteriors"),
    ("mutation_score", lambda: probmut.mutation_score([5]), "posteriors[0]"),
    ("mutation_score", lambda: probmut.mutation_score([_posterior()], draws=0), "draws"),
    ("mutation_score", lambda: probmut.mutation_score([_posterior()], mass=NAN), "mass"),
    ("write_report", lambda: probmut.write_report("x", "page.html"), "campaign"),
    ("kill_tests_from_table", lambda: probmut.kill_tests_from_table("x"), "data"),
    ("kill_tests_from_table", lambda: probmut.kill_tests_from_table(TABLE, paired="no"),
     "paired"),
    ("posteriors_from_table", lambda: probmut.posteriors_from_table(5), "data"),
    ("posteriors_from_table", lambda: probmut.posteriors_from_table(TABLE, settings=3),
     "settings"),
    ("PosteriorSettings", lambda: probmut.PosteriorSettings(bootstraps=True), "bootstraps"),
]

#: Settings classes that are not in probmut.__all__ but users build.
SETTINGS = [
    (lambda: BayesSettings(chains=1), "chains"),
    (lambda: BayesSettings(draws="1000"), "draws"),
    (lambda: BayesSettings(target_accept=NAN), "target_accept"),
    (lambda: BayesSettings(criterion=None), "criterion"),
]


@pytest.mark.parametrize("name, call, argument", CASES,
                         ids=[f"{n}-{a}-{i}" for i, (n, _, a) in enumerate(CASES)])
def test_a_public_call_with_a_wrong_argument_is_one_probmut_error_naming_it(
        name, call, argument, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProbmutError) as raised:
        call()
    message = str(raised.value)
    assert "\n" not in message and "Traceback" not in message
    if argument is not None:  # the population's own message names its data
        assert raised.value.option == argument.split("[")[0], (raised.value.option, message)
        assert message.startswith(argument + " "), message


@pytest.mark.parametrize("call, argument", SETTINGS)
def test_the_bayes_settings_refuse_as_the_command_line_does(call, argument):
    with pytest.raises(ProbmutError, match=f"^{argument} ") as raised:
        call()
    assert raised.value.option == argument


def test_every_public_callable_is_covered():
    """A function or class added to probmut.__all__ gets its wrong-argument cases here."""
    public = {name for name in probmut.__all__ if callable(getattr(probmut, name))}
    public.remove("ProbmutError")  # the error itself
    assert public == {name for name, _, _ in CASES}


def test_a_threshold_of_nan_no_longer_decides_not_killed():
    """Issue 57: PosteriorSettings(threshold=nan) made a ratio of 2.67 "not killed"."""
    with pytest.raises(ProbmutError, match="threshold must be a finite number"):
        probmut.PosteriorSettings(threshold=NAN)


def test_right_arguments_still_work_and_are_normalised():
    """NumPy scalars are numbers and integers; a cache, a manifest object and a datetime
    are taken where their types are."""
    settings = probmut.PosteriorSettings(bootstraps=np.int64(3), threshold=np.float32(1.5))
    assert type(settings.bootstraps) is int and settings.threshold == 1.5
    assert probmut.hellinger(np.float64(3), 4, 3, 4) == 0.0
    counts = probmut.kill_counts(H, M, bootstraps=np.int32(2), trials=5, seed=np.uint8(1))
    assert counts.shape == (2,)
    study = probmut.monte_carlo_error(H, M, settings, repetitions=2, seed=0,
                                      cache=Cache(None))
    assert study.repetitions == 2


def test_help_lists_the_public_api():
    """help(probmut) listed only __getattr__: the lazy names are in dir() and the page."""
    assert set(probmut.__all__) <= set(dir(probmut))
    page = pydoc.render_doc(probmut, renderer=pydoc.plaintext)
    for name in probmut.__all__:
        assert name in page, name
    documented = probmut.__doc__
    assert all(f"``{name}``" in documented for name in probmut.__all__), \
        [n for n in probmut.__all__ if f"``{n}``" not in documented]


def test_a_renamed_keyword_still_works_with_one_warning_naming_the_new():
    """Issue 58: ``jobs=`` (threads, its name in probmut 0.2.0) is ``threads=``; the old
    name still gives the same numbers, with a FutureWarning naming the new one, and both
    at once are refused."""
    run = {"bootstraps": 5, "trials": 5, "sample": 2, "seed": 1}
    new = probmut.kill_counts(H, M, threads=1, **run)
    with pytest.warns(FutureWarning, match=r"kill_counts\(jobs=\.\.\.\) is deprecated: it is "
                                           r"threads=\.\.\."):
        old = probmut.kill_counts(H, M, jobs=1, **run)
    np.testing.assert_array_equal(old, new)
    with pytest.raises(ProbmutError, match="give threads, not jobs"):
        probmut.kill_counts(H, M, jobs=1, threads=1, **run)
