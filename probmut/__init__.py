"""probmut: probabilistic mutation testing for deep neural networks.

The public API, loaded on first use so that ``import probmut`` stays light. Arrays,
:class:`Population` objects, pandas Series or long DataFrames go in; result objects come
out, each printing a readable table and converting with ``to_frame()`` and ``to_json()``.

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


def __getattr__(name):
    if name in _API:
        module = importlib.import_module(_API[name])
        return module if module.__name__.endswith("." + name) else getattr(module, name)
    raise AttributeError(f"module 'probmut' has no attribute {name!r}")
