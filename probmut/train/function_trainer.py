"""A user's training function (``probmut train --trainer MODULE:FUNCTION``):
``FUNCTION(spec)`` once per instance, in probmut's workers, any framework inside
(:class:`FunctionTrainer`; the spec and the result: :mod:`probmut.train.user_code`).

The function is imported by name in each worker (``MODULE`` searched first in the folder
the run started in, as ``python -m`` does), so it must be defined at the top level of an
importable module (on every node, for a Ray cluster). Before each call probmut seeds
Python's ``random`` and NumPy's global generator with the instance's seed, and sends
what the function prints to stderr (the run's summary and ``--json`` stay on stdout);
an exception it raises (or ``sys.exit``) is the instance's, recorded as crashed with
its one line, and the run goes on. A function cannot be stopped from inside: with a
time limit, its worker process is killed at the hard limit
(:func:`probmut.train.backends.hard_limit`) and the instance recorded as timed out.

A function that returns its trained torch model (``"model"``) gets model-level mutants:
probmut derives each from healthy instance i's model, kept when it trained (or, if not
kept, from the model of healthy instance i trained again by the function with its seed),
and scores it (:mod:`probmut.train.torch.returned`).

Examples
--------
>>> import statistics
>>> trainer = FunctionTrainer.of_function(statistics.mean)
>>> trainer.code, trainer.describe()
('statistics:mean', 'training function statistics:mean')
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from probmut.errors import ProbmutError
from probmut.io.records import one_line
from probmut.train.operators import OPERATORS
from probmut.train.trainers import Checked, CheckRequest
from probmut.train.user_code import check_request, failed, instance_spec, result_of
from probmut.train.work import HEALTHY

#: Functions imported in this process, by their ``MODULE:FUNCTION``.
_LOADED: dict = {}


def load_function(code: str, folder: str | None = None):
    """The function ``code`` names (``MODULE:FUNCTION``, ``FUNCTION`` may be dotted),
    ``MODULE`` searched first in ``folder``; imported once per process.

    Raises
    ------
    ProbmutError
        The text is not ``MODULE:FUNCTION``, the module cannot be imported, or the name is
        not a function in it.
    """
    if code in _LOADED:
        return _LOADED[code]
    module_name, _, name = code.partition(":")
    wanted = "MODULE:FUNCTION, a function (spec) -> {'accuracy': ...} of an importable module"
    if not module_name or not name:
        raise ProbmutError(f"{code!r}: give the training function as {wanted}",
                           option="trainer")
    if folder is not None and folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        found = importlib.import_module(module_name)
        for part in name.split("."):
            found = getattr(found, part)
    except Exception as error:  # noqa: BLE001 - whatever the user's module raises on import
        raise ProbmutError(f"{code}: cannot import {name} from {module_name} "
                           f"({one_line(error)}); give {wanted} (on every worker, for the "
                           "ray backend)", option="trainer") from None
    if not callable(found):
        raise ProbmutError(f"{code}: {name} is of type {type(found).__name__}, not a "
                           "function", option="trainer")
    _check_takes_one_spec(code, found)
    _LOADED[code] = found
    return found


def _check_takes_one_spec(code: str, function) -> None:
    """Refuse, before any instance trains, a function that cannot be called with the one
    argument probmut passes (the instance's spec); each instance crashed on it otherwise.
    A callable whose signature Python cannot read is left to its first call."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(None)
    except TypeError:
        raise ProbmutError(f"{code}: it takes {signature}; probmut calls it with one argument, "
                           "the instance's spec (docs/training.md)",
                           option="trainer") from None


@dataclass(frozen=True)
class FunctionTrainer:
    """Train each instance with the user's function ``code`` (``MODULE:FUNCTION``),
    ``MODULE`` searched first in ``folder`` (see the module notes)."""

    code: str
    folder: str | None = None
    kind: ClassVar[str] = "function"
    suffix: ClassVar[None] = None
    requires: ClassVar[tuple] = ()
    user_code: ClassVar[bool] = True

    @classmethod
    def of(cls, settings) -> FunctionTrainer:
        return cls(settings.code, os.getcwd())

    @classmethod
    def of_function(cls, function) -> FunctionTrainer:
        """The trainer of a function object: its module and name, which workers import.

        Raises
        ------
        ProbmutError
            A lambda or a function defined inside another, which no worker can import.
        """
        name = getattr(function, "__qualname__", "")
        if not callable(function) or not name or "<" in name:
            raise ProbmutError(f"{function!r}: give a function defined at the top level of a "
                               "module (workers import it by name)", option="trainer")
        _check_takes_one_spec(name, function)
        return cls(f"{function.__module__}:{name}", os.getcwd())

    def describe(self) -> str:
        return f"training function {self.code}"

    def setup(self, threads: int) -> None:
        """Limit the BLAS libraries' threads (threadpoolctl, where installed) to
        ``threads`` per instance; the function's own framework threads are its own."""
        with contextlib.suppress(ImportError):
            from threadpoolctl import threadpool_limits

            threadpool_limits(threads, user_api="blas")

    def check(self, request: CheckRequest, *, dataset, call) -> Checked:
        """:func:`probmut.train.user_code.check_request` (model-level mutations too: a
        function can return its torch model).

        Raises
        ------
        ProbmutError
            A stack size above 1, a mutation a function cannot be given.
        """
        return check_request(request, dataset, "a training function", models=True)

    def train_unit(self, assignments, stack: bool, healthy_weights=None, *,
                   dataset) -> list:
        """Each assignment by a call of the function, a model-level mutant derived from
        its healthy instance's model (see the module notes)."""
        return [self._derive(assignment, healthy_weights, dataset)
                if assignment.operator and OPERATORS[assignment.operator].level == "model"
                else self._train(assignment, dataset) for assignment in assignments]

    def _derive(self, assignment, healthy_weights, dataset):
        """A model-level mutant of the torch model healthy instance i returned: the one
        its run kept, else the one it returns trained again with its seed."""
        start = time.perf_counter()
        try:
            from probmut.train.torch.returned import derive, from_kept

            if healthy_weights is None:  # not kept (an earlier run's, or not picklable)
                healthy = dataclasses.replace(assignment, population=HEALTHY, operator=None,
                                              params=None, keep_weights=False,
                                              save_model=False)
                with tempfile.TemporaryDirectory(prefix="probmut-instance-") as folder:
                    returned, spec = self._call(healthy, dataset, folder)
                    result_of(returned, healthy, dataset, seconds=0.0, read=None)  # checked
                model = from_kept([], assignment.instance, returned.get("model"))
            else:
                model = from_kept(healthy_weights, assignment.instance)
            return derive(assignment, model, dataset, start)
        except (Exception, SystemExit) as error:  # the instance failed, not the run
            return failed(assignment, error, time.perf_counter() - start)

    def _train(self, assignment, dataset):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="probmut-instance-") as folder:
            try:
                returned, spec = self._call(assignment, dataset, folder)
                seconds = time.perf_counter() - start
                return result_of(returned, assignment, dataset, seconds=seconds,
                                 read=tuple(sorted(spec.hyperparameters.read)))
            except (Exception, SystemExit) as error:  # the instance failed, not the run
                return failed(assignment, error, time.perf_counter() - start)

    def _call(self, assignment, dataset, folder: str):
        """What the function returns for ``assignment`` (seeded, its prints on stderr),
        and the spec it was given."""
        function = load_function(self.code, self.folder)
        spec = instance_spec(assignment, dataset, folder)
        random.seed(assignment.seed)
        np.random.seed(assignment.seed)
        with contextlib.redirect_stdout(sys.stderr):
            return function(spec), spec

    def stack_problem(self, settings, config, dataset) -> str | None:
        return "a training function trains one instance at a time"
