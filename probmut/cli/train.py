"""``probmut train``: train healthy and mutant populations (see docs/training.md).

Registering the subcommand imports nothing heavy; TensorFlow is imported by the handler,
after every argument that can be checked without it has been.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from probmut.cli.args import (
    DEFAULT_SEED,
    add_quiet_argument,
    integer,
    number,
    seed_value,
    writable_directory,
)
from probmut.cli.emit import counted
from probmut.errors import ProbmutError

EXAMPLE = """example:
  probmut train --dataset digits --model digits_cnn --instances 20 \\
                --mutation delete_training_data:3.1,9.29,30.93 --out runs/digits
  probmut train ... --mutation weights_fuzzing:0.05_1@3 --mutation change_activation_function:elu
  probmut train --list-operators          every operator, its magnitude and default target

  probmut train --model deepcrime_mnist --mutation neurons_freezing:0.05 --dry-run
                                          what a mutation changes, nothing trained

magnitudes are VALUE[@TARGET]: a percent (3.1), a Keras name (elu), RATIO_SCALE (0.05_1),
@LAYER for a layer index (default: the subject's published layer, else the first fitting
hidden layer), @each for one mutant per fitting layer, @network for every weighted layer
(the default of DeepMutation's GF, WS, NEB, NAI, NS), @all or @CLASS for change_label,
@C1+C2 for the class-targeted data operators; an operator without magnitudes takes its
documented default. DeepMutation's names (DR, LE, NEB, ...) and DeepCrime's
(change_gradient_clip, change_earlystopping_patience) work too; docs/operators.md.
"""


def register(subparsers) -> None:
    from probmut.recommend import LEVEL
    from probmut.train.datasets import DATASETS, DOWNLOAD_TIMEOUT
    from probmut.train.models import MODELS

    p = subparsers.add_parser(
        "train", help="train healthy and mutant populations (needs the train extra)",
        description="Train N instances of a model, healthy and under each mutation "
                    "magnitude; resumable: re-run the same command to continue.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = p.add_mutually_exclusive_group()
    data.add_argument("--dataset", default="digits", choices=DATASETS,
                      help="digits (scikit-learn's, offline; the default) or a Keras data set, "
                           "read from the Keras cache or downloaded into it on first use")
    data.add_argument("--data", metavar="FILE.npz|DIR",
                      help="your own data: an .npz with x_train, y_train, x_test, y_test, or an "
                           "image folder (DIR/train/CLASS/ and DIR/test/CLASS/, or DIR/CLASS/ "
                           "with --test-split); gaze_lenet and recommender read other arrays "
                           "(docs/training.md)")
    p.add_argument("--image-size", metavar="HxW",
                   help="image folder: resize every image to HxW (default: the first image's)")
    p.add_argument("--test-split", type=float, metavar="SHARE",
                   help="image folder of class folders: hold out SHARE of each class for testing")
    p.add_argument("--validation-split", type=float, metavar="SHARE",
                   help="hold out SHARE of each training class as a validation set (default: "
                        "none; needed by --patience, change_patience, remove_validation_set)")
    p.add_argument("--download-timeout", type=float, default=DOWNLOAD_TIMEOUT, metavar="SECONDS",
                   help=f"give up a Keras download that has not started after SECONDS "
                        f"(default {DOWNLOAD_TIMEOUT:g})")
    p.add_argument("--model", default="digits_cnn",
                   help=f"{', '.join(MODELS)}, or module:function: a function (input_shape, "
                        "n_classes) returning a keras.Model classifier, on the Python path "
                        "(default: digits_cnn)")
    p.add_argument("--instances", type=int, help="instances per population (20)")
    p.add_argument("--mutation", action="append", default=[], metavar="OP[:MAG1,MAG2]",
                   help="a mutation and its magnitudes (default: the operator's); repeatable")
    p.add_argument("--list-operators", action="store_true",
                   help="print every operator (name, level, default, source, magnitude, "
                        "default target, the references' names) and exit; with --json as JSON")
    p.add_argument("--dry-run", action="store_true",
                   help="train nothing: say per mutation whether it is legal (and why not), "
                        "its target and exactly what it changes (samples, settings, or "
                        "weights/units per layer for instance 0); with --json as JSON; exit "
                        "2 if a mutation is illegal")
    p.add_argument("--out", type=Path, help="output directory (required to train)")
    p.add_argument("--name", help="model name in the manifest (default: --out's name)")
    p.add_argument("--seed", type=seed_value, default=DEFAULT_SEED,
                   help=f"base seed of every instance's seed (default: {DEFAULT_SEED})")
    p.add_argument("--epochs", type=int, help="override the model's epochs")
    p.add_argument("--batch-size", type=int, help="override the model's batch size")
    p.add_argument("--learning-rate", type=float, help="override the model's learning rate")
    p.add_argument("--patience", type=int,
                   help="early stopping on the validation loss after PATIENCE epochs without "
                        "improvement, for every population (needs --validation-split)")
    p.add_argument("--format", choices=["tidy", "deepcrime"], default="tidy",
                   help="deepcrime: also write DeepCrime's ;-separated files")
    p.add_argument("--stack", default="auto", metavar="K|auto",
                   help="train K instances of a population at once as one model (default "
                        "auto: up to 20 for small models, 1 on a CPU for models whose "
                        "training step is large; 1: one at a time with model.fit)")
    p.add_argument("--jobs", type=int, default=1,
                   help="units (stacks, or single instances) trained at once (local)")
    p.add_argument("--threads", type=int, default=1,
                   help="TensorFlow threads per instance (default 1; the same --threads gives "
                        "the same files whatever --jobs or --backend)")
    p.add_argument("--backend", choices=["local", "ray"], default="local")
    p.add_argument("--address", help="Ray cluster address (default: start a local Ray)")
    p.add_argument("--cpus-per-task", type=float,
                   help="Ray CPUs per task (default: --threads)")
    p.add_argument("--gpus-per-task", type=float, default=0, help="Ray GPUs per task (0)")
    p.add_argument("--save-models", action="store_true",
                   help="keep each instance's model as OUT/models/POPULATION/ID.keras "
                        "(model-level mutants after mutation)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="stop an instance's training after SECONDS (recorded as timed out); "
                        "instances then train one at a time (--stack 1) in worker processes, "
                        "which are killed if an instance cannot stop itself")
    p.add_argument("--retry-failed", action="store_true",
                   help="train crashed and timed-out instances again (by default they are "
                        "recorded once)")
    p.add_argument("--max-error-rate", type=number(0, 1, high_open=True), metavar="R",
                   help="DeepMutation's quality control: remove a mutant population whose "
                        "instances get wrong, on average, more than the share R of the test "
                        "inputs their original model gets right (the healthy instance each "
                        "derives from; for source-level mutants every healthy instance, "
                        "averaged); it keeps its files, is listed as removed and left out of "
                        "the manifest's magnitudes")
    search = p.add_argument_group("killable-magnitude search (DeepCrime's binary search)")
    search.add_argument("--search", metavar="OP:LOW,HIGH",
                        help="bisect the magnitude of OP between LOW (weak) and HIGH (strong) "
                             "for the smallest killed magnitude, training only the magnitudes "
                             "it needs (instead of --mutation)")
    search.add_argument("--resolution", type=float,
                        help="stop when the bracket is this narrow (default: 1/16 of the range)")
    search.add_argument("--criterion", choices=["posterior", "deepcrime"], default=None,
                        help="killed by the bagged posterior's ratio (default) or by DeepCrime's "
                             "single test on the whole populations")
    add_quiet_argument(p)
    p.add_argument("--json", action="store_true",
                   help="print the run summary (or --list-operators) as one JSON document")
    settle = p.add_argument_group(
        "train until the decision is settled (docs/recommend.md)",
        "train in rounds; after each, the verdict of `probmut recommend` for every mutant "
        "still in training; a mutant stops when settled, the healthy population trains while "
        "any mutant does")
    settle.add_argument("--until-settled", action="store_true",
                        help="train in rounds until each mutant's verdict is settled "
                             "(instead of --instances)")
    settle.add_argument("--round", type=integer(1), default=10, metavar="N",
                        help="instances added per round to each population in training "
                             "(default: 10)")
    settle.add_argument("--max-instances", type=integer(2), default=200, metavar="N",
                        help="most instances per population (default: 200)")
    settle.add_argument("--sample", type=integer(2), default=20, metavar="K",
                        help="k instances per side in the verdicts' kill tests; the first "
                             "verdict needs K per side (default: 20)")
    settle.add_argument("--level", type=number(0.5, 1, low_open=True, high_open=True),
                        default=None, metavar="L",
                        help="for any true effect, at most 1 - L of the runs end with a wrong "
                             f"settled verdict, over all the rounds (default: {LEVEL})")
    p.set_defaults(func=handle, resumes=True)


def _check_out(out: Path) -> None:
    """``--out`` can hold the run: a directory, or one that can be made there. One made
    to check is removed again, so that nothing is left when a later check fails."""
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


def _positive(value, flag):
    if value is not None and value < 1:
        raise ProbmutError(f"{flag} must be at least 1, got {value}")


def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ProbmutError(f"probmut train needs {module}, which is not installed: "
                           f"pip install 'probmut[{extra}]'")


def _stack(text: str) -> int | None:
    """``--stack``: a size of at least 1, or None for auto."""
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise ProbmutError(f"--stack must be auto or a whole number, got {text!r}") from None
    _positive(value, "--stack")
    return value


def _stack_size(requested, probe, config, dataset, mutations, out: Path) -> int:
    """The run's stack size: ``requested``; or the size of the run in ``out`` being
    resumed; or the automatic choice for ``probe``: one at a time on a CPU when a
    member's training step is large (saying so), else as many members as fit the
    memory budget."""
    from probmut.train.run import recorded_stack

    if requested is not None:
        return requested
    if (recorded := recorded_stack(out)) is not None:
        return recorded
    from probmut.train.datasets import n_rows
    from probmut.train.stack import (
        CPU_STEP_FLOPS,
        auto_stack_size,
        gpu_budget,
        member_bytes,
        step_flops,
    )

    batch = n_rows(dataset.x_train) if config.full_batch else config.batch_size
    budget = gpu_budget()
    flops = step_flops(probe, batch)
    if budget is None and flops > CPU_STEP_FLOPS:
        print(f"probmut train: --stack auto: one instance at a time: a training step of this "
              f"model costs about {flops / 1e6:,.0f} MFLOP per instance, and above "
              f"{CPU_STEP_FLOPS / 1e6:.0f} MFLOP stacking is slower on a CPU (--stack K "
              "overrides)", file=sys.stderr)
        return 1
    inputs = dataset.x_train if isinstance(dataset.x_train, tuple) else (dataset.x_train,)
    private = (sum(x.nbytes for x in inputs)
               if any(m.operator.level == "data" for m in mutations) else 0)
    size = member_bytes(probe, batch, private)
    return auto_stack_size(size) if budget is None else auto_stack_size(size, budget)


def operator_table(json_output: bool) -> str:
    """``--list-operators``: the registry as a table (two lines per operator) or JSON."""
    from probmut.train.operators import OPERATORS

    rows = [op.describe() for op in OPERATORS.values()]
    if json_output:
        return json.dumps(rows, indent=2)
    lines = [f"{'operator':<31}{'level':<9}{'default':<21}source",
             "  magnitude; default target; the references' names"]
    for row in rows:
        lines.append(f"{row['name']:<31}{row['level']:<9}{row['default'] or '(layer)':<21}"
                     f"{row['source']}")
        only = ("; only " + ", ".join(row["tasks"])) if len(row["tasks"]) < 3 else ""
        note = f"; {row['note']}" if row["note"] else ""
        names = f"; also {', '.join(row['aliases'])}" if row["aliases"] else ""
        lines.append(f"  {row['magnitude']}; {row['default_target']}{only}{note}{names}")
    return "\n".join(lines)


def _summary(args, report, name) -> str:
    """The run summary: text, or one JSON document with each population's flags, why it
    is a survivor and why the quality control removed it (null when it is not)."""
    from probmut.train.flags import Flags

    found = {stem: report.flags.get(stem, Flags()) for stem in report.counts}
    populations = [{"name": stem, "file": str(args.out / f"{stem}.csv"), "instances": n,
                    "flags": list(found[stem].flags), "reasons": list(found[stem].reasons),
                    "survivor": found[stem].survivor or None,
                    "removed": report.removed.get(stem)}
                   for stem, n in report.counts.items()]
    if args.json:
        return json.dumps({"trained": report.trained, "resumed": report.resumed,
                           "seconds": report.seconds, "failures": report.failures,
                           "model": name, "manifest": str(args.out / "manifest.toml"),
                           "populations": populations}, indent=2)
    rate = report.trained / report.seconds * 60 if report.seconds else 0.0
    lines = [f"trained {counted(report.trained, 'instance')} in {report.seconds:.1f} s "
             f"({rate:.1f}/min); {report.resumed} {'was' if report.resumed == 1 else 'were'} "
             "already done"]
    for population in populations:
        removed = [("removed", population["removed"])] if population["removed"] else []
        flagged = "".join(f"  [{word}: {reason}]"
                          for word, reason in found[population["name"]].items() + removed)
        lines.append(f"  {population['file']}: {counted(population['instances'], 'instance')}"
                     f"{flagged}")
    lines.append(f"  manifest: {args.out / 'manifest.toml'} (model {name!r})")
    return "\n".join(lines)


def _check_settings(args) -> None:
    for flag in ("instances", "jobs", "threads", "epochs", "batch_size"):
        _positive(getattr(args, flag), "--" + flag.replace("_", "-"))
    if args.learning_rate is not None and not args.learning_rate > 0:
        raise ProbmutError(f"--learning-rate must be positive, got {args.learning_rate}")
    if args.patience is not None and (args.patience < 0 or args.validation_split is None):
        raise ProbmutError("--patience needs --validation-split and a value of at least 0")


def _data_source(args) -> tuple[str, dict]:
    """The data source and its options, checked without loading anything heavy."""
    from probmut.train.datasets import DATASETS, check_data_arguments

    source = args.dataset
    if args.data is not None:  # a path, even one spelled like a data set's name
        source = os.path.join(".", args.data) if args.data in DATASETS else args.data
    options = {"image_size": args.image_size, "test_split": args.test_split,
               "validation_split": args.validation_split}
    check_data_arguments(source, **options)
    return source, options


def _model_and_data(args, source, options):
    """The loaded dataset, the model's spec and the run's training settings."""
    from probmut.train.datasets import load_dataset
    from probmut.train.models import resolve_model, task_of

    dataset = load_dataset(source, task=task_of(args.model), **options,
                           download_timeout=args.download_timeout)
    spec = resolve_model(args.model, dataset.dims)
    overrides = {"epochs": args.epochs, "batch_size": args.batch_size,
                 "learning_rate": args.learning_rate, "patience": args.patience}
    config = spec.config.replace(**{k: v for k, v in overrides.items() if v is not None})
    return dataset, spec, config


def _dry_run(args) -> int:
    """``--dry-run``: what each mutation changes, nothing trained."""
    if args.search or args.until_settled:
        raise ProbmutError("--dry-run looks at --mutation magnitudes; leave out --search and "
                           "--until-settled")
    if not args.mutation:
        raise ProbmutError("--dry-run needs at least one --mutation")
    _check_settings(args)
    source, options = _data_source(args)
    from probmut.train.operators import parse_mutations

    mutations = [m for text in args.mutation for m in parse_mutations(text)]
    _require("tensorflow", "train")
    from probmut.train import backends

    backends.configure_tensorflow(args.threads)
    from probmut.train.dryrun import dry_run

    dataset, spec, config = _model_and_data(args, source, options)
    report = dry_run(mutations, spec, dataset, config, seed=args.seed, model=args.model)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report)
    if report.illegal:
        raise ProbmutError(f"{report.illegal[0].label}: {report.illegal[0].reason}")
    return 0


def handle(args) -> int:
    """Validate everything (data, model, mutations) before the first instance trains."""
    if args.list_operators:
        print(operator_table(args.json))
        return 0
    if args.dry_run:
        return _dry_run(args)
    if args.out is None:
        raise ProbmutError("give --out DIR (where the populations go)")
    _check_out(args.out)
    stack = _stack(args.stack)
    if args.until_settled:
        _check_until_settled(args)
    elif args.instances is None:
        args.instances = 20
    _check_settings(args)
    if args.timeout is not None and not args.timeout > 0:
        raise ProbmutError(f"--timeout must be a positive number of seconds, got {args.timeout}")
    if args.timeout is not None:  # a time limit is per instance: one instance at a time
        if stack is not None and stack > 1:
            raise ProbmutError("--timeout applies to one instance at a time; give --stack 1 "
                               "(or leave --stack out)")
        stack = 1
    if args.backend == "local" and args.address:
        raise ProbmutError("--address is for --backend ray")
    if not args.download_timeout > 0:
        raise ProbmutError(f"--download-timeout must be positive, got {args.download_timeout}")
    from probmut.train.operators import parse_mutations

    source, data_options = _data_source(args)
    mutations = [m for text in args.mutation for m in parse_mutations(text)]
    _require("tensorflow", "train")
    _require("sklearn", "train")
    if args.backend == "ray":
        _require("ray", "ray")
    from probmut.train import backends

    if args.search and args.mutation:
        raise ProbmutError("--search trains its own magnitudes; leave out --mutation")
    if args.max_error_rate is not None and (args.search or args.until_settled):
        raise ProbmutError("--max-error-rate applies to a run of --instances, not to --search or "
                           "--until-settled (whose decisions would count removed mutants)")
    if not args.search and (args.resolution is not None or args.criterion is not None):
        raise ProbmutError("--resolution and --criterion are for --search")
    if args.search:
        from probmut.train.search import parse_search

        parse_search(args.search)  # a bad range is an error before anything trains
    if args.backend == "local" and args.jobs * args.threads > backends.cpu_count():
        print(f"probmut train: warning: --jobs {args.jobs} x --threads {args.threads} exceeds "
              f"the {backends.cpu_count()} CPUs here; instances will compete for cores",
              file=sys.stderr)
    pool = _early_pool(args)  # its workers import TensorFlow beside this process
    backends.configure_tensorflow(args.threads)  # before TensorFlow does anything here

    from probmut.train.instance import RunSettings
    from probmut.train.legality import prepare
    from probmut.train.models import build_model
    from probmut.train.run import run_populations

    dataset, spec, config = _model_and_data(args, source, data_options)
    mutations = prepare(mutations, spec, dataset, config)
    probe = build_model(spec, dataset.dims, config)
    stems = [m.stem for m in mutations]
    if len(set(stems)) != len(stems):
        raise ProbmutError(f"a mutation magnitude is given twice: {stems}")
    settings = RunSettings(dataset=source, model=args.model, config=config, seed=args.seed,
                           stack=_stack_size(stack, probe, config, dataset, mutations,
                                             args.out))
    name = args.name or args.out.resolve().name
    options = dict(deepcrime=args.format == "deepcrime", progress=not args.quiet,
                   save_models=args.save_models, timeout=args.timeout,
                   retry_failed=args.retry_failed, max_error_rate=args.max_error_rate)
    if args.search:
        return _search(args, settings, dataset, spec, name, options, pool)
    with _backend(args, {"dataset": dataset}, pool) as backend:
        if args.until_settled:
            settled = _until_settled(args, settings, mutations, backend, dataset, name, options)
            report = settled.training
        else:
            report = run_populations(settings, mutations, args.instances, args.out, backend,
                                     dataset, name=name, **options)
    print(_summary(args, report, name) if not args.until_settled else
          _settled_summary(args, settled, _summary(args, report, name)))
    if report.diverged:
        print(f"{counted(len(report.diverged), 'instance')} diverged (recorded; see probmut "
              "symptoms): "
              + ", ".join(report.diverged[:5]) + (" ..." if len(report.diverged) > 5 else ""),
              file=sys.stderr)
    if report.failures:
        print(f"{counted(len(report.failures), 'instance')} failed (recorded; --retry-failed "
              "trains them again):", *report.failures[:5], sep="\n  ", file=sys.stderr)
        return 1
    return 0


def _search(args, settings, dataset, spec, name, options, pool) -> int:
    from probmut.train.search import parse_search, run_search

    _, low, high, _ = parse_search(args.search)
    resolution = args.resolution if args.resolution is not None else abs(high - low) / 16
    with _backend(args, {"dataset": dataset}, pool) as backend:
        result = run_search(settings, args.search, resolution, args.instances, args.out,
                            backend, dataset, spec, name=name,
                            criterion=args.criterion or "posterior", **options)
    print(result)
    print(f"populations and manifest: {args.out} (model {name!r})")
    return 0


def _early_pool(args):
    """The run's local worker processes, started now so that they import TensorFlow
    while this process loads the data and checks the mutations; None when the run
    needs none. With --timeout a local run uses worker processes even for --jobs 1, so
    that an instance stuck inside TensorFlow can be killed."""
    from probmut.train import backends

    if args.backend != "local" or (args.jobs == 1 and args.timeout is None):
        return None
    hard = None if args.timeout is None else backends.hard_limit(args.timeout)
    return backends.LocalPool(args.jobs, args.threads, {}, hard).start()


def _backend(args, shared, pool):
    """The backend the flags ask for: ``pool`` (from :func:`_early_pool`) given
    ``shared``, Ray, or this process."""
    from probmut.train import backends

    if pool is not None:
        pool.shared.update(shared)
        return pool
    if args.backend == "ray":
        hard = None if args.timeout is None else backends.hard_limit(args.timeout)
        return backends.RayBackend(args.address, args.cpus_per_task or args.threads,
                                   args.gpus_per_task, args.threads, shared, hard)
    return backends.Serial(args.threads, shared)


# --- --until-settled -----------------------------------------------------------------------

def _check_until_settled(args) -> None:
    if args.instances is not None:
        raise ProbmutError("give either --instances or --until-settled (with --max-instances), "
                           "not both")
    if not args.mutation:
        raise ProbmutError("--until-settled needs at least one --mutation")
    if args.search:
        raise ProbmutError("give either --search or --until-settled, not both")
    if args.sample > args.max_instances:
        raise ProbmutError(f"--sample {args.sample} is more than --max-instances "
                           f"{args.max_instances}: no verdict could be reached")


def _until_settled(args, settings, mutations, backend, dataset, name, options):
    from probmut.posterior import PosteriorSettings
    from probmut.train.rounds import train_until_settled

    return train_until_settled(settings, mutations, args.out, backend, dataset, name=name,
                               analysis=PosteriorSettings(sample=args.sample),
                               round_size=args.round, max_instances=args.max_instances,
                               level=args.level, seed=args.seed, **options)


def _settled_summary(args, settled, summary: str) -> str:
    """The run summary with each mutant's last verdict and the rounds' files."""
    if args.json:
        return json.dumps(json.loads(summary) | settled.to_dict(), indent=2)
    lines = [summary, f"  rounds: {args.out / 'rounds.txt'} and rounds.json "
                      f"({len(settled.rounds)} rounds)"]
    lines += [f"  {stem}: {v['verdict']} with {v['instances']} instances: {v['message']}"
              for stem, v in settled.final.items()]
    return "\n".join(lines)
