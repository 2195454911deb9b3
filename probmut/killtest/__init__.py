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

The package has four rooms: :mod:`~probmut.killtest.kernels` (the compiled tests and
their maths), :mod:`~probmut.killtest.criteria` (the registry and :class:`KillCriterion`,
plain Python), :mod:`~probmut.killtest.dispatch` (the compiled :func:`decide`) and
:mod:`~probmut.killtest.api` (:func:`kill_test`, :func:`kill_test_batch`,
:func:`kill_tests` and their results). Adding a criterion is one :class:`Criterion` entry
in :data:`CRITERIA` plus its compiled kernel ``(x, y) -> (p, effect, effect in the
mutant-better sense)`` in :mod:`~probmut.killtest.kernels`.

The compiled parts are imported on first use, so that what only reads the registry (the
command line's choices and help, every command's start) does not wait for numba
(about 0.35 s).
"""

import importlib

from probmut.killtest.criteria import (
    CRITERIA,
    DIRECTIONS,
    KINDS,
    Criterion,
    KillCriterion,
    round_p_value,
)

#: The compiled names, by the module that defines them (imported on first use).
_COMPILED = {"KillTable": "api", "KillTestResult": "api", "kill_test": "api",
             "kill_test_batch": "api", "kill_tests": "api", "decide": "dispatch"}


def __getattr__(name):
    if name in _COMPILED:
        return getattr(importlib.import_module(f"probmut.killtest.{_COMPILED[name]}"), name)
    raise AttributeError(f"module 'probmut.killtest' has no attribute {name!r}")

__all__ = ["CRITERIA", "DIRECTIONS", "KINDS", "Criterion", "KillCriterion", "KillTable",
           "KillTestResult", "decide", "kill_test", "kill_test_batch", "kill_tests",
           "round_p_value"]
