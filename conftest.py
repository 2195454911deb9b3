"""Run the docstring examples of probmut's modules as tests (``--doctest-modules``),
skipping modules whose optional extra (TensorFlow, PyMC) is not installed."""

import importlib.util

collect_ignore_glob = []
if importlib.util.find_spec("tensorflow") is None:
    collect_ignore_glob.append("probmut/train/*")
if importlib.util.find_spec("pymc") is None:
    collect_ignore_glob.append("probmut/bayes*.py")
