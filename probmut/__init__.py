"""probmut: probabilistic mutation testing for deep neural networks.

The public API, loaded on first use so that ``import probmut`` stays light (``dir`` and
``help`` list it all). Arrays, :class:`Population` objects, pandas Series or long
DataFrames go in; result objects come out, each printing a readable table and converting
with ``to_frame()`` and ``to_json()``. Bad input raises :class:`ProbmutError`, naming the
argument or file, as the command line does.

Populations and files
    ``Population``, ``as_population``, ``pair``, ``read_population``, ``write_tidy``,
    ``load_kill_rates``, ``Manifest``
Kill tests
    ``KillCriterion``, ``kill_test``, ``kill_test_batch``, ``kill_tests``, ``kill_counts``
The bagged posterior and its studies
    ``PosteriorSettings``, ``bagged_posteriors``, ``study_from_kill_counts``, ``hellinger``,
    ``prob_greater``, ``repeated_tests``, ``monte_carlo_error``, ``sample_size_study``
A whole campaign
    ``summarize_campaign``, ``mutation_score``, ``write_report``
Long-format DataFrames
    ``kill_tests_from_table``, ``posteriors_from_table``
The paper's choices, and the one error
    ``paper``, ``ProbmutError``

>>> import probmut
>>> study = probmut.bagged_posteriors([0.91, 0.92, 0.93, 0.92] * 10,
...                                   [[0.85, 0.86, 0.87, 0.86] * 10],
...                                   probmut.PosteriorSettings(bootstraps=5, sample=10),
...                                   seed=1)
>>> [p.killed for p in study.populations]
[False, True]
"""

import importlib

__version__ = "0.2.0"

_API = {
    # populations and files
    "Population": "probmut.population",
    "read_population": "probmut.io.populations",
    "write_tidy": "probmut.io.populations",
    "as_population": "probmut.population",
    "pair": "probmut.population",
    "load_kill_rates": "probmut.io.arrays",
    "Manifest": "probmut.io.manifest",
    # kill tests
    "KillCriterion": "probmut.killtest",
    "kill_test": "probmut.killtest",
    "kill_test_batch": "probmut.killtest",
    "kill_tests": "probmut.killtest",
    "kill_counts": "probmut.engine",
    # the bagged posterior and its studies
    "PosteriorSettings": "probmut.bagging",
    "bagged_posteriors": "probmut.bagging",
    "study_from_kill_counts": "probmut.bagging",
    "hellinger": "probmut.beta",
    "prob_greater": "probmut.beta",
    "repeated_tests": "probmut.repeat",
    "monte_carlo_error": "probmut.mce",
    "sample_size_study": "probmut.sample_size",
    # a whole campaign: its summary, mutation score, and its HTML report
    "summarize_campaign": "probmut.campaign",
    "mutation_score": "probmut.campaign",
    "write_report": "probmut.report",
    # long-format DataFrames (pingouin style)
    "kill_tests_from_table": "probmut.frames",
    "posteriors_from_table": "probmut.frames",
    # the paper's choices
    "paper": "probmut.paper",
    "ProbmutError": "probmut.errors",
}

__all__ = sorted(_API)


def __dir__():
    """The public API with the module's own names, so that ``dir`` and ``help`` see the
    names :func:`__getattr__` loads on first use."""
    return sorted(set(globals()) | set(_API))


def __getattr__(name):
    """A public name, imported from its module on first use."""
    if name in _API:
        module = importlib.import_module(_API[name])
        return module if module.__name__.endswith("." + name) else getattr(module, name)
    raise AttributeError(f"module 'probmut' has no attribute {name!r}")
