"""Kill tests: one decision from a healthy and a mutant sample.

Every kill criterion is a significance test plus an effect size, listed once in the
registry :data:`CRITERIA` (name, test, effect size and its named thresholds, direction
vocabulary, compiled kernel, description, whether it needs paired data). Everything
else reads that table: :class:`KillCriterion`, the compiled dispatch :func:`decide`
(used by the scalar and batched API and by the Monte-Carlo engine,
:mod:`probmut.engine`), the command line's ``--criterion`` choices and help, the table
headers and the plots.

- ``deepcrime`` (default): DeepCrime's GLM z-test and Cohen's d (METHOD.md section 1);
- ``welch``: Welch's unequal-variance t-test and Cohen's d;
- ``mannwhitney``: the Mann-Whitney U test (normal approximation with tie and continuity
  correction, as ``scipy.stats.mannwhitneyu`` computes it for samples larger than 8) and
  the Vargha-Delaney A12 effect size;
- ``paired-t`` (paired data): Student's t-test on the per-instance differences and
  Cohen's d_z;
- ``wilcoxon`` (paired data): the Wilcoxon signed-rank test and the matched-pairs
  rank-biserial correlation.

The package has three rooms: :mod:`~probmut.killtest.kernels` (the compiled tests and
their maths), :mod:`~probmut.killtest.criteria` (the registry, :class:`KillCriterion`,
:func:`decide`) and :mod:`~probmut.killtest.api` (:func:`deepcrime_test`,
:func:`deepcrime_test_batch`, :func:`kill_tests` and their results). Adding a criterion is
one :class:`Criterion` entry in :data:`CRITERIA` plus its compiled kernel ``(x, y) -> (p,
effect, effect in the mutant-better sense)`` in :mod:`~probmut.killtest.kernels`.
"""

from probmut.killtest.api import (
    KillTable,
    KillTestResult,
    deepcrime_test,
    deepcrime_test_batch,
    kill_tests,
)
from probmut.killtest.criteria import (
    CRITERIA,
    DIRECTIONS,
    KINDS,
    Criterion,
    KillCriterion,
    decide,
    round_p_value,
)

__all__ = ["CRITERIA", "DIRECTIONS", "KINDS", "Criterion", "KillCriterion", "KillTable",
           "KillTestResult", "decide", "deepcrime_test", "deepcrime_test_batch", "kill_tests",
           "round_p_value"]
