"""Long-format DataFrame entry points give the very numbers of the array API."""

import pandas as pd
import pytest

import probmut
from probmut.bagging import PosteriorSettings, bagged_posteriors
from probmut.errors import ProbmutError
from probmut.killtest import kill_tests


@pytest.fixture(scope="module")
def long_table(mnist_delete):
    healthy, mutants = mnist_delete
    rows = [pd.DataFrame({"population": p.name, "instance": p.ids, "accuracy": p.values})
            for p in [healthy, *mutants[:2]]]
    return pd.concat(rows, ignore_index=True).sample(frac=1, random_state=0)  # any row order


def test_the_long_format_entry_points_are_plain_functions_whatever_was_imported():
    """Importing every analysis module leaves probmut.posteriors_from_table and
    probmut.kill_tests_from_table the long-format entry points (no module shadows them)."""
    import importlib
    import inspect
    import pkgutil

    for module in pkgutil.iter_modules(probmut.__path__):
        if module.name not in ("bayes", "__main__", "train"):  # extras, or the entry point
            importlib.import_module(f"probmut.{module.name}")
    for name in ("posteriors_from_table", "kill_tests_from_table"):
        assert inspect.isfunction(getattr(probmut, name))
        assert getattr(probmut, name).__module__ == "probmut.frames"


def test_posterior_of_a_long_table_equals_the_array_api(long_table, mnist_delete):
    healthy, mutants = mnist_delete
    settings = PosteriorSettings(bootstraps=20)
    from_frame = probmut.posteriors_from_table(long_table, instance="instance", settings=settings,
                                               seed=3)
    direct = bagged_posteriors(healthy, mutants[:2], settings, seed=3).to_frame()
    # Mutants come in order of first appearance in the (shuffled) table.
    pd.testing.assert_frame_equal(from_frame.to_frame().loc[direct.index], direct)


def test_kill_test_of_a_long_table_equals_the_array_api(long_table, mnist_delete):
    healthy, mutants = mnist_delete
    frame = probmut.kill_tests_from_table(long_table, instance="instance").to_frame()
    direct = kill_tests(healthy, mutants[:2]).to_frame()
    pd.testing.assert_frame_equal(frame.loc[direct.index], direct)


def test_the_id_column_under_its_old_name_pairs_the_same_with_a_warning(long_table):
    """Issue 58: ``subject=`` (probmut 0.2.0) is ``instance=``; the old keyword still
    pairs the instances, with a FutureWarning naming the new one."""
    new = probmut.kill_tests_from_table(long_table, instance="instance", paired=True)
    with pytest.warns(FutureWarning, match=r"subject=\.\.\.\) is deprecated: it is instance="):
        old = probmut.kill_tests_from_table(long_table, subject="instance", paired=True)
    pd.testing.assert_frame_equal(old.to_frame(), new.to_frame())


@pytest.mark.parametrize("options, says", [
    ({"dv": "acc"}, "dv='acc' is not a column"),
    ({"healthy": "original"}, "no row has population == 'original'"),
    ({"paired": True}, "need the instance column"),
])
def test_a_long_table_that_does_not_fit_is_a_clear_error(long_table, options, says):
    with pytest.raises(ProbmutError, match=says):
        probmut.kill_tests_from_table(long_table, **options)


def test_kill_repeat_and_inputs_results_convert_to_frames(mnist_delete):
    import numpy as np

    from probmut.inputs import Outcomes, analyse_inputs
    from probmut.killtest import KillCriterion
    from probmut.repeat import RepeatStudy, repeated_tests
    from probmut.results import Result

    healthy, mutants = mnist_delete
    kill = kill_tests(healthy, mutants[:2])
    repeat = RepeatStudy(tuple(repeated_tests(healthy, m, repetitions=2, seed=1)
                               for m in mutants[:2]), KillCriterion(), False, 1)
    rng = np.random.default_rng(0)
    labels = np.arange(40) % 10
    inputs = analyse_inputs(Outcomes.from_matrix(rng.random((10, 40)) < 0.9, labels),
                            [Outcomes.from_matrix(rng.random((10, 40)) < 0.5, labels, name="m")])
    for result, rows in ((kill, 2), (repeat, 2), (inputs, 1)):
        assert isinstance(result, Result)
        assert len(result.to_frame()) == rows and result.to_json().startswith("{")
