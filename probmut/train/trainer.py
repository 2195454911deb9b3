"""Training as a library: :func:`train_populations` does everything ``probmut train`` does.

It checks every argument, loads the data, checks the model and the mutations
(:mod:`probmut.train.legality`), chooses the stack size, builds the backend
(:func:`probmut.train.backends.make_backend`) and trains: a fixed number of instances
(:func:`probmut.train.run.run_populations`, with DeepMutation's quality control if
asked), until each mutant's verdict is settled (:mod:`probmut.train.rounds`), or a
search for the smallest killed magnitude (:mod:`probmut.train.search`). It returns a
:class:`~probmut.train.run.RunReport`; the command only parses its arguments and prints
the report. :func:`preview_mutations` is ``probmut train --dry-run``.

Where TensorFlow is imported: a process imports it when it trains (one job: this one)
or needs Keras to load the data (a Keras data set, an image folder) or to build the
user's model. The checks that build models (the legality of training- and model-level
mutations, ``--stack auto``'s size, which populations can be stacked) run where Keras
is, as a backend call (:mod:`probmut.train.preflight`): with worker processes, on the
first one ready, while this process checks the arguments and the data-level mutations
and loads the data without it. The decisions are the same either way.

Examples
--------
>>> import tempfile
>>> out = tempfile.mkdtemp()
>>> report = train_populations(out, ["delete_training_data:50"], instances=2, epochs=1,
...                            progress=False)
>>> report.counts
{'healthy': 2, 'delete_training_data_50': 2}
>>> report.to_frame()["instances"].tolist()
[2, 2]
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.io.atomic import writable_directory
from probmut.io.manifest import repeated_magnitudes
from probmut.seeds import DEFAULT_SEED
from probmut.train import backends, tf_setup
from probmut.train.datasets import (
    DOWNLOAD_TIMEOUT,
    DataSource,
    check_data_arguments,
    load_dataset,
    source_of,
)
from probmut.train.dryrun import DryRun, dry_run
from probmut.train.legality import needs_keras, prepare
from probmut.train.models import MODELS, resolve_model, task_of, validation_split_of
from probmut.train.operators import Mutation, parse_mutations
from probmut.train.preflight import Preflight, preflight
from probmut.train.run import RunReport, recorded_stack, run_lock, run_populations
from probmut.train.work import RunSettings

#: The base seed when none is given: the command line's default.
SEED = DEFAULT_SEED


def train_populations(
        out, mutations: Sequence[str | Mutation] = (), *, instances: int | None = None,
        dataset: str | None = None, data: str | os.PathLike | None = None,
        architecture: str = "digits_cnn", name: str | None = None, seed: int = SEED,
        epochs: int | None = None, batch_size: int | None = None,
        learning_rate: float | None = None, patience: int | None = None,
        image_size: str | None = None, test_split: float | None = None,
        validation_split: float | None = None, download_timeout: float = DOWNLOAD_TIMEOUT,
        stack: int | None = None, jobs: int = 1, threads: int = 1, backend: str = "local",
        address: str | None = None, cpus_per_task: float | None = None,
        gpus_per_task: float = 0, save_models: bool = False, timeout: float | None = None,
        retry_failed: bool = False, max_error_rate: float | None = None,
        deepcrime: bool = False, search: str | None = None, resolution: float | None = None,
        decision: str | None = None, until_settled: bool = False,
        until_score: float | None = None, round_size: int = 10, max_instances: int = 200,
        sample: int = 20, level: float | None = None, progress: bool = True) -> RunReport:
    """Train the healthy population and a population per mutation magnitude into ``out``
    (resumable: the same call again trains only what is missing); ``probmut train``.

    Parameters
    ----------
    out : the output directory (populations, ``manifest.toml``; docs/training.md).
    mutations : ``OPERATOR[:MAG1,MAG2]`` texts (docs/operators.md) or parsed mutations.
    instances : instances per population (default 20).
    dataset, data : a named data set (``DATASETS``; default digits), or a file
        ``FILE.npz`` or an image folder (:mod:`probmut.train.datasets`), with
        ``image_size``, ``test_split``, ``validation_split`` (default: the bundled
        model's published one, ``gaze_lenet`` 0.1, else none) and ``download_timeout``.
    architecture : the network trained: a bundled model
        (:data:`probmut.train.models.MODELS`) or ``module:function``.
    name : the model's name in the manifest (default: ``out``'s name).
    seed : the base seed of every instance's seed.
    epochs, batch_size, learning_rate, patience : override the model's training settings
        (``patience``: early stopping, with a ``validation_split``).
    stack : instances of a population trained at once as one model; None: ``--stack
        auto`` (up to 20 for small models, 1 on a CPU for large ones; a resumed run keeps
        its size).
    jobs, threads : worker processes training at once (local backend) and TensorFlow
        threads per instance (the same ``threads`` gives the same files whatever ``jobs``).
    backend, address, cpus_per_task, gpus_per_task : ``"local"`` or ``"ray"``
        (:func:`probmut.train.backends.make_backend`).
    save_models : keep each instance's model as ``out/models/POPULATION/ID.keras``, the id
        in five digits (``00000.keras``).
    timeout : stop an instance's training after so many seconds (one at a time).
    retry_failed : train crashed and timed-out instances again.
    max_error_rate : DeepMutation's quality control (:mod:`probmut.train.flags`).
    deepcrime : also write DeepCrime's ``;``-separated files.
    search, resolution, decision : bisect ``OPERATOR:WEAK,STRONG`` for the smallest killed
        magnitude, to ``resolution`` (default 1/16 of the range), killed per ``decision``
        (``"posterior"``, the default, or ``"deepcrime"``), instead of ``mutations``.
    until_settled, round_size, max_instances, sample, level : train in rounds of
        ``round_size`` until each mutant's verdict (k = ``sample`` per side) is settled, at
        most ``max_instances`` per population, instead of ``instances``; at most
        ``1 - level`` of such runs end with a wrong settled verdict, for any true effect
        (default :data:`probmut.recommend.LEVEL`).
    until_score : train in rounds (of ``round_size``, at most ``max_instances`` per
        population) the populations that weigh most on the mutation score's interval,
        until it is at most this wide (:mod:`probmut.train.until_score`; the score's
        seed is ``seed``), instead of ``instances``.
    progress : show progress bars on stderr.

    Returns the :class:`~probmut.train.run.RunReport` (a
    :class:`~probmut.train.rounds.SettleReport` when ``until_settled``, a
    :class:`~probmut.train.until_score.ScoreReport` with ``until_score``; with ``search``,
    the search's result as its ``search``). Raises
    :class:`~probmut.errors.ProbmutError` (one line, naming the setting at fault) before
    anything trains for bad arguments, data, models and mutations.
    """
    out = Path(out)
    parsed = _parsed(mutations)
    validation_split = validation_split_of(architecture, validation_split)
    _refuse_repeated(parsed)
    instances = _check_modes(instances, parsed, search, until_settled, until_score, sample,
                             max_instances, max_error_rate, resolution, decision, level)
    _check_settings(instances=instances, jobs=jobs, threads=threads, epochs=epochs,
                    batch_size=batch_size, learning_rate=learning_rate, patience=patience,
                    validation_split=validation_split, round_size=round_size,
                    max_instances=max_instances, sample=sample, stack=stack)
    stack = _stack_for(timeout, stack)
    if not download_timeout > 0:
        raise ProbmutError(f"the download timeout must be positive, got {download_timeout}",
                           option="download_timeout")
    source, data_options = _data_source(dataset, data, image_size, test_split,
                                        validation_split)
    if search:
        from probmut.train.search import parse_search

        _, low, high, _ = parse_search(search)  # a bad range is refused before anything trains
        resolution = abs(high - low) / 16 if resolution is None else resolution
    _check_installed(backend, jobs, threads)
    _check_out(out)
    # a run already in out: its lock first, so that a second train is refused before
    # TensorFlow loads (run_populations takes it again, or first for a new run)
    with run_lock(out) if (out / ".work").is_dir() else contextlib.nullcontext():
        if stack is None:
            stack = recorded_stack(out)  # a resumed run keeps its size; None: auto
        name = name or out.resolve().name
        overrides = {key: value for key, value in {"epochs": epochs, "batch_size": batch_size,
                     "learning_rate": learning_rate, "patience": patience}.items()
                     if value is not None}
        runner = backends.make_backend(backend, jobs=jobs, threads=threads, timeout=timeout,
                                       address=address, cpus_per_task=cpus_per_task,
                                       gpus_per_task=gpus_per_task)
        with _stopped_on_error(runner):  # its workers import TensorFlow meanwhile
            loaded = _load(source, data_options, architecture, threads, download_timeout, keras=False)
            checked, unchecked = _checked_here(parsed, loaded)
        with runner:
            runner.share(dataset=loaded)
            found = _preflight(runner, architecture, overrides, checked, unchecked, stack)
            if found.choice is not None and found.choice.why:
                print(f"probmut train: automatic stack size: one instance at a time: "
                      f"{found.choice.why} (a stack size given overrides it)", file=sys.stderr)
            stems = [m.stem for m in found.mutations]
            if len(set(stems)) != len(stems):
                raise ProbmutError(f"a mutation magnitude is given twice: {stems}",
                                   option="mutation")
            size = found.stack if stack is None else stack
            settings = RunSettings(dataset=source, model=architecture, config=found.config, seed=seed,
                                   stack=size)
            options = dict(deepcrime=deepcrime, progress=progress, save_models=save_models,
                           timeout=timeout, retry_failed=retry_failed)
            if search:
                from probmut.train.search import run_search

                def check(mutations):  # each magnitude, bound and checked as a mutation is
                    more = _preflight(runner, architecture, overrides, *_checked_here(mutations, loaded),
                                      size)
                    return list(more.mutations), more.unstackable

                return run_search(settings, search, resolution, instances, out, runner, loaded,
                                  check, name=name, decision=decision or "posterior", **options)
            options["unstackable"] = found.unstackable
            if until_settled:
                from probmut.bagging import PosteriorSettings
                from probmut.train.rounds import train_until_settled

                return train_until_settled(settings, list(found.mutations), out, runner, loaded,
                                           name=name, analysis=PosteriorSettings(sample=sample),
                                           round_size=round_size, max_instances=max_instances,
                                           level=level, seed=seed, **options)
            if until_score is not None:
                from probmut.bagging import PosteriorSettings
                from probmut.train.until_score import train_until_score

                return train_until_score(settings, list(found.mutations), out, runner, loaded,
                                         name=name, analysis=PosteriorSettings(sample=sample),
                                         width=until_score, round_size=round_size,
                                         max_instances=max_instances, seed=seed, **options)
            return run_populations(settings, list(found.mutations), instances, out, runner, loaded,
                                   name=name, max_error_rate=max_error_rate, **options)


def preview_mutations(mutations: Sequence[str | Mutation], *, dataset: str | None = None,
                      data: str | os.PathLike | None = None, architecture: str = "digits_cnn",
                      seed: int = SEED, epochs: int | None = None,
                      batch_size: int | None = None, learning_rate: float | None = None,
                      patience: int | None = None, image_size: str | None = None,
                      test_split: float | None = None, validation_split: float | None = None,
                      download_timeout: float = DOWNLOAD_TIMEOUT,
                      threads: int = 1) -> DryRun:
    """What each mutation changes, nothing trained (``probmut train --dry-run``; the
    arguments as for :func:`train_populations`): a :class:`~probmut.train.dryrun.DryRun`,
    its illegal mutations in ``illegal``. Keras (and TensorFlow) is imported only for
    mutations, data or a model that need it.

    >>> print(preview_mutations(["delete_training_data:10"]))
    dry run of digits_cnn, seed 42: nothing is trained; counts are those of instance 0
    delete_training_data_10 (data level): legal
      target: every class
      samples removed: 130 of 1347
    """
    parsed = _parsed(mutations)
    if not parsed:
        raise ProbmutError("a dry run needs at least one mutation", option="mutation")
    validation_split = validation_split_of(architecture, validation_split)
    _check_settings(threads=threads, epochs=epochs, batch_size=batch_size,
                    learning_rate=learning_rate, patience=patience,
                    validation_split=validation_split)
    source, data_options = _data_source(dataset, data, image_size, test_split,
                                        validation_split)
    keras = any(map(needs_keras, parsed)) or architecture not in MODELS
    if keras:
        tf_setup.require("tensorflow", "train")
    loaded = _load(source, data_options, architecture, threads, download_timeout, keras)
    spec = resolve_model(architecture, loaded.dims)
    config = spec.config.replace(**{key: value for key, value in {
        "epochs": epochs, "batch_size": batch_size, "learning_rate": learning_rate,
        "patience": patience}.items() if value is not None})
    return dry_run(parsed, spec, loaded, config, seed=seed, model=architecture)


def _check_modes(instances, mutations, search, until_settled, until_score, sample,
                 max_instances, max_error_rate, resolution, decision, level) -> int | None:
    """The run's mode (a number of instances, until settled, until the score is settled,
    or a search) and the options that belong to it; the number of instances (20 unless
    given or in rounds)."""
    if until_settled and until_score is not None:
        raise ProbmutError("train either until each mutant's verdict is settled or until the "
                           "mutation score is, not both", option="until_score")
    if until_score is not None and not 0 < until_score < 1:
        raise ProbmutError(f"the width of the score's interval must be in (0, 1), got "
                           f"{until_score}", option="until_score")
    rounds = "until settled" if until_settled else "until the score is settled"
    if until_settled or until_score is not None:
        if instances is not None:
            raise ProbmutError(f"train either a number of instances or {rounds}, not both",
                               option="instances")
        if search:
            raise ProbmutError(f"run either a search or training {rounds}, not both",
                               option="search")
        if not mutations:
            raise ProbmutError(f"training {rounds} needs at least one mutation",
                               option="until_settled" if until_settled else "until_score")
        if sample > max_instances:
            raise ProbmutError(f"the sample size k = {sample} is more than the maximum of "
                               f"{max_instances} instances: "
                               + ("no verdict could be reached" if until_settled else
                                  "no score could be read"),
                               option="sample")
    if search and mutations:
        raise ProbmutError("a search trains its own magnitudes; give no mutations",
                           option="mutation")
    if max_error_rate is not None and (search or until_settled or until_score is not None):
        raise ProbmutError("the quality control applies to a run of a number of instances, "
                           f"not to a search or training {rounds} (whose decisions would "
                           "count removed mutants)", option="max_error_rate")
    if level is not None and not until_settled:
        raise ProbmutError("a level is for training until settled", option="level")
    if not search and (resolution is not None or decision is not None):
        raise ProbmutError("a resolution and a decision are for a search",
                           option="resolution" if resolution is not None else "decision")
    return 20 if instances is None and not until_settled and until_score is None else instances


def _stack_for(timeout: float | None, stack: int | None) -> int | None:
    """The stack size asked for: a time limit is per instance, so one at a time with one."""
    if timeout is None:
        return stack
    if not timeout > 0:
        raise ProbmutError(f"the time limit must be a positive number of seconds, got "
                           f"{timeout}", option="timeout")
    if stack is not None and stack > 1:
        raise ProbmutError("a time limit applies to one instance at a time; train with a "
                           "stack of 1 (or leave the stack size out)", option="timeout")
    return 1


def _check_installed(backend: str, jobs: int, threads: int) -> None:
    """The extras the run needs are installed; a warning when it oversubscribes the CPUs."""
    tf_setup.require("tensorflow", "train")
    tf_setup.require("sklearn", "train")
    if backend == "ray":
        tf_setup.require("ray", "ray")
    if backend == "local" and jobs * threads > backends.cpu_count():
        warnings.warn(f"{jobs} jobs x {threads} threads exceed the {backends.cpu_count()} CPUs "
                      "here; instances will compete for cores", stacklevel=3)


def _positive(value, option: str, least: int = 1) -> None:
    if value is not None and value < least:
        raise ProbmutError(f"{option.replace('_', ' ')} must be at least {least}, got {value}",
                           option=option)


def _check_settings(*, learning_rate=None, patience=None, validation_split=None,
                    max_instances=None, **counts) -> None:
    """The training settings and counts, checked before anything is loaded."""
    for option, value in counts.items():
        _positive(value, option, least=2 if option == "sample" else 1)
    _positive(max_instances, "max_instances", least=2)
    if learning_rate is not None and not learning_rate > 0:
        raise ProbmutError(f"the learning rate must be positive, got {learning_rate}",
                           option="learning_rate")
    if patience is not None and (patience < 0 or validation_split is None):
        raise ProbmutError("early stopping needs a validation split and a patience of at "
                           "least 0", option="patience")


def _data_source(dataset, data, image_size, test_split, validation_split):
    """The data source (:func:`~probmut.train.datasets.source_of`) and its options,
    checked without loading anything heavy."""
    source = source_of(dataset, data)
    options = {"image_size": image_size, "test_split": test_split,
               "validation_split": validation_split}
    check_data_arguments(source, **options)
    return source, options


def _refuse_repeated(mutations: list[Mutation]) -> None:
    """Each magnitude of an operator once: ``010`` and ``10`` are one population."""
    by_operator: dict[str, list[str]] = {}
    for mutation in mutations:
        by_operator.setdefault(mutation.operator.name, []).append(mutation.magnitude)
    for name, magnitudes in by_operator.items():
        if (repeated := repeated_magnitudes(magnitudes)) is not None:
            raise ProbmutError(f"{name}: magnitude {repeated}; give each magnitude once",
                               option="mutation")


def _parsed(mutations) -> list[Mutation]:
    return [m for text in mutations
            for m in ([text] if isinstance(text, Mutation) else parse_mutations(text))]


def _check_out(out: Path) -> None:
    """``out`` can hold the run: a directory, or one that can be made there. One made to
    check is removed again, so that nothing is left when a later check fails."""
    try:
        made = [folder for folder in (out, *out.parents) if not folder.exists()]
    except OSError as error:  # e.g. a name too long for the file system
        raise ProbmutError(f"{out}: {error.strerror}; choose another place for the output "
                           "directory", option="out") from None
    try:
        writable_directory(out, "output directory", "out")
    finally:
        for folder in made:  # the deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()


@contextlib.contextmanager
def _stopped_on_error(runner):
    """Stop ``runner``'s early workers if what comes before entering it fails."""
    try:
        yield
    except BaseException:
        runner.__exit__(*sys.exc_info())
        raise


def _load(source: str, options: dict, model: str, threads: int, download_timeout: float,
          keras: bool):
    """The dataset, loaded here; TensorFlow is set up first (before Keras is imported)
    when ``keras`` or the source needs it."""
    kind: DataSource = check_data_arguments(source, **options)
    if keras or kind.keras:
        tf_setup.configure_tensorflow(threads)
    return load_dataset(source, task=task_of(model), **options,
                        download_timeout=download_timeout)


def _checked_here(mutations: list[Mutation], data) -> tuple[list[Mutation], list[Mutation]]:
    """The leading mutations bound and checked here, on the data alone (data-level:
    :func:`~probmut.train.legality.needs_keras`), and the others, to check where Keras
    is. The split keeps the order of the checks, so the first illegal mutation is the
    one reported."""
    split = next((i for i, m in enumerate(mutations) if needs_keras(m)), len(mutations))
    return prepare(mutations[:split], None, data, None), mutations[split:]


def _preflight(runner, model: str, overrides: dict, checked: list[Mutation],
               unchecked: list[Mutation], stack: int | None) -> Preflight:
    """:func:`~probmut.train.preflight.preflight` as a call on ``runner`` (where Keras
    is), or here when nothing needs Keras: a bundled model, every mutation checked, and
    one instance at a time."""
    if not unchecked and stack == 1 and model in MODELS:
        return Preflight(MODELS[model].config.replace(**overrides), tuple(checked), None, {})
    calls = [(model, overrides, checked, unchecked, stack)]
    _, outcome = next(iter(runner.map_unordered(preflight, calls)))
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
