"""Training as a library: :func:`train_populations` does everything ``probmut train`` does.

It checks every argument, chooses the trainer (:mod:`probmut.train.trainers`: Keras or
PyTorch, ``framework``, or a user's training function or program), loads the data, has
the trainer check the
mutations and choose the stack size, builds the backend
(:func:`probmut.train.backends.make_backend`, its workers set up by the trainer) and
hands the run's :class:`~probmut.train.run.Job` to its mode
(:mod:`probmut.train.options`): a fixed number of instances (with DeepMutation's quality
control if asked), rounds until each mutant's verdict is settled
(:mod:`probmut.train.rounds`) or until the mutation score is
(:mod:`probmut.train.until_score`), or a search for the smallest killed magnitude
(:mod:`probmut.train.search`). It returns a :class:`~probmut.train.run.RunReport`; the
command only parses its arguments and prints the report. :func:`preview_mutations` is
``probmut train --dry-run``.

Where TensorFlow is imported: with the Keras trainer, a process imports it when it
trains (one job: this one) or needs Keras to load the data (a Keras data set, an image
folder) or to build the user's model; the checks that build models run where Keras is
(:mod:`probmut.train.keras_trainer`), so that with worker processes this one never
imports it. A run of a user's training code, or of the torch trainer, imports it only
for a Keras data set or an image folder (Keras reads them, in this process); a torch run
imports torch where it trains and checks, and a Keras run never imports torch.

Examples
--------
>>> import tempfile
>>> out = tempfile.mkdtemp()
>>> from probmut.train.options import ExecutionOptions, Instances, TrainingOptions
>>> report = train_populations(out, ["delete_training_data:50"], mode=Instances(count=2),
...                            training=TrainingOptions(epochs=1),
...                            execution=ExecutionOptions(progress=False))
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
from collections.abc import Callable, Sequence
from pathlib import Path

from probmut.errors import ProbmutError
from probmut.io.atomic import writable_directory
from probmut.io.manifest import repeated_magnitudes
from probmut.seeds import DEFAULT_SEED
from probmut.train import backends, tf_setup
from probmut.train.datasets import (
    DataSource,
    check_data_arguments,
    load_dataset,
    source_of,
)
from probmut.train.dryrun import DryRun, dry_run
from probmut.train.keras_trainer import KerasTrainer
from probmut.train.legality import needs_keras
from probmut.train.models import MODELS, resolve_model, task_of, validation_split_of
from probmut.train.operators import Mutation, parse_mutations
from probmut.train.options import (
    FRAMEWORKS,
    MODES,
    DataOptions,
    ExecutionOptions,
    Instances,
    Mode,
    TrainingOptions,
)
from probmut.train.run import Job, RunOptions, RunReport, recorded_stack, run_lock
from probmut.train.trainers import Checked, CheckRequest
from probmut.train.work import RunSettings

#: The base seed when none is given: the command line's default.
SEED = DEFAULT_SEED
#: The network the Keras trainer trains when none is given.
DEFAULT_ARCHITECTURE = "digits_cnn"


def train_populations(
        out, mutations: Sequence[str | Mutation] = (), *, mode=None,
        data: DataOptions | None = None, training: TrainingOptions | None = None,
        execution: ExecutionOptions | None = None, architecture: str | None = None,
        trainer: str | Callable | None = None, command: str | None = None,
        name: str | None = None, seed: int = SEED, save_models: bool = False,
        write_deepcrime_csv: bool = False, framework: str = "keras") -> RunReport:
    """Train the healthy population and a population per mutation magnitude into ``out``
    (resumable: the same call again trains only what is missing); ``probmut train``.

    Parameters
    ----------
    out : the output directory (populations, ``manifest.toml``; docs/training.md).
    mutations : ``OPERATOR[:MAG1,MAG2]`` texts (docs/operators.md) or parsed mutations.
    mode : :class:`~probmut.train.options.Instances` (default: 20 per population),
        :class:`~probmut.train.options.Search` (no ``mutations``: it trains its own),
        :class:`~probmut.train.options.UntilSettled` or
        :class:`~probmut.train.options.UntilScore`.
    data, training, execution : :class:`~probmut.train.options.DataOptions` (default:
        digits), :class:`~probmut.train.options.TrainingOptions` (the architecture's
        settings it overrides; for a user's training code, the hyperparameters it is
        given), :class:`~probmut.train.options.ExecutionOptions` (one local job).
    architecture : the network probmut's trainer trains: a bundled model
        (:data:`probmut.train.models.MODELS`, :data:`probmut.train.torch.architectures.
        ARCHITECTURES`; default ``digits_cnn``) or ``module:function`` (returning a
        ``keras.Model``, or with ``framework="torch"`` a ``torch.nn.Module``).
    framework : ``"keras"`` (default) or ``"torch"``: probmut's trainer of that framework
        trains ``architecture`` (:data:`probmut.train.options.FRAMEWORKS`; docs/torch.md).
    trainer : a training function instead: ``"MODULE:FUNCTION"`` or the function itself
        (defined at the top level of an importable module), called once per instance
        with its spec (:mod:`probmut.train.function_trainer`).
    command : a training program instead, one process per instance
        (:mod:`probmut.train.command_trainer`).
    name : the model's name in the manifest (default: ``out``'s name).
    seed : the base seed of every instance's seed and of every mode's random decisions.
    save_models : keep each instance's model as ``out/models/POPULATION/ID.keras``, the id
        in five digits (``00000.keras``; torch: ``00000.pt``, a ``state_dict``; a user's
        code: its model file's suffix).
    write_deepcrime_csv : also write DeepCrime's ``;``-separated files
        (``{population}.deepcrime.csv``; ``--format deepcrime``).

    Returns
    -------
    RunReport
        The :class:`~probmut.train.run.RunReport` (a
        :class:`~probmut.train.rounds.SettleReport` for ``UntilSettled``, a
        :class:`~probmut.train.until_score.ScoreReport` for ``UntilScore``; for a
        ``Search``, the search's result as its ``search``).

    Raises
    ------
    ProbmutError
        One line naming the setting at fault, before anything trains, for bad arguments,
        data, models and mutations.
    """
    out, mode = Path(out), Instances() if mode is None else mode
    data, training = data or DataOptions(), training or TrainingOptions()
    execution = execution or ExecutionOptions()
    trainer, code, parsed, stack, source, data_options = _train_populations_iv(
        out, mutations, mode, data, training, execution, architecture, trainer, command,
        framework)
    architecture = getattr(trainer, "architecture", None)  # a framework trainer's network
    # a run already in out: its lock first, so that a second train is refused before
    # TensorFlow loads (the run takes it again, or first for a new run)
    with run_lock(out) if (out / ".work").is_dir() else contextlib.nullcontext():
        if stack is None:
            stack = recorded_stack(out)  # a resumed run keeps its size; None: auto
        runner = backends.make_backend(
            execution.backend, jobs=execution.jobs, threads=execution.threads,
            timeout=execution.timeout, address=execution.address,
            cpus_per_task=execution.cpus_per_task, gpus_per_task=execution.gpus_per_task,
            setup=trainer.setup)
        with _stopped_on_error(runner):  # its workers set up (import TensorFlow) meanwhile
            loaded = _load(source, data_options, architecture, execution.threads,
                           data.download_timeout, keras=False)
        with runner:
            runner.share(dataset=loaded)
            call = _on(runner)
            request = CheckRequest(parsed, training.overrides(), stack)
            found = _checked(trainer, request, loaded, call)
            size = found.stack if stack is None else stack
            settings = RunSettings(dataset=source, architecture=architecture,
                                   config=found.config, seed=seed, stack=size,
                                   trainer=trainer.kind, code=code)
            options = RunOptions(write_deepcrime_csv=write_deepcrime_csv,
                                 progress=execution.progress, save_models=save_models,
                                 timeout=execution.timeout, retry_failed=execution.retry_failed)
            job = Job(settings, out, runner, loaded, name or out.resolve().name, options,
                      found.unstackable, _later_check(trainer, request, size, loaded, call))
            # the whole run under its lock, its rounds and a search's magnitudes included:
            # another train into out is refused until this one ends
            with run_lock(out):
                return mode.train(job, list(found.mutations))


def _train_populations_iv(out: Path, mutations, mode, data: DataOptions,
                          training: TrainingOptions, execution: ExecutionOptions,
                          architecture: str | None, function, command: str | None,
                          framework: str):
    """:func:`train_populations`' input validation, before anything heavy is loaded: the
    trainer and the user's code it runs (:func:`_trainer`), the parsed mutations, the stack
    size asked for (None: the run's recorded one, else auto) and the data source and its
    options; one line naming the setting at fault for bad arguments."""
    trainer, code = _trainer(architecture, function, command, framework)
    architecture = getattr(trainer, "architecture", None)  # a framework trainer's network
    parsed = _parsed(mutations)
    validation_split = validation_split_of(architecture, data.validation_split)
    _refuse_repeated(parsed)
    if not isinstance(mode, Mode):
        raise ProbmutError(f"unknown training mode {mode!r}; use one of "
                           f"{', '.join(m.__name__ for m in MODES)}", option="mode")
    mode.check(parsed)
    _check_training_options(jobs=execution.jobs, threads=execution.threads,
                            validation_split=validation_split, stack=execution.stack,
                            **training.overrides(), **mode.counts())
    stack = _stack_for(execution.timeout, execution.stack)
    if not data.download_timeout > 0:
        raise ProbmutError("the download timeout must be positive, got "
                           f"{data.download_timeout}", option="download_timeout")
    source, data_options = _data_source(data.dataset, data.data, data.image_size,
                                        data.test_split, validation_split)
    _check_installed(trainer, execution.backend, execution.jobs, execution.threads)
    _check_out(out)
    return trainer, code, parsed, stack, source, data_options


def _later_check(trainer, request: CheckRequest, stack: int, dataset, call) -> Callable:
    """``check(mutations) -> (bound mutations, unstackable)``: the trainer's check of a
    mutation found as the run goes (a search's magnitude), as ``request``'s were."""
    def check(mutations):
        more = trainer.check(CheckRequest(mutations, request.overrides, stack),
                             dataset=dataset, call=call)
        return list(more.mutations), more.unstackable
    return check


def _trainer(architecture: str | None, function, command: str | None, framework: str = "keras"):
    """The run's trainer (Keras or torch, a training function or a program) and the user's
    code it runs (None for probmut's own), refused in one line when more than one is asked
    for, the framework is unknown or the function cannot be imported."""
    _check_framework(framework)
    if framework != "keras" and (function is not None or command is not None):
        raise ProbmutError(f"the framework ({framework}) is that of probmut's own trainer, "
                           "which builds the architecture; a training function or command "
                           "trains a model of its own (a training function hands probmut "
                           "its torch model by returning it as 'model')", option="framework")
    if function is not None and command is not None:
        raise ProbmutError("give either a training function or a training command, not both",
                           option="command")
    if architecture is not None and (function is not None or command is not None):
        raise ProbmutError("the architecture is the network probmut's trainer builds; a "
                           "training function or command builds its own model",
                           option="architecture")
    if function is not None:
        from probmut.train.function_trainer import FunctionTrainer, load_function

        trainer = (FunctionTrainer(function, os.getcwd()) if isinstance(function, str)
                   else FunctionTrainer.of_function(function))
        load_function(trainer.code, trainer.folder)  # a bad one refused before anything loads
        return trainer, trainer.code
    if command is not None:
        from probmut.train.command_trainer import CommandTrainer

        trainer = CommandTrainer.of_command(command)
        return trainer, trainer.command
    if framework == "torch":
        from probmut.train.torch.trainer import TorchTrainer

        return TorchTrainer(_torch_architecture(architecture or DEFAULT_ARCHITECTURE)), None
    return KerasTrainer(architecture or DEFAULT_ARCHITECTURE), None


def _torch_architecture(name: str) -> str:
    """``name``, a torch architecture: torch is installed and a bundled name is one
    (refused in one line before the data is checked; a ``module:function`` is called
    once the data's shape is known)."""
    from probmut.train.torch.process import require_torch

    require_torch()
    if ":" not in name:
        from probmut.train.torch.architectures import resolve

        resolve(name, None)  # a bundled spec needs no dims
    return name


def _check_framework(framework: str) -> None:
    if framework not in FRAMEWORKS:
        raise ProbmutError(f"unknown framework {framework!r}; use one of "
                           f"{', '.join(FRAMEWORKS)}", option="framework")


def _checked(trainer, request: CheckRequest, dataset, call) -> Checked:
    """The trainer's check of the run's mutations, its automatic stack size said on
    stderr when it trains one instance at a time, and each population named once."""
    found = trainer.check(request, dataset=dataset, call=call)
    if found.why:
        print(f"probmut train: automatic stack size: one instance at a time: "
              f"{found.why} (a stack size given overrides it)", file=sys.stderr)
    names = [m.population for m in found.mutations]
    if len(set(names)) != len(names):
        raise ProbmutError(f"a mutation magnitude is given twice: {names}", option="mutation")
    return found


def preview_mutations(mutations: Sequence[str | Mutation], *, data: DataOptions | None = None,
                      training: TrainingOptions | None = None,
                      architecture: str = "digits_cnn", seed: int = SEED,
                      threads: int = 1, framework: str = "keras") -> DryRun:
    """What each mutation changes, nothing trained (``probmut train --dry-run``; the
    arguments as for :func:`train_populations`). Keras (and TensorFlow) is imported only
    for mutations, data or a model that need it; with ``framework="torch"``, torch
    (:func:`probmut.train.torch.dryrun.dry_run`), and TensorFlow only for data Keras reads.

    Returns
    -------
    DryRun
        A :class:`~probmut.train.dryrun.DryRun`, its illegal mutations in ``illegal``.

    Raises
    ------
    ProbmutError
        For no mutation, bad settings or data.

    Examples
    --------
    >>> print(preview_mutations(["delete_training_data:10"]))
    dry run of digits_cnn, seed 42: nothing is trained; counts are those of instance 0
    delete_training_data_10 (data level): legal
      target: every class
      samples removed: 130 of 1347
    """
    data, training = data or DataOptions(), training or TrainingOptions()
    parsed = _parsed(mutations)
    if not parsed:
        raise ProbmutError("a dry run needs at least one mutation", option="mutation")
    validation_split = validation_split_of(architecture, data.validation_split)
    _check_training_options(threads=threads, validation_split=validation_split,
                            **training.overrides())
    _check_framework(framework)
    if framework == "torch":
        _torch_architecture(architecture)
    source, data_options = _data_source(data.dataset, data.data, data.image_size,
                                        data.test_split, validation_split)
    if framework == "torch":
        return _torch_preview(parsed, source, data_options, data.download_timeout, training,
                              architecture, seed, threads)
    keras = any(map(needs_keras, parsed)) or architecture not in MODELS
    if keras:
        tf_setup.require("tensorflow", "train")
    loaded = _load(source, data_options, architecture, threads, data.download_timeout, keras)
    spec = resolve_model(architecture, loaded.dims)
    config = spec.config.replace(**training.overrides())
    return dry_run(parsed, spec, loaded, config, seed=seed, architecture=architecture)


def _torch_preview(parsed, source, data_options, download_timeout, training, architecture,
                   seed, threads) -> DryRun:
    """:func:`preview_mutations` of a torch model."""
    from probmut.train.torch.architectures import resolve
    from probmut.train.torch.dryrun import dry_run as torch_dry_run
    from probmut.train.torch.process import configure_torch

    loaded = _load(source, data_options, architecture, threads, download_timeout, False)
    configure_torch(threads)
    spec = resolve(architecture, loaded.dims)
    config = spec.config.replace(**training.overrides())
    return torch_dry_run(parsed, spec, loaded, config, seed=seed,
                         architecture=f"{architecture} (torch)")


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


def _check_installed(trainer, backend: str, jobs: int, threads: int) -> None:
    """The extras the run needs are installed; a warning when it oversubscribes the CPUs."""
    for module, extra in trainer.requires:
        tf_setup.require(module, extra)
    if backend == "ray":
        tf_setup.require("ray", "ray")
    if backend == "local" and jobs * threads > backends.cpu_count():
        warnings.warn(f"{jobs} jobs x {threads} threads exceed the {backends.cpu_count()} CPUs "
                      "here; instances will compete for cores", stacklevel=3)


def _positive(value, option: str, least: int = 1) -> None:
    if value is not None and value < least:
        raise ProbmutError(f"{option.replace('_', ' ')} must be at least {least}, got {value}",
                           option=option)


def _check_training_options(*, learning_rate=None, patience=None, validation_split=None,
                            max_instances=None, **counts) -> None:
    """The training settings (learning rate, patience and the validation split it needs)
    and the counts (jobs, threads, instances, ...: at least 1; ``sample`` and
    ``max_instances`` at least 2), checked before anything is loaded."""
    for option, value in counts.items():
        _positive(value, option, least=2 if option == "sample" else 1)
    _positive(max_instances, "max_instances", least=2)
    if learning_rate is not None and not learning_rate > 0:
        raise ProbmutError(f"the learning rate must be positive, got {learning_rate}",
                           option="learning_rate")
    if patience is not None and patience < 0:
        raise ProbmutError(f"the patience is a number of epochs without improvement, 0 or "
                           f"more, got {patience}", option="patience")
    if patience is not None and validation_split is None:
        raise ProbmutError("early stopping watches the validation loss: give a validation "
                           "split (--validation-split SHARE) with the patience",
                           option="patience")


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


def _load(source: str, options: dict, architecture: str, threads: int,
          download_timeout: float, keras: bool):
    """The dataset, loaded here; TensorFlow is set up first (before Keras is imported)
    when ``keras`` or the source needs it."""
    kind: DataSource = check_data_arguments(source, **options)
    if keras or kind.keras:
        tf_setup.configure_tensorflow(threads)
    return load_dataset(source, task=task_of(architecture), **options,
                        download_timeout=download_timeout)


def _on(runner):
    """``call(fn, *args)``: ``fn(*args)`` as one call on ``runner`` (where its workers are
    set up), its exception raised here."""
    def call(fn, *args):
        # not an instance: a user's model that builds slowly is the instances' to time out
        _, outcome = next(iter(runner.map_unordered(fn, [args], limited=False)))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
    return call
