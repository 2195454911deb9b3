"""The model-based posterior's settings (probmut.bayes.settings, plain Python): bad
settings are refused when made, naming the setting."""

import pytest

from probmut.bayes.settings import BayesSettings
from probmut.errors import ProbmutError


@pytest.mark.parametrize("kwargs, message", [
    ({"chains": 1}, "chains must be at least 2, got 1"),
    ({"likelihood": "beta"}, "likelihood must be one of student-t, normal, got 'beta'"),
    ({"sampler": "stan"}, "sampler must be one of nutpie, pymc, got 'stan'"),
])
def test_bad_settings_are_a_probmut_error(kwargs, message):
    with pytest.raises(ProbmutError, match=message):
        BayesSettings(**kwargs)
