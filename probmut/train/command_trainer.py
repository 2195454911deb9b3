"""A user's training program (``probmut train --command "python train.py"``): one process
per instance, in probmut's workers, any language inside (:class:`CommandTrainer`).

For each instance probmut writes, in a temporary folder of the instance's own, the spec
as JSON (the environment variable ``PROBMUT_SPEC`` names the file) and runs the command
(split as a shell splits it, run without a shell). The spec has the keys of a training
function's (:mod:`probmut.train.user_code`): ``instance``, ``seed``, ``population``,
``mutation`` (``operator``, ``magnitude``, ``parameters``), ``hyperparameters``,
``n_classes``, ``save_model``, ``folder``, and ``data``: an ``.npz`` file with
``x_train``, ``y_train``, ``x_test``, ``y_test`` (and ``x_val``, ``y_val`` with a
validation set), a data-level mutation applied. The program writes its result, the
keys of a function's (``accuracy``; optionally ``correct``, ``loss_history``,
``model_path``), as JSON to the file ``PROBMUT_RESULT`` names.

What the program read: a program's reads cannot be watched, so its result says which
hyperparameters it used, as a list under ``read`` (``"read": ["epochs",
"learning_rate"]``). A training-level mutant whose setting is not on the list is flagged
``not applied``; without a list, whether the mutation reached the program is unknown,
and the mutant is flagged ``unverified`` rather than counted (:mod:`probmut.train.quality`).

A non-zero exit, a crash, a missing or malformed result, or a run past the time limit
(``timeout``: the program and every process it started are killed) is recorded as a
failed instance (crashed, timed out) with the end of the program's stderr, and the run
goes on. What the program prints on stdout is not kept. ``PROBMUT_THREADS`` holds the
run's threads per instance (and ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS`` default to it).

Examples
--------
>>> CommandTrainer.of_command("python train.py --fast").describe()
'training command python train.py --fast'
>>> _tail("line 1\\nTraceback (most recent call last):\\nValueError: bad\\n", 40)
'...ost recent call last): / ValueError: bad'
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from probmut.errors import ProbmutError
from probmut.train.trainers import Checked, CheckRequest
from probmut.train.user_code import check_request, failed, instance_spec, result_of

#: The threads per instance this process was set up with (:meth:`CommandTrainer.setup`).
_THREADS = {"threads": 1}


@dataclass(frozen=True)
class CommandTrainer:
    """Train each instance with one run of ``command`` (see the module notes)."""

    command: str
    kind: ClassVar[str] = "command"
    suffix: ClassVar[None] = None
    requires: ClassVar[tuple] = ()
    user_code: ClassVar[bool] = True

    @classmethod
    def of(cls, settings) -> CommandTrainer:
        return cls(settings.code)

    @classmethod
    def of_command(cls, command: str) -> CommandTrainer:
        """The trainer of a command line.

        Raises
        ------
        ProbmutError
            An empty command, or one whose quotes do not close.
        """
        try:
            words = shlex.split(command)
        except ValueError as error:
            raise ProbmutError(f"{command!r}: {error}", option="command") from None
        if not words:
            raise ProbmutError("the training command is empty", option="command")
        return cls(command)

    def describe(self) -> str:
        return f"training command {self.command}"

    def setup(self, threads: int) -> None:
        """Remember the threads per instance, which each program is told."""
        _THREADS["threads"] = threads

    def check(self, request: CheckRequest, *, dataset, call) -> Checked:
        """:func:`probmut.train.user_code.check_request`.

        Raises
        ------
        ProbmutError
            A stack size above 1, a mutation a program cannot be given.
        """
        return check_request(request, dataset, "a training command")

    def train_unit(self, assignments, stack: bool, healthy_weights=None, *,
                   dataset) -> list:
        """Each assignment by one run of the command (see the module notes)."""
        return [self._train(assignment, dataset) for assignment in assignments]

    def stack_problem(self, settings, config, dataset) -> str | None:
        return "a training command trains one instance at a time"

    def _train(self, assignment, dataset):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="probmut-instance-") as folder:
            try:
                spec_path, result_path = _write_spec(assignment, dataset, Path(folder))
            except Exception as error:  # noqa: BLE001 - the instance's data, not the run
                return failed(assignment, error, time.perf_counter() - start)
            stopped, code, stderr = _run(self.command, spec_path, result_path,
                                         assignment.timeout)
            seconds = time.perf_counter() - start
            if stopped:
                return failed(assignment, f"stopped after {assignment.timeout:g} s (--timeout)"
                              f"{_ends(stderr)}", seconds, status="timed out")
            try:
                if code != 0:
                    raise RuntimeError(f"{_exit(code)}{_ends(stderr)}")
                returned = _result(result_path, stderr)
                read = returned.get("read")
                if read is not None and (not isinstance(read, list)
                                         or not all(isinstance(n, str) for n in read)):
                    raise ValueError(f"read must be a list of hyperparameter names, got {read!r}")
                return result_of(returned, assignment, dataset, seconds=seconds,
                                 read=None if read is None else tuple(read))
            except (RuntimeError, ValueError) as error:
                return failed(assignment, str(error)[:300], seconds)


def _write_spec(assignment, dataset, folder: Path) -> tuple[Path, Path]:
    """The spec's JSON and its data file for one instance; their paths."""
    spec = instance_spec(assignment, dataset, str(folder))
    arrays = {key: spec[key] for key in ("x_train", "y_train", "x_test", "y_test", "x_val",
                                         "y_val") if spec[key] is not None}
    if any(isinstance(x, tuple) for x in arrays.values()):
        raise ValueError("a training command takes one input array per sample; this data "
                         "set has several inputs")
    data = folder / "data.npz"
    np.savez(data, **arrays)
    document = {"instance": spec.instance, "seed": spec.seed, "population": spec.population,
                "mutation": dict(spec.mutation), "hyperparameters": dict(spec.hyperparameters),
                "n_classes": spec.n_classes, "save_model": spec.save_model,
                "folder": spec.folder, "data": str(data)}
    spec_path, result_path = folder / "spec.json", folder / "result.json"
    spec_path.write_text(json.dumps(document, indent=1, default=str))
    return spec_path, result_path


def _run(command: str, spec: Path, result: Path, timeout: float | None):
    """Run the command for one instance: (stopped at ``timeout``, exit code, stderr). The
    program runs in a session of its own; stopped, or if this process is interrupted,
    every process of it is killed."""
    threads = str(_THREADS["threads"])
    environment = {"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
                   "MKL_NUM_THREADS": threads, **os.environ, "PROBMUT_SPEC": str(spec),
                   "PROBMUT_RESULT": str(result), "PROBMUT_THREADS": threads}
    try:
        process = subprocess.Popen(shlex.split(command), env=environment,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:  # not found, not executable
        return False, 127, f"{error.strerror}: {error.filename}".encode()
    try:
        _, stderr = process.communicate(timeout=timeout)
        return False, process.returncode, stderr
    except subprocess.TimeoutExpired:
        _kill(process)
        return True, process.returncode, process.communicate()[1]
    except BaseException:
        _kill(process)
        raise


def _kill(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _result(path: Path, stderr: bytes) -> dict:
    if not path.is_file():
        raise RuntimeError(f"it wrote no result to $PROBMUT_RESULT{_ends(stderr)}")
    text = path.read_text(errors="replace")
    try:
        returned = json.loads(text)
    except ValueError as error:
        raise ValueError(f"its result is not JSON ({error}): {text[:60]!r}{_ends(stderr)}") \
            from None
    if not isinstance(returned, dict):
        raise ValueError(f"its result is a JSON {type(returned).__name__}, not an object "
                         "with 'accuracy'")
    return returned


def _exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _ends(stderr: bytes | str) -> str:
    tail = _tail(stderr)
    return f"; stderr ends: {tail}" if tail else ""


def _tail(stderr: bytes | str, width: int = 200) -> str:
    """The end of a program's stderr on one line: its last lines joined, at most ``width``
    characters."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    joined = " / ".join(lines)
    return joined if len(joined) <= width else "..." + joined[-width:]
